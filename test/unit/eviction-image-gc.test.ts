import assert from 'node:assert/strict';
import { ImageGC } from '../../core/eviction/image-gc.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, ContainerSummary, ImageInfo } from '../../core/runtime/types.ts';

const MB = 1_000_000;

/** A runtime holding images and containers in memory, recording removals. */
function fakeRuntime(images: ImageInfo[], containers: Array<Pick<ContainerSummary, 'image' | 'imageRef'>>, sandboxImage?: string) {
  const removed: string[] = [];
  const rt = {
    listImages: async () => images.filter((i) => !removed.includes(i.id)),
    listContainers: async () => containers as ContainerSummary[],
    removeImage: async (id: string) => {
      removed.push(id);
    },
    sandboxImage: async () => sandboxImage,
  } as unknown as ContainerRuntime;
  return { rt, removed };
}

const img = (id: string, tag: string, size: number, extra: Partial<ImageInfo> = {}): ImageInfo => ({ id, repoTags: [tag], repoDigests: [], size, ...extra });

describe('image garbage collection', function () {
  let now = 0;
  const gc = (rt: ContainerRuntime, fs: { capacity: number; available: number }, over: Partial<{ high: number; low: number; minAgeMs: number; maxAgeMs: number }> = {}) => new ImageGC({
    settings: { highThresholdPercent: over.high ?? 85, lowThresholdPercent: over.low ?? 80, minAgeMs: over.minAgeMs ?? 120_000, maxAgeMs: over.maxAgeMs ?? 0 },
    runtime: () => rt,
    imageFs: async () => fs,
    nodeEvent: () => {},
    logger: silentLogger(),
    now: () => now,
  });

  beforeEach(() => {
    now = 1_000_000;
  });

  it('above the high threshold, removes unused images least recently used first down to the low one; never in use, pinned or the sandbox image', async function () {
    const images = [
      img('sha256:a', 'reg/a:1', 30 * MB), img('sha256:b', 'reg/b:1', 30 * MB), img('sha256:c', 'reg/c:1', 30 * MB),
      img('sha256:used', 'reg/used:1', 30 * MB), img('sha256:pinned', 'reg/pinned:1', 30 * MB, { pinned: true }), img('sha256:pause', 'reg/pause:3.9', 30 * MB),
    ];
    const containers: Array<Pick<ContainerSummary, 'image' | 'imageRef'>> = [{ image: 'reg/used:1', imageRef: 'sha256:used' }];
    const { rt, removed } = fakeRuntime(images, containers, 'reg/pause:3.9');
    // 90 % full of 1000 MB: free 100 MB to get to 80 %.
    const events: string[] = [];
    const g = new ImageGC({
      settings: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 },
      runtime: () => rt, imageFs: async () => ({ capacity: 1000 * MB, available: 100 * MB }), nodeEvent: (_t, reason, message) => events.push(`${reason}: ${message}`), logger: silentLogger(), now: () => now,
    });
    await g.garbageCollect(); // first detection: every image is younger than the minimum age
    assert.equal(removed.length, 0);
    // b was used (by a container that is now gone) more recently than c; a never.
    containers.push({ image: 'reg/c:1', imageRef: 'sha256:c' });
    now += 10_000;
    await g.garbageCollect();
    containers.pop();
    containers.push({ image: 'reg/b:1', imageRef: 'sha256:b' });
    now += 10_000;
    await g.garbageCollect();
    containers.pop();
    now += 200_000;
    const r = await g.garbageCollect();
    // 100 MB wanted, 90 MB eligible: every unused image goes, least recently used first (a never used, then c, then b).
    assert.deepEqual(r.removed, ['sha256:a', 'sha256:c', 'sha256:b']);
    assert.equal(r.freedBytes, 90 * MB);
    assert.ok(!removed.includes('sha256:used') && !removed.includes('sha256:pinned') && !removed.includes('sha256:pause'));
    assert.equal(events.at(-1), 'FreeDiskSpaceFailed: Failed to garbage collect required amount of images. Attempted to free 100000000 bytes, but only found 90000000 bytes eligible to free.');
  });

  it('stops removing once enough is freed', async function () {
    const images = [img('sha256:a', 'reg/a:1', 60 * MB), img('sha256:b', 'reg/b:1', 60 * MB), img('sha256:c', 'reg/c:1', 60 * MB)];
    const { rt, removed } = fakeRuntime(images, []);
    const g = gc(rt, { capacity: 1000 * MB, available: 100 * MB }, { minAgeMs: 0 });
    const r = await g.garbageCollect();
    assert.equal(r.removed.length, 2, '120 MB >= the 100 MB needed');
    assert.equal(removed.length, 2);
  });

  it('below the high threshold nothing is removed; the maximum age removes images unused that long', async function () {
    const images = [img('sha256:old', 'reg/old:1', MB), img('sha256:used', 'reg/used:1', MB)];
    const { rt, removed } = fakeRuntime(images, [{ image: 'reg/used:1', imageRef: 'sha256:used' }]);
    const g = gc(rt, { capacity: 1000 * MB, available: 500 * MB }, { maxAgeMs: 3_600_000 });
    await g.garbageCollect();
    now += 3_000_000;
    await g.garbageCollect();
    assert.deepEqual(removed, []);
    now += 700_000;
    await g.garbageCollect();
    assert.deepEqual(removed, ['sha256:old']);
  });

  it('deleteAllUnused (the eviction reclaim for imagefs) removes every unused image past the minimum age', async function () {
    const images = [img('sha256:x', 'reg/x:1', MB), img('sha256:y', 'reg/y:1', MB), img('sha256:used', 'reg/used:1', MB)];
    const { rt, removed } = fakeRuntime(images, [{ image: 'reg/used:1', imageRef: 'sha256:used' }]);
    const g = gc(rt, { capacity: 1000 * MB, available: 900 * MB }, { minAgeMs: 0 });
    const r = await g.deleteAllUnused();
    assert.deepEqual(r.removed.sort(), ['sha256:x', 'sha256:y']);
    assert.deepEqual(removed.sort(), ['sha256:x', 'sha256:y']);
  });

  it('a sandbox image named without its registry is still recognized (docker.io/library normalization)', async function () {
    const images = [img('sha256:pause', 'docker.io/library/pause:3.9', MB)];
    const { rt, removed } = fakeRuntime(images, [], 'pause:3.9');
    await gc(rt, { capacity: 1000 * MB, available: 10 * MB }, { minAgeMs: 0 }).garbageCollect();
    assert.deepEqual(removed, []);
  });

  it('a runtime that cannot list images when GC starts is logged, not left as an unhandled rejection (which ends the kubelet)', async function () {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      const rt = { listImages: async () => { throw new Error('runtime away'); }, listContainers: async () => [] } as unknown as ContainerRuntime;
      const g = gc(rt, { capacity: 100 * MB, available: 50 * MB });
      g.start();
      await new Promise((r) => setTimeout(r, 20));
      await g.stop();
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
