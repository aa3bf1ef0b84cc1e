import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { run } from '../../tools/node-env/util.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * One pod of 200 containers (the API server allows it) on this machine's 2 cores: it starts in
 * bounded time without leaving the runtime inconsistent, is deleted with nothing of it left in
 * containerd (CRI, and containerd's own containers and tasks), and a SIGTERM to the kubelet in
 * the middle of its start ends the process within a bounded time. Bounds here are outer limits
 * (a stuck or saturated node), not speed goals.
 */
describe('security: a pod with hundreds of containers', function () {
  this.timeout(900_000);
  const suite = clusterSuite('kts-huge-');
  const COUNT = 200;

  const hugePod = (name: string, nodeName: string): V1Pod => ({
    metadata: { name },
    spec: {
      nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, enableServiceLinks: false,
      containers: Array.from({ length: COUNT }, (_, i) => ({ name: `c${i}`, image: suite.env.images.busybox, command: ['sleep', '3600'] })),
    },
  });
  const kubeletFor = async (what: string): Promise<{ kp: KubeletProcess; node: string }> => {
    const node = suite.node(what);
    const kp = await startKubeletProcess(suite.env, { startTimeoutMs: 120_000, config: { kubeconfig: await suite.cp.nodeKubeconfig(node.name), nodeName: node.name, nodeIP: '127.0.0.1' } });
    suite.onCleanup(() => kp.stop());
    await suite.nodeReady(node.name);
    return { kp, node: node.name };
  };
  const ofPod = (uid: string) => ({ labelSelector: { [LABEL.podUID]: uid } });
  /** containerd's own view (ctr), not only CRI's: containers and tasks of the pod. */
  const ctr = async (args: string[]) => (await run('ctr', ['--address', suite.env.containerdEndpoint.replace(/^unix:\/\//, ''), '-n', 'k8s.io', ...args], { timeoutMs: 60_000 })).stdout.split('\n').map((l) => l.trim()).filter(Boolean);
  /** Removes what a test left of a pod in the runtime (a kubelet stopped mid-start leaves its pods, as upstream's does). */
  const removeFromRuntime = async (uid: string) => {
    // 16 at a time: one by one, a runtime that stopped answering would hold the cleanup for
    // hundreds of request timeouts.
    const containers = await suite.runtime.listContainers(ofPod(uid));
    for (let i = 0; i < containers.length; i += 16) {
      await Promise.all(containers.slice(i, i + 16).map(async (c) => {
        await suite.runtime.stopContainer(c.id, 0).catch(() => {});
        await suite.runtime.removeContainer(c.id).catch(() => {});
      }));
    }
    for (const sb of await suite.runtime.listPodSandboxes(ofPod(uid))) {
      await suite.runtime.stopPodSandbox(sb.id).catch(() => {});
      await suite.runtime.removePodSandbox(sb.id).catch(() => {});
    }
  };

  it(`${COUNT} containers start in bounded time; the delete leaves nothing in containerd`, async function () {
    const { kp, node } = await kubeletFor('huge');
    const ns = await suite.namespace('huge');
    const t0 = Date.now();
    await suite.core.createNamespacedPod({ namespace: ns, body: hugePod('huge', node) });
    const pod = await waitFor(`all ${COUNT} containers running`, async () => {
      const p = await suite.core.readNamespacedPod({ name: 'huge', namespace: ns });
      return (p.status?.containerStatuses ?? []).filter((c) => c.state?.running).length === COUNT && p;
    }, 600_000, 2000);
    const uid = pod.metadata!.uid!;
    suite.onCleanup(() => removeFromRuntime(uid));
    process.stderr.write(`      ${COUNT} containers running after ${Math.round((Date.now() - t0) / 1000)} s\n`);
    const ids = (await suite.runtime.listContainers(ofPod(uid))).map((c) => c.id);
    assert.equal(ids.length, COUNT, 'one container each, no duplicate from a retried create');
    assert.ok((await kp.pods())?.some((p) => p.metadata?.uid === uid), 'the kubelet still answers');

    await suite.core.deleteNamespacedPod({ name: 'huge', namespace: ns });
    await waitFor('the pod object deleted by the kubelet', () => suite.core.readNamespacedPod({ name: 'huge', namespace: ns }).then(() => false, (err) => (err as { code?: number }).code === 404), 300_000, 1000);
    assert.deepEqual(await suite.runtime.listContainers(ofPod(uid)), [], 'no container of the pod in CRI');
    assert.deepEqual(await suite.runtime.listPodSandboxes(ofPod(uid)), [], 'no sandbox of the pod in CRI');
    assert.deepEqual(await ctr(['containers', 'ls', '-q', `labels."${LABEL.podUID}"==${uid}`]), [], 'no container of the pod in containerd');
    const tasks = new Set(await ctr(['tasks', 'ls', '-q']));
    assert.deepEqual(ids.filter((id) => tasks.has(id)), [], 'no task of the pod in containerd');
  });

  it('SIGTERM in the middle of the start ends the kubelet process in bounded time', async function () {
    const { kp, node } = await kubeletFor('term');
    const ns = await suite.namespace('term');
    await suite.core.createNamespacedPod({ namespace: ns, body: hugePod('huge', node) });
    const uid = (await suite.core.readNamespacedPod({ name: 'huge', namespace: ns })).metadata!.uid!;
    suite.onCleanup(() => removeFromRuntime(uid));
    await waitFor('the start under way (20 containers created)', async () => (await suite.runtime.listContainers(ofPod(uid))).length >= 20, 300_000, 500);
    const running = (await suite.runtime.listContainers(ofPod(uid))).length;
    const t0 = Date.now();
    process.kill(kp.pid, 'SIGTERM');
    const bound = 45_000;
    const exited = await Promise.race([kp.exited.then(() => true), new Promise<false>((r) => setTimeout(() => r(false), bound))]);
    const took = Date.now() - t0;
    assert.ok(exited, `the kubelet did not exit within ${bound} ms of SIGTERM (${running} containers created when signalled)`);
    process.stderr.write(`      exited ${took} ms after SIGTERM (${running} of ${COUNT} containers created then)\n`);
    // The kubelet is gone: its pod is taken over by a restarted kubelet, or removed here.
    await suite.core.deleteNamespacedPod({ name: 'huge', namespace: ns, gracePeriodSeconds: 0 }).catch(() => {});
  });
});
