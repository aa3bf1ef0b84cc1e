import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { podFingerprint, type RuntimeCache } from './runtime-cache.ts';

/** Upstream's relist threshold: PLEG is unhealthy when no relist finished for this long. */
const RELIST_THRESHOLD_MS = 3 * 60_000;

/**
 * The pod lifecycle event generator: relists the runtime every period and reports the pods
 * whose sandboxes or containers changed (started, exited, removed), so their workers sync
 * and their status follows. Relists never overlap: the next is scheduled when one ends.
 *
 * A change is judged against what PLEG itself saw last, as upstream's PLEG keeps its own pod
 * records, not against the shared cache: a pod sync re-reads its pod into the cache after
 * acting, and a container that exited in between would otherwise be in the cache already, no
 * relist would see it change, and the pod would wait for the periodic resync to restart it.
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
    },
  ) {}

  /** Relists once now (the kubelet's first look at the runtime) and then every period. */
  async start(): Promise<void> {
    this.stopped = false;
    await this.relist();
    this.schedule();
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
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
      this.deps.observe?.(performance.now() - t0, interval);
      if (changed.size > 0) this.deps.onChange(changed);
    } catch (err) {
      this.deps.logger.warn({ err: errorMessage(err) }, 'PLEG relist failed');
    }
  }

  private schedule(): void {
    if (this.stopped) return;
    this.timer = setTimeout(async () => {
      await this.relist();
      this.schedule();
    }, this.deps.periodMs);
    this.timer.unref();
  }
}
