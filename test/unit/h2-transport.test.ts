import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http2 from 'node:http2';
import path from 'node:path';
import { ApiClient } from '../../core/apiserver/api-client.ts';
import { ApiError } from '../../core/apiserver/api-errors.ts';
import { H2Transport } from '../../core/apiserver/h2-transport.ts';
import { credentialsOf } from '../../core/apiserver/credentials.ts';
import { loadKubeconfig, type LoadedKubeconfig } from '../../core/apiserver/kubeconfig.ts';
import { silentLogger } from '../../core/logger.ts';
import { PKI_DIR, status, writeKubeconfig } from '../support/fake-apiserver.ts';

/** What the fake HTTP/2 API server saw of one request. */
interface Seen { method: string; path: string; headers: http2.IncomingHttpHeaders; body: string; session: number }

/** An HTTP/2 API server on loopback that answers with `handler`; counts TLS sessions. */
async function startH2Server(handler: (req: Seen, stream: http2.ServerHttp2Stream) => void, settings: http2.Settings = {}) {
  const [key, cert] = await Promise.all([fs.readFile(path.join(PKI_DIR, 'server.key')), fs.readFile(path.join(PKI_DIR, 'server.crt'))]);
  const server = http2.createSecureServer({ key, cert, settings });
  const seen: Seen[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  let sessionCount = 0;
  const ids = new WeakMap<http2.ServerHttp2Session, number>();
  server.on('session', (s) => {
    sessions.add(s);
    ids.set(s, ++sessionCount);
    s.on('close', () => sessions.delete(s));
  });
  server.on('stream', (stream, headers) => {
    let body = '';
    stream.setEncoding('utf8');
    stream.on('data', (d: string) => (body += d));
    stream.on('end', () => {
      const req = { method: String(headers[':method']), path: String(headers[':path']), headers, body, session: ids.get(stream.session as http2.ServerHttp2Session) ?? 0 };
      seen.push(req);
      handler(req, stream);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `https://127.0.0.1:${port}`,
    seen,
    sessions: () => sessionCount,
    close: () => new Promise<void>((resolve) => {
      for (const s of sessions) s.destroy();
      server.close(() => resolve());
    }),
  };
}

function json(stream: http2.ServerHttp2Stream, code: number, body: unknown): void {
  stream.respond({ ':status': code, 'content-type': 'application/json' });
  stream.end(JSON.stringify(body));
}

describe('HTTP/2 transport shared by API clients', function () {
  const cleanups: Array<() => Promise<unknown> | void> = [];
  afterEach(async function () {
    for (const c of cleanups.splice(0).reverse()) await c();
  });

  async function setup(handler: Parameters<typeof startH2Server>[0], opts: { settings?: http2.Settings; user?: 'cert' | 'token' } = {}) {
    const server = await startH2Server(handler, opts.settings);
    cleanups.push(() => server.close());
    const file = await writeKubeconfig(server.url, opts.user ?? 'cert');
    cleanups.push(() => fs.rm(path.dirname(file), { recursive: true, force: true }));
    const loaded: LoadedKubeconfig = loadKubeconfig(file);
    const { tls } = await credentialsOf(loaded).apply();
    const transport = new H2Transport({ server: loaded.server, tls: { ca: tls.ca, cert: tls.cert, key: tls.key }, logger: silentLogger() });
    cleanups.push(() => transport.close());
    const client = (node?: string, requestTimeoutMs?: number) => new ApiClient(loaded, {
      logger: silentLogger(),
      transport,
      ...(node ? { impersonate: { user: `system:node:${node}`, groups: ['system:nodes'] } } : {}),
      ...(requestTimeoutMs ? { requestTimeoutMs } : {}),
    });
    return { server, transport, client };
  }

  it('carries every client\'s requests on one connection, each with its own impersonated identity', async function () {
    const { server, client } = await setup((req, stream) => json(stream, 200, { kind: 'Node', metadata: { name: req.path } }));
    const nodes = ['h-0', 'h-1', 'h-2'];
    const clients = nodes.map((n) => client(n));
    const answers = await Promise.all(clients.flatMap((c, i) => [c.request('GET', `/api/v1/nodes/${nodes[i]}`), c.request('PATCH', `/api/v1/nodes/${nodes[i]}/status`, { body: { status: {} }, contentType: 'application/strategic-merge-patch+json' })]));
    assert.equal(answers.length, 6);
    assert.equal(server.sessions(), 1, 'one TLS connection for all of them');
    for (const [i, node] of nodes.entries()) {
      const mine = server.seen.filter((s) => s.path.includes(`/nodes/${node}`));
      assert.equal(mine.length, 2);
      for (const s of mine) {
        assert.equal(s.headers['impersonate-user'], `system:node:${node}`);
        assert.equal(s.headers['impersonate-group'], 'system:nodes');
        assert.match(String(s.headers['user-agent']), /^kubelet-ts\//);
        // A client certificate is the session's own: nothing per request.
        assert.equal(s.headers.authorization, undefined);
      }
      assert.equal(clients[i]!.describeIdentity(), `system:node:${node}`);
    }
    const patch = server.seen.find((s) => s.method === 'PATCH')!;
    assert.equal(patch.headers['content-type'], 'application/strategic-merge-patch+json');
    assert.deepEqual(JSON.parse(patch.body), { status: {} });
    assert.equal(patch.headers['content-length'], String(Buffer.byteLength(patch.body)));
  });

  it('sends a token kubeconfig\'s credentials with each request', async function () {
    const { server, client } = await setup((_req, stream) => json(stream, 200, {}), { user: 'token' });
    await client('h-0').request('GET', '/version');
    assert.equal(server.seen[0]!.headers.authorization, 'Bearer secret-token');
  });

  it('names the impersonated node in a refusal', async function () {
    const { client } = await setup((_req, stream) => json(stream, 403, status(403, 'Forbidden', 'nodes "h-9" is forbidden: node "h-0" is not allowed to modify node "h-9"')));
    const err = await client('h-0').request('PATCH', '/api/v1/nodes/h-9/status', { body: {} }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError);
    assert.match(err.message, /^system:node:h-0 may not patch nodes\/status "h-9": .*not allowed to modify node "h-9"/);
  });

  it('opens another connection when the server\'s stream limit is reached, and watches stream events', async function () {
    const watches: http2.ServerHttp2Stream[] = [];
    const { server, transport, client } = await setup((req, stream) => {
      if (!req.path.includes('watch=true')) return json(stream, 200, {});
      stream.respond({ ':status': 200, 'content-type': 'application/json' });
      stream.write(`${JSON.stringify({ type: 'ADDED', object: { metadata: { name: req.path } } })}\n`);
      watches.push(stream);
    }, { settings: { maxConcurrentStreams: 2 } });
    const events: string[] = [];
    const ends: Array<string | undefined> = [];
    const handles = await Promise.all(['a', 'b', 'c'].map((n) => client(n).watch(`/api/v1/pods`, { fieldSelector: `spec.nodeName=${n}` }, (e) => events.push(`${e.type} ${n}`), (err) => ends.push(err?.message))));
    const deadline = Date.now() + 5000;
    while ((events.length < 3 || watches.length < 3) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(events.sort(), ['ADDED a', 'ADDED b', 'ADDED c']);
    assert.equal(server.sessions(), 2, 'two streams per connection: a second one for the third watch');
    assert.deepEqual(transport.stats(), { sessions: 2, streams: 3 });
    const w = server.seen.find((s) => s.path.includes('spec.nodeName%3Da'))!;
    assert.equal(w.headers['impersonate-user'], 'system:node:a');
    assert.match(w.path, /allowWatchBookmarks|watch=true/);
    // The server ends one watch: its client hears of it; the other two stop from our side.
    watches[0]!.end();
    while (ends.length < 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.deepEqual(ends, [undefined]);
    for (const h of handles) h.stop();
  });

  it('gives a watch refused with an HTTP status its status and body', async function () {
    const { client } = await setup((_req, stream) => json(stream, 410, status(410, 'Expired', 'too old resource version: 1 (2)')));
    const done = await new Promise<ApiError | undefined>((resolve) => void client('h-0').watch('/api/v1/pods', { resourceVersion: '1' }, () => {}, resolve));
    assert.ok(done instanceof ApiError);
    assert.equal(done.statusCode, 410);
    assert.match(done.message, /too old resource version/);
  });

  it('ends a request that outlives the client\'s deadline, and frees its stream', async function () {
    const { transport, client } = await setup(() => { /* never answers */ });
    const t0 = performance.now();
    const err = await client('h-0', 300).request('GET', '/api/v1/nodes/h-0').then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'DeadlineExceeded');
    assert.ok(performance.now() - t0 < 3000);
    const deadline = Date.now() + 2000;
    while (transport.stats().streams > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 20));
    assert.equal(transport.stats().streams, 0);
  });

  it('reports an API server it cannot reach as unreachable, naming it', async function () {
    const { server, client } = await setup((_req, stream) => json(stream, 200, {}));
    await server.close();
    const err = await client('h-0', 5000).request('GET', '/api/v1/nodes/h-0').then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError, String(err));
    assert.equal(err.code, 'Unavailable');
    assert.match(err.message, new RegExp(`cannot reach the API server ${server.url}`));
  });
});
