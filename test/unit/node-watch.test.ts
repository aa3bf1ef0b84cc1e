import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Node } from '@kubernetes/client-node';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import type { MachineInfo } from '../../core/node/machine-info.ts';
import { NodeStatusManager, type NodeStatusInputs } from '../../core/node/node-status.ts';
import { waitFor } from '../../tools/node-env/util.ts';
import { sendJSON, startFakeApiServer, status, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

const NAME = 'watch-node';
const MACHINE: MachineInfo = {
  numCores: 2, memoryCapacityBytes: 4n << 30n, rootfsCapacityBytes: 20n << 30n, hugePages: [],
  machineID: 'm', systemUUID: 's', bootID: 'b', kernelVersion: '6.1.0', osImage: 'Debian',
};
const inputs: NodeStatusInputs = {
  runtimeVersion: async () => ({ runtimeName: 'containerd', runtimeVersion: '1.6' }),
  runtimeStatus: async () => ({ conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] }),
  plegHealthy: () => true,
  images: async () => [],
};

/**
 * The node status loop reads the watched Node instead of GETting it, and falls back to a GET
 * when the watch cannot be trusted, against a scripted API server that keeps one Node (the
 * real control plane's side is in test/integration/api-node.test.ts).
 */
describe('node status on a watch of the Node (fallback to GET)', function () {
  this.timeout(15_000);
  let server: FakeApiServer;
  let client: ApiClient;
  let kubeconfigDir: string;
  let node: V1Node | undefined;
  let rv = 100;
  let watchers: Array<(event: object) => void>;
  let endWatches: Array<() => void>;
  /** What the fake does with the next requests (tests change them). */
  let listFails: boolean;
  let watchFails: boolean;
  let conflicts: number;
  const managers: NodeStatusManager[] = [];

  const push = (type: string, object: unknown) => {
    for (const w of watchers) w({ type, object });
  };
  const store = (n: V1Node) => {
    n.metadata!.resourceVersion = String(++rv);
    node = n;
    push('MODIFIED', n);
  };
  const nodeGets = () => server.requests.filter((r) => r.method === 'GET' && r.url.startsWith(`/api/v1/nodes/${NAME}`));

  beforeEach(async () => {
    node = undefined;
    watchers = [];
    endWatches = [];
    listFails = false;
    watchFails = false;
    conflicts = 0;
    server = await startFakeApiServer((req, res) => {
      const url = new URL(req.url, 'https://x');
      if (req.method === 'GET' && url.pathname === '/api/v1/nodes') {
        assert.equal(url.searchParams.get('fieldSelector'), `metadata.name=${NAME}`);
        if (url.searchParams.get('watch') === 'true') {
          if (watchFails) return sendJSON(res, 500, status(500, 'InternalError', 'watch refused'));
          res.writeHead(200, { 'content-type': 'application/json' });
          watchers.push((event) => res.write(`${JSON.stringify(event)}\n`));
          endWatches.push(() => res.end());
          // A bookmark: the watch is established.
          res.write(`${JSON.stringify({ type: 'BOOKMARK', object: { kind: 'Node', metadata: { resourceVersion: String(rv) } } })}\n`);
          return;
        }
        if (listFails) return sendJSON(res, 500, status(500, 'InternalError', 'list refused'));
        return sendJSON(res, 200, { metadata: { resourceVersion: String(rv) }, items: node ? [node] : [] });
      }
      if (req.method === 'POST' && url.pathname === '/api/v1/nodes') {
        const created = JSON.parse(req.body) as V1Node;
        created.metadata!.uid = `uid-${rv}`;
        created.metadata!.resourceVersion = String(++rv);
        node = created;
        push('ADDED', created);
        return sendJSON(res, 201, created);
      }
      if (url.pathname === `/api/v1/nodes/${NAME}` && req.method === 'GET') {
        return node ? sendJSON(res, 200, node) : sendJSON(res, 404, status(404, 'NotFound', `nodes "${NAME}" not found`));
      }
      if (url.pathname === `/api/v1/nodes/${NAME}/status` && req.method === 'PATCH') {
        if (conflicts > 0) {
          conflicts--;
          return sendJSON(res, 409, status(409, 'Conflict', 'the object has been modified'));
        }
        if (!node) return sendJSON(res, 404, status(404, 'NotFound', `nodes "${NAME}" not found`));
        const patch = JSON.parse(req.body) as { status: Record<string, unknown>; metadata?: { labels?: Record<string, string> } };
        const addresses = (patch.status.addresses as Array<Record<string, unknown>>).filter((a) => !('$patch' in a));
        store({ ...node, metadata: { ...node.metadata, labels: { ...node.metadata?.labels, ...patch.metadata?.labels } }, status: { ...patch.status, addresses } as unknown as V1Node['status'] });
        return sendJSON(res, 200, node);
      }
      sendJSON(res, 404, status(404, 'NotFound', 'no such path'));
    });
    const kubeconfig = await writeKubeconfig(server.url);
    kubeconfigDir = path.dirname(kubeconfig);
    client = createApiClient({ kubeconfig, logger: silentLogger(), requestTimeoutMs: 3000 });
  });

  afterEach(async () => {
    for (const m of managers.splice(0)) await m.stop();
    client.close();
    await server.close();
    await fs.rm(kubeconfigDir, { recursive: true, force: true });
  });

  function manager(silenceMs?: number): NodeStatusManager {
    const m = new NodeStatusManager({
      client, hooks: createHooks(), inputs, logger: silentLogger(), nodeName: NAME, nodeIP: '127.0.0.1', port: 10250, rootDir: '/var/lib/kubelet',
      maxPods: 110, nodeLabels: {}, registerWithTaints: [], systemReserved: {}, kubeReserved: {}, evictionHard: {},
      // Periods longer than the test: only updateNow() and the watch make the manager act.
      updateFrequencyMs: 60_000, reportFrequencyMs: 300_000, readinessPollMs: 0, machineInfo: async () => MACHINE,
      watchNode: { reflector: { backoff: { initialMs: 50, maxMs: 100 }, ...(silenceMs ? { silenceMs } : {}) } },
    });
    managers.push(m);
    m.start();
    return m;
  }

  it('reads the watched Node while the watch is current: no GET of the Node; an admin\'s label and taint are seen at once', async () => {
    const m = manager();
    await m.register();
    await waitFor('the watch', async () => watchers.length > 0, 5000, 20);
    // The sync right after registration may have come before the watch's list (then it GETs).
    await m.updateNow();
    server.requests.length = 0;
    await m.updateNow(true);
    await m.updateNow(true);
    assert.equal(server.requests.filter((r) => r.method === 'PATCH').length, 2, 'the forced posts went out');
    assert.deepEqual(nodeGets().map((r) => r.url), [], 'the Node was not read with GET');
    store({ ...node!, metadata: { ...node!.metadata, labels: { ...node!.metadata?.labels, 'team.example.com/owner': 'ops' } }, spec: { taints: [{ key: 'example.com/maintenance', effect: 'NoSchedule' }] } });
    await waitFor('the label', async () => m.node?.metadata?.labels?.['team.example.com/owner'] === 'ops', 5000, 20);
    assert.deepEqual(m.node?.spec?.taints?.map((t) => t.key), ['example.com/maintenance']);
    assert.deepEqual(nodeGets().map((r) => r.url), []);
  });

  it('GETs the Node (from the watch cache) when the watch never listed', async () => {
    listFails = true;
    const m = manager();
    await m.register();
    await m.updateNow();
    server.requests.length = 0;
    await m.updateNow(true);
    assert.deepEqual(nodeGets().map((r) => r.url), [`/api/v1/nodes/${NAME}?resourceVersion=0`]);
  });

  it('GETs the Node when the watch failed after its list, and reads the watch again once it is back', async () => {
    const m = manager();
    await m.register();
    await waitFor('the watch', async () => watchers.length > 0, 5000, 20);
    await m.updateNow();
    server.requests.length = 0;
    // The server ends the watch and refuses the next one.
    watchFails = true;
    const before = watchers.length;
    const refusedBefore = server.requests.filter((r) => r.url.includes('watch=true')).length;
    for (const end of endWatches.splice(0)) end();
    await waitFor('a refused watch', async () => server.requests.filter((r) => r.url.includes('watch=true')).length > refusedBefore, 5000, 20);
    // The refusal reaches the watch's owner a moment after the server sent it.
    await waitFor('a sync that GETs the Node', async () => {
      await m.updateNow(true);
      return nodeGets().length > 0;
    }, 5000, 20);
    assert.ok(nodeGets().every((r) => r.url === `/api/v1/nodes/${NAME}?resourceVersion=0`), 'read from the watch cache');
    watchFails = false;
    await waitFor('the watch again', async () => watchers.length > before, 5000, 20);
    const gets = nodeGets().length;
    await m.updateNow(true);
    assert.equal(nodeGets().length, gets, 'no GET once the watch is back');
  });

  it('a watch silent too long (no event, no bookmark): the Node is listed again from etcd, and read with GET until the list answers', async () => {
    const m = manager(400);
    await m.register();
    await waitFor('the watch', async () => watchers.length > 0, 5000, 20);
    await m.updateNow();
    server.requests.length = 0;
    // The watch stays open and says nothing; the list that follows its silence fails at first.
    listFails = true;
    const etcdList = `/api/v1/nodes?fieldSelector=metadata.name%3D${NAME}&resourceVersion=`;
    await waitFor('a new list from etcd', async () => server.requests.some((r) => r.url === etcdList), 5000, 20);
    await m.updateNow(true);
    assert.deepEqual(nodeGets().map((r) => r.url), [`/api/v1/nodes/${NAME}?resourceVersion=0`], 'the copy is not trusted after the silence');
    listFails = false;
    await waitFor('the copy trusted again', async () => {
      const gets = nodeGets().length;
      await m.updateNow(true);
      return nodeGets().length === gets;
    }, 5000, 50);
  });

  it('after a conflict, the retry reads the Node from etcd (GET without resourceVersion)', async () => {
    const m = manager();
    await m.register();
    await waitFor('the watch', async () => watchers.length > 0, 5000, 20);
    await m.updateNow();
    server.requests.length = 0;
    conflicts = 1;
    await m.updateNow(true);
    assert.deepEqual(nodeGets().map((r) => r.url), [`/api/v1/nodes/${NAME}`]);
    assert.equal(server.requests.filter((r) => r.method === 'PATCH').length, 2, 'the conflict, then the post');
  });

  it('the watch sees the Node deleted: it is registered again without waiting for the period', async () => {
    const m = manager();
    const first = (await m.register())!;
    await waitFor('the watch', async () => watchers.length > 0, 5000, 20);
    const gone = node!;
    node = undefined;
    push('DELETED', gone);
    await waitFor('registered again', async () => node !== undefined && node.metadata!.uid !== first.metadata!.uid, 5000, 20);
    assert.ok(nodeGets().length >= 1, 'the deletion was confirmed with a GET before registering again');
  });
});
