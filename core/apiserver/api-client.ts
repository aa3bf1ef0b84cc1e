/**
 * The kubelet's client of the API server: one pipeline for every request, which waits for a
 * token of the rate limiter (kubeAPIQPS / kubeAPIBurst, as client-go), applies the kubeconfig's
 * credentials (credentials.ts), the request timeout and the User-Agent, sends through the
 * client's kept-alive connections (h1-transport.ts) or a shared transport (h2-transport.ts), and
 * turns every failure into an ApiError whose message names the server, the identity, the verb
 * and the object (`system:node:n1 may not patch nodes/status "n2": ...`).
 *
 * Requests are JSON as the server writes it (`request`: wire-format objects, exact patch content
 * types, MicroTime strings as they are), and watches deliver wire JSON too (`watch`). The kubelet
 * does not load @kubernetes/client-node's runtime: its generated client (models, typed APIs,
 * ObjectSerializer) is about 66 MiB of RSS in a node (bench/README.md), and a kubelet's requests
 * are a few dozen paths it writes itself. client-node's types describe the objects
 * (`import type`), and its KubeConfig applies the credentials only it implements (exec plugins,
 * auth providers), loaded for such a kubeconfig only.
 */
import os from 'node:os';
import { setTimeout as delay } from 'node:timers/promises';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { KUBELET_TS_VERSION } from '../version.ts';
import { ApiError, isUnavailableError, statusError, transportError, type ErrorContext } from './api-errors.ts';
import { ConnectivityTracker } from './connectivity.ts';
import { credentialsOf, type RequestCredentials } from './credentials.ts';
import { H1Transport } from './h1-transport.ts';
import { describeIdentity, loadKubeconfig, type ClientIdentity, type KubeconfigOverrides, type LoadedKubeconfig } from './kubeconfig.ts';
import { requestInfo } from './request-info.ts';
import { TokenBucket } from './token-bucket.ts';
import type { ApiRequest, ApiResponse, ApiTransport, Impersonation } from './api-transport.ts';

export interface ApiClientOptions {
  /** The kubeconfig file (relative paths in it are relative to it). */
  kubeconfig: string;
  logger: Logger;
  /** Requests per second (token bucket refill); undefined: no client-side limit (the heartbeat client). */
  qps?: number;
  /** Token bucket size; default max(1, ceil(qps)). */
  burst?: number;
  /** Deadline of each non-watch request. Default 60 s (the API server's own default request timeout). */
  requestTimeoutMs?: number;
  /** Shared outage reporting for clients of the same server; default: the client's own. */
  connectivity?: ConnectivityTracker;
  /**
   * Send requests and watches through this transport (shared by many clients: `kubelet-ts
   * hollow`'s HTTP/2 pool) instead of the client's own connections. The transport's owner closes it.
   */
  transport?: ApiTransport;
  /** Act as this user and groups (Impersonate-User / Impersonate-Group on every request): the kubeconfig's identity must be allowed to impersonate them. */
  impersonate?: Impersonation;
  /**
   * The kubeconfig's credentials, shared by clients of the same kubeconfig (a kubelet's three
   * clients, a hollow fleet's nodes) so its certificate, key and token files are read once for
   * all; default: the client's own. Must come from the same loaded kubeconfig.
   */
  credentials?: RequestCredentials;
}

/** One watch event as the server sends it (the object is wire JSON, not deserialized). */
export interface WatchEvent { type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'; object: Record<string, unknown> }

/** Options of a raw JSON request. */
export interface RawRequest {
  query?: Record<string, string | number | boolean | undefined>;
  body?: unknown;
  /** Content-Type of the body: default application/json; patches give their patch type. */
  contentType?: string;
  /** A deadline for this request instead of the client's. */
  timeoutMs?: number;
}

export { PATCH } from './patch-types.ts';

const DEFAULT_TIMEOUT_MS = 60_000;
/** Sends of one request the server turned away with 429 / Retry-After (client-go's maxRetries). */
const MAX_RETRY_AFTER_TRIES = 10;

/** One request of `send`: a path (and query) on the client's server. */
export interface SendRequest {
  method: ApiRequest['method'];
  /** The path with its query, e.g. `/api/v1/nodes?limit=1`. */
  path: string;
  headers?: Record<string, string>;
  body?: string;
  timeoutMs?: number;
}

export class ApiClient {
  readonly server: string;
  readonly kubeconfigFile: string;
  /** The kubeconfig as loaded (cluster, user, identity). */
  readonly kubeconfig: LoadedKubeconfig;
  /** Reports outages (one log line each) for every request of this client. */
  readonly connectivity: ConnectivityTracker;
  private identityValue: ClientIdentity;
  private readonly limiter: TokenBucket | undefined;
  private readonly credentials: RequestCredentials;
  /** The client's own connections, when it has no shared transport. */
  private readonly own: H1Transport | undefined;

  constructor(loaded: LoadedKubeconfig, private readonly options: Omit<ApiClientOptions, 'kubeconfig'>) {
    this.server = loaded.server;
    this.kubeconfigFile = loaded.file;
    this.kubeconfig = loaded;
    this.identityValue = options.impersonate ? { ...loaded.identity, user: options.impersonate.user, groups: options.impersonate.groups } : loaded.identity;
    this.connectivity = options.connectivity ?? new ConnectivityTracker(loaded.server, options.logger.child({ component: 'api-client' }));
    this.limiter = options.qps !== undefined ? new TokenBucket(options.qps, options.burst ?? Math.max(1, Math.ceil(options.qps))) : undefined;
    this.credentials = options.credentials ?? credentialsOf(loaded);
    this.own = options.transport ? undefined : new H1Transport();
  }

  /** Who the server takes this client for, as far as known. */
  get identity(): ClientIdentity {
    return this.identityValue;
  }

  /** How messages name this client: `system:node:n1`, or "the kubeconfig's token" until resolveIdentity() learned more. */
  describeIdentity(): string {
    return describeIdentity(this.identityValue);
  }

  /** @internal What error messages need to know about this client. */
  errorContext(timeoutMs?: number): ErrorContext {
    return {
      server: this.server,
      identity: this.describeIdentity(),
      kubeconfigFile: this.kubeconfigFile,
      ...(this.identityValue.certNotAfter !== undefined ? { certNotAfter: this.identityValue.certNotAfter } : {}),
      ...(timeoutMs !== undefined ? { timeoutMs } : {}),
    };
  }

  /** @internal Waits for a rate limiter token (no wait without a limiter). */
  throttle(): Promise<void> {
    return this.limiter ? this.limiter.acquire() : Promise.resolve();
  }

  /** @internal The transport requests go through instead of the client's own connections, if any. */
  get transport(): ApiTransport | undefined {
    return this.options.transport;
  }

  /**
   * The headers every request carries (User-Agent, Accept, the kubeconfig's Authorization,
   * impersonation) and the TLS material of the client's own connections. Through a shared
   * transport the TLS material is the sessions' own (opened with the kubeconfig's certificate).
   */
  private async prepare(info: ReturnType<typeof requestInfo>): Promise<{ headers: Record<string, string>; tls: ApiRequest['tls'] }> {
    let applied;
    try {
      applied = await this.credentials.apply();
    } catch (err) {
      // A certificate or token file that went away, an exec plugin that failed: nothing was sent.
      throw new ApiError({ code: 'Unavailable', failure: 'unreachable', request: info, cause: err, message: `kubeconfig ${this.kubeconfigFile}: cannot apply its credentials to ${info.method} ${info.path}: ${errorMessage(err)}` });
    }
    return { headers: { 'User-Agent': USER_AGENT, Accept: 'application/json', ...applied.headers, ...this.impersonationHeaders() }, tls: this.own ? applied.tls : undefined };
  }

  /** @internal Impersonate-User / Impersonate-Group, when the client impersonates. */
  impersonationHeaders(): Record<string, string> {
    const who = this.options.impersonate;
    if (!who) return {};
    // One group: a header map holds one value per name (the kubelet's identity has one, system:nodes).
    return { 'Impersonate-User': who.user, ...(who.groups[0] !== undefined ? { 'Impersonate-Group': who.groups[0] } : {}) };
  }

  /** @internal The request timeout of this client. */
  get requestTimeoutMs(): number {
    return this.options.requestTimeoutMs ?? DEFAULT_TIMEOUT_MS;
  }

  /**
   * Asks the server who this client is (authentication.k8s.io/v1 SelfSubjectReview, GA in 1.28)
   * when the kubeconfig does not say it (a token): later messages then name the user.
   * Failures are ignored: the messages keep naming the kubeconfig's credential.
   */
  async resolveIdentity(): Promise<ClientIdentity> {
    if (this.identityValue.user) return this.identityValue;
    try {
      const review = await this.request<{ status?: { userInfo?: { username?: string; groups?: string[] } } }>('POST', '/apis/authentication.k8s.io/v1/selfsubjectreviews', {
        body: { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview' },
      });
      const info = review.status?.userInfo;
      if (info?.username) this.identityValue = { ...this.identityValue, user: info.username, groups: info.groups ?? [] };
    } catch (err) {
      this.options.logger.debug({ err: (err as Error).message }, 'SelfSubjectReview failed; messages name the kubeconfig credential');
    }
    return this.identityValue;
  }

  /**
   * Sends one JSON request through the client's pipeline (auth, rate limit, timeout, errors)
   * and returns the response body parsed, as the server wrote it (no client-side models).
   */
  async request<T = unknown>(method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE', path: string, options: RawRequest = {}): Promise<T> {
    const query = new URLSearchParams();
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) query.set(k, String(v));
    const q = query.toString();
    const res = await this.send({
      method,
      path: q ? `${path}?${q}` : path,
      ...(options.body !== undefined ? { body: JSON.stringify(options.body), headers: { 'Content-Type': options.contentType ?? 'application/json' } } : {}),
      ...(options.timeoutMs !== undefined ? { timeoutMs: options.timeoutMs } : {}),
    });
    const text = res.body.toString('utf8');
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError({ code: 'Internal', failure: 'status', request: requestInfo(method, this.server + path), statusCode: res.status, message: `${method} ${path}: the API server answered with a body that is not JSON` });
    }
  }

  /**
   * Sends one request through the pipeline and returns the whole response; a status of 400 or
   * more is thrown as an ApiError. `request` is this with JSON on both ends.
   */
  async send(req: SendRequest): Promise<ApiResponse> {
    const url = this.server + req.path;
    const info = requestInfo(req.method, url);
    await this.throttle();
    const { headers, tls } = await this.prepare(info);
    const deadline = req.timeoutMs ?? this.requestTimeoutMs;
    const controller = new AbortController();
    // A timer cleared when the response is in, where AbortSignal.timeout's stays armed (and
    // allocates its abort reason when it fires) for the full deadline after every request.
    const timer = setTimeout(() => controller.abort(new DOMException(`the request took longer than ${deadline} ms`, 'TimeoutError')), deadline);
    const request: ApiRequest = { method: req.method, url, headers: { ...headers, ...req.headers }, signal: controller.signal, ...(req.body !== undefined ? { body: req.body } : {}), ...(tls ? { tls } : {}) };
    let res: ApiResponse;
    try {
      for (let tries = 1; ; tries++) {
        res = await this.sendWithRetry(request, info, deadline);
        // client-go's rule: a 429 (the server's priority and fairness, or max-in-flight, turned
        // it away), or a 5xx with Retry-After, was not served: wait what the server says (1 s
        // when it says nothing usable) and send it again, up to 10 times, within the deadline.
        const wait = retryAfterMs(res, tries);
        if (wait === undefined || controller.signal.aborted) break;
        await delay(wait, undefined, { signal: controller.signal }).catch(() => {});
        if (controller.signal.aborted) break;
      }
    } finally {
      clearTimeout(timer);
    }
    if (res.status >= 400) {
      const apiErr = statusError(res.status, res.body.toString('utf8'), info, this.errorContext());
      if (isUnavailableError(apiErr)) this.connectivity.failed(apiErr.message);
      else this.connectivity.succeeded();
      throw apiErr;
    }
    this.connectivity.succeeded();
    return res;
  }

  private async sendWithRetry(request: ApiRequest, info: ReturnType<typeof requestInfo>, deadline: number): Promise<ApiResponse> {
    const transport = this.options.transport ?? this.own!;
    for (let attempt = 1; ; attempt++) {
      try {
        return await transport.send(request);
      } catch (err) {
        // A kept-alive connection the server closed while idle (its IdleTimeout) fails the
        // request written on it at that moment: Go's transport retries such a request on a
        // new connection, and so does this, once, except a POST (not idempotent).
        if (attempt === 1 && info.method !== 'POST' && isStaleConnection(err) && !request.signal?.aborted) continue;
        const apiErr = transportError(request.signal?.aborted ? request.signal.reason ?? err : err, info, this.errorContext(deadline));
        this.connectivity.failed(apiErr.message);
        throw apiErr;
      }
    }
  }

  /**
   * Starts a watch of `path` (rate limited like any request). `onEvent` gets each event with the
   * object as wire JSON; `onDone` gets undefined when the server closed the stream (timeout,
   * normal end) or an ApiError (410 Gone included) when it failed. Returns the stop handle.
   */
  async watch(path: string, query: Record<string, string | number | boolean | undefined>, onEvent: (event: WatchEvent) => void, onDone: (err: ApiError | undefined) => void): Promise<{ stop(): void }> {
    await this.throttle();
    const info = requestInfo('GET', `${path}?watch=true`);
    let answered = false;
    let stopped = false;
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(query)) if (v !== undefined) url.searchParams.set(k, String(v));
    url.searchParams.set('watch', 'true');
    const prepared = await this.prepare(info);
    const controller = (this.options.transport ?? this.own!).watch(
      url.toString(),
      prepared.headers,
      (type, object) => {
        if (!answered) {
          answered = true;
          this.connectivity.succeeded();
        }
        onEvent({ type: type as WatchEvent['type'], object: object as Record<string, unknown> });
      },
      (err: unknown) => {
        if (stopped) return;
        if (!err) {
          // A stream that ends without an event proves nothing: a connection cut by the network
          // ends the same way as a server's timeout. Only events count as answers.
          onDone(undefined);
          return;
        }
        const statusCode = (err as { statusCode?: number }).statusCode;
        const apiErr = statusCode !== undefined ? statusError(statusCode, (err as Error).message, info, this.errorContext()) : transportError(err, info, this.errorContext());
        if (isUnavailableError(apiErr)) this.connectivity.failed(apiErr.message);
        else this.connectivity.succeeded();
        onDone(apiErr);
      },
      prepared.tls,
    );
    return {
      stop: () => {
        stopped = true;
        controller.abort();
      },
    };
  }

  /**
   * The client certificate was rotated (the file the kubeconfig names now holds a new pair):
   * messages name the new identity and expiry, and the kept-alive connections, which presented
   * the old certificate, are retired (those in use finish their request; none is reused), so
   * every later request shakes hands with the new one. A watch keeps its stream until it ends.
   */
  clientCertificateRotated(identity: Pick<ClientIdentity, 'user' | 'groups' | 'certNotAfter'>): void {
    this.identityValue = { ...this.identityValue, ...identity, method: 'client certificate' };
    this.credentials.reread();
    this.own?.retireConnections();
  }

  /** Closes kept-alive connections (never a shared transport: its owner closes it). */
  close(): void {
    this.own?.close();
  }
}

/**
 * What the three clients of a kubelet take from its process (`kubelet-ts hollow`): a shared
 * transport, an identity to act as, and the kubeconfig loaded once for all (parsing its
 * certificate and key per node costs ~10 ms of CPU each), with its credentials.
 */
export type SharedClientOptions = Pick<ApiClientOptions, 'transport' | 'impersonate' | 'credentials'> & { kubeconfig?: LoadedKubeconfig };

/** Loads the kubeconfig and makes a client. Throws KubeconfigError for an unusable file. */
export function createApiClient(options: ApiClientOptions): ApiClient {
  const { kubeconfig, ...rest } = options;
  return new ApiClient(loadKubeconfig(kubeconfig), rest);
}

/**
 * The two clients a kubelet uses, as upstream's kubelet makes them: the main one, throttled by
 * kubeAPIQPS / kubeAPIBurst, and the heartbeat one for node status and the Lease, not throttled
 * and with a timeout of min(nodeStatusUpdateFrequency, nodeLeaseDuration), so a busy main
 * client never delays a heartbeat and a hung request never outlives a heartbeat period.
 * A third client posts events, throttled by eventRecordQPS / eventBurst (0 QPS: not at all), as
 * upstream's event broadcaster has its own client: a burst of events (a crash loop on every
 * pod) must not take the tokens pod status updates need. They share the outage log.
 */
export function createKubeletApiClients(config: {
  kubeconfig: string;
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  eventRecordQPS: number;
  eventBurst: number;
  nodeStatusUpdateFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
}, logger: Logger, overrides: KubeconfigOverrides = {}, options: SharedClientOptions = {}): { main: ApiClient; heartbeat: ApiClient; events: ApiClient } {
  const { kubeconfig: preloaded, credentials: given, ...rest } = options;
  const loaded = preloaded ?? loadKubeconfig(config.kubeconfig, overrides);
  // One credentials object for the three: the certificate, key and CA files are read once a second at most, not thrice.
  const shared = { ...rest, credentials: given ?? credentialsOf(loaded) };
  const connectivity = new ConnectivityTracker(loaded.server, logger.child({ component: 'api-client' }));
  const main = new ApiClient(loaded, { logger, qps: config.kubeAPIQPS, burst: config.kubeAPIBurst, connectivity, ...shared });
  const heartbeat = new ApiClient(loaded, {
    logger,
    requestTimeoutMs: Math.min(config.nodeStatusUpdateFrequencyMs, config.nodeLeaseDurationSeconds * 1000),
    connectivity,
    ...shared,
  });
  const events = new ApiClient(loaded, {
    logger,
    qps: config.eventRecordQPS > 0 ? config.eventRecordQPS : undefined,
    burst: config.eventBurst,
    connectivity,
    ...shared,
  });
  // While the server is away, /version (readable by any authenticated identity) tells when it is back.
  connectivity.setProbe(() => heartbeat.request('GET', '/version', { timeoutMs: 2000 }));
  return { main, heartbeat, events };
}

/** The User-Agent, as upstream's `kubelet/v1.28.7 (linux/amd64) kubernetes/<commit>`. */
const USER_AGENT = `kubelet-ts/${KUBELET_TS_VERSION} (${os.platform()}/${process.arch})`;

/** How long to wait before sending a request again that the server turned away (client-go's checkWait), or undefined. */
function retryAfterMs(res: ApiResponse, tries: number): number | undefined {
  if (tries >= MAX_RETRY_AFTER_TRIES) return undefined;
  const header = res.headers['retry-after'];
  if (res.status !== 429 && !(res.status >= 500 && header !== undefined)) return undefined;
  const seconds = Number(header);
  return Number.isInteger(seconds) && seconds >= 0 ? Math.min(seconds, 10) * 1000 : 1000;
}

/** A reset or half-closed connection (ECONNRESET, EPIPE, "socket hang up"). */
function isStaleConnection(err: unknown): boolean {
  const e = err as { code?: string; message?: string } | undefined;
  return e?.code === 'ECONNRESET' || e?.code === 'EPIPE' || /socket hang up/.test(e?.message ?? '');
}
