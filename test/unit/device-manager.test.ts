import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { isKubeletError } from '../../core/errors.ts';
import { DeviceManager } from '../../core/devices/device-manager.ts';
import { withDevices } from '../../core/devices/container-devices.ts';
import { checkAdmission } from '../../core/pod/admission.ts';
import type { ContainerAllocation, Device, DeviceProvider, DeviceRegistration } from '../../core/devices/device-types.ts';
import type { ContainerConfig } from '../../core/runtime/types.ts';

/**
 * The device manager (core/devices) against in-process providers: the Node's capacity and
 * allocatable, allocation at admission with upstream's refusals and messages, init containers'
 * devices reused by app containers, what an allocation adds to a container, the checkpoint
 * across a restart, freeing, and providers that hang, lie or answer what the kubelet refuses.
 */

const R = 'example.com/resource';
let dir: string;
let active: V1Pod[];
let running: Set<string>;
let now: number;
let made: DeviceManager[];

function manager(rootDir = path.join(dir, 'root'), opts: { callTimeoutMs?: number } = {}): DeviceManager {
  const m = new DeviceManager({
    rootDir,
    logger: silentLogger(),
    activePods: () => active,
    sourcesReady: () => true,
    podRunning: (uid) => running.has(uid),
    now: () => now,
    gracePeriodMs: 60_000,
    ...opts,
  });
  made.push(m);
  return m;
}

const healthy = (...ids: string[]): Device[] => ids.map((id) => ({ id, health: 'Healthy' }));

/** A provider that mounts /tmp/<id> for each device, as upstream's sample device plugin does, and records its calls. */
function sampleProvider(extra: Partial<DeviceProvider> = {}): DeviceProvider & { calls: string[][] } {
  const calls: string[][] = [];
  return {
    resourceName: R,
    calls,
    async allocate(ids) {
      calls.push([...ids]);
      return { mounts: ids.map((id) => ({ containerPath: `/tmp/${id}`, hostPath: `/tmp/${id}`, readOnly: false })), envs: { DEVICES: ids.join(',') } };
    },
    ...extra,
  };
}

function container(name: string, devices: number, extra: Partial<V1Container> = {}): V1Container {
  return { name, image: 'busybox', resources: { limits: { [R]: String(devices) } }, ...extra };
}

function pod(uid: string, containers: V1Container[], initContainers: V1Container[] = []): V1Pod {
  const p: V1Pod = { metadata: { name: uid, namespace: 'ns', uid }, spec: { containers, initContainers } };
  active.push(p);
  return p;
}

async function register(m: DeviceManager, provider: DeviceProvider, devices: Device[]): Promise<DeviceRegistration> {
  const reg = m.view('test').register(provider);
  reg.update(devices);
  return reg;
}

describe('device manager', function () {
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-devmgr-'));
    active = [];
    running = new Set();
    now = 1_000_000;
    made = [];
  });
  afterEach(async () => {
    for (const m of made) await m.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('refuses a provider whose resource is no extended resource name, with InvalidInput naming it', function () {
    const m = manager();
    for (const bad of ['gpu', 'kubernetes.io/gpu', 'requests.example.com/x', 'example.com/', 'Example.com/x', `example.com/${'x'.repeat(70)}`]) {
      assert.throws(() => m.view('p').register(sampleProvider({ resourceName: bad })), (err: unknown) => isKubeletError(err) && err.code === 'InvalidInput' && err.message.includes('is invalid'), bad);
    }
    assert.deepEqual(m.resources(), []);
  });

  it('capacity counts every device, allocatable the healthy ones; a bad device ID is dropped, a list too long refused whole', async function () {
    const m = manager();
    const reg = await register(m, sampleProvider(), [...healthy('Dev-1', 'Dev-2'), { id: 'Dev-3', health: 'Unhealthy' }, { id: 'Dev-4', health: 'on fire' as 'Healthy' }, { id: '', health: 'Healthy' }, { id: 'a b', health: 'Healthy' }]);
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '4' }, allocatable: { [R]: '2' } });
    reg.update(Array.from({ length: 10_001 }, (_, i) => ({ id: `d${i}`, health: 'Healthy' as const })));
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '4' }, allocatable: { [R]: '2' } }, 'the list before stays');
    reg.update(healthy('Dev-1', 'Dev-1', 'Dev-2', 'Dev-3'));
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '3' }, allocatable: { [R]: '3' } }, 'a repeated ID counts once');
  });

  it('a provider that goes leaves its devices unhealthy, and the resource at 0 after the grace period; a new registration brings it back', async function () {
    const m = manager();
    const reg = await register(m, sampleProvider(), healthy('Dev-1', 'Dev-2'));
    reg.close();
    reg.update(healthy('Dev-1', 'Dev-2', 'Dev-3'));
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '2' }, allocatable: { [R]: '0' } });
    assert.equal(m.resources()[0]?.registered, false);
    now += 60_001;
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '0' }, allocatable: { [R]: '0' } }, 'removed, reported as 0');
    assert.deepEqual(m.resources(), []);
    await register(m, sampleProvider(), healthy('Dev-1'));
    assert.deepEqual(m.nodeResources(), { capacity: { [R]: '1' }, allocatable: { [R]: '1' } });
  });

  it('the newest registration of a resource wins; the replaced one is closed and its updates ignored', async function () {
    const m = manager();
    const old = await register(m, sampleProvider(), healthy('Dev-1'));
    const fresh = await register(m, sampleProvider(), healthy('Dev-1', 'Dev-2'));
    assert.equal(old.closed, true);
    old.update(healthy('x'));
    old.close();
    assert.deepEqual(m.nodeResources().allocatable, { [R]: '2' }, 'the old registration changes nothing');
    assert.equal(fresh.closed, false);
  });

  it('allocates one device per request; a request beyond the free devices is UnexpectedAdmissionError with upstream\'s message', async function () {
    const m = manager();
    const p = sampleProvider();
    await register(m, p, healthy('Dev-1', 'Dev-2'));
    assert.equal(await m.admit(pod('a', [container('c', 1)])), undefined);
    assert.equal(await m.admit(pod('b', [container('c', 1)])), undefined);
    const taken = m.allocations().map((a) => a.deviceIds[0]).sort();
    assert.deepEqual(taken, ['Dev-1', 'Dev-2'], 'two pods, two different devices');
    assert.deepEqual(await m.admit(pod('c', [container('c', 1)])), {
      reason: 'UnexpectedAdmissionError',
      message: 'Allocate failed due to requested number of devices unavailable for example.com/resource. Requested: 1, Available: 0, which is unexpected',
    });
    assert.deepEqual(m.allocations('c'), []);
    assert.equal(m.admit(pod('none', [{ name: 'c', image: 'x' }])), undefined, 'a pod without device requests is not waited for');
    m.release('a');
    assert.equal(await m.admit(pod('d', [container('c', 1)])), undefined, 'a freed device is given again');
    assert.deepEqual(p.calls.length, 3);
  });

  it('refuses a pod whose resource has no healthy device, or is not registered any more', async function () {
    const m = manager();
    const reg = await register(m, sampleProvider(), [{ id: 'Dev-1', health: 'Unhealthy' }]);
    assert.equal((await m.admit(pod('a', [container('c', 1)])))?.message, 'Allocate failed due to no healthy devices present; cannot allocate unhealthy devices example.com/resource, which is unexpected');
    reg.update(healthy('Dev-1'));
    reg.close();
    assert.match((await m.admit(pod('b', [container('c', 1)])))?.message ?? '', /no healthy devices present/);
  });

  it('app containers reuse the devices of a finished init container; a sidecar keeps its own', async function () {
    const m = manager();
    await register(m, sampleProvider(), healthy('Dev-1', 'Dev-2'));
    assert.equal(await m.admit(pod('p', [container('app', 2)], [container('init', 2)])), undefined, 'init and app share the node\'s two devices');
    const by = (name: string) => m.allocations('p').find((a) => a.containerName === name)?.deviceIds.sort();
    assert.deepEqual(by('init'), ['Dev-1', 'Dev-2']);
    assert.deepEqual(by('app'), ['Dev-1', 'Dev-2']);
    const rejected = await m.admit(pod('s', [container('app', 1)], [container('side', 1, { restartPolicy: 'Always' })]));
    assert.equal(rejected?.reason, 'UnexpectedAdmissionError', 'the first pod holds both devices');
    m.release('p');
    assert.equal(await m.admit(pod('s2', [container('app', 1)], [container('side', 1, { restartPolicy: 'Always' })])), undefined);
    const side = m.allocations('s2').find((a) => a.containerName === 'side')?.deviceIds;
    const app = m.allocations('s2').find((a) => a.containerName === 'app')?.deviceIds;
    assert.notDeepEqual(side, app, 'a sidecar runs beside the app: their devices differ');
  });

  it('an answer with a mount of the host\'s root (or the kubelet\'s root dir, or a device outside /dev) refuses the pod, naming it, and holds nothing', async function () {
    const rootDir = path.join(dir, 'root');
    const cases: Array<[Partial<ContainerAllocation>, RegExp]> = [
      [{ mounts: [{ containerPath: '/host', hostPath: '/', readOnly: true }] }, /mounts\[0\]\.hostPath "\/" is the host's root/],
      [{ mounts: [{ containerPath: '/k', hostPath: path.join(rootDir, 'pods'), readOnly: true }] }, /is the kubelet's root dir/],
      [{ mounts: [{ containerPath: '/x', hostPath: '/tmp/../etc', readOnly: true }] }, /not a clean path/],
      [{ devices: [{ containerPath: '/dev/x', hostPath: '/etc/shadow', permissions: 'rw' }] }, /not a device node under \/dev/],
      [{ devices: [{ containerPath: '/dev/x', hostPath: '/dev/null', permissions: 'rwx' }] }, /permissions "rwx" is not some of r, w, m/],
      [{ envs: { 'A=B': '1' } }, /not printable ASCII without '='/],
      [{ mounts: Array.from({ length: 300 }, (_, i) => ({ containerPath: `/m${i}`, hostPath: `/tmp/m${i}`, readOnly: true })) }, /has 300 entries \(at most 256\)/],
    ];
    for (const [answer, why] of cases) {
      active = [];
      const m = manager(rootDir);
      await register(m, sampleProvider({ allocate: async () => answer }), healthy('Dev-1'));
      const r = await m.admit(pod('a', [container('c', 1)]));
      assert.equal(r?.reason, 'UnexpectedAdmissionError');
      assert.match(r?.message ?? '', /device plugin example\.com\/resource answered Allocate with what the kubelet refuses/);
      assert.match(r?.message ?? '', why);
      assert.deepEqual(m.allocations(), []);
    }
  });

  it('a provider that hangs fails that pod after the call bound; the next pod is allocated', async function () {
    const m = manager(undefined, { callTimeoutMs: 200 });
    let calls = 0;
    await register(m, sampleProvider({ allocate: async (ids) => (++calls === 1 ? new Promise(() => {}) : { envs: { ID: ids[0]! } }) }), healthy('Dev-1'));
    const first = m.admit(pod('a', [container('c', 1)]));
    const second = m.admit(pod('b', [container('c', 1)]));
    assert.equal((await first)?.message, 'Allocate failed due to device plugin example.com/resource Allocate did not answer within 200ms, which is unexpected');
    assert.equal(await second, undefined, 'the device the hung call was for is free again');
    assert.deepEqual(m.allocations().map((a) => a.podUID), ['b']);
  });

  it('asks preferredAllocation when offered, and takes only available devices from it', async function () {
    const m = manager();
    const asked: unknown[] = [];
    await register(m, sampleProvider({
      preferredAllocation: async (req) => {
        asked.push(req);
        return ['Dev-9', 'Dev-3'];
      },
    }), healthy('Dev-1', 'Dev-2', 'Dev-3'));
    assert.equal(await m.admit(pod('a', [container('c', 2)])), undefined);
    assert.deepEqual(asked, [{ available: ['Dev-1', 'Dev-2', 'Dev-3'], mustInclude: [], size: 2 }]);
    assert.deepEqual(m.allocations('a')[0]?.deviceIds, ['Dev-3', 'Dev-1'], 'Dev-3 preferred, Dev-9 (not the provider\'s) ignored, the rest filled in');
  });

  it('a container\'s config gets its allocation: envs before its own (its own win), mounts first, device nodes, CDI devices, annotations under the kubelet\'s', async function () {
    const m = manager();
    const preStarts: string[][] = [];
    await register(m, {
      resourceName: R,
      allocate: async () => ({ envs: { VISIBLE: 'Dev-1', MINE: 'device' }, mounts: [{ containerPath: '/lib/dev', hostPath: '/opt/lib', readOnly: true }], devices: [{ containerPath: '/dev/dev1', hostPath: '/dev/null', permissions: 'rw' }], annotations: { 'vendor/x': '1', 'io.kubernetes.container.hash': 'device' }, cdiDevices: ['example.com/dev=Dev-1'] }),
      preStart: async (ids) => void preStarts.push(ids),
    }, healthy('Dev-1'));
    const p = pod('a', [container('c', 1)]);
    assert.equal(await m.admit(p), undefined);
    const allocation = await m.containerAllocation(p, p.spec!.containers[0]!);
    assert.deepEqual(preStarts, [['Dev-1']], 'PreStartContainer before the container starts');
    const base: ContainerConfig = {
      metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' }, command: [], args: [], workingDir: '', logPath: 'c/0.log',
      envs: [{ key: 'MINE', value: 'container' }], mounts: [{ containerPath: '/data', hostPath: '/v' }], labels: {}, annotations: { 'io.kubernetes.container.hash': 'kubelet' },
      linux: { resources: {}, securityContext: {} },
    };
    const cfg = withDevices(base, allocation!);
    assert.deepEqual(cfg.envs, [{ key: 'VISIBLE', value: 'Dev-1' }, { key: 'MINE', value: 'container' }]);
    assert.deepEqual(cfg.mounts.map((x) => [x.containerPath, x.hostPath, x.readonly ?? false]), [['/lib/dev', '/opt/lib', true], ['/data', '/v', false]]);
    assert.deepEqual(cfg.devices, [{ containerPath: '/dev/dev1', hostPath: '/dev/null', permissions: 'rw' }]);
    assert.deepEqual(cfg.annotations, { 'vendor/x': '1', 'io.kubernetes.container.hash': 'kubelet' });
    assert.deepEqual(cfg.CDIDevices, [{ name: 'example.com/dev=Dev-1' }], 'CDI device names for the runtime to resolve');
  });

  it('a failing PreStartContainer fails the container\'s start with upstream\'s words', async function () {
    const m = manager();
    await register(m, sampleProvider({ preStart: async () => Promise.reject(new Error('reset failed')) }), healthy('Dev-1'));
    const p = pod('a', [container('c', 1)]);
    assert.equal(await m.admit(p), undefined);
    await assert.rejects(m.containerAllocation(p, p.spec!.containers[0]!), /^Error: device plugin PreStartContainer rpc failed with err: reset failed$/);
  });

  it('allocations survive a restart: a running pod keeps its devices without a new Allocate, a pod that does not run waits for healthy devices', async function () {
    const rootDir = path.join(dir, 'root');
    const first = manager(rootDir);
    const p = sampleProvider();
    await register(first, p, healthy('Dev-1', 'Dev-2'));
    const a = pod('a', [container('c', 1)]);
    const b = pod('b', [container('c', 1)]);
    assert.equal(await first.admit(a), undefined);
    assert.equal(await first.admit(b), undefined);
    const before = first.allocations();
    await first.stop();

    const second = manager(rootDir);
    await second.start();
    assert.deepEqual(second.allocations(), before, 'the checkpoint brings the allocations back');
    assert.deepEqual(second.nodeResources(), { capacity: { [R]: '0' }, allocatable: { [R]: '0' } }, 'no devices until the provider registers again');
    running.add('a');
    assert.equal(await second.admit(a), undefined, 'the running pod is admitted again as it was');
    assert.match((await second.admit(b))?.message ?? '', /no healthy devices present/, 'a pod that does not run waits for its provider');
    await register(second, p, healthy('Dev-1', 'Dev-2'));
    assert.equal(await second.admit(b), undefined);
    assert.equal(p.calls.length, 3, 'b was allocated again (it had been released when refused); a never was');
    const options = await second.containerAllocation(a, a.spec!.containers[0]!);
    assert.deepEqual(options?.mounts.map((x) => x.hostPath), before.filter((x) => x.podUID === 'a').map((x) => `/tmp/${x.deviceIds[0]}`), 'the answer came back with the checkpoint');
    await second.stop();
  });

  it('a corrupt checkpoint is set aside: the kubelet starts without it', async function () {
    const rootDir = path.join(dir, 'root');
    await fs.mkdir(path.join(rootDir, 'device-manager'), { recursive: true });
    await fs.writeFile(path.join(rootDir, 'device-manager', 'checkpoint.json'), '{"kind":"kubelet-ts/DeviceManagerCheckpoint","version":1,"data":{"podDevices":[],"registeredDevices":{}},"checksum":"sha256:00"}');
    const m = manager(rootDir);
    await m.start();
    assert.deepEqual(m.allocations(), []);
  });

  it('frees the devices of pods no longer active at the next allocation (upstream UpdateAllocatedDevices)', async function () {
    const m = manager();
    await register(m, sampleProvider(), healthy('Dev-1'));
    assert.equal(await m.admit(pod('a', [container('c', 1)])), undefined);
    active = active.filter((p) => p.metadata?.uid !== 'a');
    assert.equal(await m.admit(pod('b', [container('c', 1)])), undefined);
    assert.deepEqual(m.allocations().map((x) => x.podUID), ['b']);
  });

  it('a changed request of an allocated container is refused, as upstream', async function () {
    const m = manager();
    await register(m, sampleProvider(), healthy('Dev-1', 'Dev-2'));
    assert.equal(await m.admit(pod('a', [container('c', 1)])), undefined);
    const bigger = { metadata: { name: 'a', namespace: 'ns', uid: 'a' }, spec: { containers: [container('c', 2)] } };
    assert.equal((await m.admit(bigger))?.message, 'Allocate failed due to pod "a" container "c" changed request for resource "example.com/resource" from 1 to 2, which is unexpected');
  });

  it('admission fits extended resources against allocatable next to the admitted pods (OutOf<resource>); resources the node does not know are not checked', function () {
    const node = { allocatable: { cpu: 4000, memory: 2 ** 33, 'ephemeral-storage': 2 ** 34, pods: 110 }, extended: { [R]: 2 }, labels: {}, taints: [] };
    const p = (uid: string, n: number, name = R): V1Pod => ({ metadata: { uid, name: uid }, spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { [name]: String(n) } } }] } });
    assert.deepEqual(checkAdmission(p('c', 1), [p('a', 1), p('b', 1)], node, { nodeName: 'n', isStatic: false }), { reason: 'OutOfexample.com/resource', message: "Node didn't have enough resource: example.com/resource, requested: 1, used: 2, capacity: 2" });
    assert.equal(checkAdmission(p('c', 1), [p('a', 1)], node, { nodeName: 'n', isStatic: false }), undefined);
    assert.equal(checkAdmission(p('c', 5, 'example.com/cluster-level'), [], node, { nodeName: 'n', isStatic: false }), undefined);
  });
});
