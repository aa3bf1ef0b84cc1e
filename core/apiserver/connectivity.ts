/**
 * One log line per API server outage. While the server is away every component keeps
 * retrying (lease renewals, status posts, the pod watch), and a line per failed request would
 * bury everything else; so the client reports each request's outcome here, and this logs once
 * when the server stops answering and once when it answers again, with how long it was away.
 * Clients of one server (the throttled one and the heartbeat one) share a tracker.
 *
 * While the server is away, a probe (set with setProbe: a cheap GET /version) asks every
 * PROBE_MS, so that its return is known within seconds whatever back-off each component is
 * in; components that hold writes back (status posts, events, the pod watch, the Lease)
 * subscribe to onRecovered and go at once.
 */
import type { Logger } from '../logger.ts';
import { formatDuration } from '../util/duration.ts';

/** How often the probe asks while the server is away. */
const PROBE_MS = 2000;

export class ConnectivityTracker {
  private downSince: number | undefined;
  private probe: (() => Promise<unknown>) | undefined;
  private probeTimer: NodeJS.Timeout | undefined;
  private readonly recoveredListeners = new Set<() => void>();
  private failures = 0;
  private lastError = '';

  constructor(
    private readonly server: string,
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
  ) {}

  /** True while the server is considered away (since a failure, until the next answer). */
  get down(): boolean {
    return this.downSince !== undefined;
  }

  /** A request got no answer (unreachable, timed out, 502/503/504). Logs only the first of an outage. */
  failed(message: string): void {
    this.failures++;
    this.lastError = message;
    if (this.downSince !== undefined) {
      this.logger.debug({ server: this.server, err: message }, 'API server still unreachable');
      return;
    }
    this.downSince = this.now();
    this.armProbe();
    this.logger.warn({ server: this.server, err: message }, `API server ${this.server} is unreachable; requests are retried with back-off until it answers`);
  }

  /** A request got an answer (any HTTP status but 502/503/504). Logs the end of an outage. */
  succeeded(): void {
    if (this.downSince === undefined) return;
    const downMs = this.now() - this.downSince;
    this.logger.info(
      { server: this.server, downMs, failedRequests: this.failures, lastError: this.lastError },
      `API server ${this.server} is reachable again after ${formatDuration(downMs)}`,
    );
    this.downSince = undefined;
    this.failures = 0;
    this.lastError = '';
    clearTimeout(this.probeTimer);
    this.probeTimer = undefined;
    for (const fn of this.recoveredListeners) {
      try {
        fn();
      } catch {
        // A listener's failure is its own.
      }
    }
  }

  /** The request that tells whether the server answers again (its outcome is reported here by the client). */
  setProbe(probe: (() => Promise<unknown>) | undefined): void {
    this.probe = probe;
    if (!probe) {
      clearTimeout(this.probeTimer);
      this.probeTimer = undefined;
    }
  }

  private armProbe(): void {
    if (!this.probe || this.probeTimer) return;
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined;
      if (this.downSince === undefined || !this.probe) return;
      void this.probe().catch(() => {}).finally(() => {
        if (this.downSince !== undefined) this.armProbe();
      });
    }, PROBE_MS);
    this.probeTimer.unref();
  }

  /** Calls `fn` each time the server answers again after an outage (writes held back can go now). */
  onRecovered(fn: () => void): () => void {
    this.recoveredListeners.add(fn);
    return () => this.recoveredListeners.delete(fn);
  }
}
