import { clampTimerMs } from '../util/timeouts.ts';

/**
 * Pods to look at again later (a back-off expiring, a retry after an error), kept in one
 * map with a single timer set to the earliest due time: no timer per pod, so thousands of
 * waiting pods cost one timer.
 */
export class WorkQueue {
  private readonly due = new Map<string, number>();
  private timer: NodeJS.Timeout | undefined;
  private timerAt = Infinity;
  private stopped = false;

  constructor(private readonly onDue: (uid: string) => void, private readonly now: () => number = Date.now) {}

  /** Schedules `uid` after `delayMs`; an earlier schedule for it wins. */
  enqueue(uid: string, delayMs: number): void {
    if (this.stopped) return;
    const at = this.now() + Math.max(0, delayMs);
    const cur = this.due.get(uid);
    if (cur !== undefined && cur <= at) return;
    this.due.set(uid, at);
    if (at < this.timerAt) this.arm(at);
  }

  /** Forgets a pod (it went away). */
  forget(uid: string): void {
    this.due.delete(uid);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.due.clear();
  }

  private arm(at: number): void {
    clearTimeout(this.timer);
    this.timerAt = at;
    // Clamped: a delay past 2^31-1 ms would make setTimeout fire at once, again and again.
    this.timer = setTimeout(() => this.fire(), clampTimerMs(at - this.now()));
    this.timer.unref();
  }

  private fire(): void {
    this.timerAt = Infinity;
    const now = this.now();
    let next = Infinity;
    for (const [uid, at] of this.due) {
      if (at <= now) {
        this.due.delete(uid);
        try {
          this.onDue(uid);
        } catch {
          // One pod's failure must not stall the others; the callback logs its own errors.
        }
      } else next = Math.min(next, at);
    }
    if (next < Infinity && !this.stopped) this.arm(next);
  }
}
