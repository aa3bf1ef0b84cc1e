/**
 * Issue 17: the Pulled event as upstream (1.29+) writes it, with the pull's duration, the wait
 * included, and the image's size: `Successfully pulled image "x" in 12ms (12ms including
 * waiting). Image size: 4200 bytes.`
 */
import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { Backoff } from '../../core/pod/backoff.ts';
import { ImagePuller } from '../../core/pod/image-puller.ts';
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
    assert.match(pulledMsg!, /^Successfully pulled image "busybox:1\.36" in \d+ms \(\d+ms including waiting\)\. Image size: 4200 bytes\.$/);
  });

  it('leaves the size out when the runtime cannot tell it, and the pull still succeeds', async () => {
    const runtime = { imageStatus: async () => { throw new Error('unavailable'); }, pullImage: async () => 'sha256:abc' } as unknown as ContainerRuntime;
    const events = new EventRecorder({ nodeName: 'vm', logger: silentLogger() });
    const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events });
    const r = await puller.ensure(pod, { name: 'c', image: 'busybox:1.36', imagePullPolicy: 'Always' }, {} as PodSandboxConfig);
    assert.ok('imageRef' in r);
    assert.match(messages(events, 'Pulled')[0]!, /including waiting\)\.$/);
  });
});
