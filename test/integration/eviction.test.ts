import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { EvictionSettings } from '../../core/config/types.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import { CgroupReader, proc } from '../../core/stats/host-readers.ts';
import { mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const execFileP = promisify(execFile);

/**
 * Node-pressure eviction on real containerd, standalone with `evictStaticPods` (the pods are
 * static): memory pressure evicts the pod that allocates past its request while a Guaranteed pod
 * keeps running, and MemoryPressure goes True then False after the (shortened) transition
 * period; an emptyDir past its sizeLimit is evicted; a test plugin replacing eviction-default
 * chooses another pod, and that is what happens. Every kubelet, pod and dir is removed in after().
 */
describe('eviction on containerd', function () {
  this.timeout(180_000);
  let env: NodeEnv;
  const kubelets: TestKubelet[] = [];
  const dirs: string[] = [];
  const loopImages: string[] = [];
  const run = async (cmd: string, args: string[]) => (await execFileP(cmd, args, { timeout: 30_000 })).stdout;
  const ns = 'h15-eviction';

  const settings = (over: Partial<EvictionSettings> = {}): EvictionSettings => ({
    soft: {}, softGracePeriodMs: {}, minimumReclaim: {}, pressureTransitionPeriodMs: 5000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 1000, evictStaticPods: true, ...over,
  });

  async function kubelet(plugins: unknown[], config: object): Promise<TestKubelet> {
    const dir = await fs.mkdtemp('/tmp/h15-eviction-');
    dirs.push(dir);
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ...plugins] as any, config: { syncFrequencyMs: 2000, ...config }, dir });
    kubelets.push(t);
    return t;
  }

  before(async function () {
    env = await nodeEnvOrSkip(this);
  });

  // Each test's kubelet goes with its test: kubelets sharing one containerd would take each
  // other's pods for orphans and stop them.
  // The tests' containers are shells that ignore SIGTERM (PID 1) with 5 s of grace, which the
  // evictions use; at cleanup the grace proves nothing and cost ~5.5 s a test: the manifests are
  // removed, then what still runs of the test's pods is killed until the kubelet has let them go.
  afterEach(async function () {
    for (const t of kubelets.splice(0)) {
      for (const f of await fs.readdir(t.manifestDir).catch(() => [] as string[])) await t.removeManifest(f);
      const by = Date.now() + 30_000;
      while (t.kubelet.pods().length > 0 && Date.now() < by) {
        const running = await t.kubelet.runtime.listContainers({ labelSelector: { [LABEL.podNamespace]: ns } }).catch(() => []);
        await Promise.all(running.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => t.kubelet.runtime.stopContainer(c.id, 0).catch(() => {})));
        await sleep(250);
      }
      await t.dispose(60_000).catch(() => {});
    }
  });

  after(async function () {
    const left: string[] = [];
    for (const d of dirs) {
      const mounts = await mountsUnder(d);
      left.push(...mounts);
      for (const m of mounts.reverse()) await unmount(m).catch(() => {});
    }
    // Loop devices still attached to our images (mount -o loop detaches on unmount; this is the safety net).
    for (const img of loopImages) {
      const attached = await run('losetup', ['-j', img]).catch(() => '');
      for (const line of attached.split('\n')) {
        const dev = line.split(':')[0];
        if (dev) await run('losetup', ['-d', dev]).catch(() => {});
      }
    }
    for (const d of dirs) await fs.rm(d, { recursive: true, force: true });
    assert.deepEqual(left.filter((m) => !m.endsWith('/disk')), [], 'no mount left under the test dirs but the loop filesystem itself');
  });

  /** A loop-mounted ext4 of `size` (no reserved blocks) in a new dir, unmounted and removed in after(): the kubelet's small disk. */
  async function smallFilesystem(prefix: string, size: string): Promise<string> {
    const dir = await fs.mkdtemp(`/tmp/${prefix}`);
    dirs.push(dir);
    const img = path.join(dir, 'disk.img');
    const mnt = path.join(dir, 'disk');
    loopImages.push(img);
    await fs.mkdir(mnt);
    await run('truncate', ['-s', size, img]);
    await run('mkfs.ext4', ['-q', '-F', '-m', '0', img]);
    await run('mount', ['-o', 'loop', img, mnt]);
    return mnt;
  }

  const sh = (name: string, script: string, extra: object = {}) => ({ name, image: env.images.busybox, command: ['sh', '-c', script], ...extra });
  const pod = (name: string, containers: object[], spec: object = {}) => podManifest(name, containers, { hostNetwork: true, terminationGracePeriodSeconds: 5, ...spec }, { namespace: ns });
  const evicted = (t: TestKubelet, name: string) => t.waitForPod(name, (p) => p?.status?.phase === 'Failed' && p.status.reason === 'Evicted', 90_000, `${name} evicted`);
  const eventsOf = (t: TestKubelet, name: string) => t.kubelet.events.list().filter((e) => e.involvedObject.name.startsWith(name) && e.reason === 'Evicted');
  const noContainerRunning = async (t: TestKubelet, name: string) => {
    const uid = t.pod(name)!.metadata!.uid!;
    const cs = await t.kubelet.runtime.listContainers({ labelSelector: { [LABEL.podUID]: uid } });
    return cs.every((c) => c.state !== 'CONTAINER_RUNNING');
  };

  /** memory.available as the eviction manager computes it: MemTotal - (usage - total_inactive_file) of the root memory cgroup. */
  async function memoryAvailable(): Promise<number> {
    const total = (await proc.meminfo())!.get('MemTotal')!;
    const root = await new CgroupReader().memory('/');
    assert.ok(root, 'a cgroup v1 memory hierarchy');
    return total - root.workingSetBytes;
  }

  it('memory pressure evicts the pod allocating past its request; a Guaranteed pod keeps running; MemoryPressure True, then False', async function () {
    const Mi = 2 ** 20;
    // The hog holds 1.5 GiB in a shell variable; the threshold sits 700 MiB below what is free now.
    const threshold = Math.floor(((await memoryAvailable()) - 700 * Mi) / Mi);
    assert.ok(threshold > 200, 'enough free memory for the test');
    const t = await kubelet([['eviction-default']], { evictionHard: { 'memory.available': `${threshold}Mi` }, eviction: settings() });
    await t.writeManifest('guaranteed.json', pod('h15-guaranteed', [sh('app', 'sleep 3600', { resources: { requests: { memory: '64Mi', cpu: '10m' }, limits: { memory: '64Mi', cpu: '10m' } } })]));
    await t.waitForPod('h15-guaranteed', isRunning, 60_000, 'guaranteed running');
    assert.deepEqual([...t.kubelet.eviction.conditions()], [], 'no pressure before the hog');
    await t.writeManifest('hog.json', pod('h15-hog', [sh('hog', 'x=$(yes | head -c 1610612736); echo allocated; sleep 3600', { resources: { requests: { memory: '10Mi' } } })]));
    const hog = await evicted(t, 'h15-hog');
    assert.match(hog!.status!.message!, /^The node was low on resource: memory\. Threshold quantity: \w+, available: \w+\. Container hog was using \w+, request is 10Mi, has larger consumption of memory\. $/);
    assert.equal(eventsOf(t, 'h15-hog').length, 1, 'one Evicted event');
    assert.equal(eventsOf(t, 'h15-hog')[0]!.type, 'Warning');
    assert.ok(t.kubelet.eviction.conditions().has('MemoryPressure'), 'MemoryPressure is True while evicting');
    // Killed with no grace (a hard threshold): its container is gone within seconds.
    const deadline = Date.now() + 20_000;
    while (!(await noContainerRunning(t, 'h15-hog')) && Date.now() < deadline) await sleep(250);
    assert.ok(await noContainerRunning(t, 'h15-hog'), 'the hog container stopped');
    // Pressure gone: False once the transition period (5 s) passed without a crossing.
    const falseBy = Date.now() + 30_000;
    while (t.kubelet.eviction.conditions().has('MemoryPressure') && Date.now() < falseBy) await sleep(250);
    assert.deepEqual([...t.kubelet.eviction.conditions()], [], 'MemoryPressure False after the transition period');
    assert.ok(isRunning(t.pod('h15-guaranteed')), 'the Guaranteed pod keeps running');
    assert.equal(t.pod('h15-guaranteed')!.status!.containerStatuses![0]!.restartCount, 0);
  });

  it('an emptyDir filled past its sizeLimit is evicted with upstream message', async function () {
    // Volume use measured every 2 s (volumeStatsAggPeriod; upstream's default is a minute).
    const t = await kubelet([['eviction-default']], { eviction: settings(), volumeStatsAggPeriodMs: 2000 });
    await t.writeManifest('filler.json', pod('h15-filler', [sh('fill', 'sleep 1; dd if=/dev/zero of=/scratch/f bs=1M count=4; sleep 3600', { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] })], {
      volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }],
    }));
    const filler = await evicted(t, 'h15-filler');
    assert.equal(filler!.status!.message, 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ');
    assert.equal(eventsOf(t, 'h15-filler').length, 1);
  });

  it('disk: filling the kubelet filesystem (a loop-mounted ext4) raises DiskPressure and evicts the pod writing most', async function () {
    const mnt = await smallFilesystem('h15-eviction-disk-', '96M');
    // The kubelet's root dir and pod logs on the small filesystem: a chatty container fills it.
    const t = await kubelet([['eviction-default']], {
      rootDir: path.join(mnt, 'root'), podLogsDir: path.join(mnt, 'logs'),
      evictionHard: { 'nodefs.available': '24Mi' }, eviction: settings(),
    });
    await t.writeManifest('quiet.json', pod('h15-quiet', [sh('app', 'echo hello; sleep 3600')]));
    await t.waitForPod('h15-quiet', isRunning, 60_000, 'quiet running');
    assert.ok(!t.kubelet.eviction.conditions().has('DiskPressure'), 'no disk pressure at first');
    // Log lines that leave about 12 MiB free: each 152-byte line costs ~190 bytes in the CRI log file (timestamp, stream, tag).
    const free = (await fs.statfs(mnt)).bavail * (await fs.statfs(mnt)).bsize;
    const raw = Math.floor(((free - 12 * 2 ** 20) * 152) / 190);
    await t.writeManifest('chatty.json', pod('h15-chatty', [sh('chatty', `yes ${'h15'.padEnd(151, 'x')} | head -c ${raw}; sleep 3600`)]));
    await t.waitForPod('h15-chatty', () => t.kubelet.eviction.conditions().has('DiskPressure'), 90_000, 'DiskPressure True');
    const chatty = await evicted(t, 'h15-chatty');
    assert.match(chatty!.status!.message!, /^The node was low on resource: ephemeral-storage\. Threshold quantity: 24Mi, available: \w+\. Container chatty was using \w+, request is 0, has larger consumption of ephemeral-storage\. $/);
    // The evicted pod's container and log are reclaimed first on the next rounds: the quiet pod stays, the pressure ends.
    const falseBy = Date.now() + 60_000;
    while (t.kubelet.eviction.conditions().has('DiskPressure') && Date.now() < falseBy) await sleep(250);
    assert.ok(!t.kubelet.eviction.conditions().has('DiskPressure'), 'DiskPressure False after the reclaim and the transition period');
    assert.ok(isRunning(t.pod('h15-quiet')), 'the quiet pod keeps running');
    kubelets.splice(kubelets.indexOf(t), 1);
    await t.dispose(60_000).catch(() => {});
    await unmount(mnt);
  });

  it('disk: an eviction frees what it was for (the emptyDir goes, the round waits for it), so no innocent pod is evicted after it', async function () {
    const mnt = await smallFilesystem('h15-eviction-reclaim-', '64M');
    const t = await kubelet([['eviction-default']], {
      rootDir: path.join(mnt, 'root'), podLogsDir: path.join(mnt, 'logs'),
      evictionHard: { 'nodefs.available': '16Mi' }, eviction: settings(),
    });
    const scratch = { volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] };
    const withScratch = { volumes: [{ name: 'scratch', emptyDir: {} }] };
    await t.writeManifest('idle.json', pod('h15-idle', [sh('app', 'sleep 3600')]));
    await t.writeManifest('small.json', pod('h15-small', [sh('app', 'echo note > /scratch/note; sleep 3600', scratch)], withScratch));
    await t.waitForPod('h15-idle', isRunning, 60_000, 'idle running');
    await t.waitForPod('h15-small', isRunning, 60_000, 'small running');
    // The filler leaves about 6 MiB of the filesystem free: below the 16Mi threshold.
    const st = await fs.statfs(mnt);
    const fill = Math.floor((st.bavail * st.bsize) / 2 ** 20) - 6;
    await t.writeManifest('filler.json', pod('h15-fill', [sh('fill', `dd if=/dev/zero of=/scratch/fill bs=1M count=${fill}; sleep 3600`, scratch)], withScratch));
    const filler = await evicted(t, 'h15-fill');
    const uid = filler!.metadata!.uid!;
    // What upstream's kubelet does for a terminated pod: its emptyDir is torn down while the pod stays known as Failed.
    const emptyDir = path.join(mnt, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'scratch');
    const goneBy = Date.now() + 60_000;
    while (Date.now() < goneBy && (await fs.stat(emptyDir).then(() => true, () => false))) await sleep(250);
    await assert.rejects(fs.stat(emptyDir), /ENOENT/, 'the evicted pod\'s emptyDir is removed');
    const reclaimed = await t.waitForPod('h15-fill', () => t.kubelet.events.list().some((e) => e.involvedObject.uid === uid && e.reason === 'EvictionReclaimed'), 60_000, 'the EvictionReclaimed event');
    assert.ok(reclaimed);
    const ev = t.kubelet.events.list().find((e) => e.involvedObject.uid === uid && e.reason === 'EvictionReclaimed')!;
    assert.match(ev.message, /volumes scratch torn down, pod cgroup removed, dead containers and their logs removed; nodefs\.available [\d.]+(Ki|Mi)? → [\d.]+Mi$/);
    // The pressure ends with the reclaim; the two pods that did not fill the disk were never evicted.
    const falseBy = Date.now() + 60_000;
    while (t.kubelet.eviction.conditions().has('DiskPressure') && Date.now() < falseBy) await sleep(250);
    assert.ok(!t.kubelet.eviction.conditions().has('DiskPressure'), 'DiskPressure False after the reclaim and the transition period');
    assert.ok(isRunning(t.pod('h15-idle')), 'the idle pod keeps running');
    assert.ok(isRunning(t.pod('h15-small')), 'the pod with a small emptyDir keeps running');
    assert.deepEqual(eventsOf(t, 'h15-idle'), []);
    assert.deepEqual(eventsOf(t, 'h15-small'), []);
    kubelets.splice(kubelets.indexOf(t), 1);
    await t.dispose(60_000).catch(() => {});
    await unmount(mnt);
  });

  it('a test plugin replacing eviction-default chooses another pod, and that pod is evicted', async function () {
    const chosen: string[] = [];
    const picky = definePlugin({
      name: 'h15-picky-policy',
      kind: 'policy',
      apply(ctx) {
        ctx.hooks.onPressure.tap('h15-picky-policy', (e) => {
          const victim = e.pods.find((p) => p.metadata?.name?.startsWith('h15-victim'));
          if (!victim) return undefined;
          chosen.push(e.signal);
          return { evict: [{ pod: victim, reason: 'Evicted', message: `h15 test policy chose this pod for ${e.signal}` }] };
        });
      },
    });
    // A soft 100% of capacity without grace: memory.available is always below it, so the pressure never ends
    // (a hard one would also be held back from allocatable, leaving no memory to admit pods).
    const t = await kubelet([picky], { evictionHard: {}, eviction: settings({ soft: { 'memory.available': '100%' }, softGracePeriodMs: { 'memory.available': 0 } }) });
    await t.writeManifest('bystander.json', pod('h15-bystander', [sh('eat', 'x=$(yes | head -c 33554432); sleep 3600', { resources: { requests: { memory: '1Mi' } } })]));
    await t.waitForPod('h15-bystander', isRunning, 60_000, 'bystander running');
    await t.writeManifest('victim.json', pod('h15-victim', [sh('app', 'sleep 3600', { resources: { requests: { memory: '64Mi', cpu: '10m' }, limits: { memory: '64Mi', cpu: '10m' } } })]));
    const victim = await evicted(t, 'h15-victim');
    assert.equal(victim!.status!.message, 'h15 test policy chose this pod for memory.available');
    assert.deepEqual(chosen, ['memory.available']);
    await sleep(3000); // a few more rounds: the policy chooses nobody else
    assert.ok(isRunning(t.pod('h15-bystander')), 'the pod eviction-default would have chosen keeps running');
    // Under memory pressure a BestEffort pod is refused at admission, as upstream.
    await t.writeManifest('besteffort.json', pod('h15-besteffort', [sh('app', 'sleep 3600')]));
    const be = await t.waitForPod('h15-besteffort', (p) => p?.status?.phase === 'Failed', 30_000, 'best-effort refused');
    assert.equal(be!.status!.reason, 'Evicted');
    assert.equal(be!.status!.message, 'The node had condition: [MemoryPressure]. ');
  });
});
