import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { grpcProbe, loadHealthService } from '../../plugins/probes/handlers/grpc.ts';
import { httpProbe } from '../../plugins/probes/handlers/http.ts';
import { tcpProbe } from '../../plugins/probes/handlers/tcp.ts';
import { execProbe } from '../../plugins/probes/handlers/exec.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';
import type { ProbeTarget } from '../../plugins/probes/handlers/types.ts';
import { normalizeProbe, type ProbeHandlerSpec } from '../../plugins/probes/probe-spec.ts';

const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'u' } };
const container: V1Container = { name: 'app', ports: [{ name: 'web', containerPort: 0 }] };
const target = (port: number, timeoutSeconds = 1): ProbeTarget => ({
  pod, container: { ...container, ports: [{ name: 'web', containerPort: port }] }, containerId: 'c', podIP: '127.0.0.1', timeoutSeconds,
});
const httpSpec = (s: Partial<Extract<ProbeHandlerSpec, { kind: 'httpGet' }>> = {}) => ({ kind: 'httpGet' as const, scheme: 'http' as const, host: undefined, path: '/', port: 'web', headers: [], ...s });

/**
 * A probe with a 1 s timeout came back bounded by it, not by a socket's or gRPC's own timeouts
 * (tens of seconds). The slack is wide because the pure lane runs at nice 10 beside the node
 * lanes: a CI run measured over 2.5 s for the gRPC one, its event loop starved.
 */
function assertBoundedByTimeout(started: number, what: string): void {
  const tookMs = Date.now() - started;
  assert.ok(tookMs < 6000, `${what} took ${tookMs} ms (its timeout is 1 s)`);
}

describe('probe handlers', () => {
  describe('exec', () => {
    const runtime = (execSync: ContainerRuntime['execSync']) => ({ execSync } as ContainerRuntime);
    it('is a success on exit 0 and a failure with the output otherwise', async () => {
      const ok = runtime(async () => ({ exitCode: 0, stdout: Buffer.from('fine'), stderr: Buffer.alloc(0) }));
      assert.deepEqual(await execProbe(ok, target(0), ['true']), { result: 'success', output: 'fine' });
      const bad = runtime(async () => ({ exitCode: 3, stdout: Buffer.alloc(0), stderr: Buffer.from('broken') }));
      assert.deepEqual(await execProbe(bad, target(0), ['false']), { result: 'failure', output: 'broken' });
    });

    it('stops waiting for a runtime that never answers, past the timeout and its slack: a failure, timed out', async function () {
      this.timeout(10_000);
      const t0 = Date.now();
      const hung = runtime(() => new Promise(() => {}));
      assert.deepEqual(await execProbe(hung, target(0, 0), ['sleep', '99']), { result: 'failure', output: 'command "sleep 99" timed out' });
      assert.ok(Date.now() - t0 < 5000);
    });
  });

  describe('httpGet', () => {
    let server: http.Server;
    let port = 0;
    const seen: http.IncomingHttpHeaders[] = [];
    before(async () => {
      server = http.createServer((req, res) => {
        seen.push(req.headers);
        const u = new URL(req.url!, 'http://x');
        if (u.pathname === '/ok') return res.end('fine');
        if (u.pathname === '/missing') return res.writeHead(404).end('nope');
        if (u.pathname === '/hop') return res.writeHead(302, { location: '/ok' }).end();
        if (u.pathname === '/loop') return res.writeHead(302, { location: '/loop' }).end();
        if (u.pathname === '/away') return res.writeHead(301, { location: 'http://localhost.invalid/ok' }).end('moved');
        if (u.pathname === '/slow') return setTimeout(() => res.end('late'), 3000).unref();
        res.writeHead(500).end();
      });
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      port = (server.address() as AddressInfo).port;
    });
    after(() => {
      server.closeAllConnections();
      server.close();
    });

    it('200 is a success with the body as output; the port can be a container port name', async () => {
      assert.deepEqual(await httpProbe(httpSpec({ path: '/ok' }), target(port)), { result: 'success', output: 'fine' });
    });

    it('404 is a failure without the body', async () => {
      assert.deepEqual(await httpProbe(httpSpec({ path: '/missing', port }), target(port)), { result: 'failure', output: 'HTTP probe failed with statuscode: 404' });
    });

    it('follows redirects on the same host, at most 10', async () => {
      assert.deepEqual(await httpProbe(httpSpec({ path: '/hop' }), target(port)), { result: 'success', output: 'fine' });
      const r = await httpProbe(httpSpec({ path: '/loop' }), target(port));
      assert.equal('result' in r && r.result, 'failure');
      assert.match((r as { output: string }).output, /stopped after 10 redirects/);
    });

    it('does not follow a redirect to another host: the 3xx is a success with a warning', async () => {
      const r = await httpProbe(httpSpec({ path: '/away' }), target(port));
      assert.deepEqual(r, { result: 'success', output: 'Probe terminated redirects, Response body: moved', warning: true });
    });

    it('sends kube-probe User-Agent, Accept */*, the probe\'s headers and Host', async () => {
      seen.length = 0;
      await httpProbe(httpSpec({ path: '/ok', headers: [{ name: 'X-Probe', value: 'a' }, { name: 'X-Probe', value: 'b' }, { name: 'Host', value: 'example.test' }] }), target(port));
      assert.match(seen[0]!['user-agent']!, /^kube-probe\//);
      assert.equal(seen[0]!.accept, '*/*');
      assert.equal(seen[0]!['x-probe'], 'a, b');
      assert.equal(seen[0]!.host, 'example.test');
    });

    it('times out after timeoutSeconds', async () => {
      const started = Date.now();
      const r = await httpProbe(httpSpec({ path: '/slow' }), target(port, 1));
      assert.equal((r as { result: string }).result, 'failure');
      assert.match((r as { output: string }).output, /Client\.Timeout exceeded/);
      assertBoundedByTimeout(started, 'an HTTP probe of a server that does not answer');
    });

    it('connection refused is a failure in Go\'s words; an undeclared port name is an error naming it', async () => {
      const free = await new Promise<number>((r) => {
        const s = net.createServer().listen(0, '127.0.0.1', () => {
          const p = (s.address() as AddressInfo).port;
          s.close(() => r(p));
        });
      });
      assert.deepEqual(await httpProbe(httpSpec({ port: free }), target(port)), { result: 'failure', output: `Get "http://127.0.0.1:${free}/": dial tcp 127.0.0.1:${free}: connect: connection refused` });
      assert.deepEqual(await httpProbe(httpSpec({ port: 'admin' }), target(port)), { error: 'couldn\'t find port: admin in container app' });
    });
  });

  describe('tcpSocket', () => {
    it('succeeds when the port accepts, fails when refused', async () => {
      const server = net.createServer((s) => s.end());
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
      const port = (server.address() as AddressInfo).port;
      assert.deepEqual(await tcpProbe({ kind: 'tcpSocket', host: undefined, port: 'web' }, target(port)), { result: 'success', output: '' });
      await new Promise<void>((r) => server.close(() => r()));
      assert.deepEqual(await tcpProbe({ kind: 'tcpSocket', host: undefined, port }, target(port)), { result: 'failure', output: `dial tcp 127.0.0.1:${port}: connect: connection refused` });
    });
  });

  describe('grpc', () => {
    let server: grpc.Server;
    let port = 0;
    const statuses = new Map<string, string>([['', 'SERVING'], ['db', 'NOT_SERVING']]);
    before(async () => {
      server = new grpc.Server();
      server.addService(loadHealthService().service, {
        Check: (call: grpc.ServerUnaryCall<{ service: string }, unknown>, cb: grpc.sendUnaryData<unknown>) => {
          const s = statuses.get(call.request.service);
          if (!s) return cb({ code: grpc.status.NOT_FOUND, details: 'unknown service' });
          cb(null, { status: s });
        },
        Watch: (call: grpc.ServerWritableStream<unknown, unknown>) => call.end(),
      });
      port = await new Promise<number>((r, j) => server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
    });
    after(() => server.forceShutdown());

    it('SERVING is a success; NOT_SERVING and an unknown service are failures with upstream\'s messages', async () => {
      assert.deepEqual(await grpcProbe({ kind: 'grpc', port, service: '' }, target(port)), { result: 'success', output: 'service healthy' });
      assert.deepEqual(await grpcProbe({ kind: 'grpc', port, service: 'db' }, target(port)), { result: 'failure', output: 'service unhealthy (responded with "NOT_SERVING")' });
      assert.deepEqual(await grpcProbe({ kind: 'grpc', port, service: 'nope' }, target(port)), { result: 'failure', output: 'error: health rpc probe failed: rpc error: code = NOT_FOUND desc = unknown service' });
    });

    it('a server without the health service, and no server at all, are failures', async () => {
      const bare = new grpc.Server();
      const barePort = await new Promise<number>((r, j) => bare.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, p) => (e ? j(e) : r(p))));
      try {
        const r = await grpcProbe({ kind: 'grpc', port: barePort, service: '' }, target(barePort));
        assert.match((r as { output: string }).output, /does not implement the grpc health protocol/);
      } finally {
        bare.forceShutdown();
      }
      const started = Date.now();
      const r = await grpcProbe({ kind: 'grpc', port: barePort, service: '' }, target(barePort, 1));
      assert.equal((r as { result: string }).result, 'failure');
      assert.match((r as { output: string }).output, /^timeout: failed to connect service "127\.0\.0\.1:\d+" within 1s/);
      assertBoundedByTimeout(started, 'a gRPC probe of a closed port');
    });
  });

  describe('probe spec', () => {
    it('applies upstream defaults and validates like the API server', () => {
      const r = normalizeProbe({ exec: { command: ['true'] } }, 'readiness', 'spec.containers[0].readinessProbe');
      assert.deepEqual(r, { spec: { initialDelaySeconds: 0, periodSeconds: 10, timeoutSeconds: 1, successThreshold: 1, failureThreshold: 3, handler: { kind: 'exec', command: ['true'] } } });
      const bad = normalizeProbe({ periodSeconds: -1, successThreshold: 2, httpGet: { port: 70000 }, tcpSocket: { port: 1 } }, 'liveness', 'p');
      assert.deepEqual((bad as { errors: string[] }).errors, [
        'p.periodSeconds: Invalid value: -1: must be greater than or equal to 0',
        'p.successThreshold: Invalid value: 2: must be 1',
        'p.tcpSocket: Forbidden: may not specify more than 1 handler type',
        'p.httpGet.port: Invalid value: 70000: must be between 1 and 65535, inclusive',
      ]);
      assert.deepEqual((normalizeProbe({}, 'startup', 'p') as { errors: string[] }).errors, ['p: Required value: must specify a handler type']);
    });
  });
});
