import type { RequestContext, ResponseContext } from '@kubernetes/client-node';

/**
 * How an ApiClient's requests and watches reach the API server when it does not open its own
 * connections: a transport shared by many clients (the nodes of `kubelet-ts hollow` share one
 * HTTP/2 connection pool, h2-transport.ts). The client still does everything else itself: its
 * rate limiter, timeouts, headers (User-Agent, authentication, impersonation) and error
 * messages; the transport only carries bytes.
 */
export interface ApiTransport {
  /** Sends one request as the context describes it (URL, method, headers, body, abort signal) and returns the whole response. */
  send(request: RequestContext): Promise<ResponseContext>;
  /**
   * Opens a watch stream (`url` carries `watch=true`). `onEvent` gets each event line parsed;
   * `onDone` once: undefined when the server ended the stream, an Error with `statusCode` for
   * an HTTP error status (its message the response body), or the transport's error.
   */
  watch(
    url: string,
    headers: Record<string, string>,
    onEvent: (type: string, object: unknown) => void,
    onDone: (err: (Error & { statusCode?: number }) | undefined) => void,
  ): { abort(): void };
}

/** Who the API server should take a client for: Impersonate-User / Impersonate-Group on every request. */
export interface Impersonation {
  user: string;
  groups: string[];
}
