import assert from 'node:assert/strict';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import type { ProbeResults } from '../../core/status/probe-results.ts';
import type { ImagePuller } from '../../core/pod/image-puller.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGE = 'busybox:1.36';

/**
 * Per-pod and per-container state goes with its pod and container (issue 24 item 2): a node
 * that churns pods, and pods that crash-loop for months, must not grow the kubelet. Probe
 * results of a dead instance go when it is collected; the image puller's pull times when the
 * pod goes.
 */
describe('per-pod and per-container maps are emptied when their pod or container goes', function () {
  this.timeout(60_000);
  const suite = fakeCriSuite({ prefix: 'kts-maps-', images: [IMAGE] });

  it('after crash loops and pod churn, probe results and pull times are back to where they started', async () => {
    // What a probes plugin does: a readiness result for every container started.
    const reporter = definePlugin({
      name: 'ready-reporter',
      apply(ctx) {
        ctx.hooks.afterStart.tapPromise('ready-reporter', async (e) => {
          await ctx.reportProbe({ pod: e.pod, containerName: e.container.name, containerId: e.containerId, probe: 'readiness', result: 'success', output: '' });
        });
      },
    });
    const t = await suite.start({ crashLoopBackOff: { initialMs: 50, maxMs: 100 }, plegRelistPeriodMs: 50, maxPerPodContainer: 0 }, [reporter]);
    const internals = t.kubelet as unknown as { probes: ProbeResults; engine: { puller: ImagePuller } };
    const probesAtStart = internals.probes.size;
    const pullsAtStart = internals.engine.puller.podsWithPullTime;

    for (let round = 0; round < 3; round++) {
      const name = `churn${round}`;
      await t.writeManifest(`${name}.json`, podManifest(name, [{ name: 'app', image: IMAGE, imagePullPolicy: 'Always', command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 0 }));
      let pod = (await t.waitForPod(name, isRunning, 10_000, 'Running'))!;
      // Crash it a few times: each dead instance is collected (maxPerPodContainer 0) and its probe result with it.
      for (let crash = 1; crash <= 3; crash++) {
        const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^[^:]+:\/\//, '');
        suite.fake.exitContainer(id, 1);
        pod = (await t.waitForPod(name, (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= crash && !!p?.status?.containerStatuses?.[0]?.state?.running, 10_000, `restart ${crash}`))!;
      }
      await waitFor('the collected instances\' probe results gone', () => internals.probes.size <= probesAtStart + 1, 10_000);
      await t.removeManifest(`${name}.json`);
      await t.waitForPod(name, (p) => p === undefined, 10_000, 'removed');
    }
    await waitFor('probe results back to the start', () => internals.probes.size === probesAtStart, 10_000);
    assert.equal(internals.engine.puller.podsWithPullTime, pullsAtStart, 'pull times go with their pods');
  });
});
