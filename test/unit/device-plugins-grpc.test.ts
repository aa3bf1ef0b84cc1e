import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { describeDeviceProviderContract, startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { FakeDevicePlugin } from '../fakes/fake-device-plugin.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The device-plugins plugin (gRPC device plugin API v1beta1) against a device plugin written
 * here (test/fakes/fake-device-plugin.ts): held to the device provider contract, then the
 * registration's refusals with upstream's words, and plugins that go away, hang, lie or send
 * too much. Upstream's own sample device plugin is test/integration/device-plugins.test.ts.
 */

const R = 'example.com/fake-device';
let dir: string;
let n = 0;

async function setUp(options: Record<string, unknown> = {}, pods: () => V1Pod[] = () => []): Promise<{ socketDir: string; plugins: PluginsUnderTest; rootDir: string }> {
  const root = path.join(dir, `node-${++n}`);
  const socketDir = path.join(root, 'dp');
  const rootDir = path.join(root, 'root');
  const plugins = await startPluginsForTest([['device-plugins', { socketDir, ...options }]], { rootDir, pods });
  return { socketDir, plugins, rootDir };
}

const pod = (uid: string, devices = 1): V1Pod => ({ metadata: { uid, name: uid, namespace: 'ns' }, spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { [R]: String(devices) } } }] } });

describe('device-plugins: the gRPC device plugin API', function () {
  this.timeout(30_000);
  const cleanups: Array<() => Promise<unknown>> = [];
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dp-'));
  });
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });
  after(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  describe('held to the device provider contract', function () {
    let fake: FakeDevicePlugin | undefined;
    let rootDir: string;
    let socketDir: string;
    describeDeviceProviderContract('device-plugins with a gRPC device plugin (test fake)', async () => {
      rootDir = path.join(dir, 'contract', 'root');
      socketDir = path.join(dir, 'contract', 'dp');
      return {
        resourceName: R,
        registerTimeoutMs: 10_000,
        start: async ({ pods }) => {
          const plugins = await startPluginsForTest([['device-plugins', { socketDir }]], { rootDir, pods });
          // The plugin starts once, after the kubelet's socket exists (as a DaemonSet's would), and re-registers by itself after a restart.
          if (!fake) {
            fake = new FakeDevicePlugin(socketDir, R, 'fake.sock', ['Dev-1', 'Dev-2', 'Dev-3']);
            // Offered, so the contract's rules for them run through the gRPC calls too.
            fake.options = { preStartRequired: true, getPreferredAllocationAvailable: true };
            await fake.start();
            await fake.register();
            fake.watchKubeletRestarts();
          }
          return plugins;
        },
      };
    }, async () => {
      await fake?.stop();
    });
  });

  it('refuses a registration with another API version, an invalid resource name, an endpoint outside the dir, or a socket that does not answer, with upstream\'s words', async function () {
    const { socketDir, plugins } = await setUp({ dialTimeoutSeconds: 0.5 });
    cleanups.push(() => plugins.close());
    const fake = new FakeDevicePlugin(socketDir, R, 'fake.sock');
    await fake.start();
    cleanups.push(() => fake.stop());
    await assert.rejects(fake.register({ version: 'v1' }), /requested API version "v1" is not supported by kubelet\. Supported version is \["v1beta1"\]/);
    await assert.rejects(fake.register({ resourceName: 'nvidia.com' }), /the ResourceName "nvidia\.com" is invalid/);
    await assert.rejects(fake.register({ resourceName: 'kubernetes.io/gpu' }), /the ResourceName "kubernetes\.io\/gpu" is invalid/);
    await assert.rejects(fake.register({ endpoint: '../../run/other.sock' }), /the endpoint "\.\.\/\.\.\/run\/other\.sock" is not a file name in the device plugin dir/);
    await assert.rejects(fake.register({ endpoint: 'nobody-listens.sock' }), /failed to dial device plugin/);
    assert.deepEqual(plugins.devices.resources(), [], 'nothing was registered');
  });

  it('removes stale sockets from the dir at start and leaves other files; removes its own socket at stop', async function () {
    const root = path.join(dir, 'stale');
    const socketDir = path.join(root, 'dp');
    await fs.mkdir(socketDir, { recursive: true });
    // A socket left by a plugin that died: its process exits without closing it.
    execFileSync(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(path.join(socketDir, 'old-plugin.sock'))}, () => process.exit(0))`]);
    assert.ok((await fs.lstat(path.join(socketDir, 'old-plugin.sock'))).isSocket());
    await fs.writeFile(path.join(socketDir, 'notes.txt'), 'kept');
    const plugins = await startPluginsForTest([['device-plugins', { socketDir }]], { rootDir: path.join(root, 'root') });
    assert.deepEqual((await fs.readdir(socketDir)).sort(), ['kubelet.sock', 'notes.txt']);
    await plugins.close();
    assert.deepEqual(await fs.readdir(socketDir), ['notes.txt']);
  });

  it('a plugin whose stream ends leaves its devices unhealthy (allocatable 0) until it registers again', async function () {
    const { socketDir, plugins } = await setUp();
    cleanups.push(() => plugins.close());
    const fake = new FakeDevicePlugin(socketDir, R, 'fake.sock');
    await fake.start();
    cleanups.push(() => fake.stop());
    await fake.register();
    await waitFor('2 healthy devices', async () => plugins.devices.nodeResources().allocatable[R] === '2', 5000);
    fake.update([{ ID: 'Dev-1', health: 'Healthy' }, { ID: 'Dev-2', health: 'Unhealthy' }]);
    await waitFor('1 healthy device', async () => plugins.devices.nodeResources().allocatable[R] === '1', 5000);
    assert.equal(plugins.devices.nodeResources().capacity[R], '2');
    fake.endStreams();
    await waitFor('no healthy device', async () => plugins.devices.nodeResources().allocatable[R] === '0', 5000);
    assert.equal(plugins.devices.nodeResources().capacity[R], '2', 'the devices stay in capacity for the grace period');
    fake.update([{ ID: 'Dev-1', health: 'Healthy' }, { ID: 'Dev-2', health: 'Healthy' }]);
    await fake.register();
    await waitFor('back to 2', async () => plugins.devices.nodeResources().allocatable[R] === '2', 5000);
  });

  it('an Allocate that hangs refuses the pod after callTimeoutSeconds; one that answers for two containers is refused; the kubelet goes on', async function () {
    const pods: V1Pod[] = [];
    const { socketDir, plugins } = await setUp({ callTimeoutSeconds: 0.5 }, () => pods);
    cleanups.push(() => plugins.close());
    const fake = new FakeDevicePlugin(socketDir, R, 'fake.sock');
    await fake.start();
    cleanups.push(() => fake.stop());
    await fake.register();
    await waitFor('registered', async () => plugins.devices.nodeResources().allocatable[R] === '2', 5000);
    fake.allocate = () => 'hang';
    const hung = pod('hung');
    pods.push(hung);
    const r1 = await plugins.devices.admit(hung);
    assert.equal(r1?.reason, 'UnexpectedAdmissionError');
    assert.match(r1?.message ?? '', /^Allocate failed due to rpc error: code = DeadlineExceeded desc = Deadline exceeded.*, which is unexpected$/);
    fake.allocate = async () => ({ containerResponses: [{}, {}] });
    const two = pod('two');
    pods.push(two);
    assert.equal((await plugins.devices.admit(two))?.message, 'Allocate failed due to device plugin answered 2 container responses to 1 container request, which is unexpected');
    fake.allocate = async (req) => ({ containerResponses: req.containerRequests.map(() => ({ mounts: [{ containerPath: '/all', hostPath: '/' }] })) });
    const root = pod('root');
    pods.push(root);
    assert.match((await plugins.devices.admit(root))?.message ?? '', /answered Allocate with what the kubelet refuses: mounts\[0\]\.hostPath "\/" is the host's root/);
    assert.deepEqual(plugins.devices.allocations(), []);
  });

  it('a device list over maxMessageBytes ends the plugin\'s stream (its devices turn unhealthy); the kubelet goes on', async function () {
    const { socketDir, plugins } = await setUp({ maxMessageBytes: 65536 });
    cleanups.push(() => plugins.close());
    const fake = new FakeDevicePlugin(socketDir, R, 'fake.sock');
    await fake.start();
    cleanups.push(() => fake.stop());
    await fake.register();
    await waitFor('registered', async () => plugins.devices.nodeResources().allocatable[R] === '2', 5000);
    fake.update(Array.from({ length: 2000 }, (_, i) => ({ ID: `dev-${i}-${'x'.repeat(40)}`, health: 'Healthy' })));
    await waitFor('the stream ended', async () => plugins.devices.nodeResources().allocatable[R] === '0', 5000);
    assert.equal(plugins.devices.nodeResources().capacity[R], '2', 'the oversized list was never taken');
  });

  it('a newer registration of the resource replaces the older one; the older plugin\'s updates no longer count', async function () {
    const { socketDir, plugins } = await setUp();
    cleanups.push(() => plugins.close());
    const a = new FakeDevicePlugin(socketDir, R, 'a.sock', ['A-1']);
    const b = new FakeDevicePlugin(socketDir, R, 'b.sock', ['B-1', 'B-2', 'B-3']);
    for (const f of [a, b]) {
      await f.start();
      cleanups.push(() => f.stop());
    }
    await a.register();
    await waitFor('a registered', async () => plugins.devices.nodeResources().allocatable[R] === '1', 5000);
    await b.register();
    await waitFor('b registered', async () => plugins.devices.nodeResources().allocatable[R] === '3', 5000);
    a.update([{ ID: 'A-1', health: 'Healthy' }, { ID: 'A-2', health: 'Healthy' }]);
    await sleep(300);
    assert.deepEqual(plugins.devices.resources()[0]?.devices.map((d) => d.id).sort(), ['B-1', 'B-2', 'B-3']);
  });
});
