import assert from 'node:assert/strict';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { ownControlPlaneOrSkip } from '../support/control-plane.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The control plane's etcd is wiped under a running node (`control-plane.sh down DIR --wipe`,
 * then `up`): the API server comes back with none of the old objects and a resourceVersion below
 * the one the kubelet's pod watch holds. The kubelet must see it: the pod the server no longer
 * has is killed, and a pod created on the new etcd starts. (Before the re-list, the watch
 * resumed from the old resourceVersion, got nothing, and the new pod stayed Pending.)
 * The test has a control plane of its own: the run's shared one stays up for the other tests.
 */
describe('reliability: etcd wiped under a running node', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-wipe-');

  const sleeper = (name: string, nodeName: string): V1Pod => ({
    metadata: { name },
    spec: {
      nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, enableServiceLinks: false,
      containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }],
    },
  });
  const ofPod = (uid: string) => ({ labelSelector: { [LABEL.podUID]: uid } });
  const running = async (core: CoreV1Api, name: string, ns: string, timeoutMs: number) => waitFor(`${ns}/${name} Running`, async () => {
    const p = await core.readNamespacedPod({ name, namespace: ns }).catch(() => undefined);
    return p?.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.running) && p;
  }, timeoutMs, 500);
  const namespace = async (core: CoreV1Api, ns: string) => {
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 60_000);
  };
  /** Removes what is left of a pod in containerd (best effort, after the test). */
  const removeFromRuntime = async (uid: string) => {
    for (const c of await suite.runtime.listContainers(ofPod(uid))) {
      await suite.runtime.stopContainer(c.id, 0).catch(() => {});
      await suite.runtime.removeContainer(c.id).catch(() => {});
    }
    for (const sb of await suite.runtime.listPodSandboxes(ofPod(uid))) {
      await suite.runtime.stopPodSandbox(sb.id).catch(() => {});
      await suite.runtime.removePodSandbox(sb.id).catch(() => {});
    }
  };

  it('after the wipe, the pod the server no longer has is killed and a new pod starts', async function () {
    const cp = await ownControlPlaneOrSkip(this, 'wipe');
    suite.onCleanup(() => cp.stop());
    const core = cp.admin.makeApiClient(CoreV1Api);
    const node = suite.node('wipe');
    await suite.kubelet(node, { kubeconfig: await cp.nodeKubeconfig(node.name) });
    await waitFor(`Node ${node.name} Ready`, async () => (await core.readNode({ name: node.name }).catch(() => undefined))?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'), 60_000);
    const ns = suite.uniqueName('wipe');
    await namespace(core, ns);
    await core.createNamespacedPod({ namespace: ns, body: sleeper('before', node.name) });
    const oldUid = (await running(core, 'before', ns, 120_000)).metadata!.uid!;
    suite.onCleanup(() => removeFromRuntime(oldUid));

    // Writes, so the old etcd's revision is well above what the new one reaches by the time
    // the new pod is created (as a cluster that ran a while before its restore).
    await core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'churn' }, data: { n: '0' } } });
    for (let n = 1; n <= 400; n++) {
      await core.replaceNamespacedConfigMap({ name: 'churn', namespace: ns, body: { metadata: { name: 'churn' }, data: { n: String(n) } } });
    }
    const rvBefore = Number((await core.listNamespacedPod({ namespace: ns })).metadata?.resourceVersion);

    await cp.down({ wipe: true });
    await cp.up();
    await namespace(core, ns);
    const rvAfter = Number((await core.listNamespacedPod({ namespace: ns })).metadata?.resourceVersion);
    assert.ok(rvAfter < rvBefore, `the new etcd's resourceVersion (${rvAfter}) is below the old one (${rvBefore}): the case under test`);

    await core.createNamespacedPod({ namespace: ns, body: sleeper('after', node.name) });
    const newUid = (await running(core, 'after', ns, 180_000)).metadata!.uid!;
    suite.onCleanup(() => removeFromRuntime(newUid));
    await waitFor('the container of the pod the server no longer has stopped', async () => !(await suite.runtime.listContainers(ofPod(oldUid))).some((c) => c.state === 'CONTAINER_RUNNING'), 60_000, 500);

    // The new pod is the node's as any other: deleted, it goes.
    await core.deleteNamespacedPod({ name: 'after', namespace: ns });
    await waitFor('the new pod deleted by the kubelet', () => core.readNamespacedPod({ name: 'after', namespace: ns }).then(() => false, (err) => (err as { code?: number }).code === 404), 60_000, 500);
  });
});
