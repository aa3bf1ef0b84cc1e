/**
 * Issue 17: a static pod whose manifest goes away and comes back (broken, then restored) while
 * its containers still stop. Before the fix, /pods listed its UID twice and the pod then sat
 * Pending until the next periodic resync (syncFrequency, a minute here).
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeletConfig } from '../../core/config/types.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const IMAGE = 'busybox:1.36';
/** How long the fake runtime takes to stop a container: the window in which the pod comes back. */
const STOP_MS = 1500;

describe('ux: a static pod wanted again while it stops', function () {
  this.timeout(30_000);
  let dir: string;
  let fake: FakeCriServer;
  let t: TestKubelet | undefined;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h17-replace-'));
    fake = await FakeCriServer.start(path.join(dir, 'cri.sock'));
    fake.addImage(IMAGE);
  });

  afterEach(async () => {
    fake.delay('StopContainer', 0);
    await t?.dispose(10_000).catch(() => {});
    t = undefined;
    await fake.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('is listed once on /pods and runs again as soon as its old containers stopped, not at the next resync', async () => {
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: fake.endpoint }]] as KubeletConfig['plugins'],
      config: { syncFrequencyMs: 60_000 },
      dir: path.join(dir, 'kubelet'),
    });
    const manifest = podManifest('hello', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 5 });
    await t.writeManifest('hello.yaml', manifest);
    const uid = (await t.waitForPod('hello', isRunning, 8000, 'Running'))!.metadata!.uid!;

    fake.delay('StopContainer', STOP_MS);
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
