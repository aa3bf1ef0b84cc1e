/**
 * One HTTP/2 connection pool to the API server, shared by many API clients (the nodes of
 * `kubelet-ts hollow`). client-node sends over node-fetch, HTTP/1.1: a connection per request in
 * flight and one per watch, so 1,000 nodes with three watches each would hold thousands of TLS
 * connections (each with its buffers, in this process and in the API server). Here every
 * request and every watch of every client is a stream of a shared session, as client-go
 * multiplexes a kubelet's requests on one connection.
 *
 * A session carries at most the server's SETTINGS_MAX_CONCURRENT_STREAMS (kube-apiserver 1.28:
 * 100 unless --http2-max-streams-per-connection says otherwise), watches included, so the pool
 * opens another session when every open one is full. The sessions authenticate with the TLS
 * material they are given (a kubeconfig's client certificate); what differs per client (a bearer
 * token, impersonation) travels in each request's headers.
 */
import http2 from 'node:http2';
import type { SecureClientSessionOptions } from 'node:http2';
import { ResponseContext, type RequestContext } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import type { ApiTransport } from './api-transport.ts';

/** Streams a session takes until the server said how many it allows (the common server default). */
const DEFAULT_MAX_STREAMS = 100;
/** Headers HTTP/2 forbids (connection-specific): node would refuse the request. */
const CONNECTION_HEADERS = new Set(['connection', 'host', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
/** A receive window large enough for a watch's burst of multi-KiB events without a round trip per 64 KiB. */
const SESSION_SETTINGS: http2.Settings = { initialWindowSize: 4 * 2 ** 20 };

interface PooledSession {
  session: http2.ClientHttp2Session;
  /** Streams open on it now (requests and watches). */
  active: number;
  /** What the server allows at once (its SETTINGS), DEFAULT_MAX_STREAMS until it said. */
  max: number;
}

export interface H2TransportOptions {
  /** The API server URL (https://host:port). */
  server: string;
  /** TLS options of the sessions: ca, and the client certificate and key when the identity is one. */
  tls: Pick<SecureClientSessionOptions, 'ca' | 'cert' | 'key' | 'rejectUnauthorized' | 'servername'>;
  logger: Logger;
}

export class H2Transport implements ApiTransport {
  private readonly sessions: PooledSession[] = [];
  private closed = false;
  /** Sessions opened over the transport's life (for the hollow command's summary and tests). */
  opened = 0;

  constructor(private readonly options: H2TransportOptions) {}

  /** Sessions open now, and streams open on them. */
  stats(): { sessions: number; streams: number } {
    return { sessions: this.sessions.length, streams: this.sessions.reduce((a, s) => a + s.active, 0) };
  }

  send(request: RequestContext): Promise<ResponseContext> {
    const url = new URL(request.getUrl());
    const body = request.getBody();
    if (body !== undefined && typeof body !== 'string') return Promise.reject(new Error('the HTTP/2 transport sends string bodies only'));
    return new Promise<ResponseContext>((resolve, reject) => {
      const signal = request.getSignal();
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.open({ ...outgoingHeaders(request.getHeaders()), ':method': request.getHttpMethod(), ':path': `${url.pathname}${url.search}` }, body === undefined, signal);
      } catch (err) {
        reject(err as Error);
        return;
      }
      let status = 0;
      let headers: Record<string, string> = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => {
        status = Number(h[':status']);
        headers = responseHeaders(h);
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      let failure: Error | undefined;
      stream.on('error', (err) => (failure = err));
      stream.on('close', () => {
        if (failure || !status) {
          reject(failure ?? Object.assign(new Error(`the stream closed without a response (HTTP/2 code ${stream.rstCode})`), { code: 'ECONNRESET' }));
          return;
        }
        const data = Buffer.concat(chunks);
        resolve(new ResponseContext(status, headers, { text: async () => data.toString('utf8'), binary: async () => data }));
      });
      if (body !== undefined) stream.end(body);
    });
  }

  watch(
    url: string,
    headers: Record<string, string>,
    onEvent: (type: string, object: unknown) => void,
    onDone: (err: (Error & { statusCode?: number }) | undefined) => void,
  ): { abort(): void } {
    const u = new URL(url);
    let ended = false;
    const end = (err: (Error & { statusCode?: number }) | undefined) => {
      if (ended) return;
      ended = true;
      onDone(err);
    };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = this.open({ ...outgoingHeaders(headers), ':method': 'GET', ':path': `${u.pathname}${u.search}` }, true);
    } catch (err) {
      queueMicrotask(() => end(err as Error));
      return { abort: () => {} };
    }
    let status = 0;
    let buffered = '';
    let errorBody = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: string) => {
      if (ended) return;
      if (status >= 400) {
        if (errorBody.length < 64 * 1024) errorBody += chunk;
        return;
      }
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl);
        buffered = buffered.slice(nl + 1);
        if (!line.trim()) continue;
        let parsed: { type?: unknown; object?: unknown };
        try {
          parsed = JSON.parse(line) as typeof parsed;
        } catch (err) {
          end(new Error(`the watch stream carried a line that is not JSON: ${(err as Error).message}`));
          stream.close(http2.constants.NGHTTP2_CANCEL);
          return;
        }
        onEvent(String(parsed.type), parsed.object);
        if (ended) return;
      }
    });
    let failure: Error | undefined;
    stream.on('error', (err) => (failure = err));
    stream.on('close', () => {
      if (status >= 400) end(Object.assign(new Error(errorBody), { statusCode: status }));
      else end(failure);
    });
    return {
      abort: () => {
        ended = true;
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    };
  }

  /** Closes every session: streams still open end with an error. */
  close(): void {
    this.closed = true;
    for (const s of this.sessions.splice(0)) s.session.destroy();
  }

  /** A stream on a session with room for it (a new session when every one is full). */
  private open(headers: http2.OutgoingHttpHeaders, endStream: boolean, signal?: AbortSignal | null): http2.ClientHttp2Stream {
    if (this.closed) throw Object.assign(new Error('the API transport is closed'), { code: 'ECONNABORTED' });
    const pooled = this.sessions.find((s) => s.active < s.max && !s.session.closed && !s.session.destroyed) ?? this.connect();
    const stream = pooled.session.request(headers, { endStream, ...(signal ? { signal } : {}) });
    pooled.active++;
    stream.once('close', () => pooled.active--);
    return stream;
  }

  private connect(): PooledSession {
    const { server, tls, logger } = this.options;
    const session = http2.connect(server, { ...tls, settings: SESSION_SETTINGS });
    const pooled: PooledSession = { session, active: 0, max: DEFAULT_MAX_STREAMS };
    this.opened++;
    const drop = () => {
      const i = this.sessions.indexOf(pooled);
      if (i >= 0) this.sessions.splice(i, 1);
    };
    session.on('remoteSettings', (s) => {
      if (s.maxConcurrentStreams !== undefined && s.maxConcurrentStreams > 0) pooled.max = s.maxConcurrentStreams;
    });
    // A session-level failure (connection refused, TLS, reset) fails its streams, each of which
    // reports it to its client; the pool only forgets the session so the next stream opens a new one.
    session.on('error', (err) => {
      logger.debug({ err: err.message, server }, 'HTTP/2 session to the API server failed');
      drop();
    });
    session.on('goaway', drop);
    session.on('close', drop);
    this.sessions.push(pooled);
    return pooled;
  }
}

/** Request headers for HTTP/2: lower-case names, without the connection-specific ones. */
function outgoingHeaders(headers: Record<string, string>): http2.OutgoingHttpHeaders {
  const out: http2.OutgoingHttpHeaders = {};
  for (const [k, v] of Object.entries(headers)) {
    const name = k.toLowerCase();
    if (!CONNECTION_HEADERS.has(name) && v !== undefined) out[name] = v;
  }
  return out;
}

function responseHeaders(h: http2.IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(h)) if (!k.startsWith(':') && v !== undefined) out[k] = Array.isArray(v) ? v.join(', ') : String(v);
  return out;
}
