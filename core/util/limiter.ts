/**
 * A counting semaphore: at most `limit` tasks run at once, the rest wait in order. With
 * `releaseAfterMs`, a task still running after that long gives its slot to the next waiter
 * (and keeps running): a bound that smooths bursts without letting a few hung tasks stall
 * everything behind them.
 */
export class Limiter {
  private active = 0;
  private readonly waiting: Array<() => void> = [];

  constructor(
    private readonly limit: number,
    private readonly releaseAfterMs?: number,
  ) {}

  /** Tasks running now and waiting for a slot. */
  get load(): { active: number; waiting: number } {
    return { active: this.active, waiting: this.waiting.length };
  }

  async run<T>(task: () => Promise<T>): Promise<T> {
    if (this.active >= this.limit) await new Promise<void>((resolve) => this.waiting.push(resolve));
    else this.active++;
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      const next = this.waiting.shift();
      // The slot passes straight to the next waiter; otherwise it is released.
      if (next) next();
      else this.active--;
    };
    const timer = this.releaseAfterMs === undefined ? undefined : setTimeout(release, this.releaseAfterMs);
    timer?.unref();
    try {
      return await task();
    } finally {
      if (timer) clearTimeout(timer);
      release();
    }
  }
}
