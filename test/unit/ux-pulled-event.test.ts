/**
 * Issue 17: the Pulled event as upstream (1.29+) writes it, with the pull's duration, the wait
 * included, and the image's size: `Successfully pulled image "x" in 12ms (12ms including
 * waiting). Image size: 4200 bytes.`
 */
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff } from '../../core/pod/backoff.ts';
import { ImagePuller, pulledMessage } from '../../core/pod/image-puller.ts';
import { formatDuration } from '../../core/util/duration.ts';
import { EventRecorder } from '../../core/events/event-recorder.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, PodSandboxConfig } from '../../core/runtime/types.ts';

describe('ux: the Pulled event', () => {
  const pod: V1Pod = { metadata: { name: 'p', namespace: 'default', uid: 'u1' }, spec: { containers: [] } };
  const messages = (events: EventRecorder, reason: string) => events.list(0).filter((e) => e.reason === reason).map((e) => e.message);

  it('carries the duration and the size the runtime reports for the pulled image', async () => {
    let pulled = false;
    const runtime = {
      imageStatus: async (ref: string) => (pulled && ref === 'sha256:abc' ? { id: ref, repoTags: [], repoDigests: [], size: 4200 } : null),
      pullImage: async () => {
        pulled = true;
        return 'sha256:abc';
      },
    } as unknown as ContainerRuntime;
    const events = new EventRecorder({ nodeName: 'vm', logger: silentLogger() });
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events });
    await puller.ensure(pod, { name: 'c', image: 'busybox:1.36', imagePullPolicy: 'Always' }, {} as PodSandboxConfig);
    assert.deepEqual(messages(events, 'Pulling'), ['Pulling image "busybox:1.36"']);
    const [pulledMsg] = messages(events, 'Pulled');
    // Go durations truncated to milliseconds: an instant pull is `0s`, as upstream prints it.
    assert.match(pulledMsg!, /^Successfully pulled image "busybox:1\.36" in (0s|\d+ms) \((0s|\d+ms) including waiting\)\. Image size: 4200 bytes\.$/);
  });

  it('leaves the size out when the runtime cannot tell it, and the pull still succeeds', async () => {
    const runtime = { imageStatus: async () => { throw new Error('unavailable'); }, pullImage: async () => 'sha256:abc' } as unknown as ContainerRuntime;
    const events = new EventRecorder({ nodeName: 'vm', logger: silentLogger() });
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events });
    const r = await puller.ensure(pod, { name: 'c', image: 'busybox:1.36', imagePullPolicy: 'Always' }, {} as PodSandboxConfig);
    assert.ok('imageRef' in r);
    assert.match(messages(events, 'Pulled')[0]!, /including waiting\)\.$/);
  });

  it('writes durations as Go does after Truncate(time.Millisecond), as upstream 1.28 words the message', () => {
    assert.equal(pulledMessage('big:1', 1234.9, 1500, 300_000_000), 'Successfully pulled image "big:1" in 1.234s (1.5s including waiting). Image size: 300000000 bytes.');
    assert.equal(pulledMessage('x', 999.9, 0.4), 'Successfully pulled image "x" in 999ms (0s including waiting).');
    assert.equal(pulledMessage('x', 62_500, 3_600_000, 0), 'Successfully pulled image "x" in 1m2.5s (1h0m0s including waiting). Image size: 0 bytes.');
    // Hostile sizes from a runtime are left out, not printed.
    assert.equal(pulledMessage('x', 2000, 2000, Number.NaN), 'Successfully pulled image "x" in 2s (2s including waiting).');
    assert.equal(pulledMessage('x', 2000, 2000, -1), 'Successfully pulled image "x" in 2s (2s including waiting).');
  });

  it('formats Go durations: ms below a second, h/m/s above, trailing zeros dropped', () => {
    const cases: Array<[number, string]> = [[0, '0s'], [-5, '0s'], [Number.NaN, '0s'], [0.7, '0s'], [1, '1ms'], [850, '850ms'], [1000, '1s'], [1010, '1.01s'], [59_999, '59.999s'], [60_000, '1m0s'], [3_661_500, '1h1m1.5s']];
    for (const [ms, text] of cases) assert.equal(formatDuration(ms), text, `${ms} ms`);
  });
});
