import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { kubectl, kubectlOrSkip, type Kubectl } from '../support/kubectl.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A pod already terminating with a long grace (600 s, its container ignoring SIGTERM) is
 * deleted again by an operator who will not wait: `kubectl delete --grace-period=1` ends it
 * within seconds, and `kubectl delete --force` leaves no container behind once the object is
 * gone. A pod force-deleted before it terminated still gets its preStop hook (as upstream: a
 * zero grace from the API counts as unset and the spec's applies).
 */
describe('security: a shortened grace period is honoured', function () {
  this.timeout(240_000);
  const suite = clusterSuite('kts-grace-');
  let k: Kubectl;

  before(function () {
    k = kubectl(kubectlOrSkip(this), suite.cp.adminKubeconfig);
  });

  const stubborn = (name: string, nodeName: string): V1Pod => ({
    metadata: { name },
    spec: {
      nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 600,
      containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap '' TERM; while true; do sleep 1; done"] }],
    },
  });
  const running = async (name: string, ns: string) => waitFor(`${name} Running`, async () => {
    const p = await suite.core.readNamespacedPod({ name, namespace: ns });
    return p.status?.phase === 'Running' && p.status.containerStatuses?.every((c) => c.state?.running) && p;
  }, 90_000);
  const gone = (name: string, ns: string) => suite.core.readNamespacedPod({ name, namespace: ns }).then(() => false, (err) => (err as { code?: number }).code === 404);
  /** Containers of the pod still running (or created) in containerd. */
  const liveContainers = async (uid: string) => (await suite.runtime.listContainers({ labelSelector: { [LABEL.podUID]: uid } })).filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED');
  /** Deleted with its 600 s grace: the kubelet is stopping it (its SIGTERM ignored). */
  const startTerminating = async (name: string, ns: string, uid: string) => {
    const r = await k.run(['delete', 'pod', '-n', ns, name, '--wait=false']);
    assert.equal(r.code, 0, r.stderr);
    await waitFor('the Killing event', async () => (await suite.core.listNamespacedEvent({ namespace: ns })).items.some((e) => e.involvedObject?.uid === uid && e.reason === 'Killing'), 30_000);
    await sleep(2000);
    assert.equal((await liveContainers(uid)).length, 1, 'the container ignores SIGTERM and runs on');
  };

  it('a pod terminating with 600 s deleted again with --grace-period=1 is gone within seconds', async function () {
    const node = suite.node('grace1');
    await suite.kubelet(node);
    const ns = await suite.namespace('grace1');
    await suite.core.createNamespacedPod({ namespace: ns, body: stubborn('stubborn', node.name) });
    const uid = (await running('stubborn', ns)).metadata!.uid!;
    await startTerminating('stubborn', ns, uid);
    const t0 = Date.now();
    const r = await k.run(['delete', 'pod', '-n', ns, 'stubborn', '--grace-period=1', '--wait=false']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal((await suite.core.readNamespacedPod({ name: 'stubborn', namespace: ns }).catch(() => undefined))?.metadata?.deletionGracePeriodSeconds ?? 1, 1);
    await waitFor('the pod object deleted by the kubelet', () => gone('stubborn', ns), 30_000, 200);
    const took = Date.now() - t0;
    assert.ok(took < 15_000, `gone ${took} ms after the second delete (grace 1 s, at least 2 s for the container)`);
    assert.deepEqual(await liveContainers(uid), [], 'no container left running');
  });

  it('a pod terminating with 600 s force-deleted leaves no container', async function () {
    const node = suite.node('force');
    await suite.kubelet(node);
    const ns = await suite.namespace('force');
    await suite.core.createNamespacedPod({ namespace: ns, body: stubborn('forced', node.name) });
    const uid = (await running('forced', ns)).metadata!.uid!;
    await startTerminating('forced', ns, uid);
    const t0 = Date.now();
    const r = await k.run(['delete', 'pod', '-n', ns, 'forced', '--force', '--grace-period=0', '--wait=false']);
    assert.equal(r.code, 0, r.stderr);
    assert.ok(await gone('forced', ns), 'the API removed the object at once');
    await waitFor('no container of the pod left', async () => (await liveContainers(uid)).length === 0, 30_000, 200);
    const took = Date.now() - t0;
    assert.ok(took < 15_000, `no container ${took} ms after the force delete`);
    await waitFor('no sandbox left', async () => (await suite.runtime.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } })).length === 0, 30_000);
  });

  it('a running pod force-deleted (grace 0) still runs its preStop hook', async function () {
    const node = suite.node('prestop');
    await suite.kubelet(node);
    const ns = await suite.namespace('prestop');
    const hostDir = path.join(suite.dir, `prestop-${process.pid}`);
    await fs.mkdir(hostDir, { recursive: true });
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'hooked' },
        spec: {
          nodeName: node.name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 30,
          volumes: [{ name: 'out', hostPath: { path: hostDir, type: 'Directory' } }],
          containers: [{
            name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"],
            volumeMounts: [{ name: 'out', mountPath: '/out' }],
            lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo prestop-ran > /out/marker'] } } },
          }],
        },
      },
    });
    const uid = (await running('hooked', ns)).metadata!.uid!;
    const r = await k.run(['delete', 'pod', '-n', ns, 'hooked', '--force', '--grace-period=0', '--wait=false']);
    assert.equal(r.code, 0, r.stderr);
    const marker = await waitFor('the preStop hook wrote its marker', () => fs.readFile(path.join(hostDir, 'marker'), 'utf8').catch(() => undefined), 30_000);
    assert.equal(marker, 'prestop-ran\n');
    await waitFor('no container of the pod left', async () => (await liveContainers(uid)).length === 0, 30_000);
  });
});
