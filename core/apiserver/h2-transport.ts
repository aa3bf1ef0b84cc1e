/**
 * One HTTP/2 connection pool to the API server, shared by many API clients (the nodes of
 * `kubelet-ts hollow`). A client's own connections are HTTP/1.1 (h1-transport.ts): a connection
 * per request in flight and one per watch, so 1,000 nodes with three watches each would hold thousands of TLS
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
import type { Logger } from '../logger.ts';
import type { ApiRequest, ApiResponse, ApiTransport, WatchEnd } from './api-transport.ts';
import { WatchBody } from './watch-lines.ts';

/** Headers HTTP/2 forbids (connection-specific): node would refuse the request. */
const CONNECTION_HEADERS = new Set(['connection', 'host', 'keep-alive', 'proxy-connection', 'transfer-encoding', 'upgrade']);
/** A receive window large enough for a watch's burst of multi-KiB events without a round trip per 64 KiB. */
const SESSION_SETTINGS: http2.Settings = { initialWindowSize: 4 * 2 ** 20 };

interface PooledSession {
  session: http2.ClientHttp2Session;
  /** Streams open on it now (requests and watches). */
  active: number;
  /** What the server allows at once (its SETTINGS_MAX_CONCURRENT_STREAMS). */
  max: number;
  /**
   * Settles once the server's SETTINGS arrived: streams go on the session only then, since a
   * stream beyond the server's limit would wait in the session's queue until another closes,
   * and behind watches that is forever.
   */
  ready: Promise<void>;
  settled: boolean;
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

  async send(request: ApiRequest): Promise<ApiResponse> {
    const url = new URL(request.url);
    const { body, signal } = request;
    const headers: http2.OutgoingHttpHeaders = { ...outgoingHeaders(request.headers), ':method': request.method, ':path': `${url.pathname}${url.search}` };
    // As Go's client does: a body's length in the headers. A server (or a proxy relaying to
    // HTTP/1.1, where a DELETE body without a length is no body at all) may need it.
    if (body !== undefined) headers['content-length'] = Buffer.byteLength(body);
    const stream = await this.open(headers, body === undefined, signal);
    return new Promise<ApiResponse>((resolve, reject) => {
      let status = 0;
      let received: Record<string, string> = {};
      const chunks: Buffer[] = [];
      stream.on('response', (h) => {
        status = Number(h[':status']);
        received = responseHeaders(h);
      });
      stream.on('data', (c: Buffer) => chunks.push(c));
      let failure: Error | undefined;
      stream.on('error', (err) => (failure = err));
      stream.on('close', () => {
        if (failure || !status) {
          reject(failure ?? Object.assign(new Error(`the stream closed without a response (HTTP/2 code ${stream.rstCode})`), { code: 'ECONNRESET' }));
          return;
        }
        resolve({ status, headers: received, body: Buffer.concat(chunks) });
      });
      if (body !== undefined) stream.end(body);
    });
  }

  watch(
    url: string,
    headers: Record<string, string>,
    onEvent: (type: string, object: unknown) => void,
    onDone: (err: WatchEnd) => void,
  ): { abort(): void } {
    const u = new URL(url);
    let ended = false;
    const end = (err: WatchEnd) => {
      if (ended) return;
      ended = true;
      onDone(err);
    };
    let stream: http2.ClientHttp2Stream | undefined;
    this.open({ ...outgoingHeaders(headers), ':method': 'GET', ':path': `${u.pathname}${u.search}` }, true).then(
      (s) => {
        stream = s;
        if (ended) s.close(http2.constants.NGHTTP2_CANCEL);
        else follow(s, () => ended, onEvent, end);
      },
      (err: Error) => end(err),
    );
    return {
      abort: () => {
        ended = true;
        if (stream && !stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    };
  }

  /** Closes every session: streams still open end with an error. */
  close(): void {
    this.closed = true;
    for (const s of this.sessions.splice(0)) s.session.destroy();
  }

  /**
   * A stream on a session with room for it: a session whose SETTINGS arrived and that has
   * fewer streams than the server allows; else the session being opened, once ready; else a
   * new one. A session that fails before it is ready fails the streams waiting for it.
   */
  private async open(headers: http2.OutgoingHttpHeaders, endStream: boolean, signal?: AbortSignal | null): Promise<http2.ClientHttp2Stream> {
    for (;;) {
      if (this.closed) throw Object.assign(new Error('the API transport is closed'), { code: 'ECONNABORTED' });
      signal?.throwIfAborted();
      const pooled = this.sessions.find((s) => s.settled && s.active < s.max && !s.session.closed && !s.session.destroyed);
      if (pooled) {
        let stream: http2.ClientHttp2Stream;
        try {
          stream = pooled.session.request(headers, { endStream, ...(signal ? { signal } : {}) });
        } catch (err) {
          // A session going away refuses new streams: forget it and take (or open) another.
          this.forget(pooled);
          if ((err as { code?: string }).code?.startsWith('ERR_HTTP2_') && !signal?.aborted) continue;
          throw err;
        }
        pooled.active++;
        stream.once('close', () => pooled.active--);
        return stream;
      }
      await untilReadyOrAborted((this.sessions.find((s) => !s.settled) ?? this.connect()).ready, signal);
    }
  }

  private forget(pooled: PooledSession): void {
    const i = this.sessions.indexOf(pooled);
    if (i >= 0) this.sessions.splice(i, 1);
  }

  private connect(): PooledSession {
    const { server, tls, logger } = this.options;
    const session = http2.connect(server, { ...tls, settings: SESSION_SETTINGS });
    let markReady!: () => void;
    let markFailed!: (err: Error) => void;
    const ready = new Promise<void>((resolve, reject) => {
      markReady = resolve;
      markFailed = reject;
    });
    // Callers await it; a failure nobody waits for is not an unhandled rejection.
    ready.catch(() => {});
    const pooled: PooledSession = { session, active: 0, max: 0, ready, settled: false };
    this.opened++;
    const drop = () => this.forget(pooled);
    session.on('remoteSettings', (s) => {
      // Absent from the SETTINGS frame means unlimited (Node reports 2^32-1).
      pooled.max = Math.max(1, s.maxConcurrentStreams ?? 2 ** 32 - 1);
      pooled.settled = true;
      markReady();
    });
    // A session-level failure (connection refused, TLS, reset) fails its streams, each of which
    // reports it to its client; the pool only forgets the session so the next stream opens a new one.
    session.on('error', (err) => {
      logger.debug({ err: err.message, server }, 'HTTP/2 session to the API server failed');
      drop();
      markFailed(err);
    });
    session.on('close', () => markFailed(Object.assign(new Error('the HTTP/2 session to the API server closed'), { code: 'ECONNRESET' })));
    session.on('goaway', drop);
    session.on('close', drop);
    this.sessions.push(pooled);
    return pooled;
  }
}


/** Reads a watch stream's event lines until it ends, or until `stopped()` (the watch was aborted). */
function follow(stream: http2.ClientHttp2Stream, stopped: () => boolean, onEvent: (type: string, object: unknown) => void, finish: (err: WatchEnd) => void): void {
  const body = new WatchBody(onEvent, stopped);
  stream.setEncoding('utf8');
  stream.on('response', (h) => (body.status = Number(h[':status'])));
  stream.on('data', (chunk: string) => {
    if (stopped()) return;
    const bad = body.push(chunk);
    if (bad) {
      finish(bad);
      stream.close(http2.constants.NGHTTP2_CANCEL);
    }
  });
  let failure: Error | undefined;
  stream.on('error', (err) => (failure = err));
  stream.on('close', () => finish(body.end(failure)));
}

/** `ready`, or the signal's reason once it aborts first (a request's deadline also bounds its wait for a connection). */
function untilReadyOrAborted(ready: Promise<void>, signal?: AbortSignal | null): Promise<void> {
  if (!signal) return ready;
  return new Promise<void>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    ready.then(resolve, reject).finally(() => signal.removeEventListener('abort', onAbort));
  });
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
