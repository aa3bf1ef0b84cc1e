/**
 * One log line per API server outage. While the server is away every component keeps
 * retrying (lease renewals, status posts, the pod watch), and a line per failed request would
 * bury everything else; so the client reports each request's outcome here, and this logs once
 * when the server stops answering and once when it answers again, with how long it was away.
 * Clients of one server (the throttled one and the heartbeat one) share a tracker.
 */
import type { Logger } from '../logger.ts';
import { formatDuration } from '../config/duration.ts';

export class ConnectivityTracker {
  private downSince: number | undefined;
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
  }
}
