import type { TlsMaterial } from './credentials.ts';

/** One request to the API server as a transport carries it: the client has added every header already. */
export interface ApiRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE' | 'HEAD' | 'OPTIONS';
  /** The full URL, query included. */
  url: string;
  headers: Record<string, string>;
  body?: string;
  /** Aborts the request (its deadline, or the caller's). */
  signal?: AbortSignal;
  /**
   * The client's TLS material for a new connection (CA, client certificate): a transport that
   * connects per client (h1-transport.ts) uses it; a shared one has its sessions' own.
   */
  tls?: TlsMaterial;
}

/** A whole response. */
export interface ApiResponse {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** How a watch stream ends: undefined when the server ended it, an Error with `statusCode` for an HTTP error status (its message the response body), or the transport's error. */
export type WatchEnd = (Error & { statusCode?: number }) | undefined;

/**
 * How an ApiClient's requests and watches reach the API server: its own HTTP/1.1 connections
 * (h1-transport.ts), or a transport shared by many clients (the nodes of `kubelet-ts hollow`
 * share one HTTP/2 connection pool, h2-transport.ts). The client does everything else itself:
 * its rate limiter, timeouts, headers (User-Agent, authentication, impersonation) and error
 * messages; the transport only carries bytes.
 */
export interface ApiTransport {
  /** Sends one request and returns the whole response, whatever its status. */
  send(request: ApiRequest): Promise<ApiResponse>;
  /**
   * Opens a watch stream (`url` carries `watch=true`). `onEvent` gets each event line parsed;
   * `onDone` once, as WatchEnd says.
   */
  watch(url: string, headers: Record<string, string>, onEvent: (type: string, object: unknown) => void, onDone: (err: WatchEnd) => void, tls?: TlsMaterial): { abort(): void };
}

/** Who the API server should take a client for: Impersonate-User / Impersonate-Group on every request. */
export interface Impersonation {
  user: string;
  groups: string[];
}
