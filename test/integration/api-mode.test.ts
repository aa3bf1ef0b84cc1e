import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { clusterSuite, type SuiteNode } from '../support/cluster-suite.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { podManifest } from '../support/test-kubelet.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * kubelet-ts as a node of a real cluster: the control plane from ../shared/k8s (Node
 * authorizer, NodeRestriction) and real containerd. The kubelet registers its Node, runs the
 * pods the API server binds to it, reports their status, deletes them with grace, mirrors
 * its static pods, records events, survives kill -9 and an API server outage.
 */
describe('API-server mode: a node of a real cluster', function () {
  this.timeout(240_000);
  const suite = clusterSuite('kts-apimode-');
  const newNode = (what: string) => suite.node(what);
  const namespace = (what: string) => suite.namespace(what);
  const kubelet = (node: SuiteNode, kubeconfig?: string) => suite.kubelet(node, kubeconfig ? { kubeconfig } : {});

  /** A container that leaves at once on SIGTERM. */
  const polite = () => ({ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] });
  const apiPod = (name: string, nodeName: string, spec: object = {}): V1Pod => ({
    metadata: { name },
    spec: { nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 5, containers: [polite()], ...spec },
  });
  const readPod = (name: string, ns: string) => suite.core.readNamespacedPod({ name, namespace: ns });
  const ready = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True');

  it('registers its Node Ready, with capacity and its Lease, and runs a bound pod: Running with its IP, its story in events', async function () {
    const node = newNode('run');
    await kubelet(node);
    const n = await waitFor('Node Ready', async () => {
      const got = await suite.core.readNode({ name: node.name });
      return got.status?.conditions?.find((c) => c.type === 'Ready')?.status === 'True' && got;
    });
    assert.equal(n.metadata?.labels?.['kubernetes.io/hostname'], node.name);
    assert.equal(n.status?.allocatable?.pods, '110');
    assert.equal(n.status?.addresses?.find((a) => a.type === 'InternalIP')?.address, '127.0.0.1');
    assert.match(n.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\//);
    const lease = await suite.coordination.readNamespacedLease({ name: node.name, namespace: 'kube-node-lease' });
    assert.equal(lease.spec?.holderIdentity, node.name);

    const ns = await namespace('run');
    await suite.core.createNamespacedPod({ namespace: ns, body: apiPod('web', node.name) });
    const running = await waitFor('pod Running and Ready in the API', async () => { const p = await readPod('web', ns); return ready(p) && p; });
    assert.match(running.status?.podIP ?? '', /^10\./, 'a pod IP from the node network');
    assert.equal(running.status?.hostIP, '127.0.0.1');
    assert.equal(running.status?.containerStatuses?.[0]?.ready, true);
    assert.match(running.status?.containerStatuses?.[0]?.containerID ?? '', /^containerd:\/\//);
    const events = await waitFor('events in the API', async () => {
      const list = (await suite.core.listNamespacedEvent({ namespace: ns })).items.filter((e) => e.involvedObject?.name === 'web');
      const reasons = list.map((e) => e.reason);
      return ['Pulled', 'Created', 'Started'].every((r) => reasons.includes(r)) && list;
    }, 30_000);
    assert.ok(events.every((e) => e.source?.component === 'kubelet' && e.source?.host === node.name));
    const nodeEvents = (await suite.core.listNamespacedEvent({ namespace: 'default' })).items.filter((e) => e.involvedObject?.name === node.name).map((e) => e.reason);
    assert.ok(nodeEvents.includes('Starting') && nodeEvents.includes('NodeReady'), `node events: ${nodeEvents.join(', ')}`);
  });

  it('kubectl delete: the pod gets its grace period, its containers go, the kubelet deletes the object', async function () {
    const node = newNode('del');
    await kubelet(node);
    const ns = await namespace('del');
    await suite.core.createNamespacedPod({ namespace: ns, body: apiPod('doomed', node.name, { terminationGracePeriodSeconds: 20 }) });
    const p = await waitFor('Running', async () => { const x = await readPod('doomed', ns); return ready(x) && x; });
    const t0 = Date.now();
    await suite.core.deleteNamespacedPod({ name: 'doomed', namespace: ns });
    await waitFor('pod object deleted', async () => (await readPod('doomed', ns).then(() => false, (err) => (err as { code?: number }).code === 404)), 30_000);
    const took = Date.now() - t0;
    assert.ok(took < 20_000, `deleted after ${took} ms: the container leaves on SIGTERM, well within its 20 s grace`);
    assert.deepEqual(await suite.runtime.listPodSandboxes({ labelSelector: { [LABEL.podUID]: p.metadata!.uid! } }), [], 'no sandbox left');
    const killing = (await suite.core.listNamespacedEvent({ namespace: ns })).items.find((e) => e.reason === 'Killing');
    assert.equal(killing?.message, 'Stopping container main');
  });

  it('a pod that finishes reports Succeeded and keeps that status', async function () {
    const node = newNode('done');
    await kubelet(node);
    const ns = await namespace('done');
    await suite.core.createNamespacedPod({ namespace: ns, body: apiPod('job', node.name, { restartPolicy: 'Never', containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'echo done'] }] }) });
    const done = await waitFor('Succeeded', async () => { const x = await readPod('job', ns); return x.status?.phase === 'Succeeded' && x; });
    assert.equal(done.status?.containerStatuses?.[0]?.state?.terminated?.reason, 'Completed');
    await sleep(3000);
    assert.equal((await readPod('job', ns)).status?.phase, 'Succeeded', 'the terminal phase stays');
  });

  it('a static pod gets a mirror pod owned by the Node, made again when deleted, removed with the static pod', async function () {
    const node = newNode('mirror');
    const t = await kubelet(node);
    await t.writeManifest('static.json', podManifest('stat', [polite()], { terminationGracePeriodSeconds: 2 }));
    const name = `stat-${node.name}`;
    const mirror = await waitFor('mirror pod Running', async () => { const x = await readPod(name, 'default'); return ready(x) && x; });
    const staticUid = t.pod('stat')!.metadata!.uid!;
    assert.equal(mirror.metadata?.annotations?.['kubernetes.io/config.mirror'], staticUid);
    assert.equal(mirror.metadata?.annotations?.['kubernetes.io/config.hash'], staticUid);
    assert.equal(mirror.metadata?.annotations?.['kubernetes.io/config.source'], 'file');
    assert.equal(mirror.metadata?.ownerReferences?.[0]?.kind, 'Node');
    assert.equal(mirror.metadata?.ownerReferences?.[0]?.name, node.name);
    assert.notEqual(mirror.metadata?.uid, staticUid, 'the mirror is its own object');
    // Deleted by someone: made again, and the static pod never stopped.
    await suite.core.deleteNamespacedPod({ name, namespace: 'default', gracePeriodSeconds: 0 });
    const again = await waitFor('mirror made again', async () => { const x = await readPod(name, 'default'); return x.metadata?.uid !== mirror.metadata?.uid && ready(x) && x; });
    assert.equal(again.status?.containerStatuses?.[0]?.restartCount, 0);
    await t.removeManifest('static.json');
    await waitFor('mirror removed with its static pod', async () => readPod(name, 'default').then(() => false, (err) => (err as { code?: number }).code === 404), 30_000);
  });

  it('kill -9 and restart: no container restarts, the Node stays Ready, the pod stays Running', async function () {
    const node = newNode('restart');
    const kubeconfig = await suite.cp.nodeKubeconfig(node.name);
    let k: KubeletProcess | undefined = await startKubeletProcess(suite.env, { config: { kubeconfig, nodeName: node.name, nodeIP: '127.0.0.1' } });
    suite.onCleanup(() => k!.stop());
    const ns = await namespace('restart');
    await suite.core.createNamespacedPod({ namespace: ns, body: apiPod('survivor', node.name) });
    const before = await waitFor('Running', async () => { const x = await readPod('survivor', ns); return ready(x) && x; });
    await k.stop({ signal: 'SIGKILL', keepDir: true });
    k = await startKubeletProcess(suite.env, { dir: k.dir, config: { kubeconfig, nodeName: node.name, nodeIP: '127.0.0.1' } });
    await waitFor('the restarted kubelet runs the pod', async () => ((await k!.pods()) ?? []).some((p) => p.metadata?.name === 'survivor' && p.status?.phase === 'Running'), 30_000);
    await sleep(3000);
    const after = await readPod('survivor', ns);
    assert.equal(after.status?.containerStatuses?.[0]?.restartCount, 0);
    assert.equal(after.status?.containerStatuses?.[0]?.containerID, before.status?.containerStatuses?.[0]?.containerID, 'the same container');
    assert.equal(after.status?.startTime?.toString(), before.status?.startTime?.toString(), 'the start time is kept');
    const n = await suite.core.readNode({ name: node.name });
    assert.equal(n.status?.conditions?.find((c) => c.type === 'Ready')?.status, 'True');
    await suite.core.deleteNamespacedPod({ name: 'survivor', namespace: ns });
    await waitFor('pod deleted', async () => readPod('survivor', ns).then(() => false, () => true), 30_000);
  });

  it('the API server away for 30 s: pods run untouched, one line per outage, status caught up when it is back', async function () {
    const node = newNode('outage');
    const server = new URL(suite.cp.server);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    suite.onCleanup(() => proxy.close());
    const kubeconfig = path.join(suite.dir, `${node.name}.kubeconfig`);
    await fs.writeFile(kubeconfig, (await fs.readFile(await suite.cp.nodeKubeconfig(node.name), 'utf8')).replace(suite.cp.server, `https://127.0.0.1:${proxy.port}`));
    const k = await startKubeletProcess(suite.env, { config: { kubeconfig, nodeName: node.name, nodeIP: '127.0.0.1' } });
    suite.onCleanup(() => k.stop());
    const ns = await namespace('outage');
    await suite.core.createNamespacedPod({ namespace: ns, body: apiPod('steady', node.name, { restartPolicy: 'Never', containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'sleep 12'] }] }) });
    const running = await waitFor('Running', async () => { const x = await readPod('steady', ns); return ready(x) && x; });
    await proxy.cut();
    // While the server is away the container finishes (status the server has not seen yet).
    await sleep(30_000);
    const local = (await k.pods())?.find((p) => p.metadata?.name === 'steady');
    assert.equal(local?.status?.phase, 'Succeeded', 'the pod ran on untouched');
    await proxy.restore();
    const caught = await waitFor('status caught up within 5 s of the return', async () => (await readPod('steady', ns)).status?.phase === 'Succeeded', 5000);
    assert.ok(caught);
    const log = (await fs.readFile(k.logFile, 'utf8')).split('\n').filter((l) => l.includes('is unreachable; requests are retried'));
    assert.equal(log.length, 1, `one line per outage, got ${log.length}`);
    assert.equal(running.status?.containerStatuses?.[0]?.restartCount, 0);
  });
});
