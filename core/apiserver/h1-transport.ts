/**
 * A client's own connections to the API server: HTTP/1.1 over node:https, kept alive, one agent
 * per client (client-node built a new agent, so a new TLS handshake, for every request). The TLS
 * material comes with each request (credentials.ts reads it again as its files change): when it
 * differs from the kept agent's (a rotated client certificate, a renewed CA), the agent is
 * retired (requests in flight finish, none reuses its connections) and a new one shakes hands
 * with the new material. A watch is a long GET on its own connection of the same agent.
 */
import http from 'node:http';
import https from 'node:https';
import type { ApiRequest, ApiResponse, ApiTransport, WatchEnd } from './api-transport.ts';
import type { TlsMaterial } from './credentials.ts';
import { WatchBody } from './watch-lines.ts';

const TLS_KEYS = ['ca', 'cert', 'key', 'rejectUnauthorized', 'servername'] as const;

export class H1Transport implements ApiTransport {
  private agent: https.Agent | undefined;
  private agentTls: TlsMaterial | undefined;
  private plainAgent: http.Agent | undefined;

  send(request: ApiRequest): Promise<ApiResponse> {
    return new Promise<ApiResponse>((resolve, reject) => {
      const headers: Record<string, string | number> = { ...request.headers };
      if (request.body !== undefined) headers['Content-Length'] = Buffer.byteLength(request.body);
      const req = this.open(request.url, request.method, headers, request.tls, request.signal);
      req.on('response', (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('error', reject);
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: flatHeaders(res.headers), body: Buffer.concat(chunks) }));
      });
      req.on('error', reject);
      req.end(request.body);
    });
  }

  watch(url: string, headers: Record<string, string>, onEvent: (type: string, object: unknown) => void, onDone: (err: WatchEnd) => void, tls?: TlsMaterial): { abort(): void } {
    let ended = false;
    const end = (err: WatchEnd) => {
      if (ended) return;
      ended = true;
      onDone(err);
    };
    const controller = new AbortController();
    const req = this.open(url, 'GET', headers, tls, controller.signal);
    req.on('response', (res) => {
      res.setEncoding('utf8');
      const body = new WatchBody(onEvent, () => ended);
      body.status = res.statusCode ?? 0;
      res.on('data', (chunk: string) => {
        if (ended) return;
        const bad = body.push(chunk);
        if (bad) {
          end(bad);
          controller.abort();
        }
      });
      res.on('error', (err) => end(err));
      res.on('end', () => end(body.end()));
      // A connection cut without an end (a reset) closes without 'end'.
      res.on('close', () => end(res.complete ? undefined : Object.assign(new Error('the watch connection closed'), { code: 'ECONNRESET' })));
    });
    req.on('error', (err) => end(err));
    req.end();
    return {
      abort: () => {
        ended = true;
        controller.abort();
      },
    };
  }

  /** Lets the current connections finish and makes the next request open a new one. */
  retireConnections(): void {
    if (this.agent) retire(this.agent);
    this.agent = undefined;
    this.agentTls = undefined;
  }

  close(): void {
    this.agent?.destroy();
    this.plainAgent?.destroy();
    this.agent = undefined;
    this.agentTls = undefined;
    this.plainAgent = undefined;
  }

  private open(url: string, method: string, headers: Record<string, string | number>, tls: TlsMaterial | undefined, signal: AbortSignal | undefined): http.ClientRequest {
    const u = new URL(url);
    const options: https.RequestOptions = { method, headers, ...(signal ? { signal } : {}) };
    if (u.protocol === 'http:') {
      this.plainAgent ??= new http.Agent({ keepAlive: true });
      return http.request(u, { ...options, agent: tls?.agent ?? this.plainAgent });
    }
    return https.request(u, { ...options, agent: tls?.agent ?? this.agentFor(tls ?? { rejectUnauthorized: true }) });
  }

  /** The kept agent while the TLS material is the same; else a new one (the old retired). */
  private agentFor(tls: TlsMaterial): https.Agent {
    if (this.agent && this.agentTls && sameTls(this.agentTls, tls)) return this.agent;
    if (this.agent) retire(this.agent);
    const { agent: _proxy, ...options } = tls;
    this.agent = new https.Agent({ ...options, keepAlive: true });
    this.agentTls = tls;
    return this.agent;
  }
}

/**
 * An agent whose connections are not to be reused: idle ones close now, busy ones when their
 * request is done (an agent without keepAlive destroys a socket once it is free), so a request
 * in flight, a POST included, is not cut.
 */
function retire(agent: https.Agent): void {
  (agent as https.Agent & { keepAlive: boolean }).keepAlive = false;
  for (const sockets of Object.values(agent.freeSockets)) for (const s of sockets ?? []) s.destroy();
}

function sameTls(a: TlsMaterial, b: TlsMaterial): boolean {
  return TLS_KEYS.every((k) => {
    const x = a[k];
    const y = b[k];
    if (Buffer.isBuffer(x) && Buffer.isBuffer(y)) return x === y || x.equals(y);
    return x === y;
  });
}

function flatHeaders(h: http.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : v;
  return out;
}
