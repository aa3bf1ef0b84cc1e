import assert from 'node:assert/strict';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';

/**
 * containerd 2.1 streams container events (CRI GetContainerEvents; containerd 1.6 has none):
 * the kubelet's PLEG relists as soon as one comes. With the relist and the pod resync both set to
 * ten minutes, only an event can make the kubelet see a container exit within the test's bound.
 */
describe("node VM: PLEG on containerd 2.1's container events", function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-events-');
  let t: TestNodeVm;
  let since = 0;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, false);
    since = await t.now();
    await t.startKubelet({ cgroupDriver: 'systemd', extra: { syncFrequency: '10m' }, pluginsConfig: { plegRelistPeriod: '10m' } });
  });

  it("a container's exit is in its pod's status within minutes though PLEG relists every ten: the runtime's event made it look", async function () {
    const ns = await suite.namespace('vm-events');
    const t0 = performance.now();
    const pod = await runVmPod(
      t,
      ns,
      'quits',
      { restartPolicy: 'Never', containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'sleep 8; exit 3'] }] },
      { until: (p) => !!p.status?.containerStatuses?.[0]?.state?.terminated, timeoutMs: 180_000 },
    ).catch((err: Error) => assert.fail(`the container's exit was not in the pod's status within 3 minutes (PLEG relists every 10: no event reached it): ${err.message}`));
    const term = pod.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(term.exitCode, 3);
    assert.equal(pod.status?.phase, 'Failed');
    const seenAfterExit = Date.now() - new Date(term.finishedAt!).getTime();
    process.stderr.write(`      created to exit in the status: ${((performance.now() - t0) / 1000).toFixed(0)} s; the exit reached the API ~${Math.max(0, seenAfterExit / 1000).toFixed(0)} s after it happened\n`);
    assert.match(await t.journal('kubelet-ts', since), /container events from the runtime: PLEG relists as soon as a container changes/);
    await deleteVmPod(t, ns, 'quits');
  });
});
