/**
 * The kubelet's client of the API server, on @kubernetes/client-node.
 *
 * client-node 1.4 builds every request through a `Configuration` whose `httpApi` sends it;
 * this client gives the generated APIs its own `httpApi` (a wrapper of client-node's
 * IsomorphicFetchHttpLibrary) rather than a middleware, because only the http library sees a
 * request and its response together: it waits for a token of the rate limiter (kubeAPIQPS /
 * kubeAPIBurst, as client-go), applies the request timeout, reuses one keep-alive TLS agent
 * (client-node makes a new agent, so a new TLS handshake, for every request), and turns every
 * failure into an ApiError whose message names the server, the identity, the verb and the
 * object (`system:node:n1 may not patch nodes/status "n2": ...`). Middlewares run `pre` and
 * `post` as separate steps with nothing linking a response to its request, and client-node
 * reverses the configured middleware array in place on each call, so the order of two of them
 * alternates from request to request.
 *
 * The same pipeline serves the typed APIs (`core`, `coordination`, `authentication`), the raw
 * JSON requests the node code uses (`request`: wire-format objects, exact patch content types,
 * MicroTime strings as the server writes them) and watches (`watch`: rate limited and with the
 * same error messages; the stream itself is client-node's Watch).
 */
import {
  AuthenticationV1Api,
  CoordinationV1Api,
  CoreV1Api,
  HttpMethod,
  IsomorphicFetchHttpLibrary,
  RequestContext,
  ServerConfiguration,
  Watch,
  createConfiguration,
  wrapHttpLibrary,
  type Configuration,
  type KubeConfig,
  type PromiseHttpLibrary,
  type ResponseContext,
} from '@kubernetes/client-node';
import https from 'node:https';
import os from 'node:os';
import type { Logger } from '../logger.ts';
import { KUBELET_TS_VERSION } from '../version.ts';
import { ApiError, isUnavailableError, statusError, transportError, type ErrorContext } from './api-errors.ts';
import { ConnectivityTracker } from './connectivity.ts';
import { describeIdentity, loadKubeconfig, type ClientIdentity, type KubeconfigOverrides, type LoadedKubeconfig } from './kubeconfig.ts';
import { requestInfo } from './request-info.ts';
import { TokenBucket } from './token-bucket.ts';

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

export class ApiClient {
  readonly server: string;
  readonly kubeconfigFile: string;
  readonly kubeConfig: KubeConfig;
  /** Reports outages (one log line each) for every request of this client. */
  readonly connectivity: ConnectivityTracker;
  readonly core: CoreV1Api;
  readonly coordination: CoordinationV1Api;
  readonly authentication: AuthenticationV1Api;
  private identityValue: ClientIdentity;
  private readonly limiter: TokenBucket | undefined;
  private readonly http: KubeletHttpLibrary;
  private readonly watcher: Watch;

  constructor(loaded: LoadedKubeconfig, private readonly options: Omit<ApiClientOptions, 'kubeconfig'>) {
    this.server = loaded.server;
    this.kubeconfigFile = loaded.file;
    this.kubeConfig = loaded.kubeConfig;
    this.identityValue = loaded.identity;
    this.connectivity = options.connectivity ?? new ConnectivityTracker(loaded.server, options.logger.child({ component: 'api-client' }));
    this.limiter = options.qps !== undefined ? new TokenBucket(options.qps, options.burst ?? Math.max(1, Math.ceil(options.qps))) : undefined;
    this.http = new KubeletHttpLibrary(this);
    const configuration: Configuration = createConfiguration({
      baseServer: new ServerConfiguration(loaded.server, {}),
      authMethods: { default: loaded.kubeConfig },
      httpApi: wrapHttpLibrary(this.http),
    });
    this.core = new CoreV1Api(configuration);
    this.coordination = new CoordinationV1Api(configuration);
    this.authentication = new AuthenticationV1Api(configuration);
    this.watcher = new Watch(watchConfig(loaded.kubeConfig));
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
    const url = new URL(this.server + path);
    for (const [k, v] of Object.entries(options.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
    const ctx = new RequestContext(url.toString(), method as HttpMethod);
    ctx.setHeaderParam('Accept', 'application/json');
    if (options.body !== undefined) {
      ctx.setHeaderParam('Content-Type', options.contentType ?? 'application/json');
      ctx.setBody(JSON.stringify(options.body));
    }
    await this.kubeConfig.applySecurityAuthentication(ctx);
    const res = await this.http.send(ctx, options.timeoutMs);
    const text = await res.body.text();
    if (!text) return undefined as T;
    try {
      return JSON.parse(text) as T;
    } catch {
      throw new ApiError({ code: 'Internal', failure: 'status', request: requestInfo(method, url.toString()), statusCode: res.httpStatusCode, message: `${method} ${url.pathname}: the API server answered with a body that is not JSON` });
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
    const controller = await this.watcher.watch(
      path,
      query,
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
    this.http.retireConnections();
  }

  /** Closes kept-alive connections. */
  close(): void {
    this.http.close();
  }
}

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
}, logger: Logger, overrides: KubeconfigOverrides = {}): { main: ApiClient; heartbeat: ApiClient; events: ApiClient } {
  const loaded = loadKubeconfig(config.kubeconfig, overrides);
  const connectivity = new ConnectivityTracker(loaded.server, logger.child({ component: 'api-client' }));
  const main = new ApiClient(loaded, { logger, qps: config.kubeAPIQPS, burst: config.kubeAPIBurst, connectivity });
  const heartbeat = new ApiClient(loaded, {
    logger,
    requestTimeoutMs: Math.min(config.nodeStatusUpdateFrequencyMs, config.nodeLeaseDurationSeconds * 1000),
    connectivity,
  });
  const events = new ApiClient(loaded, {
    logger,
    qps: config.eventRecordQPS > 0 ? config.eventRecordQPS : undefined,
    burst: config.eventBurst,
    connectivity,
  });
  // While the server is away, /version (readable by any authenticated identity) tells when it is back.
  connectivity.setProbe(() => heartbeat.request('GET', '/version', { timeoutMs: 2000 }));
  return { main, heartbeat, events };
}

/** The User-Agent, as upstream's `kubelet/v1.28.7 (linux/amd64) kubernetes/<commit>`. */
const USER_AGENT = `kubelet-ts/${KUBELET_TS_VERSION} (${os.platform()}/${process.arch})`;

/**
 * What client-node's Watch reads of a KubeConfig (the cluster and the fetch options), with the
 * kubelet's User-Agent added: Watch sends its request itself through node-fetch, not through the
 * client's http library, and would otherwise announce itself as `node-fetch/1.0`.
 */
function watchConfig(kubeConfig: KubeConfig): KubeConfig {
  const view: Pick<KubeConfig, 'getCurrentCluster' | 'applyToFetchOptions'> = {
    getCurrentCluster: () => kubeConfig.getCurrentCluster(),
    applyToFetchOptions: (opts) => kubeConfig.applyToFetchOptions({ ...opts, headers: { ...opts.headers, 'User-Agent': USER_AGENT } }),
  };
  return view as KubeConfig;
}

/** The http library of one client: rate limit, timeout, keep-alive agent, error messages, outage log. */
class KubeletHttpLibrary implements PromiseHttpLibrary {
  private readonly inner = new IsomorphicFetchHttpLibrary();
  private agent: https.Agent | undefined;

  constructor(private readonly client: ApiClient) {}

  async send(request: RequestContext, timeoutMs?: number): Promise<ResponseContext> {
    const info = requestInfo(request.getHttpMethod(), request.getUrl());
    await this.client.throttle();
    request.setHeaderParam('User-Agent', USER_AGENT);
    const agent = request.getAgent();
    if (agent) request.setAgent(this.keepAliveAgent(agent));
    const deadline = timeoutMs ?? this.client.requestTimeoutMs;
    const own = request.getSignal();
    const timeout = AbortSignal.timeout(deadline);
    request.setSignal(own ? AbortSignal.any([own, timeout]) : timeout);
    let res: ResponseContext;
    for (let attempt = 1; ; attempt++) {
      try {
        res = await this.inner.send(request).toPromise();
        break;
      } catch (err) {
        // A kept-alive connection the server closed while idle (its IdleTimeout) fails the
        // request written on it at that moment: Go's transport retries such a request on a
        // new connection, and so does this, once, except a POST (not idempotent).
        if (attempt === 1 && info.method !== 'POST' && isStaleConnection(err)) continue;
        const apiErr = transportError(err, info, this.client.errorContext(deadline));
        this.client.connectivity.failed(apiErr.message);
        throw apiErr;
      }
    }
    if (res.httpStatusCode >= 400) {
      const body = await res.body.text().catch(() => '');
      const apiErr = statusError(res.httpStatusCode, body, info, this.client.errorContext());
      if (isUnavailableError(apiErr)) this.client.connectivity.failed(apiErr.message);
      else this.client.connectivity.succeeded();
      throw apiErr;
    }
    this.client.connectivity.succeeded();
    return res;
  }

  /**
   * One keep-alive agent per client. client-node builds a fresh https.Agent with the TLS
   * material for every request; its options are compared with the kept agent's, so a rotated
   * client certificate (a changed file) gets a new agent and new connections.
   */
  private keepAliveAgent(fresh: unknown): https.Agent {
    if (!(fresh instanceof https.Agent) || fresh.constructor !== https.Agent) return fresh as https.Agent; // proxies, plain http
    if (this.agent && sameTls(this.agent.options, fresh.options)) return this.agent;
    if (this.agent) retire(this.agent);
    this.agent = new https.Agent({ ...fresh.options, keepAlive: true });
    return this.agent;
  }

  /** Lets the current connections finish and makes the next request open a new one. */
  retireConnections(): void {
    if (this.agent) retire(this.agent);
    this.agent = undefined;
  }

  close(): void {
    this.agent?.destroy();
    this.agent = undefined;
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

/** A reset or half-closed connection (ECONNRESET, EPIPE, "socket hang up"). */
function isStaleConnection(err: unknown): boolean {
  const e = err as { code?: string; errno?: string; message?: string } | undefined;
  const code = e?.code === 'FETCH_ERROR' || e?.code === 'system' ? e?.errno : e?.code;
  return code === 'ECONNRESET' || code === 'EPIPE' || /socket hang up/.test(e?.message ?? '');
}

const TLS_KEYS = ['ca', 'cert', 'key', 'pfx', 'passphrase', 'rejectUnauthorized', 'servername'] as const;

function sameTls(a: https.AgentOptions, b: https.AgentOptions): boolean {
  return TLS_KEYS.every((k) => {
    const x = a[k] as unknown;
    const y = b[k] as unknown;
    if (Buffer.isBuffer(x) && Buffer.isBuffer(y)) return x.equals(y);
    return x === y;
  });
}
