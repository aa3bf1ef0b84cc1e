import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { insufficientResources, type AdmissionNode } from '../../core/pod/admission.ts';
import { podsToPreempt, preemptForCriticalPod } from '../../core/pod/critical-pod-preemption.ts';
import { silentLogger } from '../../core/logger.ts';

/** A pod with one container of these requests (and limits equal to them with `guaranteed`), of priority `priority`. */
function pod(name: string, requests: Record<string, string> = {}, opts: { guaranteed?: boolean; priority?: number; critical?: boolean; nodeSelector?: Record<string, string> } = {}): V1Pod {
  return {
    metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...(opts.critical ? { annotations: { 'kubernetes.io/config.source': 'file' } } : {}) },
    spec: {
      ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
      ...(opts.nodeSelector ? { nodeSelector: opts.nodeSelector } : {}),
      containers: [{ name: 'c', image: 'i', resources: { requests, ...(opts.guaranteed ? { limits: requests } : {}) } }],
    },
  };
}

const isCritical = (p: V1Pod) => p.metadata?.annotations?.['kubernetes.io/config.source'] === 'file';
const names = (pods: V1Pod[]) => pods.map((p) => p.metadata!.name);
const node = (pods: number, cpu = 4000): AdmissionNode => ({ allocatable: { cpu, memory: 8 * 2 ** 30, 'ephemeral-storage': 100 * 2 ** 30, pods }, labels: { zone: 'a' }, taints: [] });

describe('critical pod preemption (upstream pkg/kubelet/preemption)', function () {
  it('what a pod lacks: each resource it does not fit with the amount missing, pods counted as one each', function () {
    const admitted = [pod('a', { cpu: '3' }), pod('b', { memory: '1Gi' })];
    const { missing, otherFailure } = insufficientResources(pod('crit', { cpu: '2' }, { critical: true }), admitted, node(2), { nodeName: 'n', isStatic: true });
    assert.deepEqual(missing, [{ resource: 'pods', quantity: 1 }, { resource: 'cpu', quantity: 1000 }]);
    assert.equal(otherFailure, undefined);
    const elsewhere = insufficientResources(pod('crit', { cpu: '2' }, { critical: true, nodeSelector: { zone: 'b' } }), admitted, node(2), { nodeName: 'n', isStatic: true });
    assert.equal(elsewhere.otherFailure?.reason, 'NodeAffinity', 'a failure no preemption can mend stands');
  });

  it('BestEffort pods go before Burstable ones, Burstable before Guaranteed; the fewest that free what is missing', function () {
    const be = pod('be');
    const burst = pod('burst', { cpu: '500m' });
    const guar = pod('guar', { cpu: '1', memory: '1Gi' }, { guaranteed: true });
    assert.deepEqual(names(podsToPreempt(pod('crit', {}, { critical: true }), [guar, burst, be], [{ resource: 'pods', quantity: 1 }], isCritical)), ['be']);
    // cpu: the BestEffort pod frees none, so Burstable ones first, the closest to what is missing first.
    const b600 = pod('b600', { cpu: '600m' });
    const b500 = pod('b500', { cpu: '500m' });
    assert.deepEqual(names(podsToPreempt(pod('crit', {}, { critical: true }), [be, b500, b600], [{ resource: 'cpu', quantity: 1000 }], isCritical)), ['b600', 'b500']);
    // Guaranteed only when the others together cannot free it.
    assert.deepEqual(names(podsToPreempt(pod('crit', {}, { critical: true }), [be, burst, guar], [{ resource: 'cpu', quantity: 1200 }], isCritical)), ['burst', 'guar']);
  });

  it('never ends a critical pod for another of equal or no priority; a higher priority may; not enough is upstream\'s error', function () {
    const other = pod('other-static', {}, { critical: true });
    assert.throws(() => podsToPreempt(pod('crit', {}, { critical: true }), [other], [{ resource: 'pods', quantity: 1 }], isCritical),
      { message: 'no set of running pods found to reclaim resources: [(res: pods, q: 1), ]' });
    const low = pod('low', {}, { critical: true, priority: 2_000_000_000 });
    assert.deepEqual(names(podsToPreempt(pod('crit', {}, { critical: true, priority: 2_000_001_000 }), [low], [{ resource: 'pods', quantity: 1 }], isCritical)), ['low']);
  });

  it('ends the chosen pods, waits for them to stop, then admits; a rejection when no set of pods frees enough', async function () {
    const stopped = new Set<string>();
    const ended: string[] = [];
    const deps = {
      isCritical, logger: silentLogger(), nodeName: 'n',
      end: (v: V1Pod) => {
        ended.push(v.metadata!.name!);
        setTimeout(() => stopped.add(v.metadata!.uid!), 200);
        return true;
      },
      stopped: (uid: string) => stopped.has(uid),
    };
    const started = Date.now();
    assert.equal(await preemptForCriticalPod(pod('crit', {}, { critical: true }), [pod('a'), pod('b')], node(2), deps), undefined);
    assert.deepEqual(ended, ['b'], 'of equals, the last listed (upstream: a tie goes to the pod compared later)');
    assert.ok(Date.now() - started >= 190, 'admitted once the victim stopped');
    const none = await preemptForCriticalPod(pod('crit', { cpu: '8' }, { critical: true }), [pod('a')], node(2), deps);
    assert.deepEqual(none, {
      reason: 'UnexpectedAdmissionError',
      message: 'Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: no set of running pods found to reclaim resources: [(res: cpu, q: 4000), ]',
    });
  });
});
