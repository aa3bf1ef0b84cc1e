import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppsV1Api, CoordinationV1Api, CoreV1Api, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { controlPlaneOrSkip, type ControlPlane } from '../support/control-plane.ts';
import { runHollowToExit, startHollowProcess, type HollowProcess } from '../support/hollow-process.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * `kubelet-ts hollow` against the run's real control plane (kube-apiserver, controller-manager,
 * scheduler v1.28.7): one process of hollow nodes, started as an operator runs it. The nodes
 * register and turn Ready, the scheduler spreads a Deployment over them and its pods run (with
 * the service-account volume every pod gets, and a readiness probe), a node's pods deleted in
 * the API go, Ctrl-C leaves the API as it was, and --cleanup removes the Nodes.
 */
describe('kubelet-ts hollow (real control plane)', function () {
  this.timeout(240_000);
  let cp: ControlPlane;
  let core: CoreV1Api;
  let apps: AppsV1Api;
  let coordination: CoordinationV1Api;
  const prefix = `kts-hollow-${process.pid}`;
  const label = `kts-hollow-${process.pid}`;
  const ns = `kts-hollow-${process.pid}`;
  const nodes = 3;
  let hollow: HollowProcess | undefined;
  const cleanupNodes: string[] = [];

  const ready = (n: V1Node) => n.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
  const running = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false);
  const ourPods = async () => (await core.listNamespacedPod({ namespace: ns })).items;

  before(async function () {
    this.timeout(300_000);
    cp = await controlPlaneOrSkip(this);
    core = cp.admin.makeApiClient(CoreV1Api);
    apps = cp.admin.makeApiClient(AppsV1Api);
    coordination = cp.admin.makeApiClient(CoordinationV1Api);
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await waitFor(`ServiceAccount ${ns}/default`, () => core.readNamespacedServiceAccount({ name: 'default', namespace: ns }), 30_000);
    await waitFor(`ConfigMap ${ns}/kube-root-ca.crt`, () => core.readNamespacedConfigMap({ name: 'kube-root-ca.crt', namespace: ns }), 30_000);
  });

  after(async function () {
    this.timeout(120_000);
    await hollow?.stop('SIGKILL');
    await core?.deleteNamespace({ name: ns }).catch(() => {});
    for (const name of cleanupNodes) {
      await core.deleteNode({ name }).catch(() => {});
      await coordination.deleteNamespacedLease({ name, namespace: 'kube-node-lease' }).catch(() => {});
    }
  });

  it('registers N nodes in one process, each its own Node with its labels and capacity, and they turn Ready', async function () {
    hollow = await startHollowProcess({
      nodes, kubeconfig: cp.adminKubeconfig, prefix,
      args: ['--node-labels', `${label}=yes`, '--capacity', 'cpu=4,memory=8Gi', '--max-pods', '20'],
    });
    cleanupNodes.push(...hollow.names);
    assert.deepEqual(hollow.names, [`${prefix}-0`, `${prefix}-1`, `${prefix}-2`]);
    const list = await waitFor('every hollow Node Ready', async () => {
      const found = (await core.listNode({ labelSelector: `${label}=yes` })).items;
      return found.length === nodes && found.every(ready) ? found : undefined;
    }, 90_000);
    for (const n of list) {
      assert.ok(hollow.names.includes(n.metadata!.name!));
      assert.equal(n.status?.nodeInfo?.containerRuntimeVersion, `hollow://${n.status?.nodeInfo?.containerRuntimeVersion?.split('://')[1]}`);
      assert.match(n.status!.nodeInfo!.kubeletVersion, /^v1\.28\.7\+kubelet-ts\./);
      assert.equal(n.status?.capacity?.cpu, '4');
      assert.equal(n.status?.capacity?.memory, '8Gi');
      assert.equal(n.status?.capacity?.pods, '20');
      // Each node renews its own Lease (created by its lease loop, which may come a moment after the Ready status on a busy machine).
      const lease = await waitFor(`the Lease of ${n.metadata!.name}`, () => coordination.readNamespacedLease({ name: n.metadata!.name!, namespace: 'kube-node-lease' }).catch(() => undefined), 20_000);
      assert.equal(lease.spec?.holderIdentity, n.metadata!.name);
    }
  });

  it('runs a Deployment the scheduler spreads over them: pods Running and Ready, with their service-account volume and distinct IPs', async function () {
    assert.ok(hollow, 'the hollow nodes run');
    const replicas = 6;
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              nodeSelector: { [label]: 'yes' },
              topologySpreadConstraints: [{ maxSkew: 1, topologyKey: 'kubernetes.io/hostname', whenUnsatisfiable: 'DoNotSchedule', labelSelector: { matchLabels: { app: 'web' } } }],
              terminationGracePeriodSeconds: 5,
              containers: [{
                name: 'web', image: 'registry.invalid/web:1',
                resources: { requests: { cpu: '100m', memory: '64Mi' } },
                // Nothing listens on a hollow pod: its prober reports what a healthy process would.
                readinessProbe: { httpGet: { path: '/healthz', port: 8080 }, initialDelaySeconds: 1 },
                livenessProbe: { exec: { command: ['cat', '/tmp/healthy'] } },
              }],
            },
          },
        },
      },
    });
    const pods = await waitFor(`${replicas} pods Running and Ready`, async () => {
      const items = await ourPods();
      return items.length === replicas && items.every(running) ? items : undefined;
    }, 90_000);
    const perNode = new Map<string, number>();
    for (const p of pods) perNode.set(p.spec!.nodeName!, (perNode.get(p.spec!.nodeName!) ?? 0) + 1);
    assert.deepEqual([...perNode.keys()].sort(), [...hollow.names].sort(), 'every node got pods');
    assert.ok([...perNode.values()].every((c) => c === 2), `spread evenly: ${JSON.stringify([...perNode])}`);
    const ips = pods.map((p) => p.status!.podIP!);
    assert.equal(new Set(ips).size, replicas, `distinct pod IPs: ${ips.join(', ')}`);
    for (const ip of ips) assert.match(ip, /^10\.128\.\d+\.\d+$/);
    for (const p of pods) {
      assert.ok(p.spec?.volumes?.some((v) => v.projected && v.name.startsWith('kube-api-access-')), 'the pod has the service-account volume');
      assert.equal(p.status?.containerStatuses?.[0]?.restartCount, 0, 'the liveness probe never failed');
      assert.match(p.status!.containerStatuses![0]!.containerID!, /^hollow:\/\//);
    }
  });

  it('terminates a node\'s pods deleted in the API: they are gone, and their replacements run', async function () {
    assert.ok(hollow, 'the hollow nodes run');
    const node = hollow.names[0]!;
    const victims = (await ourPods()).filter((p) => p.spec?.nodeName === node).map((p) => p.metadata!.name!);
    assert.equal(victims.length, 2);
    for (const name of victims) await core.deleteNamespacedPod({ name, namespace: ns });
    await waitFor(`the deleted pods of ${node} gone from the API`, async () => {
      const names = new Set((await ourPods()).map((p) => p.metadata!.name!));
      return victims.every((v) => !names.has(v));
    }, 60_000);
    await waitFor('6 pods Running again', async () => {
      const items = await ourPods();
      return items.length === 6 && items.every(running);
    }, 60_000);
  });

  it('on Ctrl-C stops and removes nothing from the API: Nodes, Leases and pods stay', async function () {
    assert.ok(hollow, 'the hollow nodes run');
    const before = (await ourPods()).map((p) => `${p.metadata!.name} ${p.spec!.nodeName} ${p.status!.phase}`).sort();
    const { code, output } = await hollow.stop('SIGINT');
    hollow = undefined;
    assert.equal(code, 0, output.split('\n').slice(-5).join('\n'));
    assert.match(output, /"msg":"hollow nodes stopped"/);
    const after = (await ourPods()).map((p) => `${p.metadata!.name} ${p.spec!.nodeName} ${p.status!.phase}`).sort();
    assert.deepEqual(after, before);
    const left = (await core.listNode({ labelSelector: `${label}=yes` })).items.map((n) => n.metadata!.name!).sort();
    assert.deepEqual(left, [`${prefix}-0`, `${prefix}-1`, `${prefix}-2`]);
    for (const name of left) await coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' });
    await apps.deleteNamespacedDeployment({ name: 'web', namespace: ns });
  });

  it('with --cleanup deletes its Nodes and Leases when stopped', async function () {
    const p = `${prefix}-c`;
    const h = await startHollowProcess({ nodes: 2, kubeconfig: cp.adminKubeconfig, prefix: p, args: ['--cleanup'] });
    cleanupNodes.push(...h.names);
    await waitFor('both Nodes Ready', async () => (await Promise.all(h.names.map((name) => core.readNode({ name })))).every(ready), 90_000);
    const { code, output } = await h.stop('SIGTERM');
    assert.equal(code, 0, output.split('\n').slice(-5).join('\n'));
    for (const name of h.names) {
      await assert.rejects(core.readNode({ name }), /404|not found/i, `Node ${name} deleted`);
      await assert.rejects(coordination.readNamespacedLease({ name, namespace: 'kube-node-lease' }), /404|not found/i, `Lease ${name} deleted`);
    }
  });

  it('is crash-only: an uncaught exception ends the process (exit 70, one fatal line) instead of leaving its nodes heartbeating in an unknown state', async function () {
    // A bug nothing catches, injected from outside the product: a preloaded module throws from a
    // SIGUSR2 handler, which Node reports as an uncaught exception of the process.
    const inject = `data:text/javascript,${encodeURIComponent("process.on('SIGUSR2', () => { throw new Error('injected bug'); });")}`;
    const p = `${prefix}-k`;
    const h = await startHollowProcess({ nodes: 1, kubeconfig: cp.adminKubeconfig, prefix: p, env: { NODE_OPTIONS: `${process.env.NODE_OPTIONS ?? ''} --import=${inject}`.trim() } });
    cleanupNodes.push(...h.names);
    process.kill(h.pid, 'SIGUSR2');
    const code = await Promise.race([h.exited, sleep(20_000).then(() => 'still running 20 s after the uncaught exception')]);
    const { output } = await h.stop('SIGKILL');
    assert.equal(code, 70, output.split('\n').slice(-5).join('\n'));
    const fatal = output.split('\n').filter((l) => l.includes('"level":60'));
    assert.equal(fatal.length, 1, output.split('\n').slice(-5).join('\n'));
    assert.match(fatal[0]!, /"msg":"uncaught exception \(a bug: please report it\); exiting: the hollow Nodes stay in the API/);
    assert.match(fatal[0]!, /injected bug/);
  });

  it('refuses to start when the kubeconfig\'s identity may not act as the nodes, saying how to fix it', async function () {
    const kubeconfig = await cp.nodeKubeconfig(`${prefix}-x`);
    const { code, output } = await runHollowToExit(['--nodes', '1', '--kubeconfig', kubeconfig, '--node-name-prefix', `${prefix}-y`]);
    assert.equal(code, 1, output);
    assert.match(output, new RegExp(`system:node:${prefix}-x may not impersonate users "system:node:${prefix}-y-0"`));
    assert.match(output, /--identity kubeconfig/);
  });
});
