import type { KubeletHooks, VolumeUsage } from '../hooks.ts';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { VolumeStats } from '../stats/summary-types.ts';
import type { MountedVolume } from './volume-manager.ts';
import { hookContext } from '../util/cancellation.ts';
import { withTimeout } from '../util/with-timeout.ts';
import { MAX_TIMER_MS } from '../util/timeouts.ts';
import type { ClaimUsage } from '../metrics/volume-stats-metrics.ts';

/** How long a volume's figures are reused by default: upstream's volumeStatsAggPeriod (a driver call per volume per minute at most). */
const STATS_TTL_MS = 60_000;
/**
 * How long a summary waits for a provider's answer. A later answer is kept for the next one: a
 * provider whose server is gone (an NFS statfs) must not hold up /stats/summary, the metrics or
 * the eviction manager that read these.
 */
const ANSWER_WAIT_MS = 5000;

/**
 * The use of pods' persistent volumes for `/stats/summary` (upstream: the volume's MetricsProvider,
 * for CSI NodeGetVolumeStats), asked of the provider of the volume's type through the
 * `volumeStats` hook and kept a minute. Entries carry the pod's volume name and `pvcRef`, as
 * upstream's; local volumes are measured by the stats provider itself.
 */
export class PersistentVolumeStats {
  private readonly cache = new Map<string, { at: number; usage: VolumeUsage | undefined }>();
  /** The questions not yet answered, by volume: a volume is not asked again while one is out. */
  private readonly asking = new Map<string, Promise<void>>();

  constructor(private readonly deps: {
    hooks: Pick<KubeletHooks, 'volumeStats'>;
    /** The pod's set-up volumes (the volume manager's actual state). */
    mounted: (uid: string) => MountedVolume[];
    logger: Logger;
    /** Told once per abnormal report: upstream's VolumeConditionAbnormal event. */
    onAbnormal?: (podUID: string, volumeName: string, message: string) => void;
    /** How long figures are reused (volumeStatsAggPeriod; default 1 min); 0: providers are not asked. */
    periodMs?: number;
    /** How long a summary waits for a provider's answer (default 5 s; tests shorten it). */
    answerWaitMs?: number;
    now?: () => number;
  }) {}

  async forPod(uid: string, namespace: string, time: string): Promise<VolumeStats[]> {
    return (await this.usageOf(uid)).map(({ name, claim, usage }) => {
      const { abnormal: _abnormal, ...figures } = usage;
      return { name, pvcRef: { name: claim, namespace }, time, ...figures };
    });
  }

  /** The pod's claims with their figures (kubelet_volume_stats_*), from the same minute-long cache. */
  async claimsOf(uid: string, namespace: string): Promise<ClaimUsage[]> {
    return (await this.usageOf(uid)).map(({ claim, usage }) => {
      const { abnormal, ...figures } = usage;
      return { namespace, claim, ...figures, abnormal: abnormal !== undefined };
    });
  }

  /** The pod's set-up claim volumes whose provider reported figures, asked again when a minute old. */
  private async usageOf(uid: string): Promise<Array<{ name: string; claim: string; usage: VolumeUsage }>> {
    const out: Array<{ name: string; claim: string; usage: VolumeUsage }> = [];
    const period = this.deps.periodMs ?? STATS_TTL_MS;
    if (period === 0) return out;
    const now = (this.deps.now ?? Date.now)();
    for (const mv of this.deps.mounted(uid)) {
      if (!mv.claim) continue;
      const key = `${uid}/${mv.name}`;
      const entry = this.cache.get(key);
      if (!entry || now - entry.at >= period) {
        const question = this.asking.get(key) ?? this.question(key, uid, mv, period);
        await withTimeout(question, this.deps.answerWaitMs ?? ANSWER_WAIT_MS, { unref: true });
      }
      // The figures as they are now: just answered, from before (a provider slow to answer), or none.
      const usage = this.cache.get(key)?.usage;
      if (usage) out.push({ name: mv.name, claim: mv.claim, usage });
    }
    for (const key of this.cache.keys()) if (key.startsWith(`${uid}/`) && !this.deps.mounted(uid).some((m) => key === `${uid}/${m.name}`)) this.cache.delete(key);
    return out;
  }

  /** Asks the volume's provider; its answer goes to the cache unless the pod was forgotten meanwhile. */
  private question(key: string, uid: string, mv: MountedVolume, period: number): Promise<void> {
    // The provider's signal aborts when its figures would be stale anyway.
    const question: Promise<void> = this.ask(uid, mv, AbortSignal.timeout(Math.min(period, MAX_TIMER_MS)))
      .then((usage) => {
        if (this.asking.get(key) !== question) return;
        this.cache.set(key, { at: (this.deps.now ?? Date.now)(), usage });
        if (usage?.abnormal) this.deps.onAbnormal?.(uid, mv.name, usage.abnormal);
      })
      .finally(() => {
        if (this.asking.get(key) === question) this.asking.delete(key);
      });
    this.asking.set(key, question);
    return question;
  }

  /** Forgets a pod gone (its figures would otherwise stay in memory; an answer still out is dropped). */
  forget(uid: string): void {
    for (const key of this.cache.keys()) if (key.startsWith(`${uid}/`)) this.cache.delete(key);
    for (const key of this.asking.keys()) if (key.startsWith(`${uid}/`)) this.asking.delete(key);
  }

  private async ask(uid: string, mv: MountedVolume, signal: AbortSignal): Promise<VolumeUsage | undefined> {
    const hook = this.deps.hooks.volumeStats.get(mv.type);
    if (!hook || hook.taps.length === 0) return undefined;
    try {
      return await hook.promise({ podUID: uid, volumeName: mv.name, type: mv.type, mounted: mv.result }, hookContext(signal));
    } catch (err) {
      this.deps.logger.debug({ uid, volume: mv.name, err: errorMessage(err) }, 'volume stats unavailable');
      return undefined;
    }
  }
}
