import http2 from 'node:http2';
import type { KubeTls } from './kubeconfig-tls.ts';

/**
 * The benchmark's own API client: HTTP/2 to the API server, as client-go and kubectl speak it,
 * so a burst of 110 creates shares one TLS connection instead of opening 110 (client-node
 * makes a new agent, so a new handshake, per request, which would count against the kubelet
 * under test). Requests and watches use separate sessions, so a burst of creates never
 * queues a watch event behind its responses.
 */

export interface ApiResponse<T> { status: number; body: T; ms: number }

export interface WatchHandle { stop(): void }

/** One watch event, stamped with `performance.now()` when its line arrived. */
export interface TimedEvent { type: string; object: Record<string, unknown>; at: number }

export class ApiStatusError extends Error {
  constructor(readonly method: string, readonly path: string, readonly status: number, readonly body: string) {
    super(`${method} ${path}: HTTP ${status}: ${body.slice(0, 300)}`);
  }
}

const REQUEST_TIMEOUT_MS = 60_000;
/** A large receive window: a watch of 110 pods carries many multi-KiB events at once. */
const SESSION_SETTINGS: http2.Settings = { initialWindowSize: 8 * 2 ** 20 };

export class H2ApiClient {
  private sessions = new Map<'req' | 'watch', http2.ClientHttp2Session>();

  constructor(private readonly tls: KubeTls) {}

  get server(): string {
    return this.tls.server;
  }

  private session(kind: 'req' | 'watch'): http2.ClientHttp2Session {
    const s = this.sessions.get(kind);
    if (s && !s.closed && !s.destroyed) return s;
    const fresh = http2.connect(this.tls.server, { ca: this.tls.ca, cert: this.tls.cert, key: this.tls.key, settings: SESSION_SETTINGS });
    fresh.on('error', () => this.sessions.delete(kind));
    fresh.on('close', () => {
      if (this.sessions.get(kind) === fresh) this.sessions.delete(kind);
    });
    this.sessions.set(kind, fresh);
    return fresh;
  }

  /** One JSON request; rejects with ApiStatusError on a status >= 400 unless `allow` lists it. */
  request<T = Record<string, unknown>>(method: string, path: string, body?: unknown, opts: { contentType?: string; accept?: string; timeoutMs?: number; allow?: number[] } = {}): Promise<ApiResponse<T>> {
    const t0 = performance.now();
    return new Promise((resolve, reject) => {
      const headers: http2.OutgoingHttpHeaders = { ':method': method, ':path': path, accept: opts.accept ?? 'application/json' };
      if (body !== undefined) headers['content-type'] = opts.contentType ?? 'application/json';
      let stream: http2.ClientHttp2Stream;
      try {
        stream = this.session('req').request(headers, { endStream: body === undefined });
      } catch (err) {
        reject(err as Error);
        return;
      }
      stream.setTimeout(opts.timeoutMs ?? REQUEST_TIMEOUT_MS, () => stream.close(http2.constants.NGHTTP2_CANCEL));
      let status = 0;
      const chunks: Buffer[] = [];
      stream.on('response', (h) => (status = Number(h[':status'])));
      stream.on('data', (c: Buffer) => chunks.push(c));
      stream.on('error', reject);
      stream.on('close', () => {
        const ms = performance.now() - t0;
        const text = Buffer.concat(chunks).toString('utf8');
        if (!status) return reject(new Error(`${method} ${path}: no response (stream closed, code ${stream.rstCode})`));
        if (status >= 400 && !(opts.allow ?? []).includes(status)) return reject(new ApiStatusError(method, path, status, text));
        let parsed: unknown = undefined;
        try {
          parsed = text ? JSON.parse(text) : undefined;
        } catch {
          parsed = text;
        }
        resolve({ status, body: parsed as T, ms });
      });
      if (body !== undefined) stream.end(JSON.stringify(body));
    });
  }

  /**
   * A watch of `path` (a collection) from `resourceVersion`. `onEvent` gets every event with
   * its arrival time; `onEnd` once, when the stream ends (undefined: closed by the server,
   * e.g. its timeout) or fails.
   */
  watch(path: string, query: Record<string, string | number | boolean>, onEvent: (e: TimedEvent) => void, onEnd: (err?: Error) => void): WatchHandle {
    const qs = new URLSearchParams({ ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])), watch: 'true' });
    const full = `${path}?${qs}`;
    let ended = false;
    const end = (err?: Error) => {
      if (ended) return;
      ended = true;
      onEnd(err);
    };
    let stream: http2.ClientHttp2Stream;
    try {
      stream = this.session('watch').request({ ':method': 'GET', ':path': full, accept: 'application/json' });
    } catch (err) {
      queueMicrotask(() => end(err as Error));
      return { stop: () => {} };
    }
    let status = 0;
    let buffered = '';
    let errorBody = '';
    stream.setEncoding('utf8');
    stream.on('response', (h) => (status = Number(h[':status'])));
    stream.on('data', (chunk: string) => {
      const at = performance.now();
      if (status >= 400) {
        errorBody += chunk;
        return;
      }
      buffered += chunk;
      let nl: number;
      while ((nl = buffered.indexOf('\n')) >= 0) {
        const line = buffered.slice(0, nl).trim();
        buffered = buffered.slice(nl + 1);
        if (!line) continue;
        try {
          const e = JSON.parse(line) as { type: string; object: Record<string, unknown> };
          onEvent({ type: e.type, object: e.object, at });
        } catch (err) {
          end(new Error(`watch ${full}: unparsable line: ${(err as Error).message}`));
          stream.close(http2.constants.NGHTTP2_CANCEL);
          return;
        }
      }
    });
    stream.on('error', (err) => end(err));
    stream.on('close', () => end(status >= 400 ? new ApiStatusError('GET', full, status, errorBody) : undefined));
    return {
      stop: () => {
        ended = true;
        if (!stream.closed) stream.close(http2.constants.NGHTTP2_CANCEL);
      },
    };
  }

  close(): void {
    for (const s of this.sessions.values()) s.close();
    this.sessions.clear();
  }
}
