import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import { buildImage } from '../../tools/node-env/images.ts';
import { startNodeEnv, type NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvUsableOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const execFileP = promisify(execFile);
const run = async (cmd: string, args: string[]) => (await execFileP(cmd, args, { timeout: 60_000 })).stdout;

/**
 * Image GC on real containerd whose root is a small loop-mounted ext4 of the test's own (a
 * private containerd and registry: GC removes every unused image, which a shared containerd's
 * other tests may want): above imageGCHighThresholdPercent, an unused image is removed while the
 * image a running pod uses and the sandbox image are kept.
 */
describe('image garbage collection on containerd', function () {
  this.timeout(240_000);
  let dir: string;
  let mnt: string;
  let img: string;
  let env: NodeEnv | undefined;
  let t: TestKubelet | undefined;

  before(async function () {
    // The shared environment's checks (root, packages), without starting it: this test makes its own.
    nodeEnvUsableOrSkip(this);
    dir = await fs.mkdtemp('/tmp/h15-gc-');
    img = path.join(dir, 'disk.img');
    mnt = path.join(dir, 'd');
    await fs.mkdir(mnt);
    await run('truncate', ['-s', '512M', img]);
    await run('mkfs.ext4', ['-q', '-F', '-m', '0', img]);
    await run('mount', ['-o', 'loop', img, mnt]);
    env = await startNodeEnv({ baseDir: path.join(mnt, 'env'), network: false, removeOnStop: true });
  });

  after(async function () {
    await t?.dispose(60_000).catch(() => {});
    await env?.stop().catch(() => {});
    if (!dir) return;
    for (const m of (await mountsUnder(dir)).reverse()) await unmount(m).catch(() => {});
    const attached = await run('losetup', ['-j', img]).catch(() => '');
    for (const line of attached.split('\n')) {
      const dev = line.split(':')[0];
      if (dev) await run('losetup', ['-d', dev]).catch(() => {});
    }
    await fs.rm(dir, { recursive: true, force: true });
    assert.deepEqual(await mountsUnder(dir), []);
  });

  /** A busybox image of its own (a distinct config, so a distinct image ID), pushed to the private registry. */
  async function uniqueImage(what: string): Promise<string> {
    const cacheDir = env!.imageCacheDir;
    const built = await buildImage({ repository: `h15/${what}`, tag: '1', cmd: ['sh'], env: [`H15_IMAGE=${what}`] }, { cacheDir });
    const ref = `${env!.registry}/h15/${what}:1`;
    await env!.registryServer.pushImage(built.tarPath, ref);
    return ref;
  }

  it('above the high threshold removes the unused image; keeps the one in use and the sandbox image', async function () {
    const [keeper, victim] = await Promise.all([uniqueImage('gc-keeper'), uniqueImage('gc-victim')]);
    const statfs = async () => { const s = await fs.statfs(mnt); return { capacity: s.blocks * s.bsize, available: s.bavail * s.bsize }; };
    const before = await statfs();
    const usedPercent = 100 - Math.floor((before.available * 100) / before.capacity);
    const high = usedPercent + 10;
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env!.containerdEndpoint }]],
      config: { evictionHard: {}, imageGC: { highThresholdPercent: high, lowThresholdPercent: high - 5, minAgeMs: 0, maxAgeMs: 0 } },
      dir: path.join(dir, 'kubelet'),
    });
    await t.writeManifest('keeper.json', podManifest('h15-gc-keeper', [{ name: 'app', image: keeper, command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 0 }, { namespace: 'h15-gc' }));
    await t.waitForPod('h15-gc-keeper', isRunning, 60_000, 'keeper running');
    await t.kubelet.runtime.pullImage(victim);
    const tagged = async () => new Set((await t!.kubelet.runtime.listImages()).flatMap((i) => i.repoTags));
    assert.ok((await tagged()).has(victim));

    // Below the high threshold: nothing goes.
    assert.deepEqual((await t.kubelet.imageGC.garbageCollect()).removed, []);
    // Fill the image filesystem past the high threshold.
    await run('fallocate', ['-l', String(Math.ceil(before.capacity * 0.12)), path.join(mnt, 'filler')]);
    const r = await t.kubelet.imageGC.garbageCollect();
    assert.ok(r.removed.length >= 1, 'an image was removed');
    const left = await tagged();
    assert.ok(!left.has(victim), 'the unused image is gone');
    assert.ok(left.has(keeper), 'the image of the running pod is kept');
    assert.ok(left.has(env!.images.pause), 'the sandbox image is kept');
    assert.ok(isRunning(t.pod('h15-gc-keeper')));
    // Not enough could be freed (the filler is no image): upstream's event says so.
    assert.ok(t.kubelet.events.list().some((e) => e.reason === 'FreeDiskSpaceFailed'));
    await fs.rm(path.join(mnt, 'filler'));
  });
  it('nodefs pressure on the disk the images share removes unused images before any pod is evicted', async function () {
    // One kubelet at a time on this containerd: another would take the first one's pods for orphans.
    await t?.dispose(60_000).catch(() => {});
    t = undefined;
    const [keeper, victim] = await Promise.all([uniqueImage('gc-nodefs-keeper'), uniqueImage('gc-nodefs-victim')]);
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env!.containerdEndpoint }]],
      config: {
        // The root dir on the loop disk, as containerd's root is: one filesystem. 99 % available
        // is always short of the threshold, so the node stays under DiskPressure.
        evictionHard: { 'nodefs.available': '99%' },
        eviction: { soft: {}, softGracePeriodMs: {}, minimumReclaim: {}, pressureTransitionPeriodMs: 5000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 500, evictStaticPods: true },
        imageGC: { highThresholdPercent: 100, lowThresholdPercent: 99, minAgeMs: 0, maxAgeMs: 0 },
      },
      dir: path.join(mnt, 'kubelet-nodefs'),
    });
    const tagged = async () => new Set((await t!.kubelet.runtime.listImages()).flatMap((i) => i.repoTags));
    // The pod is admitted before the first eviction round can raise DiskPressure (a round waits for its monitoring period).
    await t.writeManifest('keeper.json', podManifest('h15-gc-nodefs', [{ name: 'app', image: keeper, command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 0, priorityClassName: 'system-node-critical', priority: 2000001000 }, { namespace: 'h15-gc' }));
    await t.waitForPod('h15-gc-nodefs', isRunning, 60_000, 'keeper running');
    // The node is under DiskPressure already: the reclaim may remove the image as soon as it is
    // pulled, before a listing here sees it (this containerd is the test's own: nobody else removes images).
    const pulled = await t.kubelet.runtime.pullImage(victim);
    assert.ok(pulled, `${victim} pulled`);

    const by = Date.now() + 60_000;
    while ((await tagged()).has(victim) && Date.now() < by) await new Promise((r) => setTimeout(r, 250));
    assert.ok(t.kubelet.eviction.conditions().has('DiskPressure'), 'the node is under DiskPressure');
    const left = await tagged();
    assert.ok(!left.has(victim), 'the unused image went in the node-level reclaim for nodefs');
    assert.ok(left.has(keeper), 'the image of the running pod is kept');
    assert.ok(left.has(env!.images.pause), 'the sandbox image is kept');
    assert.ok(isRunning(t.pod('h15-gc-nodefs')), 'no pod is evicted (no eviction policy plugin is loaded)');
  });
});
