import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, stopNodeVm, type TestNodeVm } from '../support/node-vm.ts';
import { runVmPod } from '../support/node-vm-pods.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Graceful node shutdown on a systemd node: the kubelet holds logind's delay lock, and a
 * `systemctl poweroff` in the guest waits while it terminates its pods, the ordinary ones first,
 * then the critical ones, each with its SIGTERM handler's time, their statuses reaching the API
 * server before the guest goes down. The guest powers off: this file runs last
 * (`npm run test:vm` orders it so), and a VM test after it would boot a new guest.
 */
describe('node VM: graceful node shutdown (shutdownGracePeriod, a logind delay lock)', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-shutdown-');
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, { extra: { shutdownGracePeriod: '90s', shutdownGracePeriodCriticalPods: '30s' } });
  });
  after(async function () {
    // Powered off: the run's VM is gone; a later test boots another.
    this.timeout(120_000);
    await stopNodeVm();
  });

  it("holds a delay lock on shutdown as 'kubelet', logind's InhibitDelayMaxSec raised to the grace period", async function () {
    await waitFor('the kubelet in the list of inhibitors', async () => /kubelet.*shutdown.*delay|shutdown.*kubelet.*delay/s.test((await t.ssh('systemd-inhibit --list --no-pager')).stdout), 120_000, 2000);
    const list = (await t.ssh('systemd-inhibit --list --no-pager')).stdout;
    assert.match(list, /Kubelet needs time to handle node shutdown/);
    assert.match((await t.ssh('cat /etc/systemd/logind.conf.d/99-kubelet.conf')).stdout, /^InhibitDelayMaxSec=90$/m);
    assert.equal((await t.ssh('busctl get-property org.freedesktop.login1 /org/freedesktop/login1 org.freedesktop.login1.Manager InhibitDelayMaxUSec')).stdout.trim(), 't 90000000');
  });

  it('systemctl poweroff: Ready False "node is shutting down"; ordinary pods then critical ones end Failed/Terminated with DisruptionTarget after their SIGTERM handlers ran; then the guest powers off', async function () {
    const ns = await suite.namespace('vm-shutdown');
    // Each container notes SIGTERM, takes 6 s to clean up, and exits 0: exit 0 proves it was not killed.
    const graceful = (name: string) => ({ name, image: t.env.images.busybox, command: ['sh', '-c', "trap 'sleep 6; exit 0' TERM; while true; do sleep 1; done"] });
    await Promise.all([
      runVmPod(t, ns, 'app', { terminationGracePeriodSeconds: 30, containers: [graceful('c')] }),
      runVmPod(t, ns, 'critical', { terminationGracePeriodSeconds: 30, priorityClassName: 'system-node-critical', containers: [graceful('c')] }),
    ]);
    const t0 = Date.now();
    await t.ssh('systemctl poweroff', { allowFailure: true, timeoutMs: 30_000 }).catch(() => {});

    let notReady: string | undefined;
    const done = (p: V1Pod) => p.status?.phase === 'Failed' && p.status.containerStatuses?.[0]?.state?.terminated !== undefined;
    const pods = await waitFor('both pods Failed with their containers terminated, as the API server has them', async () => {
      const node = await t.core.readNode({ name: t.nodeName });
      const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
      if (ready?.status === 'False') notReady ??= ready.message;
      const [app, critical] = await Promise.all(['app', 'critical'].map((name) => t.core.readNamespacedPod({ name, namespace: ns })));
      return done(app!) && done(critical!) ? { app: app!, critical: critical! } : undefined;
    }, 240_000, 1000);
    const terminatedAfter = (Date.now() - t0) / 1000;

    for (const [name, p] of Object.entries(pods)) {
      assert.equal(p.status?.reason, 'Terminated', `${name}: reason`);
      assert.equal(p.status?.message, 'Pod was terminated in response to imminent node shutdown.', `${name}: message`);
      const disruption = p.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
      assert.deepEqual([disruption?.status, disruption?.reason], ['True', 'TerminationByKubelet'], `${name}: DisruptionTarget`);
      assert.equal(p.status?.containerStatuses?.[0]?.state?.terminated?.exitCode, 0, `${name}: its SIGTERM handler ran to its end (exit 0, not a kill)`);
    }
    const finished = (p: V1Pod) => new Date(p.status!.containerStatuses![0]!.state!.terminated!.finishedAt!).getTime();
    assert.ok(finished(pods.critical) >= finished(pods.app), `the critical pod ends after the ordinary one (${pods.critical.status!.containerStatuses![0]!.state!.terminated!.finishedAt} >= ${pods.app.status!.containerStatuses![0]!.state!.terminated!.finishedAt})`);
    assert.equal(notReady ?? (await t.core.readNode({ name: t.nodeName })).status?.conditions?.find((c) => c.type === 'Ready')?.message, 'node is shutting down');

    // Then the shutdown goes on: the guest powers off (qemu ends).
    await waitFor('the guest powered off', async () => !(await t.vm.running()), 240_000, 2000);
    const offAfter = (Date.now() - t0) / 1000;
    console.log(`      pods terminated ${terminatedAfter.toFixed(0)} s after poweroff; guest off after ${offAfter.toFixed(0)} s`);
  });
});
