import assert from 'node:assert/strict';
import { PatchStrategy, setHeaderOptions, type V1Pod, type V1PodCondition } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Readiness gates (spec.readinessGates), as a load balancer controller uses them: a pod whose
 * containers are ready stays not Ready until another component sets the gate's condition True
 * in the API, and goes back to not Ready when it is set False; the kubelet's own status patches
 * leave that condition alone.
 */
describe('readiness gates on the real control plane', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-gates-');

  it('a pod is Ready only once its gate condition is True, and not Ready again when it turns False', async function () {
    const n = suite.node('gates');
    await suite.kubelet(n);
    await suite.nodeReady(n.name);
    const ns = await suite.namespace('gates');
    const gate = 'example.com/lb-registered';
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'gated' },
        spec: {
          nodeName: n.name,
          terminationGracePeriodSeconds: 1,
          readinessGates: [{ conditionType: gate }],
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }],
        },
      },
    });
    const read = () => suite.core.readNamespacedPod({ name: 'gated', namespace: ns });
    const cond = (p: V1Pod, type: string) => p.status?.conditions?.find((c) => c.type === type);

    const waiting = await waitFor('containers ready, the pod held back by its gate', async () => {
      const p = await read();
      return cond(p, 'ContainersReady')?.status === 'True' && cond(p, 'Ready')?.reason === 'ReadinessGatesNotReady' ? p : undefined;
    }, 90_000, 500);
    assert.equal(cond(waiting, 'Ready')!.status, 'False');
    assert.equal(cond(waiting, 'Ready')!.message, `corresponding condition of pod readiness gate "${gate}" does not exist.`);

    // The controller sets the gate (a status patch, as controllers do).
    const setGate = async (status: 'True' | 'False') => {
      const condition: V1PodCondition = { type: gate, status, lastTransitionTime: new Date() };
      await suite.core.patchNamespacedPodStatus(
        { name: 'gated', namespace: ns, body: { status: { conditions: [condition] } } },
        setHeaderOptions('Content-Type', PatchStrategy.StrategicMergePatch),
      );
    };
    await setGate('True');
    const ready = await waitFor('Ready once the gate is True', async () => {
      const p = await read();
      return cond(p, 'Ready')?.status === 'True' ? p : undefined;
    }, 60_000, 500);
    assert.equal(cond(ready, gate)!.status, 'True', 'the kubelet\'s status patches kept the gate\'s condition');

    await setGate('False');
    const unready = await waitFor('not Ready once the gate is False', async () => {
      const p = await read();
      return cond(p, 'Ready')?.status === 'False' ? p : undefined;
    }, 60_000, 500);
    assert.equal(cond(unready, 'Ready')!.reason, 'ReadinessGatesNotReady');
    assert.equal(cond(unready, 'Ready')!.message, `the status of pod readiness gate "${gate}" is not "True", but False`);
    assert.equal(cond(unready, 'ContainersReady')!.status, 'True');
  });
});
