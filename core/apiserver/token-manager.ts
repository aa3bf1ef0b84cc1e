/**
 * Service account tokens for `serviceAccountToken` projections (the `kube-api-access-*`
 * volume ServiceAccount admission gives every pod), through the TokenRequest API, as
 * upstream's token manager: each token is bound to its pod (it stops working when the pod is
 * deleted), asked with the projection's audience and expirationSeconds, kept and handed out
 * again until it is due for refresh — at 80 % of its lifetime or after 24 h, whichever comes
 * first — and then asked anew; a refresh that fails while the old token is still valid keeps
 * the old one (logged), so a short API outage never empties a pod's token file. The kubelet is
 * told when a pod's token comes due (`onRefreshDue`), so its volume is written again then, not
 * only at the next periodic sync.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { clampTimerMs } from '../util/timeouts.ts';
import type { ApiClient } from './api-client.ts';
import type { TokenRequestSpec, TokenSource } from '../objects/object-source.ts';


interface Cached { token: string; issuedAt: number; expiresAt: number; refreshAt: number; podUid: string }

/** Upstream's thresholds: refresh after 80 % of the lifetime, or after 24 h. */
const REFRESH_FRACTION = 0.8;
const MAX_AGE_MS = 24 * 3600_000;

export class TokenManager implements TokenSource {
  private readonly cache = new Map<string, Cached>();
  private readonly timers = new Map<string, NodeJS.Timeout>();

  constructor(
    private readonly deps: {
      client: ApiClient;
      logger: Logger;
      /** A pod's token comes due for refresh: the kubelet writes its volume again. */
      onRefreshDue?: (podUid: string) => void;
      now?: () => number;
      /** The share of a token's lifetime after which it is refreshed (upstream 0.8; tests shorten it). */
      refreshFraction?: number;
    },
  ) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  async token(pod: V1Pod, spec: TokenRequestSpec): Promise<string> {
    const uid = pod.metadata!.uid!;
    const ns = pod.metadata!.namespace ?? 'default';
    const key = `${uid}/${spec.serviceAccountName}/${spec.audience ?? ''}/${spec.expirationSeconds}`;
    const cached = this.cache.get(key);
    const now = this.now();
    if (cached && now < cached.refreshAt) return cached.token;
    try {
      const fresh = await this.request(pod, ns, spec);
      this.cache.set(key, fresh);
      this.schedule(uid);
      return fresh.token;
    } catch (err) {
      // A refresh that failed while the old token still works: keep it, and try again soon.
      if (cached && now < cached.expiresAt) {
        this.deps.logger.warn({ pod: `${ns}/${pod.metadata?.name}`, serviceAccount: spec.serviceAccountName, err: errorMessage(err), expiresAt: new Date(cached.expiresAt).toISOString() }, 'could not refresh a service account token; keeping the current one');
        return cached.token;
      }
      throw new Error(`serviceAccountToken for service account "${spec.serviceAccountName}": ${errorMessage(err)}`, { cause: err });
    }
  }

  /** Forgets a pod's tokens (the pod is gone; the server invalidates tokens bound to it). */
  forgetPod(uid: string): void {
    for (const [key, c] of this.cache) if (c.podUid === uid) this.cache.delete(key);
    clearTimeout(this.timers.get(uid));
    this.timers.delete(uid);
  }

  stop(): void {
    for (const t of this.timers.values()) clearTimeout(t);
    this.timers.clear();
  }

  private async request(pod: V1Pod, ns: string, spec: TokenRequestSpec): Promise<Cached> {
    const body = {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {
        audiences: spec.audience ? [spec.audience] : [],
        expirationSeconds: spec.expirationSeconds,
        boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: pod.metadata!.name!, uid: pod.metadata!.uid! },
      },
    };
    const path = `/api/v1/namespaces/${encodeURIComponent(ns)}/serviceaccounts/${encodeURIComponent(spec.serviceAccountName)}/token`;
    const res = await this.deps.client.request<{ status?: { token?: string; expirationTimestamp?: string } }>('POST', path, { body });
    const token = res?.status?.token;
    if (typeof token !== 'string' || !token) throw new Error('the TokenRequest answer has no token');
    const issuedAt = this.now();
    const exp = Date.parse(res.status?.expirationTimestamp ?? '');
    // The server may grant a longer lifetime than asked (service-account-extend-token-expiration): go by what it says.
    const expiresAt = Number.isFinite(exp) ? exp : issuedAt + spec.expirationSeconds * 1000;
    const fraction = this.deps.refreshFraction ?? REFRESH_FRACTION;
    const refreshAt = Math.min(issuedAt + (expiresAt - issuedAt) * fraction, issuedAt + MAX_AGE_MS);
    return { token, issuedAt, expiresAt, refreshAt, podUid: pod.metadata!.uid! };
  }

  /** One timer per pod, at the earliest refresh of its tokens. */
  private schedule(uid: string): void {
    let at = Infinity;
    for (const c of this.cache.values()) if (c.podUid === uid) at = Math.min(at, c.refreshAt);
    clearTimeout(this.timers.get(uid));
    if (at === Infinity) return;
    const t = setTimeout(() => {
      this.timers.delete(uid);
      this.deps.onRefreshDue?.(uid);
    }, clampTimerMs(at - this.now()));
    t.unref();
    this.timers.set(uid, t);
  }
}
