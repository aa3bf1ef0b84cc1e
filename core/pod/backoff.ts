/**
 * Exponential back-off per key with the upstream kubelet's semantics (flowcontrol.Backoff):
 * the delay starts at `initialMs`, doubles on each `next` up to `maxMs`, and an entry whose
 * last update is older than 2 × max when the next event happens starts over (so a container
 * that ran cleanly for 10 minutes with the 5-minute cap restarts at the initial delay again).
 */
export class Backoff {
  private readonly entries = new Map<string, { delayMs: number; lastUpdate: number }>();

  constructor(
    readonly initialMs: number,
    readonly maxMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** The current delay of a key (0 when it has none). */
  get(key: string): number {
    return this.entries.get(key)?.delayMs ?? 0;
  }

  /** Records one more failure at `eventTime`: sets or doubles the delay. */
  next(key: string, eventTime: number): number {
    const entry = this.entries.get(key);
    const delayMs = !entry || this.expired(eventTime, entry.lastUpdate) ? this.initialMs : Math.min(entry.delayMs * 2, this.maxMs);
    this.entries.set(key, { delayMs, lastUpdate: this.now() });
    return delayMs;
  }

  /** True while less than the key's delay has passed since `eventTime` (a container's exit). */
  isInBackOffSince(key: string, eventTime: number): boolean {
    const entry = this.entries.get(key);
    if (!entry || this.expired(eventTime, entry.lastUpdate)) return false;
    return this.now() - eventTime < entry.delayMs;
  }

  /** True while less than the key's delay has passed since its last `next` (image pulls). */
  isInBackOffSinceUpdate(key: string, eventTime: number): boolean {
    const entry = this.entries.get(key);
    if (!entry || this.expired(eventTime, entry.lastUpdate)) return false;
    return eventTime - entry.lastUpdate < entry.delayMs;
  }

  /** Milliseconds left until the back-off of `key` measured from `since` ends (0 if none). */
  remaining(key: string, since: number): number {
    const entry = this.entries.get(key);
    return entry ? Math.max(0, since + entry.delayMs - this.now()) : 0;
  }

  /** Forgets every key that starts with `prefix` (a pod that went away). */
  forgetPrefix(prefix: string): void {
    for (const key of this.entries.keys()) if (key.startsWith(prefix)) this.entries.delete(key);
  }

  private expired(eventTime: number, lastUpdate: number): boolean {
    return eventTime - lastUpdate > 2 * this.maxMs;
  }
}
