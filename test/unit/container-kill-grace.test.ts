import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerKillGraceSeconds } from '../../core/pod/container-kill-grace.ts';
import { Backoff } from '../../core/pod/backoff.ts';
import { computePodActions } from '../../core/pod/pod-actions.ts';
import { makeContainer, makePod, makeRuntimeStatus, makeSandbox } from '../support/runtime-fixtures.ts';

/** Probe-level terminationGracePeriodSeconds (upstream's setTerminationGracePeriod, ProbeTerminationGracePeriod GA in 1.28). */
describe('container kill grace period', () => {
  const probed: V1Container = {
    name: 'app', image: 'busybox',
    livenessProbe: { exec: { command: ['false'] }, terminationGracePeriodSeconds: 1 },
    startupProbe: { exec: { command: ['false'] }, terminationGracePeriodSeconds: 3 },
  };
  const pod = (extra: Partial<V1Pod['spec']> = {}, meta: Partial<V1Pod['metadata']> = {}): V1Pod =>
    ({ metadata: { name: 'p', namespace: 'ns', uid: 'u1', ...meta }, spec: { containers: [probed], terminationGracePeriodSeconds: 600, ...extra } });

  it('a failed liveness probe with its own grace replaces the pod\'s for that kill', () => {
    assert.equal(containerKillGraceSeconds(pod(), probed, 'liveness'), 1);
  });

  it('a failed startup probe uses the startup probe\'s grace, not the liveness probe\'s', () => {
    assert.equal(containerKillGraceSeconds(pod(), probed, 'startup'), 3);
  });

  it('any other kill (a spec change, no probe) keeps the pod\'s grace', () => {
    assert.equal(containerKillGraceSeconds(pod(), probed), 600);
  });

  it('a probe without its own grace falls back to the pod\'s (30 when the pod sets none)', () => {
    const plain: V1Container = { name: 'app', image: 'busybox', livenessProbe: { exec: { command: ['false'] } } };
    assert.equal(containerKillGraceSeconds(pod(), plain, 'liveness'), 600);
    assert.equal(containerKillGraceSeconds({ metadata: { name: 'p' }, spec: { containers: [plain] } }, plain, 'liveness'), 30);
  });

  it('a pod being deleted keeps its deletionGracePeriodSeconds, whatever the probe says', () => {
    assert.equal(containerKillGraceSeconds(pod({}, { deletionGracePeriodSeconds: 20 }), probed, 'liveness'), 20);
  });

  it('hostile input: a probe grace of 0, negative or not a number is ignored (the pod\'s applies)', () => {
    for (const bad of [0, -5, 'x' as unknown as number, Number.NaN]) {
      const c: V1Container = { name: 'app', image: 'busybox', livenessProbe: { terminationGracePeriodSeconds: bad } };
      assert.equal(containerKillGraceSeconds(pod(), c, 'liveness'), 600, `probe grace ${String(bad)}`);
    }
  });

  it('computePodActions names the failed probe on the kill, so the sync uses its grace', () => {
    const p = makePod({ containers: [probed] });
    const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(probed)]);
    const id = rs.containers[0]!.id;
    const live = computePodActions(p, rs, new Backoff(10_000, 300_000), Date.now(), new Map([[id, 'liveness']]));
    assert.deepEqual(live.containersToKill.map((k) => [k.name, k.failedProbe]), [['app', 'liveness']]);
    const start = computePodActions(p, rs, new Backoff(10_000, 300_000), Date.now(), new Map([[id, 'startup']]));
    assert.equal(start.containersToKill[0]!.failedProbe, 'startup');
    assert.equal(computePodActions(p, rs, new Backoff(10_000, 300_000)).containersToKill.length, 0);
  });
});
