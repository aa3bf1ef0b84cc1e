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
});
