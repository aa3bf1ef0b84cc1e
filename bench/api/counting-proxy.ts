import http2 from 'node:http2';
import https from 'node:https';
import type { AddressInfo } from 'node:net';
import { requestInfo, type RequestInfo } from '../../core/apiserver/request-info.ts';
import type { KubeTls } from './kubeconfig-tls.ts';
import type { ProxyPki } from './proxy-pki.ts';

/**
 * A loopback TLS-terminating proxy between one kubelet and the API server that records every
 * request: method, path with query, and what it is to the API server (verb, group, resource,
 * subresource, namespace, name, read as the API server's RequestInfo resolver reads it), with
 * its status and bytes. It forwards each request with the node's own client certificate, so
 * the API server authorizes the node exactly as it would without the proxy (Node authorizer,
 * NodeRestriction).
 *
 * Why a proxy: the API server's `apiserver_request_total` does not say which client made a
 * request, and the audit log would need the control plane started with a policy (the shared
 * script does not take one); the proxy counts exactly one kubelet's requests, whatever it is.
 *
 * It serves HTTP/2 (and HTTP/1.1) as the API server does, so a Go client (the upstream kubelet)
 * multiplexes its requests on one connection as it would against the real server; towards the
 * API server it speaks HTTP/1.1 with kept-alive connections. Watches stream through unbuffered.
 * What it adds: one more TLS hop on loopback per request (about a millisecond), which is why the
 * pod-start and density benchmarks run without it.
 */

/** One request through the proxy: what it does (the API server's reading of it) and what it cost. */
export interface ProxiedRequest extends RequestInfo {
  /** performance.now() at arrival. */
  at: number;
  /** performance.now() when the response ended (a watch: when it closed); undefined while open. */
  endAt: number | undefined;
  watch: boolean;
  protocol: string;
  userAgent: string | undefined;
  status: number | undefined;
  bytesIn: number;
  bytesOut: number;
  /** The request body (its first 16 KiB) when the proxy was asked to keep bodies. */
  body?: string;
}

export interface CountingProxy {
  /** `https://127.0.0.1:<port>`. */
  url: string;
  /** Every request so far, in arrival order. */
  readonly records: readonly ProxiedRequest[];
  /** Bytes of request bodies (kubelet to API server) and of responses, watch streams included (API server to kubelet), so far. */
  bytes(): { in: number; out: number };
  close(): Promise<void>;
}

/** Connection-specific headers: never forwarded (HTTP/2 forbids them). */
const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade', 'te', 'http2-settings', 'host']);

function forwardable(headers: Record<string, string | string[] | undefined>): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const [k, v] of Object.entries(headers)) if (v !== undefined && !k.startsWith(':') && !HOP_BY_HOP.has(k)) out[k] = v;
  return out;
}

/** `keepBodies`: keep each request body (its first 16 KiB) in its record, for a closer look at what a kubelet writes. */
export async function startCountingProxy(opts: { upstream: KubeTls; pki: ProxyPki; keepBodies?: boolean }): Promise<CountingProxy> {
  const target = new URL(opts.upstream.server);
  const agent = new https.Agent({ keepAlive: true, maxSockets: Infinity, maxFreeSockets: 64, ca: opts.upstream.ca, cert: opts.upstream.cert, key: opts.upstream.key });
  const records: ProxiedRequest[] = [];
  const totals = { in: 0, out: 0 };

  const server = http2.createSecureServer({ cert: opts.pki.cert, key: opts.pki.key, allowHTTP1: true, settings: { maxConcurrentStreams: 1000 } }, (req, res) => {
    const url = req.url ?? '/';
    const info = requestInfo(req.method ?? 'GET', url);
    const rec: ProxiedRequest = {
      ...info,
      path: url,
      at: performance.now(),
      endAt: undefined,
      watch: info.verb === 'watch',
      protocol: req.httpVersion === '2.0' ? 'h2' : 'http/1.1',
      userAgent: req.headers['user-agent'] as string | undefined,
      status: undefined,
      bytesIn: 0,
      bytesOut: 0,
    };
    records.push(rec);
    const done = () => {
      rec.endAt ??= performance.now();
    };
    const up = https.request(
      { host: target.hostname, port: target.port, method: req.method, path: url, headers: { ...forwardable(req.headers), host: target.host }, agent },
      (upRes) => {
        rec.status = upRes.statusCode;
        res.writeHead(upRes.statusCode ?? 502, forwardable(upRes.headers));
        upRes.on('data', (c: Buffer) => {
          rec.bytesOut += c.length;
          totals.out += c.length;
        });
        upRes.on('end', done);
        upRes.pipe(res);
      },
    );
    // Watch events must reach the kubelet the moment the API server sends them.
    up.on('socket', (s) => s.setNoDelay(true));
    up.on('error', (err) => {
      rec.status ??= 502;
      if (!res.headersSent) res.writeHead(502, { 'content-type': 'text/plain' }).end(`counting proxy: ${err.message}`);
      else res.destroy();
      done();
    });
    req.on('data', (c: Buffer) => {
      rec.bytesIn += c.length;
      totals.in += c.length;
      if (opts.keepBodies && (rec.body?.length ?? 0) < 16_384) rec.body = `${rec.body ?? ''}${c.toString('utf8')}`.slice(0, 16_384);
    });
    req.pipe(up);
    // The kubelet went away (a watch it stopped): so does the request to the API server.
    res.on('close', () => {
      if (rec.endAt === undefined) up.destroy();
      done();
    });
  });
  const sockets = new Set<import('node:tls').TLSSocket>();
  server.on('secureConnection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  // As the API server (90 s), so a kept-alive HTTP/1.1 connection is not closed under an idle client sooner than it would be.
  (server as unknown as { keepAliveTimeout: number }).keepAliveTimeout = 90_000;
  server.setTimeout(0);
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => resolve());
  });
  const port = (server.address() as AddressInfo).port;
  return {
    url: `https://127.0.0.1:${port}`,
    records,
    bytes: () => ({ ...totals }),
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const s of sockets) s.destroy();
      await closed;
      agent.destroy();
    },
  };
}
