import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { existsSync, readlinkSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import type { V1Pod } from '@kubernetes/client-node';
import type { PluginEntry } from '../../core/config/types.ts';
import { describeDeviceProviderContract, startPluginsForTest } from '../../core/sdk/testing/index.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { controlPlaneOrSkip } from '../support/control-plane.ts';
import { SAMPLE_RESOURCE, sampleDevicePluginOrSkip, startSampleDevicePlugin, type SampleDevicePlugin } from '../support/sample-device-plugin.ts';
import { startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';
import { run } from '../../tools/node-env/util.ts';

/**
 * Device plugins and the podresources API on real containerd and the real control plane, with
 * upstream's sample device plugin (two devices of example.com/resource; Allocate mounts
 * /tmp/Dev-N): it registers, the Node shows two allocatable devices, pods get one each and see
 * theirs, a third is refused at admission, allocations survive a kubelet restart (the plugin
 * registers again) and are freed when a pod is deleted, and the podresources API lists them, as
 * a monitoring agent reads it (grpc-js with the v1 proto).
 */

const PODRESOURCES_PROTO = fileURLToPath(new URL('../../plugins/pod-resources/proto/podresources.proto', import.meta.url));

interface ListedPod { name: string; namespace: string; containers: Array<{ name: string; devices: Array<{ resourceName: string; deviceIds: string[] }> }> }

/** A podresources v1 client on the socket, as an agent makes one from the proto. */
function podResourcesClient(socket: string): { list(): Promise<ListedPod[]>; close(): void } {
  const root = grpc.loadPackageDefinition(protoLoader.loadSync(PODRESOURCES_PROTO, { keepCase: false, longs: String, defaults: true })) as any;
  const client = new root.v1.PodResourcesLister(`unix:${socket}`, grpc.credentials.createInsecure()) as grpc.Client & { List: Function };
  return {
    list: () => new Promise((resolve, reject) => client.List({}, { deadline: Date.now() + 5000 }, (err: Error | null, r: { podResources: ListedPod[] }) => (err ? reject(err) : resolve(r.podResources)))),
    close: () => client.close(),
  };
}

describe('device plugins: upstream\'s sample device plugin on real containerd and the control plane', function () {
  this.timeout(300_000);
  const suite = clusterSuite('kts-devices-');

  it('registers; two allocatable devices; pods see /tmp/Dev-N; a third is refused; allocations survive a kubelet restart, are freed on deletion, and the podresources API lists them', async function () {
    const bin = sampleDevicePluginOrSkip(this, suite.cp);
    const n = suite.node('devices');
    const dpDir = path.join(n.dir, 'dp');
    const prDir = path.join(n.dir, 'podres');
    const plugins: PluginEntry[] = [['cri-containerd', { endpoint: suite.env.containerdEndpoint }], ['device-plugins', { socketDir: dpDir }], ['pod-resources', { socketDir: prDir }]];
    let kubelet: TestKubelet = await suite.kubelet(n, { config: { plugins } });
    await suite.nodeReady(n.name);
    const ns = await suite.namespace('devices');

    let plugin: SampleDevicePlugin = await startSampleDevicePlugin(bin, dpDir);
    suite.onCleanup(() => plugin.stop());
    const allocatable = async () => (await suite.core.readNode({ name: n.name })).status?.allocatable?.[SAMPLE_RESOURCE];
    await waitFor('the Node shows 2 allocatable example.com/resource', async () => (await allocatable()) === '2', 60_000).catch((err) => {
      throw new Error(`${err.message}\nsample device plugin output:\n${plugin.output()}`);
    });
    assert.equal((await suite.core.readNode({ name: n.name })).status?.capacity?.[SAMPLE_RESOURCE], '2');

    const podBody = (name: string): V1Pod => ({
      metadata: { name },
      spec: {
        nodeName: n.name,
        automountServiceAccountToken: false,
        terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], resources: { limits: { [SAMPLE_RESOURCE]: '1' } } }],
      },
    });
    const readPod = (name: string) => suite.core.readNamespacedPod({ name, namespace: ns });
    const running = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running);
    const containerId = (p: V1Pod) => p.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
    const devicesSeen = async (p: V1Pod) => {
      const r = await suite.runtime.execSync(containerId(p), ['sh', '-c', 'ls -d /tmp/Dev-* 2>/dev/null'], 20);
      return r.stdout.toString().trim().split('\n').filter(Boolean);
    };

    // Two pods, one device each: each sees its own /tmp/Dev-N.
    for (const name of ['a', 'b']) await suite.core.createNamespacedPod({ namespace: ns, body: podBody(name) });
    const [a, b] = await Promise.all(['a', 'b'].map((name) => waitFor(`pod ${name} Running`, async () => { const p = await readPod(name); return running(p) && p; }, 120_000)));
    const seenA = await devicesSeen(a!);
    const seenB = await devicesSeen(b!);
    assert.equal(seenA.length, 1, `pod a sees ${JSON.stringify(seenA)}`);
    assert.equal(seenB.length, 1, `pod b sees ${JSON.stringify(seenB)}`);
    assert.notEqual(seenA[0], seenB[0], 'the two pods got different devices');
    for (const s of [...seenA, ...seenB]) assert.match(s, /^\/tmp\/Dev-[12]$/);

    // The podresources API lists them, by the devices the pods see.
    const podres = podResourcesClient(path.join(prDir, 'kubelet.sock'));
    suite.onCleanup(() => podres.close());
    const listed = async () => {
      const mine = (await podres.list()).filter((p) => p.namespace === ns);
      return Object.fromEntries(mine.map((p) => [p.name, p.containers.flatMap((c) => c.devices.filter((d) => d.resourceName === SAMPLE_RESOURCE).flatMap((d) => d.deviceIds.map((id) => `${c.name}:${id}`)))]));
    };
    const want = { a: [`main:${path.basename(seenA[0]!)}`], b: [`main:${path.basename(seenB[0]!)}`] };
    assert.deepEqual(await listed(), want);

    // A third device request: refused at admission with upstream's reason and words, never a sandbox.
    await suite.core.createNamespacedPod({ namespace: ns, body: podBody('c') });
    const c = await waitFor('pod c Failed', async () => { const p = await readPod('c'); return p.status?.phase === 'Failed' && p; });
    assert.equal(c.status?.reason, 'UnexpectedAdmissionError');
    assert.equal(c.status?.message, 'Allocate failed due to requested number of devices unavailable for example.com/resource. Requested: 1, Available: 0, which is unexpected');
    assert.deepEqual(await suite.runtime.listPodSandboxes({ labelSelector: { 'io.kubernetes.pod.uid': c.metadata!.uid! } }), []);

    // A kubelet restart: the pods keep running, untouched, with their devices; the plugin registers
    // again (1.28.7's sample plugin does not watch for the restart: it is restarted, as upstream's
    // e2e test restarts it; test/unit/device-plugins-grpc.test.ts has a plugin that re-registers by itself).
    await kubelet.stop();
    kubelet = await startTestKubelet({ plugins, config: { ...kubelet.config }, dir: kubelet.dir });
    const again = kubelet;
    suite.onCleanup(() => again.dispose());
    assert.deepEqual(await listed(), { ...want, c: [] }, 'the allocations came back from the checkpoint (c, failed, is listed without devices)');
    assert.equal(again.kubelet.devices.resources().find((r) => r.resourceName === SAMPLE_RESOURCE)?.registered, false, 'restored from the checkpoint, not registered yet');
    await plugin.stop({ keepDeviceFiles: true });
    plugin = await startSampleDevicePlugin(bin, dpDir);
    await waitFor('the plugin registers again: 2 allocatable', async () => again.kubelet.devices.resources().some((r) => r.registered && r.resourceName === SAMPLE_RESOURCE), 60_000).catch((err) => {
      throw new Error(`${err.message}\nsample device plugin output:\n${plugin.output()}`);
    });
    await waitFor('the Node shows 2 allocatable again', async () => (await allocatable()) === '2', 30_000);
    for (const [name, before] of [['a', a!], ['b', b!]] as const) {
      const now = await readPod(name);
      assert.ok(running(now), `pod ${name} runs after the restart`);
      assert.equal(containerId(now), containerId(before), `pod ${name}'s container was not restarted`);
      assert.equal(now.status?.containerStatuses?.[0]?.restartCount, 0);
    }
    assert.deepEqual(await listed(), { ...want, c: [] });
    assert.equal((await readPod('c')).status?.phase, 'Failed');

    // Deleting pod a frees its device: a new pod gets exactly that one.
    await suite.core.deleteNamespacedPod({ name: 'a', namespace: ns });
    await waitFor('pod a gone', async () => !(await readPod('a').catch(() => undefined)), 60_000);
    assert.deepEqual(await listed(), { b: want.b, c: [] });
    await suite.core.createNamespacedPod({ namespace: ns, body: podBody('d') });
    const d = await waitFor('pod d Running', async () => { const p = await readPod('d'); return running(p) && p; }, 120_000);
    assert.deepEqual(await devicesSeen(d), seenA, 'pod d got the device pod a had');
    assert.deepEqual(await listed(), { b: want.b, c: [], d: want.a });

    // Leave nothing running: the pods go while the kubelet runs.
    for (const name of ['b', 'c', 'd']) await suite.core.deleteNamespacedPod({ name, namespace: ns }).catch(() => {});
    await waitFor('every pod removed by the kubelet', async () => again.kubelet.pods().length === 0, 60_000);
  });
});

describe('device plugins: the gRPC adapter held to the device provider contract with upstream\'s sample device plugin', function () {
  this.timeout(120_000);
  let bin: string;
  let dir: string;
  let plugin: SampleDevicePlugin | undefined;
  before(async function () {
    this.timeout(300_000);
    bin = sampleDevicePluginOrSkip(this, await controlPlaneOrSkip(this));
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dp-contract-'));
  });
  after(async () => {
    await plugin?.stop();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  describeDeviceProviderContract('device-plugins with sample-device-plugin v1.28.7', async () => ({
    resourceName: SAMPLE_RESOURCE,
    registerTimeoutMs: 30_000,
    start: async ({ pods }) => {
      const socketDir = path.join(dir, 'dp');
      const started = await startPluginsForTest([['device-plugins', { socketDir }]], { rootDir: path.join(dir, 'root'), pods });
      // 1.28.7 registers once (no restart watch): after a "kubelet restart" it is restarted too.
      await plugin?.stop({ keepDeviceFiles: true });
      plugin = await startSampleDevicePlugin(bin, socketDir);
      return started;
    },
  }));
});

describe('device plugins: the default dir is upstream\'s fixed path, whatever the root dir', function () {
  this.timeout(120_000);
  let dir: string | undefined;
  after(async () => {
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('upstream\'s sample device plugin, dialling /var/lib/kubelet/device-plugins/kubelet.sock, registers with a kubelet whose root dir is elsewhere', async function () {
    const bin = sampleDevicePluginOrSkip(this, await controlPlaneOrSkip(this));
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dp-default-'));
    // In a mount namespace of its own, /var/lib a tmpfs there: the host's /var/lib/kubelet is never touched.
    const devicesBefore = ['/tmp/Dev-1', '/tmp/Dev-2'].filter((f) => existsSync(f));
    const main = fileURLToPath(new URL('../support/device-plugin-default-dir-main.ts', import.meta.url));
    const r = await run('unshare', ['--mount', '--propagation', 'private', '--', process.execPath, '--import', 'tsx', '--conditions=kubelet-ts-source', main, path.join(dir, 'root'), bin, readlinkSync('/proc/self/ns/mnt')], { timeoutMs: 90_000 });
    for (const f of ['/tmp/Dev-1', '/tmp/Dev-2']) if (!devicesBefore.includes(f)) await fs.rm(f, { force: true });
    const result = JSON.parse(r.stdout.trim().split('\n').pop()!) as { served: boolean; resources: Array<{ resource: string; devices: number }>; output?: string };
    assert.equal(result.served, true, 'kubelet.sock served at /var/lib/kubelet/device-plugins');
    assert.deepEqual(result.resources, [{ resource: SAMPLE_RESOURCE, devices: 2 }], result.output);
  });
});
