/**
 * Issue 17: a static pod whose manifest goes away and comes back (broken, then restored) while
 * its containers still stop. Before the fix, /pods listed its UID twice and the pod then sat
 * Pending until the next periodic resync (syncFrequency, a minute here).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';

const IMAGE = 'busybox:1.36';
/** How long the fake runtime takes to stop a container: the window in which the pod comes back. */
const STOP_MS = 1500;

describe('ux: a static pod wanted again while it stops', function () {
  this.timeout(30_000);
  const suite = fakeCriSuite({ prefix: 'h17-replace-', images: [IMAGE] });

  it('is listed once on /pods and runs again as soon as its old containers stopped, not at the next resync', async () => {
    const t = await suite.start({ syncFrequencyMs: 60_000 });
    const manifest = podManifest('hello', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 5 });
    await t.writeManifest('hello.yaml', manifest);
    const uid = (await t.waitForPod('hello', isRunning, 8000, 'Running'))!.metadata!.uid!;

    suite.fake.delay('StopContainer', STOP_MS);
    await t.removeManifest('hello.yaml');
    await t.waitForPod('hello', (p) => !!p?.metadata?.deletionTimestamp, 5000, 'terminating');
    await t.writeManifest('hello.yaml', manifest);

    // While the old instance stops, and after: never two entries for one UID.
    const deadline = Date.now() + STOP_MS + 6000;
    let runningAgainAt: number | undefined;
    const removedAt = Date.now();
    while (Date.now() < deadline) {
      const same = t.kubelet.pods().filter((p) => p.metadata?.uid === uid);
      assert.ok(same.length <= 1, `/pods lists UID ${uid} ${same.length} times`);
      const pod = same[0];
      if (pod && !pod.metadata?.deletionTimestamp && isRunning(pod)) {
        runningAgainAt = Date.now();
        break;
      }
      await sleep(50);
    }
    assert.ok(runningAgainAt, `pod hello not Running again within ${STOP_MS + 6000} ms; last: ${JSON.stringify(t.pod('hello')?.status ?? null)}`);
    assert.ok(runningAgainAt - removedAt < STOP_MS + 5000, `took ${runningAgainAt - removedAt} ms`);
  });
});
