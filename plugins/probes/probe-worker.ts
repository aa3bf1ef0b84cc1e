import { clampTimerMs, type ProbeOutcome, type ProbeType } from 'kubelet-ts';

/** The clock and timers a worker uses; tests pass a fake one. */
export interface Timers {
  now(): number;
  setTimeout(fn: () => void, ms: number): unknown;
  clearTimeout(handle: unknown): void;
}

/** Real timers, unref'd so probe workers never keep the process alive. */
export const realTimers: Timers = {
  now: () => Date.now(),
  setTimeout: (fn, ms) => setTimeout(fn, clampTimerMs(ms)).unref(),
  clearTimeout: (h) => clearTimeout(h as NodeJS.Timeout),
};

/**
 * What one probe run produced: a result with its output (a redirect to another host is a
 * success with a warning, as upstream), an error (the probe could not be run: upstream throws
 * the result away), or `stop` (the container or pod is gone: the worker ends).
 */
export type ProbeRunResult =
  | { result: 'success' | 'failure'; output: string; warning?: boolean }
  | { error: string }
  | { stop: string };

/** The timing part of a probe spec (after defaults). */
export interface ProbeTiming {
  initialDelaySeconds: number;
  periodSeconds: number;
  successThreshold: number;
  failureThreshold: number;
}

export interface ProbeWorkerOptions {
  type: ProbeType;
  timing: ProbeTiming;
  /** When the container started (ms since the epoch): initialDelaySeconds counts from here. */
  startedAt: number;
  /** Delay before the first run (the start-up jitter the manager chose), ms. */
  firstDelayMs: number;
  timers: Timers;
  /** Runs the probe handler once. */
  run(): Promise<ProbeRunResult>;
  /** Publishes a result transition (the manager turns it into `ctx.reportProbe`). */
  report(result: ProbeOutcome, output: string): Promise<void>;
  /** Liveness and readiness wait until this is true (the container's startup probe succeeded, or it has none). */
  started(): boolean;
  /** Called after every run that produced a result (metrics): errors count as 'unknown'. */
  counted?(result: ProbeOutcome): void;
  /** Called once when the worker ends, by stop() or because a run said `stop`. */
  onStop?(): void;
  /** Called for a run that threw (a bug, not a probe failure); the worker keeps going. */
  onCrash?(err: unknown): void;
}

/** upstream initial values: readiness starts failed, liveness healthy, startup unknown. */
export const INITIAL_RESULT: Readonly<Record<ProbeType, ProbeOutcome>> = { readiness: 'failure', liveness: 'success', startup: 'unknown' };

/**
 * One probe of one container (upstream pkg/kubelet/prober/worker.go): runs every
 * periodSeconds after a first delay; skips runs until initialDelaySeconds have passed since the
 * container started; liveness and readiness wait for the startup probe; a result becomes the
 * probe's state only after successThreshold / failureThreshold consecutive runs agree, and is
 * published only when that state changes. A liveness failure or a startup decision (either way)
 * puts the worker on hold: the container is about to be restarted (or has started), and a new
 * container gets new workers. An errored run (the probe could not be carried out) changes
 * nothing, as upstream; if the worker has published nothing yet, it is published once as
 * `unknown` with the error, so the reason is visible.
 */
export class ProbeWorker {
  readonly type: ProbeType;
  private readonly periodMs: number;
  private timer: unknown;
  private running = false;
  private triggered = false;
  private ended = false;
  private onHoldFlag = false;
  private lastResult: 'success' | 'failure' | undefined;
  private resultRun = 0;
  private reportedAny = false;
  private publishedResult: ProbeOutcome;

  constructor(private readonly o: ProbeWorkerOptions) {
    this.type = o.type;
    this.periodMs = o.timing.periodSeconds * 1000;
    this.publishedResult = INITIAL_RESULT[o.type];
  }

  /** The probe's current state as last published (or its initial value). */
  get published(): ProbeOutcome {
    return this.publishedResult;
  }

  get onHold(): boolean {
    return this.onHoldFlag;
  }

  get stopped(): boolean {
    return this.ended;
  }

  /** Starts the loop: the first run after `firstDelayMs`. */
  start(): void {
    if (this.ended || this.timer !== undefined || this.running) return;
    this.schedule(this.o.firstDelayMs);
  }

  /** Runs the probe now (or right after the run in progress); the period restarts from here, as upstream's manual trigger. */
  trigger(): void {
    if (this.ended) return;
    if (this.running) {
      this.triggered = true;
      return;
    }
    this.clearTimer();
    this.schedule(0);
  }

  /** Stops the worker; a run in progress finishes but publishes nothing. Safe to call twice. */
  stop(): void {
    if (this.ended) return;
    this.ended = true;
    this.clearTimer();
    this.o.onStop?.();
  }

  private clearTimer(): void {
    if (this.timer !== undefined) this.o.timers.clearTimeout(this.timer);
    this.timer = undefined;
  }

  private schedule(ms: number): void {
    this.timer = this.o.timers.setTimeout(() => void this.tick(), Math.max(0, ms));
  }

  private async tick(): Promise<void> {
    this.timer = undefined;
    if (this.ended) return;
    this.running = true;
    const tickAt = this.o.timers.now();
    let keepGoing = true;
    try {
      keepGoing = await this.doProbe();
    } catch (err) {
      this.o.onCrash?.(err);
    } finally {
      this.running = false;
    }
    if (this.ended) return;
    if (!keepGoing) {
      this.stop();
      return;
    }
    if (this.triggered) {
      this.triggered = false;
      this.schedule(0);
      return;
    }
    // A ticker: the next run one period after this one began (at once if the run overran it).
    this.schedule(tickAt + this.periodMs - this.o.timers.now());
  }

  /** One iteration of upstream's doProbe; false ends the worker. */
  private async doProbe(): Promise<boolean> {
    if (this.onHoldFlag) return true;
    const sinceStart = Math.floor((this.o.timers.now() - this.o.startedAt) / 1000);
    if (sinceStart < this.o.timing.initialDelaySeconds) return true;
    if (this.type !== 'startup' && !this.o.started()) return true;

    const r = await this.o.run();
    if (this.ended) return false;
    if ('stop' in r) return false;
    if ('error' in r) {
      this.o.counted?.('unknown');
      if (!this.reportedAny) await this.publish('unknown', r.error);
      return true;
    }
    this.o.counted?.(r.result);
    if (this.lastResult === r.result) this.resultRun++;
    else {
      this.lastResult = r.result;
      this.resultRun = 1;
    }
    const { failureThreshold, successThreshold } = this.o.timing;
    if ((r.result === 'failure' && this.resultRun < failureThreshold) || (r.result === 'success' && this.resultRun < successThreshold)) return true;

    // The initial value is implicit (the core assumes it); only a change is published.
    if (r.result !== this.publishedResult) await this.publish(r.result, r.output);
    if ((this.type === 'liveness' && r.result === 'failure') || this.type === 'startup') {
      this.onHoldFlag = true;
      this.resultRun = 0;
    }
    return true;
  }

  private async publish(result: ProbeOutcome, output: string): Promise<void> {
    this.publishedResult = result;
    this.reportedAny = true;
    if (this.ended) return;
    await this.o.report(result, output);
  }
}
