/**
 * The grace period of a pod being terminated, as upstream's pod worker keeps it
 * (calculateEffectiveGracePeriod in pkg/kubelet/pod_workers.go): once a pod terminates, every
 * later deletion of it may only shorten its grace, never lengthen it; the API server's
 * deletionGracePeriodSeconds is the truth, but a zero there counts as unset (the spec's
 * terminationGracePeriodSeconds applies); and a pod never gets less than 1 s. A shorter grace
 * arriving while the pod's containers are being stopped cuts the stop short: the listeners
 * (each container's stop) ask the runtime again with the new time left.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { clampSeconds } from '../util/timeouts.ts';

/** The grace a pod never goes below (upstream: "no matter what, we always supply a grace period of 1"). */
export const MIN_POD_GRACE_SECONDS = 1;

/**
 * The grace to terminate `pod` with, given what its termination already has (`current`, undefined
 * before it started) and a kubelet-side override (a pod gone from the API, eviction).
 */
export function effectiveGracePeriod(current: number | undefined, pod: V1Pod, override?: number): number {
  let grace = current ?? 0;
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null) {
    const d = clampSeconds(Number(deletion));
    if (grace === 0 || d < grace) grace = d;
  }
  if (override !== undefined) {
    const o = clampSeconds(override);
    if (grace === 0 || o < grace) grace = o;
  }
  if (grace === 0) grace = clampSeconds(Number(pod.spec?.terminationGracePeriodSeconds ?? 30));
  return Math.max(MIN_POD_GRACE_SECONDS, grace);
}

/** A termination's grace: its seconds, its deadline, and who to tell when it shortens. */
export class TerminationGrace {
  private deadlineMs: number;
  private readonly listeners = new Set<() => void>();

  constructor(private secs: number, now = Date.now()) {
    this.deadlineMs = now + secs * 1000;
  }

  /** The grace period in seconds (what taps and events are told). */
  get seconds(): number {
    return this.secs;
  }

  /** Whole seconds left until the deadline (0 once past it). */
  leftSeconds(now = Date.now()): number {
    return Math.max(0, Math.ceil((this.deadlineMs - now) / 1000));
  }

  /**
   * A later deletion's grace: only a shorter one counts. The deadline becomes the earlier of
   * the old one and `seconds` from now; true (and the listeners told) when it moved.
   */
  shorten(seconds: number, now = Date.now()): boolean {
    if (seconds >= this.secs) return false;
    this.secs = seconds;
    const deadline = now + seconds * 1000;
    if (deadline >= this.deadlineMs) return false;
    this.deadlineMs = deadline;
    for (const fn of [...this.listeners]) fn();
    return true;
  }

  /** Calls `fn` each time the grace shortens; returns the function that stops it. */
  onShorten(fn: () => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /** Resolves at the deadline (as it is then: a shortened grace resolves it earlier). `cancel` stops the timer. */
  expired(): { promise: Promise<void>; cancel: () => void } {
    let timer: NodeJS.Timeout | undefined;
    let off: () => void = () => {};
    const promise = new Promise<void>((resolve) => {
      const arm = () => {
        if (timer) clearTimeout(timer);
        timer = setTimeout(resolve, Math.max(0, Math.min(this.deadlineMs - Date.now(), 2 ** 31 - 1)));
        timer.unref();
      };
      arm();
      off = this.onShorten(arm);
    });
    return {
      promise,
      cancel: () => {
        if (timer) clearTimeout(timer);
        off();
      },
    };
  }
}
