import assert from 'node:assert/strict';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { startTestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Eviction in API-server mode, against the real control plane: the node's pressure condition
 * reaches the Node's status, an API pod the policy evicts is Failed/Evicted in the API with
 * upstream's message and an Evicted event, and a BestEffort pod is refused under memory pressure.
 * Pressure is made certain with a soft `memory.available` threshold of 100% without grace.
 */
describe('eviction in API-server mode', function () {
  this.timeout(240_000);
  const suite = clusterSuite('h15-eviction-api-');

  it('MemoryPressure on the Node; an API pod evicted (Failed/Evicted, event); BestEffort refused', async function () {
    const nodeName = `h15-evict-${process.pid}`;
    const ns = `h15-evict-${process.pid}`;
    suite.onCleanup(async () => {
      await suite.core.deleteNode({ name: nodeName }).catch(() => {});
      await suite.coordination.deleteNamespacedLease({ name: nodeName, namespace: 'kube-node-lease' }).catch(() => {});
    });
    const t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: suite.env.containerdEndpoint }], ['eviction-default']],
      config: {
        kubeconfig: await suite.cp.nodeKubeconfig(nodeName), nodeName, nodeIP: '127.0.0.1', syncFrequencyMs: 10_000, nodeStatusUpdateFrequencyMs: 1000,
        evictionHard: {},
        eviction: { soft: { 'memory.available': '100%' }, softGracePeriodMs: { 'memory.available': 0 }, minimumReclaim: {}, pressureTransitionPeriodMs: 5000, maxPodGracePeriodSeconds: 1, monitoringPeriodMs: 1000, evictStaticPods: false },
      },
      dir: path.join(suite.dir, nodeName),
    });
    suite.onCleanup(() => t.dispose());
    await suite.core.createNamespace({ body: { metadata: { name: ns } } });
    suite.onCleanup(async () => {
      await suite.core.deleteNamespace({ name: ns }).catch(() => {});
      // Its pods at once, not ~5 s later through the namespace controller: the kubelet's dispose waits for them.
      await suite.core.deleteCollectionNamespacedPod({ namespace: ns }).catch(() => {});
    });
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await suite.core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 30_000);

    const pressure = await waitFor('MemoryPressure True on the Node', async () => (await suite.core.readNode({ name: nodeName })).status?.conditions?.find((c) => c.type === 'MemoryPressure' && c.status === 'True'), 60_000);
    assert.equal(pressure.reason, 'KubeletHasInsufficientMemory');
    assert.equal(pressure.message, 'kubelet has insufficient memory available');

    const container = (extra: object = {}) => ({ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], ...extra });
    const create = (name: string, extra: object = {}) => suite.core.createNamespacedPod({ namespace: ns, body: { metadata: { name }, spec: { nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 30, containers: [container(extra)] } } });
    const failed = (name: string) => waitFor(`${name} Failed`, async () => { const p: V1Pod = await suite.core.readNamespacedPod({ name, namespace: ns }); return p.status?.phase === 'Failed' && p; }, 90_000);

    await create('h15-burstable', { resources: { requests: { memory: '1Mi' } } });
    const evicted = await failed('h15-burstable');
    assert.equal(evicted.status?.reason, 'Evicted');
    assert.match(evicted.status?.message ?? '', /^The node was low on resource: memory\. Threshold quantity: \w+, available: \w+\. /);
    // Upstream's DisruptionTarget condition (PodDisruptionConditions, on in 1.28), as the API server keeps it.
    const disruption = evicted.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual(disruption && [disruption.status, disruption.reason, disruption.message], ['True', 'TerminationByKubelet', evicted.status?.message]);
    const ev = await waitFor('an Evicted event in the API', async () => (await suite.core.listNamespacedEvent({ namespace: ns })).items.find((e) => e.reason === 'Evicted' && e.involvedObject.name === 'h15-burstable'), 30_000);
    assert.equal(ev.type, 'Warning');
    assert.equal(ev.message, evicted.status?.message);

    await create('h15-besteffort');
    const refused = await failed('h15-besteffort');
    assert.equal(refused.status?.reason, 'Evicted');
    assert.equal(refused.status?.message, 'The node had condition: [MemoryPressure]. ');
    assert.equal(refused.status?.conditions?.find((c) => c.type === 'DisruptionTarget'), undefined, 'refused at admission: no disruption condition');
  });
});
