/**
 * The node's heartbeat Lease, `kube-node-lease/<nodeName>`, as upstream's lease controller keeps
 * it (component-helpers/apimachinery/lease): holderIdentity is the node name,
 * leaseDurationSeconds the configured duration, renewTime renewed every quarter of the duration
 * (10 s for 40 s) with 4 % jitter, and an ownerReference to the Node so the Lease goes when the
 * Node does. The node lifecycle controller marks the node Unknown when renewTime falls 40 s
 * behind.
 *
 * A renewal first PUTs the Lease last written (no GET while nothing else writes it). When that
 * fails, it ensures the Lease exists (GET, create when missing), retrying with upstream's
 * back-off of 200 ms doubling to 7 s until the API server answers, then updates it; a conflict
 * re-reads it. An API server outage is logged once by the client's connectivity tracker; the
 * controller adds a line only for other errors, once per distinct message.
 */
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from '../apiserver/api-client.ts';
import { isConflictError, isNotFoundError, isUnavailableError } from '../apiserver/api-errors.ts';
import { InterruptibleSleep } from '../util/interruptible-sleep.ts';

export const NODE_LEASE_NAMESPACE = 'kube-node-lease';
/** Upstream's nodeLeaseRenewIntervalFraction. */
const RENEW_FRACTION = 0.25;
/** Upstream's JitterUntil factor for lease renewals. */
const JITTER = 0.04;
const BACKOFF_START_MS = 200;
const BACKOFF_MAX_MS = 7000;
/** Upstream's maxUpdateRetries. */
const MAX_UPDATE_RETRIES = 5;

/** The parts of a coordination.k8s.io/v1 Lease the controller reads and writes (wire JSON). */
export interface LeaseObject {
  apiVersion?: string;
  kind?: string;
  metadata: { name: string; namespace: string; resourceVersion?: string; uid?: string; ownerReferences?: Array<{ apiVersion: string; kind: string; name: string; uid: string }>; [k: string]: unknown };
  spec: { holderIdentity?: string; leaseDurationSeconds?: number; renewTime?: string; [k: string]: unknown };
}

export interface NodeLeaseOptions {
  /** The heartbeat client. */
  client: ApiClient;
  nodeName: string;
  leaseDurationSeconds: number;
  logger: Logger;
  /** The renewal period; default a quarter of the duration. */
  renewIntervalMs?: number;
  /** The Node's UID when known (saves a GET to set the owner reference). */
  nodeUID?: () => string | undefined;
  now?: () => number;
}

/** metav1.MicroTime on the wire: RFC 3339 with exactly six fractional digits, as the API server parses it. */
export function microTime(ms: number): string {
  return new Date(ms).toISOString().replace(/\.(\d{3})Z$/, '.$1000Z');
}

export class NodeLease {
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly renewIntervalMs: number;
  private latest: LeaseObject | undefined;
  private stopped = false;
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  /** Back-off sleeps, cut short on stop and when the server answers again. */
  private readonly pause = new InterruptibleSleep();
  /** Ends a back-off sleep when the server answers again (see ConnectivityTracker). */
  private offRecovered: (() => void) | undefined;
  private lastError = '';
  /** A failure was logged at warn (not an outage, which the connectivity tracker reports). */
  private warned = false;

  constructor(private readonly opts: NodeLeaseOptions) {
    this.log = opts.logger.child({ component: 'node-lease', node: opts.nodeName });
    this.now = opts.now ?? Date.now;
    this.renewIntervalMs = opts.renewIntervalMs ?? opts.leaseDurationSeconds * 1000 * RENEW_FRACTION;
  }

  private get path(): string {
    return `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases/${encodeURIComponent(this.opts.nodeName)}`;
  }

  /** The Lease as last written (tests, debugging). */
  get lease(): LeaseObject | undefined {
    return this.latest;
  }

  /** Renews now, then every renew interval (jittered), until stopped. */
  start(): void {
    this.offRecovered = this.opts.client.connectivity.onRecovered(() => this.pause.wake());
    const loop = async () => {
      await this.renewNow();
      if (this.stopped) return;
      const delay = this.renewIntervalMs * (1 + Math.random() * JITTER);
      this.timer = setTimeout(() => void loop(), delay);
      this.timer.unref();
    };
    void loop();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.offRecovered?.();
    if (this.timer) clearTimeout(this.timer);
    this.pause.wake();
    await this.running?.catch(() => {});
  }

  /** One renewal (upstream controller.sync); resolves when the Lease was written or the controller stopped. */
  renewNow(): Promise<void> {
    this.running ??= this.sync().finally(() => {
      this.running = undefined;
    });
    return this.running;
  }

  private async sync(): Promise<void> {
    if (this.latest) {
      try {
        await this.retryUpdate(this.latest);
        return;
      } catch (err) {
        this.logFailure('renewing the lease from the last written one failed; reading it again', err);
      }
    }
    const ensured = await this.backoffEnsure();
    if (!ensured || ensured.created) return;
    try {
      await this.retryUpdate(ensured.lease);
    } catch (err) {
      this.logFailure(`lease renewal failed; next try in ${Math.round(this.renewIntervalMs / 1000)}s`, err);
    }
  }

  /** Gets the Lease, creating it when missing, retrying with back-off until the server answers. */
  private async backoffEnsure(): Promise<{ lease: LeaseObject; created: boolean } | undefined> {
    let sleep = BACKOFF_START_MS;
    while (!this.stopped) {
      try {
        return await this.ensure();
      } catch (err) {
        this.logFailure('cannot read or create the node lease; retrying', err, sleep);
      }
      await this.pause.sleep(sleep);
      sleep = Math.min(sleep * 2, BACKOFF_MAX_MS);
    }
    return undefined;
  }

  private async ensure(): Promise<{ lease: LeaseObject; created: boolean }> {
    try {
      return { lease: await this.opts.client.request<LeaseObject>('GET', this.path), created: false };
    } catch (err) {
      if (!isNotFoundError(err)) throw err;
    }
    const fresh = await this.withRenewal(undefined);
    const created = await this.opts.client.request<LeaseObject>('POST', `/apis/coordination.k8s.io/v1/namespaces/${NODE_LEASE_NAMESPACE}/leases`, { body: fresh });
    this.latest = created;
    this.succeeded();
    this.log.info({ owner: created.metadata.ownerReferences?.[0]?.uid }, 'created the node lease');
    return { lease: created, created: true };
  }

  /** PUTs the Lease renewed from `base`, up to 5 times; a conflict re-reads it first. */
  private async retryUpdate(base: LeaseObject): Promise<void> {
    let current = base;
    let lastErr: unknown;
    for (let i = 0; i < MAX_UPDATE_RETRIES && !this.stopped; i++) {
      try {
        const updated = await this.opts.client.request<LeaseObject>('PUT', this.path, { body: await this.withRenewal(current) });
        this.latest = updated;
        this.succeeded();
        return;
      } catch (err) {
        lastErr = err;
        if (isConflictError(err)) {
          const ensured = await this.backoffEnsure();
          if (!ensured) return;
          current = ensured.lease;
          continue;
        }
        // Retrying at once does not help a server that is away: let the caller back off.
        if (isUnavailableError(err) || isNotFoundError(err)) break;
      }
    }
    throw lastErr ?? new Error('lease update gave up');
  }

  /**
   * The Lease to write (upstream newLease): the base (or a new one) with holderIdentity,
   * leaseDurationSeconds and renewTime now, and the owner reference to the Node when it has
   * none yet (retried on every renewal until the Node exists, as upstream's setNodeOwnerFunc).
   */
  private async withRenewal(base: LeaseObject | undefined): Promise<LeaseObject> {
    const lease: LeaseObject = base
      ? structuredClone(base)
      : { apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: { name: this.opts.nodeName, namespace: NODE_LEASE_NAMESPACE }, spec: {} };
    lease.apiVersion = 'coordination.k8s.io/v1';
    lease.kind = 'Lease';
    lease.spec.holderIdentity = this.opts.nodeName;
    lease.spec.leaseDurationSeconds = this.opts.leaseDurationSeconds;
    lease.spec.renewTime = microTime(this.now());
    if (!lease.metadata.ownerReferences?.length) {
      const uid = await this.nodeUID();
      if (uid) lease.metadata.ownerReferences = [{ apiVersion: 'v1', kind: 'Node', name: this.opts.nodeName, uid }];
    }
    return lease;
  }

  private async nodeUID(): Promise<string | undefined> {
    const known = this.opts.nodeUID?.();
    if (known) return known;
    try {
      const node = await this.opts.client.request<{ metadata?: { uid?: string } }>('GET', `/api/v1/nodes/${encodeURIComponent(this.opts.nodeName)}`);
      return node.metadata?.uid;
    } catch (err) {
      this.log.debug({ err: errorMessage(err) }, 'the Node is not readable yet; the lease gets its owner reference on a later renewal');
      return undefined;
    }
  }

  private succeeded(): void {
    if (this.warned) this.log.info('node lease renewed again');
    this.lastError = '';
    this.warned = false;
  }

  /** One line per distinct failure; an unreachable server is the connectivity tracker's line. */
  private logFailure(what: string, err: unknown, retryInMs?: number): void {
    const message = errorMessage(err);
    const fields = { err: message, ...(retryInMs !== undefined ? { retryInMs } : {}) };
    if (isUnavailableError(err) || message === this.lastError) this.log.debug(fields, what);
    else {
      this.log.warn(fields, what);
      this.warned = true;
    }
    this.lastError = message;
  }

}
