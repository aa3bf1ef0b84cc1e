import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadCriPackage } from '../../plugins/cri-containerd/proto-loader.ts';
import { FakeCriServer, normalizeImageRef } from '../fakes/fake-cri-server.ts';

type Client = grpc.Client & Record<string, any>;

/** Promisified unary call on a raw grpc-js client. */
function call<T = any>(client: Client, method: string, req: object, deadlineMs = 2000): Promise<T> {
  return new Promise((ok, fail) => {
    client[method](req, { deadline: Date.now() + deadlineMs }, (err: grpc.ServiceError | null, res: T) => (err ? fail(err) : ok(res)));
  });
}

const sandboxConfig = (name: string, labels: Record<string, string> = {}, hostNetwork = false) => ({
  metadata: { name, uid: `uid-${name}`, namespace: 'default', attempt: 0 },
  hostname: name,
  logDirectory: `/var/log/pods/default_${name}_uid-${name}`,
  labels,
  annotations: { 'kubernetes.io/config.source': 'api' },
  linux: { securityContext: { namespaceOptions: { network: hostNetwork ? 'NODE' : 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
});

describe('FakeCriServer', function () {
  this.timeout(10_000);
  let dir: string;
  let fake: FakeCriServer;
  let rt: Client;
  let img: Client;

  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fake-cri-'));
    fake = await FakeCriServer.start(join(dir, 'cri.sock'), { images: ['busybox:1.36'] });
    const { RuntimeService, ImageService } = loadCriPackage();
    rt = new RuntimeService(fake.endpoint, grpc.credentials.createInsecure()) as Client;
    img = new ImageService(fake.endpoint, grpc.credentials.createInsecure()) as Client;
  });

  afterEach(async () => {
    rt.close();
    img.close();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('answers Version and Status', async () => {
    assert.match(fake.endpoint, /^unix:\/\/\//);
    const v = await call(rt, 'Version', { version: 'v1' });
    assert.deepEqual(v, { version: '0.1.0', runtimeName: 'fake-cri', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' });
    const st = await call(rt, 'Status', {});
    const types = st.status.conditions.map((c: any) => `${c.type}=${c.status}`);
    assert.deepEqual(types, ['RuntimeReady=true', 'NetworkReady=true']);
    assert.equal(fake.calls.Version, 1);
    assert.equal(fake.calls.RunPodSandbox, 0);
  });

  it('runs a sandbox and container lifecycle', async () => {
    // Image: unknown locally, pulled from the fake registry.
    assert.equal((await call(img, 'ImageStatus', { image: { image: 'busybox:1.36' } })).image, null);
    await assert.rejects(call(img, 'PullImage', { image: { image: 'nosuch:1' } }), (e: grpc.ServiceError) => {
      assert.equal(e.code, grpc.status.NOT_FOUND);
      assert.match(e.details, /failed to pull and unpack image "docker\.io\/library\/nosuch:1".*not found/);
      return true;
    });
    const pulled = await call(img, 'PullImage', { image: { image: 'busybox:1.36' } });
    assert.match(pulled.imageRef, /^sha256:[0-9a-f]{64}$/);
    const is = await call(img, 'ImageStatus', { image: { image: 'docker.io/library/busybox:1.36' } });
    assert.equal(is.image.id, pulled.imageRef);
    assert.deepEqual(is.image.repoTags, [normalizeImageRef('busybox:1.36')]);

    const cfg = sandboxConfig('p1');
    const { podSandboxId } = await call(rt, 'RunPodSandbox', { config: cfg });
    assert.match(podSandboxId, /^[0-9a-f]{64}$/);
    const ps = await call(rt, 'PodSandboxStatus', { podSandboxId, verbose: true });
    assert.equal(ps.status.state, 'SANDBOX_READY');
    assert.equal(ps.status.metadata.name, 'p1');
    assert.match(ps.status.network.ip, /^10\.88\.0\.\d+$/);
    assert.equal(typeof ps.status.createdAt, 'string');
    assert.ok(BigInt(ps.status.createdAt) > 1_600_000_000_000_000_000n);
    assert.equal(ps.status.annotations['kubernetes.io/config.source'], 'api');
    const info = JSON.parse(ps.info.info);
    assert.match(info.runtimeSpec.linux.namespaces.find((n: any) => n.type === 'network').path, /^\/var\/run\/netns\/cni-/);

    // CreateContainer with an image that is not local fails.
    await assert.rejects(
      call(rt, 'CreateContainer', { podSandboxId, config: { metadata: { name: 'c0' }, image: { image: 'alpine' } }, sandboxConfig: cfg }),
      (e: grpc.ServiceError) => e.code === grpc.status.NOT_FOUND,
    );

    const ccfg = {
      metadata: { name: 'c1', attempt: 0 },
      image: { image: pulled.imageRef },
      command: ['sleep', '3600'],
      labels: { 'io.kubernetes.container.name': 'c1' },
      logPath: 'c1/0.log',
    };
    const { containerId } = await call(rt, 'CreateContainer', { podSandboxId, config: ccfg, sandboxConfig: cfg });
    assert.match(containerId, /^[0-9a-f]{64}$/);
    let cs = (await call(rt, 'ContainerStatus', { containerId })).status;
    assert.equal(cs.state, 'CONTAINER_CREATED');
    assert.equal(cs.startedAt, '0');
    assert.equal(cs.logPath, '/var/log/pods/default_p1_uid-p1/c1/0.log');

    await call(rt, 'StartContainer', { containerId });
    cs = (await call(rt, 'ContainerStatus', { containerId })).status;
    assert.equal(cs.state, 'CONTAINER_RUNNING');
    assert.ok(BigInt(cs.startedAt) >= BigInt(cs.createdAt));
    assert.equal(cs.image.image, 'docker.io/library/busybox:1.36');

    const ex = await call(rt, 'ExecSync', { containerId, cmd: ['true'], timeout: 1 });
    assert.equal(ex.exitCode, 0);
    fake.onExecSync(({ cmd }) => ({ exitCode: 3, stdout: cmd.join(' ') }));
    const ex2 = await call(rt, 'ExecSync', { containerId, cmd: ['echo', 'hi'] });
    assert.equal(ex2.exitCode, 3);
    assert.equal(Buffer.from(ex2.stdout).toString(), 'echo hi');

    fake.exitContainer(containerId, 1);
    cs = (await call(rt, 'ContainerStatus', { containerId })).status;
    assert.equal(cs.state, 'CONTAINER_EXITED');
    assert.equal(cs.exitCode, 1);
    assert.equal(cs.reason, 'Error');

    await call(rt, 'StopPodSandbox', { podSandboxId });
    assert.equal((await call(rt, 'PodSandboxStatus', { podSandboxId })).status.state, 'SANDBOX_NOTREADY');
    await call(rt, 'RemovePodSandbox', { podSandboxId });
    await call(rt, 'RemovePodSandbox', { podSandboxId }); // idempotent
    assert.equal(fake.sandboxes().length, 0);
    assert.equal(fake.containers().length, 0);
    await assert.rejects(call(rt, 'ContainerStatus', { containerId }), (e: grpc.ServiceError) => e.code === grpc.status.NOT_FOUND);
    assert.equal(fake.calls.RemovePodSandbox, 2);
    assert.deepEqual(
      fake.requests.filter((r) => r.method.endsWith('Container')).map((r) => r.method),
      ['CreateContainer', 'CreateContainer', 'StartContainer'],
    );
  });

  it('stops running containers with exit code 137 and gives host-network sandboxes no IP', async () => {
    const cfg = sandboxConfig('hn', {}, true);
    const { podSandboxId } = await call(rt, 'RunPodSandbox', { config: cfg });
    assert.equal((await call(rt, 'PodSandboxStatus', { podSandboxId })).status.network.ip, '');
    fake.addImage('registry.local:5000/app:v1', { present: true });
    const { containerId } = await call(rt, 'CreateContainer', {
      podSandboxId,
      config: { metadata: { name: 'app' }, image: { image: 'registry.local:5000/app:v1' } },
    });
    await call(rt, 'StartContainer', { containerId });
    await call(rt, 'StopContainer', { containerId, timeout: 0 });
    const cs = (await call(rt, 'ContainerStatus', { containerId })).status;
    assert.equal(cs.state, 'CONTAINER_EXITED');
    assert.equal(cs.exitCode, 137);
    assert.notEqual(cs.finishedAt, '0');
  });

  it('filters ListPodSandbox and ListContainers by label selector, state and sandbox id', async () => {
    const a = (await call(rt, 'RunPodSandbox', { config: sandboxConfig('a', { app: 'web', tier: 'front' }) })).podSandboxId;
    const b = (await call(rt, 'RunPodSandbox', { config: sandboxConfig('b', { app: 'db' }) })).podSandboxId;
    let r = await call(rt, 'ListPodSandbox', { filter: { labelSelector: { app: 'web' } } });
    assert.deepEqual(r.items.map((s: any) => s.id), [a]);
    r = await call(rt, 'ListPodSandbox', { filter: { labelSelector: { app: 'web', tier: 'back' } } });
    assert.equal(r.items.length, 0);
    await call(rt, 'StopPodSandbox', { podSandboxId: b });
    r = await call(rt, 'ListPodSandbox', { filter: { state: { state: 'SANDBOX_NOTREADY' } } });
    assert.deepEqual(r.items.map((s: any) => s.id), [b]);
    r = await call(rt, 'ListPodSandbox', { filter: { id: a.slice(0, 12) } });
    assert.deepEqual(r.items.map((s: any) => s.id), [a]);
    r = await call(rt, 'ListPodSandbox', {});
    assert.equal(r.items.length, 2);

    fake.addImage('busybox:1.36', { present: true });
    const mk = async (name: string, labels: Record<string, string>) =>
      (await call(rt, 'CreateContainer', { podSandboxId: a, config: { metadata: { name }, image: { image: 'busybox:1.36' }, labels } })).containerId;
    const c1 = await mk('c1', { role: 'main' });
    const c2 = await mk('c2', { role: 'sidecar' });
    await call(rt, 'StartContainer', { containerId: c2 });
    let lc = await call(rt, 'ListContainers', { filter: { labelSelector: { role: 'main' } } });
    assert.deepEqual(lc.containers.map((c: any) => c.id), [c1]);
    lc = await call(rt, 'ListContainers', { filter: { state: { state: 'CONTAINER_RUNNING' }, podSandboxId: a } });
    assert.deepEqual(lc.containers.map((c: any) => c.id), [c2]);
    lc = await call(rt, 'ListContainers', { filter: { podSandboxId: b } });
    assert.equal(lc.containers.length, 0);
    // Same (name, attempt) in the same sandbox is rejected, as containerd's name reservation.
    await assert.rejects(mk('c1', {}), /is reserved for/);
  });

  it('injects faults with failNext and delays calls', async () => {
    fake.failNext('RunPodSandbox', grpc.status.UNAVAILABLE, 'boom', 2);
    for (let i = 0; i < 2; i++) {
      await assert.rejects(call(rt, 'RunPodSandbox', { config: sandboxConfig('f') }), (e: grpc.ServiceError) => {
        assert.equal(e.code, grpc.status.UNAVAILABLE);
        assert.equal(e.details, 'boom');
        return true;
      });
    }
    const { podSandboxId } = await call(rt, 'RunPodSandbox', { config: sandboxConfig('f') });
    assert.ok(podSandboxId);
    assert.equal(fake.calls.RunPodSandbox, 3);
    assert.equal(fake.sandboxes().length, 1);

    fake.delay('Version', 300);
    await assert.rejects(call(rt, 'Version', {}, 50), (e: grpc.ServiceError) => e.code === grpc.status.DEADLINE_EXCEEDED);
    fake.delay('Version', 0);
    assert.equal((await call(rt, 'Version', {})).runtimeApiVersion, 'v1');

    await assert.rejects(call(rt, 'CheckpointContainer', { containerId: 'x' }), (e: grpc.ServiceError) => e.code === grpc.status.UNIMPLEMENTED);
  });
});
