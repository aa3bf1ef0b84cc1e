/**
 * The back-off between attempts to get a certificate: upstream's certificate manager waits 2 s,
 * doubling, with 10 % jitter, and then every 32 s; the TLS bootstrap waits the same here
 * (upstream's exits and is restarted by its service manager instead).
 */
export class RetryDelay {
  private attempt = 0;

  constructor(
    private readonly initialMs = 2000,
    private readonly maxMs = 32_000,
    private readonly random: () => number = Math.random,
  ) {}

  /** The delay before the next attempt (grows with each call). */
  next(): number {
    const base = Math.min(this.maxMs, this.initialMs * 2 ** this.attempt);
    this.attempt = Math.min(this.attempt + 1, 30);
    return Math.round(base * (1 + 0.1 * this.random()));
  }

  /** Starts over after a success. */
  reset(): void {
    this.attempt = 0;
  }
}
