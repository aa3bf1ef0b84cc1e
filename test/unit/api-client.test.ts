import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient, createApiClient, createKubeletApiClients } from '../../core/apiserver/api-client.ts';
import { ApiError, isAlreadyExistsError, isConflictError, isGoneError, isNotFoundError, isUnavailableError } from '../../core/apiserver/api-errors.ts';
import { KubeconfigError, loadKubeconfig } from '../../core/apiserver/kubeconfig.ts';
import { requestInfo, describeTarget } from '../../core/apiserver/request-info.ts';
import { silentLogger } from '../../core/logger.ts';
import { freePort } from '../../tools/node-env/util.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { PKI_DIR, sendJSON, startFakeApiServer, status, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

describe('API client', function () {
  const dirs: string[] = [];
  const servers: FakeApiServer[] = [];
  const clients: ApiClient[] = [];

  afterEach(async function () {
    for (const c of clients.splice(0)) c.close();
    for (const s of servers.splice(0)) await s.close();
    for (const d of dirs.splice(0)) await fs.rm(d, { recursive: true, force: true });
  });

  async function kubeconfig(server: string, user: 'cert' | 'token' | 'none' = 'cert'): Promise<string> {
    const file = await writeKubeconfig(server, user);
    dirs.push(path.dirname(file));
    return file;
  }

  function client(file: string, opts: { qps?: number; burst?: number; requestTimeoutMs?: number } = {}): ApiClient {
    const c = createApiClient({ kubeconfig: file, logger: silentLogger(), ...opts });
    clients.push(c);
    return c;
  }

  async function failure(p: Promise<unknown>): Promise<ApiError> {
    const err = await p.then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ApiError, `expected an ApiError, got ${String(err)}`);
    return err;
  }

  describe('kubeconfig', function () {
    let dir: string;
    beforeEach(async function () {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-kc-'));
      dirs.push(dir);
    });

    async function broken(text: string): Promise<{ file: string; message: string }> {
      const file = path.join(dir, 'kubeconfig');
      await fs.writeFile(file, text);
      try {
        loadKubeconfig(file);
      } catch (err) {
        assert.ok(err instanceof KubeconfigError, String(err));
        return { file, message: err.message };
      }
      throw new Error('the kubeconfig loaded');
    }
    const cluster = (extra = '') => `clusters:\n- name: c\n  cluster:\n    server: https://127.0.0.1:6443\n${extra}`;
    const ctx = (user = 'u', clusterName = 'c') => `contexts:\n- name: x\n  context:\n    cluster: ${clusterName}\n    user: ${user}\n`;

    it('reads the identity from the client certificate, with paths relative to the file', async function () {
      const file = await kubeconfig('https://127.0.0.1:6443');
      const loaded = loadKubeconfig(file);
      assert.equal(loaded.server, 'https://127.0.0.1:6443');
      assert.deepEqual([loaded.identity.user, loaded.identity.groups, loaded.identity.method], ['system:node:n1', ['system:nodes', 'extra-group'], 'client certificate']);
      assert.ok(loaded.identity.certNotAfter! > Date.now());
      assert.equal(loaded.user!.certFile, path.join(path.dirname(file), 'node.crt'));
    });

    it('a token kubeconfig names the token until the server says who it is', async function () {
      const loaded = loadKubeconfig(await kubeconfig('https://127.0.0.1:6443', 'token'));
      assert.deepEqual([loaded.identity.user, loaded.identity.method], [undefined, 'token']);
    });

    it('names the file and what is wrong', async function () {
      const missing = path.join(dir, 'nope');
      assert.throws(() => loadKubeconfig(missing), { message: `kubeconfig ${missing}: cannot read the file: ENOENT: no such file or directory, open '${missing}'` });
      let r = await broken('clusters: [\n');
      assert.match(r.message, new RegExp(`^kubeconfig ${r.file}: not valid YAML: `));
      r = await broken(`${cluster()}${ctx()}users:\n- name: u\n  user: {}\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: no current-context is set (contexts in the file: "x")`);
      r = await broken(`${cluster()}${ctx()}current-context: y\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: current-context "y" is not among its contexts ("x")`);
      r = await broken(`${cluster()}${ctx('u', 'd')}current-context: x\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: context "x" names cluster "d", which the file does not define (clusters: "c")`);
      r = await broken(`clusters:\n- name: c\n  cluster: {}\n${ctx()}current-context: x\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: cluster "c" has no server`);
      r = await broken(`${cluster()}${ctx()}current-context: x\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: context "x" names user "u", which the file does not define (users: none)`);
      r = await broken(`${cluster()}${ctx()}current-context: x\nusers:\n- name: u\n  user:\n    client-certificate: certs/missing.crt\n    client-key: certs/missing.key\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: user "u": client-certificate ${path.join(dir, 'certs/missing.crt')}: cannot read: ENOENT: no such file or directory, open '${path.join(dir, 'certs/missing.crt')}'`);
      r = await broken(`${cluster('    certificate-authority-data: bm90IGEgY2VydA==\n')}${ctx()}current-context: x\nusers:\n- name: u\n  user: {}\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: cluster "c": the certificate authority is not a PEM certificate`);
      await fs.copyFile(path.join(PKI_DIR, 'node.crt'), path.join(dir, 'node.crt'));
      await fs.copyFile(path.join(PKI_DIR, 'server.key'), path.join(dir, 'server.key'));
      r = await broken(`${cluster()}${ctx()}current-context: x\nusers:\n- name: u\n  user:\n    client-certificate: node.crt\n    client-key: server.key\n`);
      assert.match(r.message, /user "u": the client key does not belong to the client certificate \(subject O=system:nodes, O=extra-group, CN=system:node:n1\)$/);
      r = await broken(`${cluster()}${ctx()}current-context: x\nusers:\n- name: u\n  user:\n    client-certificate: node.crt\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: user "u" has a client certificate but no client-key or client-key-data`);
      // An unquoted all-digit token is a number to YAML: refused, not dropped into anonymous 401s.
      r = await broken(`${cluster()}${ctx()}current-context: x\nusers:\n- name: u\n  user:\n    token: 123456789\n`);
      assert.equal(r.message, `kubeconfig ${r.file}: user "u": token must be a string (quote it in YAML), not a number`);
    });
  });

  describe('error messages', function () {
    it('403 names the identity, the verb and the object, then the server\'s reason', async function () {
      const srv = await startFakeApiServer((_req, res) =>
        sendJSON(res, 403, status(403, 'Forbidden', 'nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"', { name: 'n2', kind: 'nodes' })),
      );
      servers.push(srv);
      const c = client(await kubeconfig(srv.url));
      const err = await failure(c.request('PATCH', '/api/v1/nodes/n2/status', { body: {} }));
      assert.equal(err.message, 'system:node:n1 may not patch nodes/status "n2": nodes "n2" is forbidden: node "n1" is not allowed to modify node "n2"');
      assert.deepEqual([err.statusCode, err.reason, err.code], [403, 'Forbidden', 'Internal']);
      const lease = await failure(c.request('PUT', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/n2', { body: {} }));
      assert.match(lease.message, /^system:node:n1 may not update leases\.coordination\.k8s\.io "n2" in namespace "kube-node-lease": /);
      // Every request goes through the same pipeline: a raw send too.
      const raw = await failure(c.send({ method: 'GET', path: '/api/v1/nodes' }));
      assert.match(raw.message, /^system:node:n1 may not list nodes: /);
    });

    it('401 says the credentials were refused, naming whose', async function () {
      const srv = await startFakeApiServer((_req, res) => sendJSON(res, 401, status(401, 'Unauthorized', 'Unauthorized')));
      servers.push(srv);
      const err = await failure(client(await kubeconfig(srv.url)).request('GET', '/api/v1/nodes/n1'));
      assert.equal(err.message, `the API server ${srv.url} refused the credentials of system:node:n1 (401 Unauthorized): Unauthorized`);
      const tokenErr = await failure(client(await kubeconfig(srv.url, 'token')).request('GET', '/api/v1/nodes/n1'));
      assert.equal(tokenErr.message, `the API server ${srv.url} refused the credentials of the kubeconfig's token (401 Unauthorized): Unauthorized`);
    });

    it('a server certificate that does not verify says so and names the kubeconfig', async function () {
      const srv = await startFakeApiServer((_req, res) => sendJSON(res, 200, {}), { cert: 'other' });
      servers.push(srv);
      const file = await kubeconfig(srv.url);
      const err = await failure(client(file).request('GET', '/api/v1/nodes/n1'));
      assert.equal(err.failure, 'tls');
      assert.match(err.message, new RegExp(`^the API server ${srv.url} presented a certificate that does not verify against the certificate authority of kubeconfig ${file}: .*\\(UNABLE_TO_VERIFY_LEAF_SIGNATURE\\)$`));
    });

    it('an unreachable server and a server that does not answer name the server URL', async function () {
      const port = await freePort();
      const file = await kubeconfig(`https://127.0.0.1:${port}`);
      const err = await failure(client(file).request('GET', '/api/v1/nodes/n1'));
      assert.equal(err.message, `cannot reach the API server https://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}`);
      assert.ok(isUnavailableError(err));
      const srv = await startFakeApiServer(() => {}); // never answers
      servers.push(srv);
      const slow = await failure(client(await kubeconfig(srv.url), { requestTimeoutMs: 300 }).request('GET', '/api/v1/nodes/n1'));
      assert.equal(slow.message, `the API server ${srv.url} did not answer GET /api/v1/nodes/n1 within 300ms`);
      assert.deepEqual([slow.failure, slow.code], ['timeout', 'DeadlineExceeded']);
    });

    it('classifies statuses: NotFound, AlreadyExists, Conflict, Gone, unavailable', async function () {
      const answers: Record<string, [number, string]> = { a: [404, 'NotFound'], b: [409, 'AlreadyExists'], c: [409, 'Conflict'], d: [410, 'Gone'], e: [503, 'ServiceUnavailable'] };
      const srv = await startFakeApiServer((req, res) => {
        const [code, reason] = answers[req.url.split('/').pop()!]!;
        sendJSON(res, code, status(code, reason, `${reason} happened`));
      });
      servers.push(srv);
      const c = client(await kubeconfig(srv.url));
      const errs = await Promise.all(['a', 'b', 'c', 'd', 'e'].map((k) => failure(c.request('GET', `/api/v1/namespaces/ns/pods/${k}`))));
      assert.deepEqual(errs.map((e) => [isNotFoundError(e), isAlreadyExistsError(e), isConflictError(e), isGoneError(e), isUnavailableError(e)]), [
        [true, false, false, false, false],
        [false, true, false, false, false],
        [false, false, true, false, false],
        [false, false, false, true, false],
        [false, false, false, false, true],
      ]);
      assert.equal(errs[0]!.message, 'NotFound happened');
      assert.equal(errs[4]!.message, 'get pods "e" in namespace "ns": 503 ServiceUnavailable: ServiceUnavailable happened');
    });

    it('reads request info as the API server does', function () {
      const cases: Array<[string, string, string]> = [
        ['PATCH', '/api/v1/nodes/n2/status', 'patch nodes/status "n2"'],
        ['GET', '/api/v1/pods?fieldSelector=spec.nodeName%3Dn1', 'list pods'],
        ['GET', '/api/v1/pods?watch=true', 'watch pods'],
        ['POST', '/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases', 'create leases.coordination.k8s.io in namespace "kube-node-lease"'],
        ['DELETE', '/api/v1/namespaces/ns1', 'delete namespaces "ns1"'],
        ['DELETE', '/api/v1/namespaces/ns1/pods', 'deletecollection pods in namespace "ns1"'],
        ['GET', '/healthz', 'get /healthz'],
      ];
      for (const [method, url, want] of cases) {
        const info = requestInfo(method, url);
        assert.equal(`${info.verb} ${info.verb === 'get' && info.group === '' && info.resource.startsWith('/') ? info.resource : describeTarget(info)}`, want);
      }
    });
  });

  describe('requests', function () {
    it('sends again what the server turned away with 429 and Retry-After (client-go), up to 10 times', async function () {
      let turnedAway = 0;
      const srv = await startFakeApiServer((_req, res) => {
        if (turnedAway++ < 2) {
          res.setHeader('Retry-After', '0');
          sendJSON(res, 429, status(429, 'TooManyRequests', 'too many requests, please try again later'));
          return;
        }
        sendJSON(res, 201, { kind: 'Event' });
      });
      servers.push(srv);
      const c = client(await kubeconfig(srv.url));
      assert.deepEqual(await c.request('POST', '/api/v1/namespaces/default/events', { body: {} }), { kind: 'Event' });
      assert.equal(srv.requests.length, 3, 'two turned away, the third served (a POST too: it was not processed)');
      srv.handle((_req, res) => {
        res.setHeader('Retry-After', '0');
        sendJSON(res, 429, status(429, 'TooManyRequests', 'too many requests, please try again later'));
      });
      const err = await failure(c.request('GET', '/api/v1/nodes/n1'));
      assert.equal(err.statusCode, 429);
      assert.equal(srv.requests.length, 3 + 10);
    });

    it('keeps one TLS connection alive across requests and sends its User-Agent', async function () {
      const srv = await startFakeApiServer((_req, res) => sendJSON(res, 200, { kind: 'NodeList', items: [] }));
      servers.push(srv);
      const c = client(await kubeconfig(srv.url));
      for (let i = 0; i < 5; i++) await c.request('GET', '/api/v1/nodes');
      await c.send({ method: 'GET', path: '/api/v1/nodes?limit=1' });
      assert.equal(srv.connections, 1);
      assert.match(String(srv.requests[0]!.headers['user-agent']), /^kubelet-ts\/\d+\.\d+\.\d+ \(linux\/\w+\)$/);
    });

    it('a watch sends the kubelet\'s User-Agent too', async function () {
      const srv = await startFakeApiServer((_req, res) => {
        res.writeHead(200, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ type: 'ADDED', object: { kind: 'Pod', metadata: { name: 'p' } } }) + '\n');
      });
      servers.push(srv);
      const c = client(await kubeconfig(srv.url));
      const events: string[] = [];
      const done = new Promise<void>((resolve) => {
        void c.watch('/api/v1/pods', {}, (e) => events.push(e.type), () => resolve());
      });
      await done;
      assert.deepEqual(events, ['ADDED']);
      assert.match(String(srv.requests[0]!.headers['user-agent']), /^kubelet-ts\//);
    });

    it('retries once, on a new connection, a request whose kept-alive connection was reset (not a POST)', async function () {
      let resets = 0;
      const srv = await startFakeApiServer((req, res) => {
        if (req.url.endsWith('reset') && resets++ % 2 === 0) return void req.socket.destroy();
        sendJSON(res, 200, {});
      });
      servers.push(srv);
      const { logger, lines } = captureLogger<{ level: number; msg: string }>('info');
      const c = createApiClient({ kubeconfig: await kubeconfig(srv.url), logger });
      clients.push(c);
      await c.request('GET', '/api/v1/nodes/reset');
      assert.equal(resets, 2, 'tried twice');
      assert.deepEqual(lines, [], 'a stale connection is no outage');
      const err = await failure(c.request('POST', '/api/v1/nodes/reset', { body: {} }));
      assert.equal(err.failure, 'unreachable');
      assert.equal(resets, 3, 'a POST is not repeated');
    });

    it('throttles with the token bucket: burst at once, then qps', async function () {
      const srv = await startFakeApiServer((_req, res) => sendJSON(res, 200, {}));
      servers.push(srv);
      // 2 qps, burst 3: without the burst the first three alone would take >= 1,000 ms (two waits
      // of 500 ms). The margins are wide because the pure lane shares the machine with the node
      // lanes: CI saw three warm requests take 302 ms at 5 qps (where a 300 ms bound then sat),
      // and three cold ones 260 ms.
      const c = client(await kubeconfig(srv.url), { qps: 2, burst: 3 });
      // Open the connections first, then let the bucket fill again (3 tokens at 2/s: 1.5 s),
      // so the measured burst is the throttle's doing, not connection set-up.
      await Promise.all(Array.from({ length: 3 }, () => c.request('GET', '/api/v1/nodes')));
      await sleep(1_600);
      const t0 = performance.now();
      await Promise.all(Array.from({ length: 3 }, () => c.request('GET', '/api/v1/nodes')));
      const burstMs = performance.now() - t0;
      await Promise.all(Array.from({ length: 3 }, () => c.request('GET', '/api/v1/nodes')));
      const totalMs = performance.now() - t0;
      assert.ok(burstMs < 700, `the burst went at once (${burstMs.toFixed(0)} ms; without a burst it takes >= 1000)`);
      assert.ok(totalMs >= 1_450 && totalMs < 4_000, `3 more requests at 2 qps take ~1,500 ms (${totalMs.toFixed(0)} ms)`);
    });

    it('events have their own token bucket: a burst of events does not delay the main client', async function () {
      const srv = await startFakeApiServer((_req, res) => sendJSON(res, 201, {}));
      servers.push(srv);
      const file = await kubeconfig(srv.url);
      const { main, heartbeat, events } = createKubeletApiClients({
        kubeconfig: file, kubeAPIQPS: 2, kubeAPIBurst: 2, eventRecordQPS: 2, eventBurst: 2, nodeStatusUpdateFrequencyMs: 10_000, nodeLeaseDurationSeconds: 40,
      }, silentLogger());
      clients.push(main, heartbeat, events);
      // Six events: two at once, four more at 2/s (2 s); meanwhile the main client's burst is untouched.
      const t0 = performance.now();
      const posting = Promise.all(Array.from({ length: 6 }, () => events.request('POST', '/api/v1/namespaces/default/events', { body: {} })));
      await Promise.all(Array.from({ length: 2 }, () => main.request('GET', '/api/v1/nodes')));
      const mainMs = performance.now() - t0;
      await posting;
      const eventsMs = performance.now() - t0;
      // A shared bucket would hold the main client's two requests behind the events for ~3 s;
      // 1.5 s tells the two apart on a busy machine too (CI's pure lane saw three warm requests
      // take 302 ms).
      assert.ok(mainMs < 1_500, `the main client's requests went at once (${mainMs.toFixed(0)} ms)`);
      assert.ok(eventsMs >= 1_900, `events wait on their own bucket (${eventsMs.toFixed(0)} ms)`);
    });

    it('resolveIdentity asks SelfSubjectReview when the kubeconfig holds a token', async function () {
      const srv = await startFakeApiServer((req, res) => {
        if (req.url === '/apis/authentication.k8s.io/v1/selfsubjectreviews') {
          sendJSON(res, 201, { kind: 'SelfSubjectReview', status: { userInfo: { username: 'system:serviceaccount:kube-system:node-agent', groups: ['system:serviceaccounts'] } } });
        } else sendJSON(res, 403, status(403, 'Forbidden', 'no'));
      });
      servers.push(srv);
      const c = client(await kubeconfig(srv.url, 'token'));
      assert.equal(c.describeIdentity(), "the kubeconfig's token");
      await c.resolveIdentity();
      assert.equal(c.describeIdentity(), 'system:serviceaccount:kube-system:node-agent');
      assert.equal(srv.requests[0]!.headers.authorization, 'Bearer secret-token');
      const err = await failure(c.request('GET', '/api/v1/secrets'));
      assert.equal(err.message, 'system:serviceaccount:kube-system:node-agent may not list secrets: no');
    });

    it('logs one line when the server goes away and one when it is back', async function () {
      const { logger, lines } = captureLogger<{ level: number; msg: string }>('info');
      let up = false;
      const srv = await startFakeApiServer((_req, res) => (up ? sendJSON(res, 200, {}) : sendJSON(res, 503, status(503, 'ServiceUnavailable', 'etcd is away'))));
      servers.push(srv);
      const c = createApiClient({ kubeconfig: await kubeconfig(srv.url), logger });
      clients.push(c);
      for (let i = 0; i < 4; i++) await c.request('GET', '/api/v1/nodes').catch(() => {});
      up = true;
      for (let i = 0; i < 3; i++) await c.request('GET', '/api/v1/nodes');
      assert.deepEqual(lines.map((l) => [l.level, l.msg]), [
        [40, `API server ${srv.url} is unreachable; requests are retried with back-off until it answers`],
        [30, lines[1]!.msg],
      ]);
      assert.match(lines[1]!.msg, new RegExp(`^API server ${srv.url} is reachable again after \\d+ms$`));
    });
  });
});
