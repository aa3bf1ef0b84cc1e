import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { mountCount, mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import { CONTEXT_KEYS, ephemeralVolumeHandle } from '../../plugins/csi-grpc/csi-volumes.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { RealCsiDriver, realCsiDriverOrSkip, unpackCsiBinaries } from '../support/csi-real-driver.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * csi-grpc against the upstream CSI hostpath driver and node-driver-registrar (real binaries
 * from ../shared/csi, real processes), with pods on real containerd: the driver registers
 * through the registrar's socket, an inline ephemeral volume is published without staging
 * (the driver creates it in NodePublishVolume and refuses NodeStageVolume for it), a kubelet
 * restart adopts it, and neither a deleted pod nor a failed or timed-out publish leaves a
 * mount or a directory behind.
 */
describe('csi-grpc with the upstream CSI hostpath driver', function () {
  this.timeout(180_000);
  const ns = 'h6';
  const nodeId = 'h6-node';
  let env: NodeEnv;
  let dir: string;
  let t: TestKubelet | undefined;
  /** hostpath.csi.k8s.io as deployed upstream. */
  let hostpath: RealCsiDriver;
  /** A second instance whose volumes may be at most 1 MiB: every ephemeral publish (100 MiB) fails with OutOfRange. */
  let tiny: RealCsiDriver;
  const drivers: RealCsiDriver[] = [];

  const kubeletOptions = () => ({
    plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 4 }]] as any,
    config: { syncFrequencyMs: 1000, nodeName: 'h6-node' },
    dir,
  });

  before(async function () {
    env = await nodeEnvOrSkip(this);
    realCsiDriverOrSkip(this);
    dir = await fs.mkdtemp('/tmp/h6-');
    const bin = path.join(dir, 'bin');
    const binaries = await unpackCsiBinaries(bin);
    assert.ok(binaries.hostpathplugin && binaries['csi-node-driver-registrar']);
    const registryDir = path.join(dir, 'root', 'plugins_registry');
    hostpath = new RealCsiDriver({ binDir: bin, dir: path.join(dir, 'hostpath'), registryDir, nodeId });
    tiny = new RealCsiDriver({ binDir: bin, dir: path.join(dir, 'tiny'), registryDir, nodeId, driverName: 'tiny.hostpath.csi.k8s.io', driverArgs: ['--max-volume-size=1048576'] });
    drivers.push(hostpath, tiny);
    for (const d of drivers) await d.start();
    t = await startTestKubelet(kubeletOptions());
  });

  after(async function () {
    if (t) {
      for (const f of await fs.readdir(t.manifestDir).catch(() => [] as string[])) await t.removeManifest(f);
      const deadline = Date.now() + 60_000;
      for (let i = 0; i < 300 && t.kubelet.pods().length > 0 && Date.now() < deadline; i++) await sleep(200);
      await t.stop();
    }
    for (const d of drivers) await d.stop().catch(() => {});
    if (!dir) return;
    const left = await mountsUnder(dir);
    for (const mp of left) await unmount(mp).catch(() => {});
    if (!process.env.KUBELET_TS_KEEP_TEST_ENV) await fs.rm(dir, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left under the test dir');
  });

  const kubelet = () => t!;
  const sh = (name: string, script: string, extra: object = {}) => ({ name, image: env.images.busybox, command: ['sh', '-c', script], ...extra });
  const inlinePod = (name: string, driver: string, spec: object = {}) =>
    podManifest(name, [sh('main', 'exec sleep 3600', { volumeMounts: [{ name: 'data', mountPath: '/data' }] })], {
      volumes: [{ name: 'data', csi: { driver } }], hostNetwork: true, terminationGracePeriodSeconds: 0, ...spec,
    }, { namespace: ns });
  const uidOf = (name: string) => kubelet().pod(name)!.metadata!.uid!;
  const podDir = (uid: string) => path.join(kubelet().config.rootDir, 'pods', uid);
  const volumeDir = (uid: string) => path.join(podDir(uid), 'volumes', 'kubernetes.io~csi', 'data');
  const waitingMessage = (p: V1Pod | undefined) => p?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? '';

  async function exec(name: string, cmd: string[]): Promise<{ out: string; code: number }> {
    const cs = kubelet().pod(name)!.status!.containerStatuses![0]!;
    const r = await kubelet().kubelet.runtime.execSync(cs.containerID!.replace(/^.*:\/\//, ''), cmd, 10);
    return { out: Buffer.from(r.stdout).toString().trim(), code: r.exitCode };
  }

  /** Deletes the pod's manifest; waits until the pod is gone; checks nothing of it stays mounted or on disk. */
  async function removeAndCheck(file: string, name: string): Promise<void> {
    const uid = uidOf(name);
    await kubelet().removeManifest(file);
    await kubelet().waitForPod(name, (p) => p === undefined, 60_000, 'removed');
    assert.deepEqual(await mountsUnder(podDir(uid)), [], 'no mount left in the pod dir (/proc/self/mountinfo)');
    await assert.rejects(fs.stat(volumeDir(uid)), 'no directory left under the pod\'s volumes dir');
    await assert.rejects(fs.stat(podDir(uid)), 'the pod dir is removed');
  }

  it('registers the driver through node-driver-registrar\'s registration socket', async function () {
    let log = '';
    for (let i = 0; i < 100 && !/NotifyRegistrationStatus call: &RegistrationStatus\{PluginRegistered:true/.test(log); i++) {
      await sleep(100);
      log = await hostpath.registrarLog();
    }
    assert.match(log, /Received GetInfo call/, 'the kubelet asked the registrar GetInfo');
    assert.match(log, /NotifyRegistrationStatus call: &RegistrationStatus\{PluginRegistered:true,Error:,/, 'and told it the driver is registered');
    assert.ok((await hostpath.calls('NodeGetInfo')).some((c) => c.Response?.node_id === nodeId), 'the kubelet called NodeGetInfo on the endpoint the registrar gave');
  });

  it('runs a pod with an inline volume published without staging, with the ephemeral volume context; deleting it leaves nothing', async function () {
    await kubelet().writeManifest('h6-inline.json', inlinePod('h6-inline', hostpath.driverName, { serviceAccountName: 'h6-sa' }));
    await kubelet().waitForPod('h6-inline', isRunning, 60_000, 'Running');
    const uid = uidOf('h6-inline');
    const handle = ephemeralVolumeHandle(uid, 'data');
    const target = path.join(volumeDir(uid), 'mount');
    assert.equal(await mountCount(target), 1, 'the target path is mounted once');

    const w = await exec('h6-inline', ['sh', '-c', 'echo h6-data > /data/f && cat /data/f']);
    assert.deepEqual(w, { out: 'h6-data', code: 0 }, 'the container writes and reads a file in the volume');

    assert.deepEqual(await hostpath.calls('NodeStageVolume'), [], 'an inline volume is never staged');
    const publishes = (await hostpath.calls('NodePublishVolume')).filter((c) => c.Request.volume_id === handle);
    assert.equal(publishes.length, 1);
    const req = publishes[0]!.Request;
    assert.equal(publishes[0]!.Error, '');
    assert.equal(req.target_path, target);
    assert.equal(req.staging_target_path ?? '', '');
    assert.deepEqual(req.volume_context, {
      [CONTEXT_KEYS.ephemeral]: 'true',
      [CONTEXT_KEYS.podName]: 'h6-inline-h6-node',
      [CONTEXT_KEYS.podNamespace]: ns,
      [CONTEXT_KEYS.podUID]: uid,
      [CONTEXT_KEYS.serviceAccount]: 'h6-sa',
    });
    // The driver advertises SINGLE_NODE_MULTI_WRITER: ReadWriteOnce maps to it, as upstream's mapping does.
    assert.equal(req.volume_capability?.access_mode?.mode, 7);

    await removeAndCheck('h6-inline.json', 'h6-inline');
    const unpublishes = (await hostpath.calls('NodeUnpublishVolume')).filter((c) => c.Request.volume_id === handle);
    assert.ok(unpublishes.some((c) => c.Error === '' && c.Request.target_path === target), 'NodeUnpublishVolume on teardown');
    assert.deepEqual(await hostpath.calls('NodeUnstageVolume'), []);
  });

  it('keeps the volume across a kubelet restart: adopted, not published again, still usable', async function () {
    await kubelet().writeManifest('h6-adopt.json', inlinePod('h6-adopt', hostpath.driverName));
    await kubelet().waitForPod('h6-adopt', isRunning, 60_000, 'Running');
    const uid = uidOf('h6-adopt');
    const handle = ephemeralVolumeHandle(uid, 'data');
    const target = path.join(volumeDir(uid), 'mount');
    assert.equal((await exec('h6-adopt', ['sh', '-c', 'echo before > /data/f'])).code, 0);
    const containerId = kubelet().pod('h6-adopt')!.status!.containerStatuses![0]!.containerID;
    const publishes = (await hostpath.calls('NodePublishVolume')).filter((c) => c.Request.volume_id === handle).length;

    await kubelet().stop();
    t = undefined;
    t = await startTestKubelet(kubeletOptions());
    await kubelet().waitForPod('h6-adopt', (p) => isRunning(p) && p!.status!.containerStatuses![0]!.containerID === containerId, 30_000, 'adopted');
    await sleep(3000); // a few syncs (syncFrequency 1 s)
    assert.equal(await mountCount(target), 1, 'still mounted, once');
    assert.equal((await hostpath.calls('NodePublishVolume')).filter((c) => c.Request.volume_id === handle).length, publishes, 'not published again');
    assert.deepEqual(await exec('h6-adopt', ['sh', '-c', 'cat /data/f && echo after >> /data/f && tail -1 /data/f']), { out: 'before\nafter', code: 0 });

    await removeAndCheck('h6-adopt.json', 'h6-adopt');
    assert.ok((await hostpath.calls('NodeUnpublishVolume')).some((c) => c.Request.volume_id === handle && c.Error === ''), 'the adopted volume is unpublished by the new kubelet');
  });

  it('shows a failed NodePublishVolume on the pod and leaves no mount and no directory, while it waits and once it is deleted', async function () {
    await kubelet().writeManifest('h6-fail.json', inlinePod('h6-fail', tiny.driverName));
    const p = await kubelet().waitForPod('h6-fail', (x) => /NodePublishVolume/.test(waitingMessage(x)), 30_000, 'waiting with the driver error');
    assert.match(waitingMessage(p), /^MountVolume.SetUp failed for volume "data": .*NodePublishVolume: rpc error: code = OutOfRange desc = /);
    const uid = uidOf('h6-fail');
    const events = kubelet().kubelet.events.list().filter((e) => e.involvedObject.name === 'h6-fail-h6-node' && e.reason === 'FailedMount');
    assert.ok(events.length > 0, 'a FailedMount event');
    // Let it fail a few times (the sync retries), then look: nothing mounted, no volume dir.
    for (let i = 0; i < 100 && (await tiny.calls('NodePublishVolume')).length < 2; i++) await sleep(100);
    assert.deepEqual(await mountsUnder(podDir(uid)), []);
    // Between attempts (1 s apart) nothing stays; at a given instant a retry may be under way
    // (its dir made, its call in flight; the last CI caught one), so look for the gap.
    let gap = false;
    for (let i = 0; i < 200 && !gap; i++) {
      gap = !(await fs.stat(volumeDir(uid)).then(() => true, () => false));
      if (!gap) await sleep(25);
    }
    assert.ok(gap, 'no volume dir between attempts while the pod waits');
    assert.deepEqual(await tiny.calls('NodeStageVolume'), []);
    await removeAndCheck('h6-fail.json', 'h6-fail');
  });

  it('cleans up after NodePublishVolume times out, and mounts once when the driver answers again', async function () {
    hostpath.pause();
    let resumed = false;
    try {
      await kubelet().writeManifest('h6-slow.json', inlinePod('h6-slow', hostpath.driverName));
      const p = await kubelet().waitForPod('h6-slow', (x) => /DeadlineExceeded/.test(waitingMessage(x)), 30_000, 'waiting with a timeout');
      assert.match(waitingMessage(p), /NodePublishVolume: rpc error: code = DeadlineExceeded/);
      assert.deepEqual(await mountsUnder(podDir(uidOf('h6-slow'))), [], 'nothing mounted while the driver is stuck');
      hostpath.resume();
      resumed = true;
      await kubelet().waitForPod('h6-slow', isRunning, 60_000, 'Running once the driver answers');
    } finally {
      if (!resumed) hostpath.resume();
    }
    const uid = uidOf('h6-slow');
    const target = path.join(volumeDir(uid), 'mount');
    await sleep(2000); // late answers to the timed-out calls have all come in
    assert.equal(await mountCount(target), 1, 'mounted exactly once');
    assert.deepEqual(await exec('h6-slow', ['sh', '-c', 'echo ok > /data/f && cat /data/f']), { out: 'ok', code: 0 });
    await removeAndCheck('h6-slow.json', 'h6-slow');
  });

  it('leaves nothing once the driver answers when the pod went while its NodePublishVolume hung', async function () {
    hostpath.pause();
    let uid: string;
    try {
      await kubelet().writeManifest('h6-stuck.json', inlinePod('h6-stuck', hostpath.driverName));
      await kubelet().waitForPod('h6-stuck', (x) => /NodePublishVolume: rpc error: code = DeadlineExceeded/.test(waitingMessage(x)), 30_000, 'waiting with a timeout');
      uid = uidOf('h6-stuck');
      await kubelet().removeManifest('h6-stuck.json');
      await kubelet().waitForPod('h6-stuck', (p) => p === undefined, 60_000, 'removed');
    } finally {
      hostpath.resume();
    }
    const handle = ephemeralVolumeHandle(uid, 'data');
    // The timed-out publish now runs in the driver; the kubelet unpublishes it (the pod is gone),
    // and its housekeeping removes what the late publish made again under the pod dir.
    // The undo owed for the pod is retried with back-off while the driver was frozen, so its
    // successful unpublish may come a few seconds after the driver answers again.
    const unpublished = async () => (await hostpath.calls('NodeUnpublishVolume')).some((c) => c.Request.volume_id === handle && (c.Error === '' || /NotFound/.test(c.Error)));
    const clean = async () => (await mountsUnder(podDir(uid))).length === 0 && !(await fs.stat(podDir(uid)).catch(() => undefined)) && (await unpublished());
    const deadline = Date.now() + 60_000;
    for (let i = 0; i < 300 && !(await clean()) && Date.now() < deadline; i++) await sleep(200);
    assert.deepEqual(await mountsUnder(podDir(uid)), [], 'no mount left in the pod dir');
    await assert.rejects(fs.stat(podDir(uid)), 'no pod dir left');
    assert.ok(await unpublished(), 'the driver was told to unpublish');
  });
});
