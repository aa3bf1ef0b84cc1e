import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { podFingerprint, type RuntimeCache } from './runtime-cache.ts';
import type { ContainerEvent, ContainerEventsEnd } from './types.ts';

/** Upstream's relist threshold: PLEG is unhealthy when no relist finished for this long. */
const RELIST_THRESHOLD_MS = 3 * 60_000;
/** After the event stream failed or closed, the wait before it is opened again: doubling from the first to the last. */
const EVENTS_RETRY_FIRST_MS = 1000;
const EVENTS_RETRY_MAX_MS = 60_000;
/** A stream that lasted this long was healthy: the next failure retries from the first wait again. */
const EVENTS_HEALTHY_MS = 60_000;
/**
 * The least time between the end of a relist and one an event asks for: a pod starting or
 * stopping makes several events (sandbox and container, created, started, ...), and under churn
 * they would otherwise keep PLEG relisting back to back. At most 4 more relists a second, each
 * change seen within a quarter second plus a relist.
 */
const EVENT_RELIST_GAP_MS = 250;

/**
 * The pod lifecycle event generator: relists the runtime every period and reports the pods
 * whose sandboxes or containers changed (started, exited, removed), so their workers sync
 * and their status follows. Relists never overlap: the next is scheduled when one ends.
 *
 * A change is judged against what PLEG itself saw last, as upstream's PLEG keeps its own pod
 * records, not against the shared cache: a pod sync re-reads its pod into the cache after
 * acting, and a container that exited in between would otherwise be in the cache already, no
 * relist would see it change, and the pod would wait for the periodic resync to restart it.
 *
 * A runtime that streams container events (containerd >= 1.7) makes PLEG relist as soon as a
 * container changes, besides every period: an event is a prompt, never the state (a relist
 * reads that), so an event lost while the stream reconnects costs latency only, at most one
 * period. Upstream's evented PLEG (alpha) reads the state from the events and stretches the
 * relist to 300 s; relisting on events keeps one source of truth and the same period.
 */
export class Pleg {
  private timer: NodeJS.Timeout | undefined;
  private stopped = true;
  private lastRelistEnd = 0;
  private lastRelistStart = 0;
  /** Each pod as the last relist saw it (podFingerprint). */
  private seen = new Map<string, string>();

  constructor(
    private readonly deps: {
      cache: RuntimeCache;
      periodMs: number;
      logger: Logger;
      onChange: (uids: Set<string>) => void;
      /** Relist duration and the interval since the previous relist, for metrics. */
      observe?: (durationMs: number, intervalMs: number) => void;
      /** The runtime's container events (ContainerRuntime.containerEvents), when it has them. */
      events?: (onEvent: (event: ContainerEvent) => void, options: { signal: AbortSignal }) => Promise<ContainerEventsEnd>;
    },
  ) {}

  /** The relist running now (relists never overlap). */
  private running: Promise<void> | undefined;
  /** An event came during a relist: another follows it (after EVENT_RELIST_GAP_MS). */
  private again = false;
  /** The timer holds an event's relist, not the period's. */
  private soon = false;
  /** When the last relist ended (performance.now()). */
  private lastEndMono = 0;
  private eventsAbort: AbortController | undefined;
  /** Events seen since start (tests and the log read it). */
  eventsSeen = 0;

  /** Relists once now (the kubelet's first look at the runtime) and then every period; opens the runtime's event stream if it has one. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.runRelist(false);
    this.schedule();
    if (this.deps.events) void this.watchEvents(this.deps.events);
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
    this.eventsAbort?.abort();
  }

  /** Healthy while relists keep finishing (served on /healthz). */
  healthy(now = Date.now()): boolean {
    return this.lastRelistEnd > 0 && now - this.lastRelistEnd < RELIST_THRESHOLD_MS;
  }

  /** When the last relist finished (ms since epoch). */
  lastSeen(): number {
    return this.lastRelistEnd;
  }

  async relist(): Promise<void> {
    const start = Date.now();
    const t0 = performance.now();
    const interval = this.lastRelistStart ? start - this.lastRelistStart : 0;
    this.lastRelistStart = start;
    try {
      await this.deps.cache.relist();
      const current = new Map(this.deps.cache.all().map((p) => [p.uid, podFingerprint(p)]));
      const changed = new Set<string>();
      for (const [uid, fp] of current) if (this.seen.get(uid) !== fp) changed.add(uid);
      for (const uid of this.seen.keys()) if (!current.has(uid)) changed.add(uid);
      this.seen = current;
      this.lastRelistEnd = Date.now();
      this.lastEndMono = performance.now();
      this.deps.observe?.(performance.now() - t0, interval);
      if (changed.size > 0) this.deps.onChange(changed);
    } catch (err) {
      this.deps.logger.warn({ err: errorMessage(err) }, 'PLEG relist failed');
    }
  }

  /** A container changed: relist soon (EVENT_RELIST_GAP_MS after the last) rather than at the next period; during a relist, once more after it. */
  private relistSoon(): void {
    if (this.stopped) return;
    if (this.running) {
      this.again = true;
      return;
    }
    if (this.soon) return;
    clearTimeout(this.timer);
    this.soon = true;
    this.timer = setTimeout(() => {
      this.soon = false;
      void this.runRelist(true);
    }, Math.max(0, this.lastEndMono + EVENT_RELIST_GAP_MS - performance.now()));
    this.timer.unref();
  }

  /** One relist at a time; `reschedule`: the period counts from its end (an event's relist replaced the timer's). */
  private async runRelist(reschedule: boolean): Promise<void> {
    this.running = this.relist();
    try {
      await this.running;
    } finally {
      this.running = undefined;
    }
    if (this.again && !this.stopped) {
      this.again = false;
      this.relistSoon();
      return;
    }
    if (reschedule) this.schedule();
  }

  private schedule(): void {
    if (this.stopped) return;
    clearTimeout(this.timer);
    this.soon = false;
    this.timer = setTimeout(() => void this.runRelist(true), this.deps.periodMs);
    this.timer.unref();
  }

  /**
   * Keeps the runtime's event stream open while PLEG runs: reopened after it closed or failed,
   * the wait doubling up to a minute; given up when the runtime has none (said once, at info).
   */
  private async watchEvents(open: NonNullable<typeof this.deps.events>): Promise<void> {
    let waitMs = EVENTS_RETRY_FIRST_MS;
    while (!this.stopped) {
      this.eventsAbort = new AbortController();
      const openedAt = performance.now();
      let end: ContainerEventsEnd | Error;
      try {
        end = await open(() => {
          if (++this.eventsSeen === 1) this.deps.logger.info('container events from the runtime: PLEG relists as soon as a container changes, and every period');
          this.relistSoon();
        }, { signal: this.eventsAbort.signal });
      } catch (err) {
        end = err instanceof Error ? err : new Error(String(err));
      }
      if (this.stopped) return;
      if (end === 'unsupported') {
        this.deps.logger.info({ periodMs: this.deps.periodMs }, 'the runtime streams no container events (CRI GetContainerEvents): PLEG relists every period only');
        return;
      }
      if (performance.now() - openedAt >= EVENTS_HEALTHY_MS) waitMs = EVENTS_RETRY_FIRST_MS;
      this.deps.logger.warn({ err: end instanceof Error ? errorMessage(end) : 'closed by the runtime', retryInMs: waitMs }, 'the container event stream ended; PLEG relists every period until it is back');
      // A change missed while the stream was down is seen by the next relist, as it would be without events.
      await new Promise<void>((resolve) => {
        const t = setTimeout(resolve, waitMs);
        t.unref();
        this.eventsAbort!.signal.addEventListener('abort', () => {
          clearTimeout(t);
          resolve();
        }, { once: true });
      });
      waitMs = Math.min(waitMs * 2, EVENTS_RETRY_MAX_MS);
    }
  }
}
