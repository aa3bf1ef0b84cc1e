import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import http from 'node:http';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import type { ApiClient } from '../../core/apiserver/api-client.ts';
import { silentLogger } from '../../core/logger.ts';
import { RequestAuthenticator } from '../../core/server/authn.ts';
import { RequestAuthorizer, requestAttributes } from '../../core/server/authz.ts';
import { MainServer } from '../../core/server/main-server.ts';
import { RouteTable } from '../../core/server/routes.ts';
import { loadServingTls, type ServingTls } from '../../core/server/serving-tls.ts';
import { ServerListenError } from '../../core/server/read-only-server.ts';
import { kubeletRequest } from '../support/kubelet-https.ts';
import { SERVING_PAIR_DIR, testConfig } from '../support/test-kubelet.ts';

const PKI = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases', 'api-pki');
const pki = (f: string) => fs.readFile(path.join(PKI, f));

/** A stand-in for the API client: answers TokenReview and SubjectAccessReview from functions, counting calls. */
function fakeApi(answers: {
  token?: (token: string) => { authenticated: boolean; user?: { username: string; groups?: string[] } } | Error;
  sar?: (spec: { user: string; resourceAttributes: { verb: string; subresource: string } }) => boolean | Error;
}) {
  const calls = { tokenreviews: 0, subjectaccessreviews: 0 };
  const client = {
    async request(_method: string, p: string, opts: { body?: { spec: any } }) {
      if (p.endsWith('/tokenreviews')) {
        calls.tokenreviews++;
        const a = answers.token?.(opts.body!.spec.token) ?? { authenticated: false };
        if (a instanceof Error) throw a;
        return { status: a };
      }
      calls.subjectaccessreviews++;
      const allowed = answers.sar?.(opts.body!.spec) ?? false;
      if (allowed instanceof Error) throw allowed;
      return { status: { allowed } };
    },
  } as unknown as ApiClient;
  return { client, calls };
}

describe('main port: request attributes (upstream path → nodes/<subresource>)', () => {
  const subs = (method: string, p: string) => {
    const a = requestAttributes(method, p, 'n1');
    return `${a.verb} ${a.subresources.join(',')}`;
  };
  it('maps paths and methods as upstream (with the fine-grained pods, healthz, configz first)', () => {
    assert.equal(subs('GET', '/stats/summary'), 'get stats');
    assert.equal(subs('GET', '/stats'), 'get stats');
    assert.equal(subs('GET', '/metrics'), 'get metrics');
    assert.equal(subs('GET', '/metrics/resource'), 'get metrics');
    assert.equal(subs('GET', '/metrics/probes'), 'get metrics');
    assert.equal(subs('GET', '/logs/'), 'get log');
    assert.equal(subs('GET', '/spec/'), 'get spec');
    assert.equal(subs('GET', '/pods'), 'get pods,proxy');
    assert.equal(subs('GET', '/runningpods/'), 'get pods,proxy');
    assert.equal(subs('GET', '/healthz'), 'get healthz,proxy');
    assert.equal(subs('GET', '/configz'), 'get configz,proxy');
    assert.equal(subs('GET', '/containerLogs/ns/p/c'), 'get proxy');
    assert.equal(subs('POST', '/exec/ns/p/c'), 'create proxy');
    assert.equal(subs('GET', '/exec/ns/p/c'), 'get proxy');
    assert.equal(subs('PUT', '/x'), 'update proxy');
    assert.equal(subs('HEAD', '/pods'), 'get pods,proxy');
    assert.equal(subs('GET', '/statsx'), 'get proxy', 'a prefix is not a subpath');
    assert.equal(subs('GET', '/stats/../pods'), 'get pods,proxy', 'dot segments are resolved first');
    assert.deepEqual(requestAttributes('GET', '/pods', 'n1'), { verb: 'get', resource: 'nodes', subresources: ['pods', 'proxy'], name: 'n1' });
  });
});

describe('main port: authentication and authorization', function () {
  this.timeout(20_000);
  let dir: string;
  let server: MainServer | undefined;
  let port: number;
  let serving: ServingTls;
  const logger = silentLogger();

  before(async () => {
    serving = {
      key: await fs.readFile(path.join(SERVING_PAIR_DIR, 'tls.key')),
      cert: await fs.readFile(path.join(SERVING_PAIR_DIR, 'tls.crt')),
      certFile: path.join(SERVING_PAIR_DIR, 'tls.crt'),
      clientCA: await pki('ca.crt'),
      clientCAFrom: 'test',
      minVersion: undefined,
      ciphers: undefined,
    };
  });
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-ms-'));
  });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function start(opts: { api?: ReturnType<typeof fakeApi>; mode?: 'AlwaysAllow' | 'Webhook'; anonymous?: boolean; ttls?: [number, number, number]; routes?: RouteTable; maxStreams?: number; idleMs?: number; tls?: Partial<ServingTls>; connectionLimits?: ConstructorParameters<typeof MainServer>[0]['connectionLimits']; serveTcp?: boolean; debuggingHandlers?: boolean }) {
    const [tokenTtl, allowTtl, denyTtl] = opts.ttls ?? [60_000, 60_000, 60_000];
    const routes = opts.routes ?? new RouteTable().add('/pods', () => ({ items: [] })).add('/healthz', () => 'ok').add('/stats/summary', () => ({ node: {} }));
    server = new MainServer({
      address: '127.0.0.1',
      port: 0,
      tls: { ...serving, ...opts.tls },
      socketPath: path.join(dir, 'kubelet-ts.sock'),
      nodeName: 'n1',
      routes,
      authenticator: new RequestAuthenticator({ x509: true, webhook: true, cacheTtlMs: tokenTtl, anonymous: opts.anonymous ?? false, client: () => opts.api?.client, logger }),
      authorizer: new RequestAuthorizer({ mode: opts.mode ?? 'Webhook', cacheAuthorizedTtlMs: allowTtl, cacheUnauthorizedTtlMs: denyTtl, client: () => opts.api?.client, logger }),
      streamIdleTimeoutMs: opts.idleMs ?? 60_000,
      logger,
      ...(opts.maxStreams ? { maxStreams: opts.maxStreams } : {}),
      ...(opts.connectionLimits ? { connectionLimits: opts.connectionLimits } : {}),
      ...(opts.serveTcp !== undefined ? { serveTcp: opts.serveTcp } : {}),
      ...(opts.debuggingHandlers !== undefined ? { debuggingHandlers: opts.debuggingHandlers } : {}),
    });
    port = await server.listen();
    return server;
  }

  it('401 without credentials; a client certificate of the client CA is its CN with its O groups; another CA\'s or a server-only certificate is 401', async () => {
    let seen: { user: string; groups?: string[] } | undefined;
    const api = fakeApi({ sar: (spec) => ((seen = spec as never), true) });
    await start({ api });
    assert.deepEqual(await kubeletRequest(port, '/pods').then((r) => [r.status, r.body]), [401, 'Unauthorized\n']);
    const ok = await kubeletRequest(port, '/pods', { cert: await pki('node.crt'), key: await pki('node.key') });
    assert.equal(ok.status, 200, ok.body);
    assert.equal(seen!.user, 'system:node:n1');
    assert.deepEqual(seen!.groups, ['system:nodes', 'extra-group', 'system:authenticated']);
    assert.equal((await kubeletRequest(port, '/pods', { cert: await pki('other-server.crt'), key: await pki('other-server.key') })).status, 401, 'another CA');
    assert.equal((await kubeletRequest(port, '/pods', { cert: await pki('server.crt'), key: await pki('server.key') })).status, 401, 'not for client authentication');
  });

  it('bearer tokens: TokenReview once per token while cached; refused tokens 401; anonymous only without credentials', async () => {
    const api = fakeApi({
      token: (tk) => (tk === 'good' ? { authenticated: true, user: { username: 'alice', groups: ['devs'] } } : tk === 'boom' ? new Error('API down') : { authenticated: false }),
      sar: (spec) => spec.user === 'alice' || spec.user === 'system:anonymous',
    });
    await start({ api, anonymous: true });
    for (let i = 0; i < 3; i++) assert.equal((await kubeletRequest(port, '/pods', { token: 'good' })).status, 200);
    assert.equal(api.calls.tokenreviews, 1, 'one review, then the cache');
    assert.equal(api.calls.subjectaccessreviews, 1, 'one SubjectAccessReview (pods allowed), then the cache');
    assert.equal((await kubeletRequest(port, '/pods', { token: 'bad' })).status, 401, 'a refused token is not anonymous');
    assert.equal((await kubeletRequest(port, '/pods', { token: 'bad' })).status, 401);
    assert.equal(api.calls.tokenreviews, 2, 'a refusal is cached too');
    assert.equal((await kubeletRequest(port, '/pods', { token: 'boom' })).status, 401);
    assert.equal((await kubeletRequest(port, '/pods', { token: 'boom' })).status, 401);
    assert.equal(api.calls.tokenreviews, 4, 'a failed review is not cached');
    assert.equal((await kubeletRequest(port, '/pods')).status, 200, 'no credentials: system:anonymous');
  });

  it('403 names the user, the verb, the resource and the subresources tried; SubjectAccessReview answers cached for their TTLs; a failed review is 500', async () => {
    let allow = false;
    let fail = false;
    const api = fakeApi({ token: () => ({ authenticated: true, user: { username: 'bob' } }), sar: () => (fail ? new Error('API down') : allow) });
    await start({ api, ttls: [60_000, 60_000, 300] });
    const r = await kubeletRequest(port, '/pods', { token: 't' });
    assert.deepEqual([r.status, r.body], [403, 'Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[pods proxy])\n']);
    assert.equal(api.calls.subjectaccessreviews, 2, 'pods, then proxy');
    const s = await kubeletRequest(port, '/stats/summary', { token: 't' });
    assert.equal(s.body, 'Forbidden (user=bob, verb=get, resource=nodes, subresource(s)=[stats])\n');
    allow = true;
    assert.equal((await kubeletRequest(port, '/pods', { token: 't' })).status, 403, 'the denial is cached');
    await sleep(400);
    assert.equal((await kubeletRequest(port, '/pods', { token: 't' })).status, 200, 'until its TTL');
    const before = api.calls.subjectaccessreviews;
    allow = false;
    assert.equal((await kubeletRequest(port, '/pods', { token: 't' })).status, 200, 'the allowance is cached for its own TTL');
    assert.equal(api.calls.subjectaccessreviews, before);
    fail = true;
    const e = await kubeletRequest(port, '/healthz', { token: 't' });
    assert.deepEqual([e.status, e.body], [500, 'Authorization error (user=bob, verb=get, resource=nodes, subresource=healthz)\n']);
  });

  it('a flood of silent and handshake-then-idle sockets never keeps a client certificate or a token from being served; strangers over their deadlines are closed', async function () {
    this.timeout(60_000);
    const api = fakeApi({ token: (tk) => (tk === 'good' ? { authenticated: true, user: { username: 'alice' } } : { authenticated: false }) });
    await start({ api, mode: 'AlwaysAllow', connectionLimits: { unauthenticated: 24, unauthenticatedPerPeer: 16, handshakeMs: 1500, authenticateMs: 1500 } });
    const creds = { cert: await pki('node.crt'), key: await pki('node.key') };
    // Held open, and opened again as the server closes them (bounded: 1,500 opens in all).
    let opens = 0;
    let stopping = false;
    const held = new Set<net.Socket>();
    const open = (handshake: boolean): void => {
      if (stopping || opens >= 1500) return;
      opens++;
      const s: net.Socket = handshake ? tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }) : net.connect(port, '127.0.0.1');
      held.add(s);
      s.on('error', () => {});
      s.once('close', () => {
        held.delete(s);
        setImmediate(() => open(handshake));
      });
    };
    for (let i = 0; i < 30; i++) open(false);
    for (let i = 0; i < 10; i++) open(true);
    try {
      for (let i = 0; i < 10; i++) {
        assert.equal((await kubeletRequest(port, '/pods', creds)).status, 200, `client certificate, request ${i}`);
        assert.equal((await kubeletRequest(port, '/pods', { token: 'good' })).status, 200, `token, request ${i}`);
        await sleep(100);
      }
      assert.ok(opens > 40, `the server closed strangers to make room (${opens} opens)`);
    } finally {
      stopping = true;
      for (const s of held) s.destroy();
    }
    // A stranger that never completes a handshake is closed after handshakeMs.
    const silent = net.connect(port, '127.0.0.1');
    silent.on('error', () => {});
    const t0 = Date.now();
    await new Promise((resolve) => silent.once('close', resolve));
    assert.ok(Date.now() - t0 < 4000, `closed after ${Date.now() - t0} ms`);
  });

  it('Webhook with no API server (standalone) refuses everything; unknown paths are 404 only once authorized', async () => {
    await start({});
    const r = await kubeletRequest(port, '/pods', { cert: await pki('node.crt'), key: await pki('node.key') });
    assert.equal(r.status, 403);
    assert.match(r.body, /^Forbidden \(user=system:node:n1, verb=get, resource=nodes, subresource\(s\)=\[pods proxy\]\): authorization mode Webhook needs an API server/);
    await server!.close();
    await start({ mode: 'AlwaysAllow' });
    const creds = { cert: await pki('node.crt'), key: await pki('node.key') };
    assert.equal((await kubeletRequest(port, '/nope', creds)).status, 404);
    assert.equal((await kubeletRequest(port, '/nope')).status, 401);
  });

  it('the local socket: mode 0600, no credentials needed, a stale socket replaced, a regular file refused', async () => {
    await start({});
    const sock = path.join(dir, 'kubelet-ts.sock');
    assert.equal((await fs.stat(sock)).mode & 0o777, 0o600);
    const body = await new Promise<string>((resolve, reject) => {
      http.get({ socketPath: sock, path: '/pods' }, (res) => {
        let b = '';
        res.on('data', (d) => (b += d)).on('end', () => resolve(`${res.statusCode} ${b}`));
      }).on('error', reject);
    });
    assert.equal(body, '200 {"items":[]}');
    await server!.close();
    await assert.rejects(fs.stat(sock), 'closing removes the socket');
    // A kubelet killed without cleanup leaves its socket behind: the next one takes the path.
    await new Promise<void>((resolve, reject) => {
      execFile(process.execPath, ['-e', `require('net').createServer().listen(${JSON.stringify(sock)}, () => process.kill(process.pid, 'SIGKILL'))`], () => resolve()).on('error', reject);
    });
    assert.ok((await fs.lstat(sock)).isSocket(), 'a stale socket is there');
    await start({});
    assert.equal((await fs.stat(sock)).mode & 0o777, 0o600);
    await server!.close();
    await fs.writeFile(sock, 'not a socket');
    await assert.rejects(start({}), (err: Error) => err instanceof ServerListenError && /a file that is not a socket is there/.test(err.message));
    server = undefined;
  });

  it('enableDebuggingHandlers false: logs, exec, attach, port-forward and run answer 405 on the port (authenticated first), the rest is served; the local socket keeps them', async () => {
    const routes = new RouteTable().add('/pods', () => ({ items: [] })).add('/containerLogs/', () => 'a log line').add('/run/', () => 'ran', ['POST']);
    const api = fakeApi({ sar: () => true });
    await start({ api, routes, debuggingHandlers: false });
    const creds = { cert: await pki('node.crt'), key: await pki('node.key') };
    assert.equal((await kubeletRequest(port, '/containerLogs/ns/p/c')).status, 401, 'authentication first, as upstream\'s filter');
    assert.deepEqual(await kubeletRequest(port, '/containerLogs/ns/p/c', creds).then((r) => [r.status, r.body]), [405, 'Debug endpoints are disabled.\n']);
    for (const p of ['/exec/ns/p/c?command=sh', '/attach/ns/p/c', '/portForward/ns/p', '/runningpods/', '/debug/pods/x']) {
      assert.equal((await kubeletRequest(port, p, creds)).status, 405, p);
    }
    assert.equal((await kubeletRequest(port, '/run/ns/p/c', { ...creds, method: 'POST' })).status, 405);
    assert.equal((await kubeletRequest(port, '/pods', creds)).status, 200, 'the rest is served');
    const local = await new Promise<string>((resolve, reject) => {
      http.get({ socketPath: path.join(dir, 'kubelet-ts.sock'), path: '/containerLogs/ns/p/c' }, (res) => {
        let b = '';
        res.on('data', (d) => (b += d)).on('end', () => resolve(`${res.statusCode} ${b}`));
      }).on('error', reject);
    });
    assert.equal(local, '200 a log line', 'root on the node still reads logs through the local socket');
  });

  it('enableServer false: nothing listens on the port, the local socket serves', async () => {
    const probe = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => probe.once('listening', r));
    const free = (probe.address() as net.AddressInfo).port;
    await new Promise((r) => probe.close(r));
    server = new MainServer({
      address: '127.0.0.1', port: free, tls: serving, socketPath: path.join(dir, 'kubelet-ts.sock'), nodeName: 'n1', routes: new RouteTable().add('/pods', () => ({ items: [] })),
      authenticator: new RequestAuthenticator({ x509: true, webhook: false, cacheTtlMs: 1000, anonymous: false, client: () => undefined, logger }),
      authorizer: new RequestAuthorizer({ mode: 'AlwaysAllow', cacheAuthorizedTtlMs: 1000, cacheUnauthorizedTtlMs: 1000, client: () => undefined, logger }),
      streamIdleTimeoutMs: 60_000, logger, serveTcp: false,
    });
    assert.equal(await server.listen(), free, 'the configured port is what the Node reports, as upstream');
    await assert.rejects(kubeletRequest(free, '/pods', { cert: await pki('node.crt'), key: await pki('node.key'), timeoutMs: 2000 }), /ECONNREFUSED/);
    const local = await new Promise<number>((resolve, reject) => {
      http.get({ socketPath: path.join(dir, 'kubelet-ts.sock'), path: '/pods' }, (res) => resolve(res.statusCode ?? 0)).on('error', reject);
    });
    assert.equal(local, 200);
  });

  it('a taken port fails the start with one line naming the address and the field', async () => {
    const blocker = net.createServer().listen(0, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    const taken = (blocker.address() as net.AddressInfo).port;
    try {
      const s = new MainServer({
        address: '127.0.0.1', port: taken, tls: serving, socketPath: undefined, nodeName: 'n1', routes: new RouteTable(),
        authenticator: new RequestAuthenticator({ x509: false, webhook: false, cacheTtlMs: 0, anonymous: false, client: () => undefined, logger }),
        authorizer: new RequestAuthorizer({ mode: 'AlwaysAllow', cacheAuthorizedTtlMs: 0, cacheUnauthorizedTtlMs: 0, client: () => undefined, logger }),
        streamIdleTimeoutMs: 1000, logger,
      });
      await assert.rejects(s.listen(), (err: Error) => err instanceof ServerListenError && err.message === `cannot listen on 127.0.0.1:${taken} (port): address already in use`);
      await s.close();
    } finally {
      blocker.close();
    }
  });

  it('tlsMinVersion refuses older clients; a cipher list limits TLS 1.2', async () => {
    await start({ mode: 'AlwaysAllow', anonymous: true, tls: { minVersion: 'TLSv1.3' } });
    assert.equal((await kubeletRequest(port, '/healthz')).status, 200);
    await assert.rejects(new Promise<void>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, maxVersion: 'TLSv1.2' }, () => {
        s.destroy();
        resolve();
      });
      s.on('error', reject);
    }), /protocol version|alert/i);
    await server!.close();
    await start({ mode: 'AlwaysAllow', anonymous: true, tls: { ciphers: 'ECDHE-RSA-AES256-GCM-SHA384' } });
    const cipher = await new Promise<string>((resolve, reject) => {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false, maxVersion: 'TLSv1.2' }, () => {
        resolve(s.getCipher().name);
        s.destroy();
      });
      s.on('error', reject);
    });
    assert.equal(cipher, 'ECDHE-RSA-AES256-GCM-SHA384');
  });

  it('serverTLSBootstrap: no certificate yet refuses every handshake (the local socket works); a pair set later is served at once, client CA and limits kept', async () => {
    const peer = () => new Promise<string>((resolve) => {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
        resolve(`serial ${s.getPeerCertificate().serialNumber}`);
        s.destroy();
      });
      s.on('error', (err: NodeJS.ErrnoException) => resolve(`error ${err.code}`));
    });
    await start({ tls: { key: undefined, cert: undefined, certFile: undefined } });
    assert.match(await peer(), /^error ERR_SSL_(SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/);
    const local = await new Promise<number>((resolve, reject) => http.get({ socketPath: path.join(dir, 'kubelet-ts.sock'), path: '/healthz' }, (res) => resolve(res.statusCode ?? 0)).on('error', reject));
    assert.equal(local, 200, 'kubelet-ts commands still reach it');
    server!.setServingPair({ cert: serving.cert!, key: serving.key!, certFile: 'first' });
    assert.equal(await peer(), `serial ${new X509Certificate(serving.cert!).serialNumber}`);
    // A node client certificate still authenticates (the client CA came along into the new context).
    const ok = await kubeletRequest(port, '/pods', { cert: await pki('node.crt'), key: await pki('node.key') });
    assert.notEqual(ok.status, 401, ok.body);
    const other = { cert: await pki('server.crt'), key: await pki('server.key') };
    server!.setServingPair({ ...other, certFile: 'second' });
    assert.equal(await peer(), `serial ${new X509Certificate(other.cert).serialNumber}`);
  });

  it('a self-signed pair is made once in certDirectory (key 0600) with the node\'s names, and kept', async () => {
    const config = testConfig(dir, { tlsCertFile: undefined, tlsPrivateKeyFile: undefined, nodeName: 'node-a', nodeIP: '10.9.8.7' });
    const first = await loadServingTls(config, logger);
    assert.equal(first.certFile, path.join(config.certDirectory, 'kubelet.crt'));
    assert.equal((await fs.stat(path.join(config.certDirectory, 'kubelet.key'))).mode & 0o777, 0o600);
    const x = new X509Certificate(first.cert!);
    assert.match(x.subjectAltName ?? '', /DNS:node-a/);
    assert.match(x.subjectAltName ?? '', /IP Address:10\.9\.8\.7/);
    assert.ok(x.verify(x.publicKey), 'self-signed');
    const second = await loadServingTls(config, logger);
    assert.ok(second.cert!.equals(first.cert!), 'kept, not made again');
    assert.equal(second.clientCA, undefined, 'standalone: no client CA unless configured');
    await assert.rejects(loadServingTls({ ...config, tlsCertFile: path.join(dir, 'none.crt'), tlsPrivateKeyFile: path.join(dir, 'none.key') }, logger), /tlsCertFile .*none\.crt: cannot read it/);
  });
});

describe('main port: proxied streams and limits', function () {
  this.timeout(20_000);
  let dir: string;
  let server: MainServer | undefined;
  let port: number;
  let backend: net.Server;
  let backendPort: number;
  /** What the runtime's streaming server side saw: request heads, and its connections. */
  let heads: string[];
  let backendSockets: net.Socket[];
  let backendMode: 'upgrade' | 'refuse';
  const logger = silentLogger();

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-ms-'));
    heads = [];
    backendSockets = [];
    backendMode = 'upgrade';
    // A stand-in for containerd's streaming server: answers 101 and echoes, or refuses like a WebSocket handshake without a protocol.
    backend = net.createServer((s) => {
      backendSockets.push(s);
      let buf = '';
      let upgraded = false;
      s.on('error', () => {});
      s.on('data', (d) => {
        if (upgraded) {
          s.write(d);
          return;
        }
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        heads.push(buf.slice(0, end));
        if (backendMode === 'refuse') {
          s.end('HTTP/1.1 403 Forbidden\r\nContent-Length: 21\r\n\r\nunsupported protocol\n');
          return;
        }
        upgraded = true;
        s.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\n\r\n');
        const rest = buf.slice(end + 4);
        if (rest) s.write(rest);
      });
    });
    await new Promise<void>((r) => backend.listen(0, '127.0.0.1', r));
    backendPort = (backend.address() as net.AddressInfo).port;
  });

  afterEach(async () => {
    await server?.close();
    server = undefined;
    for (const s of backendSockets) s.destroy();
    await new Promise<void>((r) => backend.close(() => r()));
    await fs.rm(dir, { recursive: true, force: true });
  });

  const tokens = fakeApi({ token: () => ({ authenticated: true, user: { username: 'streamer' } }) });

  async function start(opts: { maxStreams?: number; idleMs?: number; target?: () => URL } = {}) {
    const routes = new RouteTable()
      .add('/healthz', () => 'ok')
      .addUpgrade('/exec/', async () => (opts.target ? opts.target() : new URL(`http://127.0.0.1:${backendPort}/exec/TOKEN`)));
    server = new MainServer({
      address: '127.0.0.1',
      port: 0,
      tls: { key: await fs.readFile(path.join(SERVING_PAIR_DIR, 'tls.key')), cert: await fs.readFile(path.join(SERVING_PAIR_DIR, 'tls.crt')), certFile: '', clientCA: undefined, clientCAFrom: undefined, minVersion: undefined, ciphers: undefined },
      socketPath: undefined,
      nodeName: 'n1',
      routes,
      // The client's token is good (a stand-in TokenReview): the proxy must still not pass it on.
      authenticator: new RequestAuthenticator({ x509: false, webhook: true, cacheTtlMs: 1000, anonymous: true, client: () => tokens.client, logger }),
      authorizer: new RequestAuthorizer({ mode: 'AlwaysAllow', cacheAuthorizedTtlMs: 1000, cacheUnauthorizedTtlMs: 1000, client: () => undefined, logger }),
      streamIdleTimeoutMs: opts.idleMs ?? 60_000,
      logger,
      ...(opts.maxStreams ? { maxStreams: opts.maxStreams } : {}),
    });
    port = await server.listen();
  }

  /** Opens an upgrade request to the kubelet; resolves with the socket and the response head. */
  function upgrade(p = '/exec/ns/pod/c?command=sh', extra = ''): Promise<{ socket: tls.TLSSocket; head: string; data: () => string }> {
    return new Promise((resolve, reject) => {
      const socket = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
      let buf = '';
      let resolved = false;
      socket.on('secureConnect', () => socket.write(`POST ${p} HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nAuthorization: Bearer secret-token\r\n${extra}\r\n`));
      socket.on('data', (d) => {
        buf += d.toString('latin1');
        const end = buf.indexOf('\r\n\r\n');
        if (!resolved && end >= 0) {
          resolved = true;
          const head = buf.slice(0, end);
          const start = end + 4;
          resolve({ socket, head, data: () => buf.slice(start) });
        }
      });
      socket.on('error', (err) => (resolved ? undefined : reject(err)));
    });
  }

  it('proxies the upgrade to the runtime\'s URL without the client\'s credentials, then bytes both ways', async () => {
    await start();
    const { socket, head, data } = await upgrade('/exec/ns/pod/c?command=sh', 'Sec-WebSocket-Protocol: base64url.bearer.authorization.k8s.io.c2VjcmV0, v4.channel.k8s.io\r\n');
    assert.match(head, /^HTTP\/1\.1 101 /);
    assert.match(heads[0]!, /^POST \/exec\/TOKEN HTTP\/1\.1\r\n/);
    assert.match(heads[0]!, /\r\nUpgrade: SPDY\/3\.1/);
    assert.match(heads[0]!, new RegExp(`\\r\\nHost: 127\\.0\\.0\\.1:${backendPort}`));
    assert.doesNotMatch(heads[0]!, /authorization: bearer|secret-token|c2VjcmV0/i);
    assert.match(heads[0]!, /Sec-WebSocket-Protocol: v4\.channel\.k8s\.io/);
    socket.write('ping-1');
    for (let i = 0; i < 250 && !data().includes('ping-1'); i++) await sleep(20);
    assert.equal(data(), 'ping-1');
    assert.equal(server!.activeStreams, 1);
    // The client goes away: the runtime's side is closed too.
    const closed = new Promise((r) => backendSockets[0]!.once('close', r));
    socket.destroy();
    await closed;
    for (let i = 0; i < 250 && server!.activeStreams > 0; i++) await sleep(20);
    assert.equal(server!.activeStreams, 0);
  });

  it('passes the runtime\'s refusal through (kubectl falls back from WebSocket to SPDY on it)', async () => {
    await start();
    backendMode = 'refuse';
    const { head, data } = await upgrade();
    assert.match(head, /^HTTP\/1\.1 403 Forbidden/);
    for (let i = 0; i < 250 && !data().includes('unsupported'); i++) await sleep(20);
    assert.equal(data(), 'unsupported protocol\n');
  });

  it('a runtime streaming server that does not answer: 500 naming it', async () => {
    const dead = await new Promise<number>((resolve) => {
      const s = net.createServer().listen(0, '127.0.0.1', () => {
        const p = (s.address() as net.AddressInfo).port;
        s.close(() => resolve(p));
      });
    });
    await start({ target: () => new URL(`http://127.0.0.1:${dead}/exec/X`) });
    const { head, data } = await upgrade();
    assert.match(head, /^HTTP\/1\.1 500 /);
    for (let i = 0; i < 250 && !data().includes('\n'); i++) await sleep(20);
    assert.match(data(), new RegExp(`error dialing the container runtime's streaming server 127\\.0\\.0\\.1:${dead}: .*ECONNREFUSED`));
  });

  it('at most maxStreams streams at once: the next one is a 429 until one closes', async () => {
    await start({ maxStreams: 2 });
    const a = await upgrade();
    const b = await upgrade();
    const c = await upgrade();
    assert.match(c.head, /^HTTP\/1\.1 429 /);
    assert.match(c.head, /Retry-After: 5/);
    a.socket.destroy();
    for (let i = 0; i < 250 && server!.activeStreams > 1; i++) await sleep(20);
    const d = await upgrade();
    assert.match(d.head, /^HTTP\/1\.1 101 /);
    b.socket.destroy();
    d.socket.destroy();
  });

  it('a stream without traffic for the idle timeout is closed on both sides', async () => {
    await start({ idleMs: 300 });
    const { socket } = await upgrade();
    const closed = new Promise((r) => socket.once('close', r));
    const backendClosed = new Promise((r) => backendSockets[0]!.once('close', r));
    const t0 = Date.now();
    await Promise.all([closed, backendClosed]);
    assert.ok(Date.now() - t0 < 3000);
    assert.equal(server!.activeStreams, 0);
  });

  it('request headers beyond the bound are a 431; a stalled client does not hold up others', async () => {
    await start();
    const big = await kubeletRequest(port, '/healthz', { headers: { 'x-big': 'a'.repeat(40 * 1024) } }).catch((err: Error) => ({ status: -1, body: err.message }));
    assert.equal(big.status, 431);
    // Ten clients that send half a request and stop.
    const stalled: tls.TLSSocket[] = [];
    for (let i = 0; i < 10; i++) {
      const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false });
      s.on('error', () => {});
      s.on('secureConnect', () => s.write('GET /healthz HTTP/1.1\r\nHost: x\r\n'));
      stalled.push(s);
    }
    await sleep(200);
    const t0 = Date.now();
    const ok = await kubeletRequest(port, '/healthz');
    assert.deepEqual([ok.status, ok.body], [200, 'ok']);
    assert.ok(Date.now() - t0 < 2000, `answered in ${Date.now() - t0} ms`);
    for (const s of stalled) s.destroy();
  });
});
