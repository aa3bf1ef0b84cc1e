import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorCode, errorMessage } from '../errors.ts';
import type { SyncOutcome } from './pod-sync.ts';
import { Backoff } from './backoff.ts';
import { TIMED_OUT, withTimeout } from '../util/with-timeout.ts';
import { podFullName } from '../objects/pod-util.ts';
import { TerminationGrace, effectiveGracePeriod } from './termination-grace.ts';

/** What the workers call: the pod syncer's two operations. */
export interface PodWorkHandlers {
  /**
   * Syncs the pod. `signal` aborts once the pod is to be terminated or the workers halt: the
   * sync starts nothing more, and the runtime calls and hook taps it made with the signal are
   * cancelled (as upstream's pod workers cancel a sync's context).
   */
  sync(pod: V1Pod, signal: AbortSignal): Promise<SyncOutcome>;
  /** Terminates the pod within `grace`, which may shorten while this runs; `signal` aborts when the workers halt. */
  terminate(pod: V1Pod, grace: TerminationGrace, signal: AbortSignal): Promise<void>;
  /** Asks for the pod to be looked at again after `ms`. */
  requeue(uid: string, ms: number): void;
  /** The pod finished terminating and its worker is gone. */
  terminated(pod: V1Pod): void;
  /** One operation's duration (for the pod worker duration metric). */
  observe?(operation: 'sync' | 'terminate', ms: number): void;
}

interface Worker {
  pod: V1Pod;
  terminating: boolean;
  /** The termination's grace, from the first termination request on (only ever shortened). */
  grace: TerminationGrace | undefined;
  busy: boolean;
  /** When the operation in progress began (performance.now()), while busy. */
  operationStartedAt: number | undefined;
  dirty: boolean;
  idle: Promise<void> | undefined;
  /** The operation in progress (a sync or a termination): aborted to give up on it. */
  operation: AbortController | undefined;
}

/** Why a pod worker's operation was given up on: its signal's reason. */
export class PodWorkGivenUp extends Error {
  override readonly name = 'PodWorkGivenUp';
}

/** Retry delays of failed syncs: quick first, then backing off to 30 s (upstream retries at ~10 s). */
const ERROR_INITIAL_MS = 1000;
const ERROR_MAX_MS = 30_000;

/**
 * One worker per pod: operations of one pod run one after another, pods run in parallel.
 * Updates that arrive while a pod's worker is busy coalesce into one more run with the
 * latest spec. Once termination is requested a pod never syncs again; later requests can
 * only shorten its grace period (a second delete with a shorter grace, a pod gone from the
 * API), which cuts a stop in progress short. When it is done the worker goes away.
 */
export class PodWorkers {
  private readonly workers = new Map<string, Worker>();
  private readonly errorBackoff = new Backoff(ERROR_INITIAL_MS, ERROR_MAX_MS);
  /** Set by halt(): the kubelet stops, syncs in progress start nothing more. */
  private halted = false;

  constructor(private readonly handlers: PodWorkHandlers, private readonly logger: Logger) {}

  /**
   * Asks the pod's worker to sync (`terminate=false`) or terminate it. A termination's grace is
   * the pod's effective one (upstream's rules, with `graceOverride` from the kubelet); on a pod
   * already terminating, only a shorter grace changes anything.
   */
  update(pod: V1Pod, terminate = false, graceOverride?: number): void {
    const uid = pod.metadata!.uid!;
    let w = this.workers.get(uid);
    if (!w) {
      w = { pod, terminating: false, grace: undefined, busy: false, operationStartedAt: undefined, dirty: false, idle: undefined, operation: undefined };
      this.workers.set(uid, w);
    }
    if (w.terminating && terminate) {
      const seconds = effectiveGracePeriod(w.grace?.seconds, pod, graceOverride);
      if (w.grace?.shorten(seconds)) this.logger.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, uid, gracePeriod: seconds }, 'grace period shortened');
      // The termination in progress goes on (with the shorter grace); a failed one is retried by its back-off.
      return;
    }
    if (!w.terminating) w.pod = pod;
    if (terminate) {
      w.terminating = true;
      w.grace = new TerminationGrace(effectiveGracePeriod(undefined, pod, graceOverride));
      // A sync in progress is given up on: what it still waits for is cancelled, and the termination runs next.
      w.operation?.abort(new PodWorkGivenUp('the pod is to be terminated'));
    }
    w.dirty = true;
    if (!w.busy) w.idle = this.run(uid, w);
  }

  /** The kubelet stops: the operations in progress are given up on (their runtime calls and hook taps cancelled), and none starts. */
  halt(): void {
    this.halted = true;
    for (const w of this.workers.values()) w.operation?.abort(new PodWorkGivenUp('the kubelet is stopping'));
  }

  /** The grace period (seconds) of a pod being terminated. */
  gracePeriod(uid: string): number | undefined {
    return this.workers.get(uid)?.grace?.seconds;
  }

  has(uid: string): boolean {
    return this.workers.has(uid);
  }

  /** True while the pod's worker runs an operation. */
  isBusy(uid: string): boolean {
    return this.workers.get(uid)?.busy === true;
  }

  /** How long the pod's worker has run its current operation (ms), or undefined when it is idle. */
  busyForMs(uid: string): number | undefined {
    const w = this.workers.get(uid);
    return w?.busy && w.operationStartedAt !== undefined ? performance.now() - w.operationStartedAt : undefined;
  }

  isTerminating(uid: string): boolean {
    return this.workers.get(uid)?.terminating === true;
  }

  /** UIDs of pods being terminated whose namespace/name is `fullName`. */
  terminatingWithName(fullName: string): string[] {
    return [...this.workers.entries()]
      .filter(([, w]) => w.terminating && podFullName(w.pod) === fullName)
      .map(([uid]) => uid);
  }

  size(): number {
    return this.workers.size;
  }

  /** Runs a pod's worker again (a retry after a failure), whether it syncs or terminates the pod. */
  retry(uid: string): void {
    const w = this.workers.get(uid);
    if (!w) return;
    w.dirty = true;
    if (!w.busy) w.idle = this.run(uid, w);
  }

  /**
   * Resolves when every worker is idle (for shutdown and tests), or after `timeoutMs` with the
   * UIDs of the pods whose workers were still busy.
   */
  async drain(timeoutMs = Infinity): Promise<string[]> {
    const all = Promise.all([...this.workers.values()].map((w) => w.idle)).then(() => [] as string[]);
    if (timeoutMs === Infinity) return all;
    const done = await withTimeout(all, timeoutMs);
    return done === TIMED_OUT ? [...this.workers.entries()].filter(([, w]) => w.busy).map(([uid]) => uid) : done;
  }

  private async run(uid: string, w: Worker): Promise<void> {
    w.busy = true;
    try {
      while (w.dirty) {
        w.dirty = false;
        const pod = w.pod;
        const op = w.terminating ? 'terminate' : 'sync';
        const started = performance.now();
        w.operationStartedAt = started;
        const operation = new AbortController();
        w.operation = operation;
        if (this.halted) operation.abort(new PodWorkGivenUp('the kubelet is stopping'));
        try {
          if (op === 'terminate') {
            await this.handlers.terminate(pod, w.grace ?? new TerminationGrace(effectiveGracePeriod(undefined, pod)), operation.signal);
            this.workers.delete(uid);
            this.errorBackoff.forgetPrefix(uid);
            this.handlers.terminated(pod);
            return;
          }
          const outcome = await this.handlers.sync(pod, operation.signal);
          this.errorBackoff.forgetPrefix(uid);
          if (outcome.requeueAfterMs !== undefined) this.handlers.requeue(uid, outcome.requeueAfterMs);
        } catch (err) {
          if (operation.signal.aborted) {
            // Given up on (the pod is to be terminated, or the kubelet stops): what failed of it
            // failed for that; the termination runs next (or nothing does).
            this.logger.debug({ pod: podFullName(pod), uid, op, reason: errorMessage(operation.signal.reason), err: errorMessage(err) }, 'pod worker operation given up on');
            continue;
          }
          const code = errorCode(err);
          // The runtime error contract: a spec the runtime or a plugin refuses (InvalidInput)
          // fails the same way until the pod changes, so it is not retried on the error
          // back-off; a change of the pod or the periodic resync runs it again. A termination
          // is always retried: what it holds must be released.
          if (op === 'sync' && code === 'InvalidInput') {
            this.logger.warn({ pod: podFullName(pod), uid, op, code, err: errorMessage(err) }, 'pod refused as invalid: not retried until it changes (or the periodic resync)');
          } else {
            const delay = this.errorBackoff.next(uid, Date.now());
            this.logger.warn({ pod: podFullName(pod), uid, op, code, err: errorMessage(err), retryInMs: delay }, 'pod worker operation failed');
            this.handlers.requeue(uid, delay);
          }
        } finally {
          if (w.operation === operation) w.operation = undefined;
          this.handlers.observe?.(op, performance.now() - started);
        }
      }
    } finally {
      w.busy = false;
      w.operationStartedAt = undefined;
    }
  }
}
