import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CoreV1Api, PatchStrategy, setHeaderOptions, type V1Node, type V1Pod } from '@kubernetes/client-node';
import { ApiClient, createApiClient, PATCH } from '../../core/apiserver/api-client.ts';
import { createApiNode } from '../../core/node/api-node.ts';
import { loadConfig } from '../../core/config/load.ts';
import { ApiError } from '../../core/apiserver/api-errors.ts';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { NodeLease, NODE_LEASE_NAMESPACE } from '../../core/node/node-lease.ts';
import { NodeStatusManager, type NodeStatusInputs } from '../../core/node/node-status.ts';
import type { MachineInfo } from '../../core/node/machine-info.ts';
import { ApiPodSource } from '../../core/sources/api-pods.ts';
import { waitFor } from '../../tools/node-env/util.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { controlPlaneOrSkip, type ControlPlane } from '../support/control-plane.ts';
import { startTcpProxy, type TcpProxy } from '../support/tcp-proxy.ts';

/** A runtime, PLEG and image list the test controls (the kubelet wires the real ones). */
class FakeInputs implements NodeStatusInputs {
  runtimeUp = true;
  networkReady = true;
  pleg = true;
  async runtimeVersion() {
    return { runtimeName: 'containerd', runtimeVersion: '1.6.20~ds1' };
  }
  async runtimeStatus() {
    if (!this.runtimeUp) throw new Error('connect ENOENT /run/containerd/containerd.sock');
    return {
      conditions: [
        { type: 'RuntimeReady', status: true, reason: '', message: '' },
        this.networkReady
          ? { type: 'NetworkReady', status: true, reason: '', message: '' }
          : { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' },
      ],
    };
  }
  plegHealthy() {
    return this.pleg;
  }
  async images() {
    return [
      { repoTags: ['registry.test/small:1'], repoDigests: ['registry.test/small@sha256:aa'], size: 1000 },
      { repoTags: ['registry.test/big:1', 'registry.test/big:latest'], repoDigests: ['registry.test/big@sha256:bb'], size: 5_000_000 },
    ];
  }
}

/** A fixed machine, so the expected quantities are exact. */
const MACHINE: MachineInfo = {
  numCores: 2,
  memoryCapacityBytes: 4050864n * 1024n,
  rootfsCapacityBytes: 18446032n * 1024n,
  hugePages: [{ pageSizeKiB: 2048, numPages: 0 }],
  machineID: 'machine-id-test',
  systemUUID: 'system-uuid-test',
  bootID: 'boot-id-test',
  kernelVersion: '6.1.0-test',
  osImage: 'Debian GNU/Linux 12 (bookworm)',
};

const readyOf = (node: V1Node | undefined) => node?.status?.conditions?.find((c) => c.type === 'Ready');

/**
 * Node registration, status, Lease and the API pod source against the real control plane
 * (kube-apiserver 1.28.7 with the Node authorizer and NodeRestriction), each as the node's own
 * identity `system:node:<name>`.
 */
describe('the node on a real API server', function () {
  this.timeout(90_000);
  let cp: ControlPlane;
  let core: CoreV1Api;
  let coordination: CoordinationV1Api;
  let counter = 0;
  const cleanups: Array<() => Promise<unknown>> = [];
  const nodesToDelete: string[] = [];

  before(async function () {
    this.timeout(300_000);
    cp = await controlPlaneOrSkip(this);
    core = cp.admin.makeApiClient(CoreV1Api);
    coordination = cp.admin.makeApiClient(CoordinationV1Api);
  });

  afterEach(async function () {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
    for (const name of nodesToDelete.splice(0)) {
      await core.deleteNode({ name }).catch(() => {});
      await coordination.deleteNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE }).catch(() => {});
    }
  });

  /** A node name of this test run. */
  const nodeName = (what: string) => {
    const name = `${what}-${process.pid}-${++counter}`;
    nodesToDelete.push(name);
    return name;
  };

  async function nodeClient(name: string, logger: Logger = silentLogger()): Promise<ApiClient> {
    const client = createApiClient({ kubeconfig: await cp.nodeKubeconfig(name), logger, requestTimeoutMs: 10_000 });
    cleanups.push(async () => client.close());
    return client;
  }

  function manager(name: string, client: ApiClient, inputs: NodeStatusInputs, extra: Partial<ConstructorParameters<typeof NodeStatusManager>[0]> = {}) {
    const m = new NodeStatusManager({
      client, hooks: createHooks(), inputs, logger: silentLogger(), nodeName: name, nodeIP: '127.0.0.1', port: 10250, rootDir: '/var/lib/kubelet',
      maxPods: 110, nodeLabels: { 'example.com/pool': 'test', 'node.kubernetes.io/exclude-from-external-load-balancers': 'true' },
      registerWithTaints: [{ key: 'example.com/dedicated', value: 'gpu', effect: 'NoSchedule' }],
      systemReserved: {}, kubeReserved: { cpu: '500m' }, evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
      updateFrequencyMs: 10_000, reportFrequencyMs: 300_000, readinessPollMs: 200, machineInfo: async () => MACHINE, ...extra,
    });
    cleanups.push(() => m.stop());
    return m;
  }

  const getNode = (name: string) => core.readNode({ name }).catch(() => undefined);

  it('registers the Node with labels, taints, capacity, allocatable, addresses, nodeInfo, images and Ready=True', async () => {
    const name = nodeName('reg');
    const m = manager(name, await nodeClient(name), new FakeInputs());
    m.start();
    const registered = await m.register();
    assert.ok(registered?.metadata?.uid);
    await waitFor('Ready=True', async () => readyOf(await getNode(name))?.status === 'True', 15_000, 200);
    const node = (await getNode(name))!;
    const labels = node.metadata!.labels!;
    assert.deepEqual(
      [labels['kubernetes.io/hostname'], labels['kubernetes.io/os'], labels['kubernetes.io/arch'], labels['beta.kubernetes.io/os'], labels['beta.kubernetes.io/arch'], labels['example.com/pool']],
      [name, 'linux', 'amd64', 'linux', 'amd64', 'test'],
    );
    assert.equal(node.metadata!.annotations!['volumes.kubernetes.io/controller-managed-attach-detach'], 'true');
    assert.ok(node.spec!.taints!.some((t) => t.key === 'example.com/dedicated' && t.value === 'gpu' && t.effect === 'NoSchedule'), JSON.stringify(node.spec!.taints));
    const st = node.status!;
    assert.deepEqual(st.capacity, { cpu: '2', memory: '4050864Ki', 'hugepages-2Mi': '0', pods: '110', 'ephemeral-storage': '18446032Ki' });
    assert.deepEqual(st.allocatable, { cpu: '1500m', memory: '3948464Ki', 'hugepages-2Mi': '0', pods: '110', 'ephemeral-storage': '16999863064' });
    assert.deepEqual(st.addresses!.map((a) => ({ type: a.type, address: a.address })), [{ type: 'InternalIP', address: '127.0.0.1' }, { type: 'Hostname', address: name }]);
    assert.equal(st.daemonEndpoints!.kubeletEndpoint!.Port, 10250);
    const info = st.nodeInfo!;
    assert.deepEqual(
      [info.machineID, info.systemUUID, info.bootID, info.kernelVersion, info.osImage, info.containerRuntimeVersion, info.operatingSystem, info.architecture],
      ['machine-id-test', 'system-uuid-test', 'boot-id-test', '6.1.0-test', 'Debian GNU/Linux 12 (bookworm)', 'containerd://1.6.20~ds1', 'linux', 'amd64'],
    );
    assert.match(info.kubeletVersion, /^v1\.28\.7\+kubelet-ts\.\d+\.\d+\.\d+/);
    assert.deepEqual(st.images!.map((i) => [i.names, i.sizeBytes]), [
      [['registry.test/big@sha256:bb', 'registry.test/big:1', 'registry.test/big:latest'], 5_000_000],
      [['registry.test/small@sha256:aa', 'registry.test/small:1'], 1000],
    ]);
    const byType = Object.fromEntries(st.conditions!.map((c) => [c.type, c]));
    assert.deepEqual(
      ['MemoryPressure', 'DiskPressure', 'PIDPressure', 'Ready'].map((t) => [t, byType[t]?.status, byType[t]?.reason]),
      [['MemoryPressure', 'False', 'KubeletHasSufficientMemory'], ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'], ['PIDPressure', 'False', 'KubeletHasSufficientPID'], ['Ready', 'True', 'KubeletReady']],
    );
    assert.equal(byType.Ready!.message, 'kubelet is posting ready status');
    // The node lifecycle controller drops its not-ready taint once the node is Ready; ours stays.
    await waitFor('no not-ready taint', async () => !(await getNode(name))?.spec?.taints?.some((t) => t.key === 'node.kubernetes.io/not-ready'), 15_000, 200);
  });

  it('posts Ready=False with the reason at once when the runtime goes down, and Ready=True when it is back', async () => {
    const name = nodeName('ready');
    const inputs = new FakeInputs();
    // An update period of a minute: only the readiness poll can post within the waits below.
    const m = manager(name, await nodeClient(name), inputs, { updateFrequencyMs: 60_000 });
    m.start();
    await m.register();
    await waitFor('Ready=True', async () => readyOf(await getNode(name))?.status === 'True', 15_000, 200);
    const before = readyOf(await getNode(name))!;

    inputs.runtimeUp = false;
    const t0 = Date.now();
    await waitFor('Ready=False', async () => readyOf(await getNode(name))?.status === 'False', 5000, 100);
    const downMs = Date.now() - t0;
    const down = readyOf(await getNode(name))!;
    assert.equal(down.reason, 'KubeletNotReady');
    assert.equal(down.message, 'container runtime is down: connect ENOENT /run/containerd/containerd.sock');
    assert.ok(new Date(down.lastTransitionTime!).getTime() >= new Date(before.lastTransitionTime!).getTime());
    assert.ok(downMs < 5000, `posted after ${downMs} ms`);

    inputs.runtimeUp = true;
    inputs.networkReady = false;
    await m.updateNow();
    const net = readyOf(await getNode(name))!;
    assert.equal(net.status, 'False');
    assert.equal(net.message, 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized');
    assert.equal(new Date(net.lastTransitionTime!).getTime(), new Date(down.lastTransitionTime!).getTime(), 'still False: the transition time stays');

    inputs.networkReady = true;
    inputs.pleg = false;
    await m.updateNow();
    assert.equal(readyOf(await getNode(name))!.message, 'PLEG is not healthy: pleg has yet to be successful');

    inputs.pleg = true;
    await waitFor('Ready=True again', async () => readyOf(await getNode(name))?.status === 'True', 5000, 100);
  });

  it('adopts an existing Node after a restart: same UID, owned labels reconciled, other labels kept', async () => {
    const name = nodeName('adopt');
    const client = await nodeClient(name);
    const first = manager(name, client, new FakeInputs());
    first.start();
    const uid = (await first.register())!.metadata!.uid;
    await first.stop();
    // Someone changed a label the kubelet owns and added one of their own.
    await core.patchNode({ name, body: { metadata: { labels: { 'kubernetes.io/arch': 'wrong', 'team.example.com/owner': 'ops' } } } }, mergePatchOptions());

    // The restarted kubelet has another node IP.
    const second = manager(name, client, new FakeInputs(), { nodeIP: '127.0.0.2' });
    second.start();
    const adopted = (await second.register())!;
    assert.equal(adopted.metadata!.uid, uid, 'the restarted kubelet keeps the Node');
    const node = (await getNode(name))!;
    assert.equal(node.metadata!.uid, uid);
    assert.equal(node.metadata!.labels!['kubernetes.io/arch'], 'amd64');
    assert.equal(node.metadata!.labels!['team.example.com/owner'], 'ops');
    await second.updateNow(true);
    const after = (await getNode(name))!;
    assert.equal(readyOf(after)!.status, 'True');
    assert.deepEqual(after.status!.addresses!.map((a) => `${a.type}=${a.address}`), ['InternalIP=127.0.0.2', `Hostname=${name}`], 'addresses replaced, no stale InternalIP');
  });

  it('registers the Node again when it was deleted, and says so (the pod source re-lists)', async function () {
    const name = nodeName('deleted');
    let again = 0;
    const m = manager(name, await nodeClient(name), new FakeInputs(), { onRegisteredAgain: () => again++ });
    m.start();
    const uid = (await m.register())!.metadata!.uid;
    assert.equal(again, 0, 'the first registration is not one again');
    await core.deleteNode({ name });
    // The manager's watch may see the DELETED and register again before a poll sees the gap:
    // what must be gone is the Node of the first registration.
    await waitFor('the Node of the first registration gone', async () => (await getNode(name))?.metadata?.uid !== uid, 10_000, 100);
    await m.updateNow();
    await waitFor('a new Node', async () => {
      const node = await getNode(name);
      return node !== undefined && node.metadata!.uid !== uid && readyOf(node)?.status === 'True';
    }, 10_000, 100);
    // The server has the Node before the kubelet has the POST's answer: wait for it to say so.
    await waitFor('the pod source told', async () => again > 0, 5000, 50);
    await m.updateNow();
    assert.equal(again, 1, 'one registration again, one re-list');
  });

  /** Records the GETs of one Node that go through `client` (the status loop's reads of it). */
  function countNodeGets(client: ApiClient, name: string): string[] {
    const gets: string[] = [];
    const request = client.request.bind(client);
    client.request = ((method: Parameters<ApiClient['request']>[0], p: string, o?: Parameters<ApiClient['request']>[2]) => {
      if (method === 'GET' && p === `/api/v1/nodes/${name}`) gets.push(p);
      return request(method, p, o);
    }) as ApiClient['request'];
    return gets;
  }

  it('reads its Node from a watch, not a GET each period: an admin\'s label and taint are seen, a condition change is posted at once', async function () {
    const name = nodeName('watch');
    const client = await nodeClient(name);
    const gets = countNodeGets(client, name);
    const hooks = createHooks();
    let pressure = false;
    hooks.nodeStatus.tap('pressure-test', (draft) =>
      pressure ? { ...draft, conditions: draft.conditions.map((c) => (c.type === 'DiskPressure' ? { ...c, status: 'True' as const, reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' } : c)) } : draft);
    // A period of 300 ms: a GET per period would show within the waits below.
    const m = manager(name, client, new FakeInputs(), { hooks, updateFrequencyMs: 300 });
    m.start();
    await m.register();
    await waitFor('Ready=True', async () => readyOf(await getNode(name))?.status === 'True', 15_000, 200);
    // Registration's first sync may come before the watch's first list; after that, none.
    await sleep(1000);
    const getsBefore = gets.length;
    assert.ok(getsBefore <= 1, `GETs of the Node right after registration: ${getsBefore}`);

    await core.patchNode({ name, body: { metadata: { labels: { 'team.example.com/owner': 'ops' } }, spec: { taints: [{ key: 'example.com/maintenance', effect: 'NoSchedule' }] } } }, mergePatchOptions());
    await waitFor('the label and taint seen by the kubelet', async () => m.node?.metadata?.labels?.['team.example.com/owner'] === 'ops' && !!m.node?.spec?.taints?.some((t) => t.key === 'example.com/maintenance'), 10_000, 50);

    pressure = true;
    await waitFor('DiskPressure=True posted', async () => (await getNode(name))?.status?.conditions?.find((c) => c.type === 'DiskPressure')?.status === 'True', 10_000, 100);
    pressure = false;
    await waitFor('DiskPressure=False posted', async () => (await getNode(name))?.status?.conditions?.find((c) => c.type === 'DiskPressure')?.status === 'False', 10_000, 100);
    assert.equal(readyOf(await getNode(name))?.status, 'True');
    assert.equal(gets.length, getsBefore, 'the status loop read the watched Node, with no GET of it, over about a dozen periods');
  });

  it('registers the Node again at once when the watch sees it deleted (without waiting for the status period)', async function () {
    const name = nodeName('watch-deleted');
    let again = 0;
    // An update period longer than the test: only the watch's DELETED can start the re-registration.
    const m = manager(name, await nodeClient(name), new FakeInputs(), { updateFrequencyMs: 600_000, onRegisteredAgain: () => again++ });
    m.start();
    const uid = (await m.register())!.metadata!.uid;
    await sleep(1000);
    await core.deleteNode({ name });
    await waitFor('a new Node, Ready', async () => {
      const node = await getNode(name);
      return node !== undefined && node.metadata!.uid !== uid && readyOf(node)?.status === 'True';
    }, 15_000, 100);
    await waitFor('the pod source told', async () => again > 0, 5000, 50);
    await m.updateNow();
    assert.equal(again, 1, 'one registration again, one re-list');
    await waitFor('the kubelet\'s copy is the new Node', async () => m.node?.metadata?.uid !== uid && m.node?.metadata?.uid !== undefined, 5000, 50);
  });

  it('nodeStatus taps contribute conditions, capacity and labels; what they drop is removed', async function () {
    const name = nodeName('hook');
    const hooks = createHooks();
    let pressure = true;
    hooks.nodeStatus.tap('eviction-test', (draft) => {
      if (!pressure) return draft;
      return {
        ...draft,
        conditions: draft.conditions.map((c) => (c.type === 'MemoryPressure' ? { ...c, status: 'True' as const, reason: 'KubeletHasInsufficientMemory', message: 'kubelet has insufficient memory available' } : c)),
        capacity: { ...draft.capacity, 'example.com/dongle': '2' },
        allocatable: { ...draft.allocatable, 'example.com/dongle': '2' },
        labels: { ...draft.labels, 'example.com/pressure': 'memory', 'node-role.kubernetes.io/not-allowed': '' },
      };
    });
    const m = manager(name, await nodeClient(name), new FakeInputs(), { hooks });
    m.start();
    await m.register();
    await m.updateNow(true);
    let node = (await getNode(name))!;
    const mem = node.status!.conditions!.find((c) => c.type === 'MemoryPressure')!;
    assert.deepEqual([mem.status, mem.reason], ['True', 'KubeletHasInsufficientMemory']);
    assert.equal(node.status!.capacity!['example.com/dongle'], '2');
    assert.equal(node.metadata!.labels!['example.com/pressure'], 'memory');
    assert.equal(node.metadata!.labels!['node-role.kubernetes.io/not-allowed'], undefined, 'a label NodeRestriction refuses is not posted');
    pressure = false;
    await m.updateNow();
    node = (await getNode(name))!;
    assert.equal(node.status!.conditions!.find((c) => c.type === 'MemoryPressure')!.status, 'False');
    assert.equal(node.status!.capacity!['example.com/dongle'], undefined);
    assert.equal(node.metadata!.labels!['example.com/pressure'], undefined);
  });

  it('keeps the Lease: owned by the Node, renewTime advancing', async () => {
    const name = nodeName('lease');
    const client = await nodeClient(name);
    const m = manager(name, client, new FakeInputs());
    m.start();
    const uid = (await m.register())!.metadata!.uid!;
    const lease = new NodeLease({ client, nodeName: name, leaseDurationSeconds: 40, renewIntervalMs: 500, logger: silentLogger(), nodeUID: () => m.nodeUID });
    cleanups.push(() => lease.stop());
    lease.start();
    await waitFor('the lease', async () => (await coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE }).catch(() => undefined)) !== undefined, 10_000, 100);
    const first = await coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE });
    assert.equal(first.spec!.holderIdentity, name);
    assert.equal(first.spec!.leaseDurationSeconds, 40);
    assert.deepEqual(first.metadata!.ownerReferences!.map((o) => [o.apiVersion, o.kind, o.name, o.uid]), [['v1', 'Node', name, uid]]);
    const t1 = String(first.spec!.renewTime);
    await waitFor('renewTime to advance', async () => String((await coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE })).spec!.renewTime) !== t1, 5000, 100);
    const renewed = await coordination.readNamespacedLease({ name, namespace: NODE_LEASE_NAMESPACE });
    assert.ok(new Date(String(renewed.spec!.renewTime)).getTime() > new Date(t1).getTime());
  });

  it('through an API server outage: one log line when it goes, one when it is back; lease, status and pods recover', async () => {
    const name = nodeName('outage');
    const ns = await testNamespace('outage');
    const server = new URL(cp.server);
    const proxy: TcpProxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    cleanups.push(() => proxy.close());
    // The node's kubeconfig, pointed at the proxy (the serving certificate is for 127.0.0.1, any port).
    const kubeconfig = path.join(await fs.mkdtemp(path.join(os.tmpdir(), 'kts-api-outage-')), 'node.kubeconfig');
    cleanups.push(() => fs.rm(path.dirname(kubeconfig), { recursive: true, force: true }));
    await fs.writeFile(kubeconfig, (await fs.readFile(await cp.nodeKubeconfig(name), 'utf8')).replace(cp.server, `https://127.0.0.1:${proxy.port}`));
    const { logger, lines } = captureLogger<{ level: number; msg: string; component?: string }>('debug');
    // The kubelet's wiring, from a config file: a 1 s status period and a 4 s Lease (renewed every second).
    const configFile = path.join(path.dirname(kubeconfig), 'kubelet.json');
    await fs.writeFile(configFile, JSON.stringify({ nodeName: name, nodeIP: '127.0.0.1', kubeconfig: 'node.kubeconfig', rootDir: path.dirname(kubeconfig), nodeStatusUpdateFrequency: '1s', nodeLeaseDurationSeconds: 4 }));
    const config = await loadConfig({ configFile });
    assert.equal(config.kubeconfig, kubeconfig);
    const apiNode = createApiNode({ config: { ...config, kubeconfig }, hooks: createHooks(), inputs: new FakeInputs(), logger });
    cleanups.push(() => apiNode.stop());
    apiNode.start();
    const m = apiNode.nodeStatus!;
    const lease = apiNode.lease!;
    await m.register();
    const sets: V1Pod[][] = [];
    const source = apiNode.podSource;
    cleanups.push(() => source.stop());
    await source.start((pods) => sets.push(pods));
    await core.createNamespacedPod({ namespace: ns, body: podFor('before', name) });
    await waitFor('the pod before the outage', () => sets.at(-1)?.some((p) => p.metadata!.name === 'before') === true, 10_000, 50);
    await waitFor('a lease renewal', () => lease.lease !== undefined, 5000, 50);

    await proxy.cut();
    const setsBefore = sets.length;
    // Long enough for several failed lease renewals, status posts and watch retries.
    await new Promise((r) => setTimeout(r, 3500));
    assert.equal(sets.length, setsBefore, 'the pod set is kept, nothing emitted because of the outage');
    await core.createNamespacedPod({ namespace: ns, body: podFor('during', name) });
    const renewedBefore = lease.lease!.spec.renewTime!;
    await proxy.restore();
    await waitFor('a lease renewal after the outage', () => lease.lease!.spec.renewTime! > renewedBefore, 15_000, 100);
    await waitFor('the pod created during the outage', () => sets.at(-1)?.some((p) => p.metadata!.name === 'during') === true, 15_000, 100);
    assert.ok(sets.at(-1)!.some((p) => p.metadata!.name === 'before'));
    await m.updateNow(true);

    const down = lines.filter((l) => l.level === 40 && /is unreachable/.test(l.msg));
    const back = lines.filter((l) => l.level === 30 && /is reachable again/.test(l.msg));
    const warnings = lines.filter((l) => l.level >= 40).map((l) => l.msg);
    assert.equal(down.length, 1, `one line for the outage, got: ${JSON.stringify(warnings)}`);
    assert.equal(back.length, 1, 'one line when it is back');
    assert.deepEqual(warnings, [down[0]!.msg], 'no other warnings during the outage');
  });

  it('the API pod source emits the pods bound to the node: created, updated, deleted; never those of other nodes', async () => {
    const name = nodeName('pods');
    const other = nodeName('other');
    const ns = await testNamespace('pods');
    const client = await nodeClient(name);
    const sets: V1Pod[][] = [];
    const source = new ApiPodSource({ client, nodeName: name, logger: silentLogger() });
    cleanups.push(() => source.stop());
    await source.start((pods) => sets.push(pods));
    assert.deepEqual(sets.map((s) => s.length), [0], 'the first set comes from the initial list, before start() resolves');
    const last = () => sets.at(-1)!;
    const find = (pn: string) => last().find((p) => p.metadata!.name === pn);

    await core.createNamespacedPod({ namespace: ns, body: podFor('mine', name) });
    await core.createNamespacedPod({ namespace: ns, body: podFor('theirs', other) });
    await waitFor('the pod bound to the node', () => find('mine') !== undefined, 10_000, 50);
    const mine = find('mine')!;
    assert.equal(mine.metadata!.annotations!['kubernetes.io/config.source'], 'api');
    assert.ok(Date.parse(mine.metadata!.annotations!['kubernetes.io/config.seen']!) > 0);
    assert.equal(typeof mine.metadata!.creationTimestamp, 'string', 'wire JSON, not client-side models');
    assert.equal(mine.kind, 'Pod');

    await core.patchNamespacedPod({ name: 'mine', namespace: ns, body: { metadata: { labels: { version: '2' } } } }, mergePatchOptions());
    await waitFor('the update', () => find('mine')?.metadata?.labels?.version === '2', 10_000, 50);
    assert.equal(find('mine')!.metadata!.annotations!['kubernetes.io/config.seen'], mine.metadata!.annotations!['kubernetes.io/config.seen'], 'first-seen time kept');

    await core.deleteNamespacedPod({ name: 'mine', namespace: ns, gracePeriodSeconds: 0 });
    await waitFor('the deletion', () => find('mine') === undefined, 10_000, 50);
    assert.ok(sets.every((s) => s.every((p) => p.spec!.nodeName === name)), 'never a pod of another node');
  });

  it('names the identity, verb and object when the API server forbids a request', async () => {
    const name = nodeName('me');
    const victim = nodeName('victim');
    await core.createNode({ body: { metadata: { name: victim } } });
    const client = await nodeClient(name);
    const err = await client.request('PATCH', `/api/v1/nodes/${victim}/status`, { body: { status: { phase: 'Running' } }, contentType: PATCH.strategic }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.equal(err.statusCode, 403);
    assert.equal(err.message, `system:node:${name} may not patch nodes/status "${victim}": nodes "${victim}" is forbidden: node "${name}" is not allowed to modify node "${victim}"`);
    const leaseErr = await client.request('POST', `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`, {
      body: { metadata: { name: victim, namespace: NODE_LEASE_NAMESPACE }, spec: { holderIdentity: victim } },
    }).then(() => undefined, (e: unknown) => e);
    assert.ok(leaseErr instanceof ApiError);
    assert.match(leaseErr.message, new RegExp(`^system:node:${name} may not create leases\\.coordination\\.k8s\\.io in namespace "kube-node-lease": .*can only access node lease with the same name as the requesting node`));
  });

  /** A namespace of this test, deleted after it; waits for its default ServiceAccount (pods need it). */
  async function testNamespace(what: string): Promise<string> {
    const ns = `kts-${what}-${process.pid}-${++counter}`;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    cleanups.push(() => core.deleteNamespace({ name: ns }));
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 20_000, 100);
    return ns;
  }
});

function podFor(name: string, nodeName: string): V1Pod {
  return {
    metadata: { name },
    spec: { nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 0, containers: [{ name: 'main', image: 'registry.test/busybox:1' }] },
  };
}

/** client-node sends the first patch type it knows (json-patch); this asks for a merge patch. */
function mergePatchOptions() {
  return setHeaderOptions('Content-Type', PatchStrategy.MergePatch);
}
