/**
 * The client-side rate limit on API requests, as client-go applies `kubeAPIQPS` and
 * `kubeAPIBurst` (flowcontrol.NewTokenBucketRateLimiter over golang.org/x/time/rate): a bucket
 * of `burst` tokens, full at start, refilled at `qps` tokens per second. Each request takes one
 * token; when none is left it waits for its own token, in arrival order. Waiting requests
 * reserve their token up front (the balance goes negative), so a burst of N requests is spread
 * exactly N/qps seconds apart instead of racing for each refill.
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  /**
   * @param qps tokens added per second (> 0)
   * @param burst the bucket's size (>= 1): how many requests may go at once after a quiet period
   * @param now a monotonic clock in milliseconds (tests pass a fake one)
   */
  constructor(
    readonly qps: number,
    readonly burst: number,
    private readonly now: () => number = () => performance.now(),
  ) {
    if (!(qps > 0) || !Number.isFinite(qps)) throw new RangeError(`qps must be a number > 0, got ${qps}`);
    if (!(burst >= 1) || !Number.isInteger(burst)) throw new RangeError(`burst must be an integer >= 1, got ${burst}`);
    this.tokens = burst;
    this.last = now();
  }

  /**
   * Takes one token and returns how long (ms) the caller must wait before using it: 0 while the
   * bucket has tokens. The token is the caller's from now on, even if it does not wait.
   */
  reserve(): number {
    const t = this.now();
    this.tokens = Math.min(this.burst, this.tokens + ((t - this.last) / 1000) * this.qps);
    this.last = t;
    this.tokens -= 1;
    return this.tokens >= 0 ? 0 : (-this.tokens / this.qps) * 1000;
  }

  /** Waits until the caller may send one request. */
  async acquire(): Promise<void> {
    const waitMs = this.reserve();
    if (waitMs > 0) await new Promise((resolve) => setTimeout(resolve, waitMs));
  }
}
