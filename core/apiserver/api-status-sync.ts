/**
 * Pod statuses to the API server (upstream's status manager, the API half): the kubelet
 * computes each pod's status locally (StatusManager); this sends it to `pods/status` of the
 * pod's API object (or of a static pod's mirror pod) when it changed, and keeps sending what
 * could not be sent.
 *
 * - Only a change is sent: the last status the server accepted is remembered per pod.
 * - Only the latest status of a pod waits: while the server is away, a newer status replaces
 *   the one not yet sent, and everything pending goes out when it answers again.
 * - A terminal phase (Succeeded, Failed) never goes back: once sent, a later non-terminal
 *   status of that pod is not sent.
 * - The pod's UID is the precondition of every write: a pod deleted and created again under
 *   the same name never gets the old one's status (409 → dropped), nor does a deleted one (404).
 * - Requests go through the API client's rate limiter (kubeAPIQPS / kubeAPIBurst); failures
 *   are retried with back-off (1 s doubling to 30 s), at most `concurrency` at a time.
 */
import type { V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { canonicalJSON } from '../objects/pod-util.ts';

/** Which API object a status goes to. */
export interface PodTarget { namespace: string; name: string; uid: string }

/** The API calls the status sync makes (core/apiserver/pod-api.ts implements them on the API client). */
export interface PodStatusApi {
  patchStatus(target: PodTarget, status: V1PodStatus): Promise<void>;
}

/** How a failed write is classified: retried later, or dropped for good (the object is gone or another one). */
export type WriteFailure = 'retry' | 'drop';

interface Pending { target: PodTarget; status: V1PodStatus; fingerprint: string; attempts: number; notBefore: number }

const RETRY_INITIAL_MS = 1000;
const RETRY_MAX_MS = 30_000;
const TERMINAL = new Set(['Succeeded', 'Failed']);

export class ApiStatusSync {
  private readonly pending = new Map<string, Pending>();
  /** Fingerprint and phase of the last status the server accepted, by pod key. */
  private readonly sent = new Map<string, { fingerprint: string; phase: string | undefined; uid: string }>();
  private readonly inFlight = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  /** Statuses written, for tests and metrics. */
  writes = 0;

  constructor(
    private readonly deps: {
      api: PodStatusApi;
      logger: Logger;
      /** How a write error is treated (404/409 drop, the rest retry). */
      classify: (err: unknown) => WriteFailure;
      concurrency?: number;
    },
  ) {}

  /**
   * The pod's latest status, for the API object `target`. `key` identifies the pod on this
   * node (its UID; a static pod's, for its mirror). Sent unless it is what the server has.
   */
  set(key: string, target: PodTarget, status: V1PodStatus): void {
    if (this.stopped) return;
    const last = this.sent.get(key);
    if (last && last.uid === target.uid && TERMINAL.has(last.phase ?? '') && !TERMINAL.has(status.phase ?? '')) return;
    const fingerprint = canonicalJSON(status);
    if (last && last.uid === target.uid && last.fingerprint === fingerprint) {
      this.pending.delete(key);
      return;
    }
    const prev = this.pending.get(key);
    // The same status already waiting or being written: nothing new to send.
    if (prev && prev.fingerprint === fingerprint && prev.target.uid === target.uid) return;
    this.pending.set(key, { target, status, fingerprint, attempts: prev?.attempts ?? 0, notBefore: prev?.notBefore ?? 0 });
    this.pump();
  }

  /** Forgets a pod (its object is gone). */
  forget(key: string): void {
    this.pending.delete(key);
    this.sent.delete(key);
  }

  /** Statuses waiting to be sent (for tests). */
  get backlog(): number {
    return this.pending.size;
  }

  /** Sends what waits now, ignoring back-off (the API server is answering again). */
  flush(): void {
    for (const p of this.pending.values()) p.notBefore = 0;
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private pump(): void {
    if (this.stopped) return;
    const now = Date.now();
    const limit = this.deps.concurrency ?? 5;
    let nextAt = Infinity;
    for (const [key, p] of this.pending) {
      if (this.inFlight.size >= limit) break;
      if (this.inFlight.has(key)) continue;
      if (p.notBefore > now) {
        nextAt = Math.min(nextAt, p.notBefore);
        continue;
      }
      void this.write(key, p);
    }
    if (nextAt < Infinity) this.arm(nextAt - now);
  }

  private arm(ms: number): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(() => this.pump(), Math.max(0, ms));
    this.timer.unref();
  }

  private async write(key: string, p: Pending): Promise<void> {
    this.inFlight.add(key);
    try {
      await this.deps.api.patchStatus(p.target, p.status);
      this.writes++;
      this.sent.set(key, { fingerprint: p.fingerprint, phase: p.status.phase, uid: p.target.uid });
      // A newer status may have arrived meanwhile: only the one just sent (or an equal one) is done.
      const now = this.pending.get(key);
      if (now === p || (now && now.fingerprint === p.fingerprint && now.target.uid === p.target.uid)) this.pending.delete(key);
    } catch (err) {
      if (this.deps.classify(err) === 'drop') {
        this.deps.logger.debug({ pod: `${p.target.namespace}/${p.target.name}`, uid: p.target.uid, err: errorMessage(err) }, 'pod status not sent: the object is gone or was replaced');
        if (this.pending.get(key) === p) this.pending.delete(key);
      } else {
        p.attempts++;
        p.notBefore = Date.now() + Math.min(RETRY_MAX_MS, RETRY_INITIAL_MS * 2 ** (p.attempts - 1));
        this.deps.logger.debug({ pod: `${p.target.namespace}/${p.target.name}`, err: errorMessage(err), attempts: p.attempts }, 'pod status not sent; retrying');
      }
    } finally {
      this.inFlight.delete(key);
      this.pump();
    }
  }
}
