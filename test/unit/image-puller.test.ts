import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { Backoff } from '../../core/pod/backoff.ts';
import { ImagePuller } from '../../core/pod/image-puller.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, PodSandboxConfig } from '../../core/runtime/types.ts';

/** A runtime whose pulls take `ms` and that records how many run at once. */
function pullingRuntime(ms: number, missing = new Set<string>()) {
  const stats = { active: 0, maxActive: 0, pulls: [] as string[] };
  const runtime = {
    imageStatus: async () => null,
    pullImage: async (image: string) => {
      stats.pulls.push(image);
      stats.active++;
      stats.maxActive = Math.max(stats.maxActive, stats.active);
      await new Promise((r) => setTimeout(r, ms));
      stats.active--;
      if (missing.has(image)) throw new Error(`failed to pull and unpack image "${image}": not found`);
      return `sha256:${image}`;
    },
  } as unknown as ContainerRuntime;
  return { runtime, stats };
}

const pod = (uid: string): V1Pod => ({ metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [] } });
const container = (image: string): V1Container => ({ name: 'c', image, imagePullPolicy: 'IfNotPresent' });
const sandbox = {} as PodSandboxConfig;

describe('ImagePuller', () => {
  it('pulls different images in parallel by default', async () => {
    const { runtime, stats } = pullingRuntime(30);
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger() });
    await Promise.all(['a', 'b', 'c', 'd'].map((img, i) => puller.ensure(pod(`p${i}`), container(img), sandbox)));
    assert.equal(stats.maxActive, 4);
  });

  it('keeps to maxParallelImagePulls', async () => {
    const { runtime, stats } = pullingRuntime(20);
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), maxParallelPulls: 2 });
    const results = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((img, i) => puller.ensure(pod(`p${i}`), container(img), sandbox)));
    assert.equal(stats.maxActive, 2);
    assert.deepEqual(results.map((r) => ('imageRef' in r ? r.imageRef : r.reason)), ['sha256:a', 'sha256:b', 'sha256:c', 'sha256:d', 'sha256:e']);
  });

  it('shares one pull among pods that need the same image', async () => {
    const { runtime, stats } = pullingRuntime(20);
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger() });
    await Promise.all([0, 1, 2].map((i) => puller.ensure(pod(`p${i}`), container('same'), sandbox)));
    assert.deepEqual(stats.pulls, ['same']);
  });

  it('reports ErrImagePull, then ImagePullBackOff while the back-off lasts', async () => {
    const { runtime } = pullingRuntime(1, new Set(['gone']));
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger() });
    const first = await puller.ensure(pod('p'), container('gone'), sandbox);
    assert.equal('reason' in first && first.reason, 'ErrImagePull');
    assert.match('message' in first ? first.message : '', /Failed to pull image "gone": .*not found/);
    const second = await puller.ensure(pod('p'), container('gone'), sandbox);
    assert.deepEqual(second, { reason: 'ImagePullBackOff', message: 'Back-off pulling image "gone"' });
  });

  describe('a pod that gives up (deleted, the kubelet stopping) while its image is pulled', function () {
    /** A runtime whose pulls last until their signal aborts, or until `finish` is called. */
    function holdingRuntime() {
      const pulls: Array<{ image: string; signal: AbortSignal; finish(): void }> = [];
      const runtime = {
        imageStatus: async () => null,
        pullImage: (image: string, _auth: unknown, _sc: unknown, options?: { signal?: AbortSignal }) => new Promise<string>((resolve, reject) => {
          const signal = options?.signal ?? new AbortController().signal;
          pulls.push({ image, signal, finish: () => resolve(`sha256:${image}`) });
          signal.addEventListener('abort', () => reject(new Error('context canceled')), { once: true });
        }),
      } as unknown as ContainerRuntime;
      return { runtime, pulls };
    }
    const until = async (what: string, cond: () => boolean) => {
      for (let i = 0; i < 200 && !cond(); i++) await new Promise((r) => setTimeout(r, 5));
      assert.ok(cond(), what);
    };

    it('the runtime pull is cancelled when the only pod waiting for it gives up; no ErrImagePull, no back-off', async function () {
      const { runtime, pulls } = holdingRuntime();
      const events: string[] = [];
      const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events: { record: (_ref: unknown, _type: string, reason: string) => events.push(reason) } as never });
      const pod1 = new AbortController();
      const waiting = puller.ensure(pod('p1'), container('big'), sandbox, false, undefined, pod1.signal);
      await until('the pull started', () => pulls.length === 1);
      pod1.abort(new Error('the pod is being deleted'));
      await assert.rejects(waiting, /the pod is being deleted/);
      assert.equal(pulls[0]!.signal.aborted, true, 'the runtime was told to stop pulling');
      assert.deepEqual(events, ['Pulling'], 'no Failed event for a pull the pod gave up');
      assert.equal(puller.activePulls('p1').length, 0);
      // The same pod's next sync pulls afresh (not the cancelled pull), with no back-off.
      const later = puller.ensure(pod('p1'), container('big'), sandbox);
      await until('a new pull', () => pulls.length === 2);
      pulls[1]!.finish();
      const r = await later;
      assert.equal('imageRef' in r ? r.imageRef : r.reason, 'sha256:big');
    });

    it('a pull other pods still wait for goes on; it is cancelled when the last of them gives up', async function () {
      const { runtime, pulls } = holdingRuntime();
      const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger() });
      const [a, b, c] = [new AbortController(), new AbortController(), new AbortController()];
      const wa = puller.ensure(pod('a'), container('shared'), sandbox, false, undefined, a.signal);
      const wb = puller.ensure(pod('b'), container('shared'), sandbox, false, undefined, b.signal);
      await until('one pull for both', () => pulls.length === 1);
      a.abort(new Error('a deleted'));
      await assert.rejects(wa, /a deleted/);
      assert.equal(pulls[0]!.signal.aborted, false, 'b still waits: the pull goes on');
      pulls[0]!.finish();
      const rb = await wb;
      assert.equal('imageRef' in rb && rb.imageRef, 'sha256:shared');
      // Another image: both waiters give up, then the pull is cancelled.
      const wc = puller.ensure(pod('c'), container('other'), sandbox, false, undefined, c.signal);
      const b2 = new AbortController();
      const wb2 = puller.ensure(pod('b'), container('other'), sandbox, false, undefined, b2.signal);
      await until('the second pull', () => pulls.length === 2);
      c.abort(new Error('c deleted'));
      await assert.rejects(wc, /c deleted/);
      assert.equal(pulls[1]!.signal.aborted, false);
      b2.abort(new Error('b deleted'));
      await assert.rejects(wb2, /b deleted/);
      assert.equal(pulls[1]!.signal.aborted, true, 'the last waiter gone: the runtime stops pulling');
    });

    it('a pull waiting for a slot (maxParallelImagePulls) that every pod gave up never reaches the runtime, and frees its turn', async function () {
      const { runtime, pulls } = holdingRuntime();
      const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), maxParallelPulls: 1 });
      const first = puller.ensure(pod('p1'), container('one'), sandbox);
      await until('the first pull', () => pulls.length === 1);
      const gaveUp = new AbortController();
      const queued = puller.ensure(pod('p2'), container('two'), sandbox, false, undefined, gaveUp.signal);
      const third = puller.ensure(pod('p3'), container('three'), sandbox);
      await new Promise((r) => setTimeout(r, 20));
      gaveUp.abort(new Error('p2 deleted'));
      await assert.rejects(queued, /p2 deleted/);
      pulls[0]!.finish();
      await first;
      await until('the third pull took the slot', () => pulls.length === 2);
      assert.deepEqual(pulls.map((p) => p.image), ['one', 'three'], 'the given-up pull never ran');
      pulls[1]!.finish();
      await third;
    });
  });
});
