import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import path from 'node:path';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { ServiceCache } from '../../core/apiserver/service-cache.ts';
import { silentLogger } from '../../core/logger.ts';
import { waitFor } from '../../tools/node-env/util.ts';
import { sendJSON, startFakeApiServer, status, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

const service = (name: string, rv: string, clusterIP: string) => ({ metadata: { namespace: 'default', name, resourceVersion: rv }, spec: { clusterIP, ports: [{ port: 80, protocol: 'TCP' }] } });

/** The services list-watch (service links) against a scripted API server: its long watch and its silence check. */
describe('ServiceCache (list-watch of the services)', function () {
  let server: FakeApiServer;
  let client: ApiClient;
  let cache: ServiceCache | undefined;
  let dir: string;
  const watches: ServerResponse[] = [];
  const watchQueries: URLSearchParams[] = [];
  let lists = 0;

  beforeEach(async function () {
    watches.length = 0;
    watchQueries.length = 0;
    lists = 0;
    server = await startFakeApiServer((req, res) => {
      const url = new URL(req.url, 'https://x');
      if (url.pathname !== '/api/v1/services') return sendJSON(res, 404, status(404, 'NotFound', 'not here'));
      if (url.searchParams.get('watch') === 'true') {
        watchQueries.push(url.searchParams);
        res.writeHead(200, { 'Content-Type': 'application/json' });
        res.flushHeaders();
        watches.push(res);
        return;
      }
      lists++;
      sendJSON(res, 200, { kind: 'ServiceList', metadata: { resourceVersion: '10' }, items: [service('web', '5', '10.0.0.10')] });
    });
    const file = await writeKubeconfig(server.url);
    dir = path.dirname(file);
    client = createApiClient({ kubeconfig: file, logger: silentLogger() });
  });

  afterEach(async function () {
    await cache?.stop();
    cache = undefined;
    client.close();
    for (const w of watches) w.destroy();
    await server.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const links = () => [...cache!.list()].map((s) => `${s.name}=${s.clusterIP}`).sort().join();

  it('watches for 30–60 min with bookmarks; a silent watch is watched again from its resourceVersion and a new service arrives', async function () {
    cache = new ServiceCache({ client, logger: silentLogger(), silenceMs: 300 });
    cache.start();
    await waitFor('the first watch', async () => watches.length === 1, 5000, 10);
    assert.equal(links(), 'web=10.0.0.10');
    const q = watchQueries[0]!;
    const timeout = Number(q.get('timeoutSeconds'));
    assert.ok(timeout >= 1800 && timeout < 3600, `timeoutSeconds ${timeout}`);
    assert.deepEqual([q.get('resourceVersion'), q.get('allowWatchBookmarks')], ['10', 'true']);
    watches[0]!.write(`${JSON.stringify({ type: 'ADDED', object: service('db', '11', '10.0.0.11') })}\n`);
    await waitFor('db', async () => links() === 'db=10.0.0.11,web=10.0.0.10', 2000, 10);
    // The watch goes silent: it is ended and started again from resourceVersion 11, without a list.
    await waitFor('a second watch', async () => watches.length === 2, 3000, 10);
    assert.equal(watchQueries[1]!.get('resourceVersion'), '11');
    assert.equal(lists, 1, 'no re-list');
    watches[1]!.write(`${JSON.stringify({ type: 'ADDED', object: service('cache', '12', '10.0.0.12') })}\n`);
    await waitFor('cache', async () => links() === 'cache=10.0.0.12,db=10.0.0.11,web=10.0.0.10', 2000, 10);
  });
});
