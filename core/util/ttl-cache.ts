/**
 * A bounded cache of answers with a lifetime each, for TokenReview and SubjectAccessReview
 * results: concurrent lookups of one key share one load (a burst of requests from one client
 * makes one review), and at most `maxEntries` answers are kept (the oldest go first), so a
 * client sending endless distinct tokens cannot grow the kubelet's memory.
 */
export class TtlCache<T> {
  private readonly entries = new Map<string, { value: T; expiresAt: number }>();
  private readonly loading = new Map<string, Promise<T>>();

  constructor(private readonly maxEntries: number, private readonly now: () => number = Date.now) {}

  /** The cached value, or the load's; the load says whether its value may be cached (for `ttlMs`). */
  getOrLoad(key: string, ttlMs: number, load: () => Promise<{ value: T; cache: boolean }>): Promise<T> {
    const hit = this.entries.get(key);
    if (hit && hit.expiresAt > this.now()) return Promise.resolve(hit.value);
    if (hit) this.entries.delete(key);
    const pending = this.loading.get(key);
    if (pending) return pending;
    const p = load().then(
      ({ value, cache }) => {
        if (cache && ttlMs > 0) this.put(key, value, ttlMs);
        return value;
      },
    ).finally(() => this.loading.delete(key));
    this.loading.set(key, p);
    return p;
  }

  get size(): number {
    return this.entries.size;
  }

  /** Keeps `value` for `ttlMs` (for loads whose lifetime depends on their answer). */
  put(key: string, value: T, ttlMs: number): void {
    if (ttlMs <= 0) return;
    this.entries.delete(key);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
    this.entries.set(key, { value, expiresAt: this.now() + ttlMs });
  }
}
