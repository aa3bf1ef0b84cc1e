import { parseDuration } from '../util/duration.ts';
import { SYSTEM_CRITICAL_PRIORITY } from '../objects/critical-pods.ts';
import type { KubeletConfigInput, ShutdownGroup } from './types.ts';

/**
 * Graceful node shutdown's settings (upstream shutdownGracePeriod, shutdownGracePeriodCriticalPods
 * and shutdownGracePeriodByPodPriority): upstream's validation, and the groups the kubelet uses.
 */


/** What is wrong with the three fields together, each naming the file and fields (upstream's rules). */
export function shutdownConfigErrors(c: KubeletConfigInput, file: string): string[] {
  const errors: string[] = [];
  const period = seconds(c.shutdownGracePeriod);
  const critical = seconds(c.shutdownGracePeriodCriticalPods);
  const byPriority = c.shutdownGracePeriodByPodPriority ?? [];
  if (critical > period) {
    errors.push(`${file}: shutdownGracePeriodCriticalPods is ${JSON.stringify(c.shutdownGracePeriodCriticalPods)} and shutdownGracePeriod ${JSON.stringify(c.shutdownGracePeriod ?? '0s')}; allowed: the critical pods' time within shutdownGracePeriod (at most as long)`);
  }
  if (byPriority.length > 0 && (period > 0 || critical > 0)) {
    errors.push(`${file}: shutdownGracePeriodByPodPriority is set with shutdownGracePeriod or shutdownGracePeriodCriticalPods; allowed: one of the two ways (upstream refuses both at once)`);
  }
  const seen = new Set<number>();
  for (const [i, entry] of byPriority.entries()) {
    if (seen.has(entry.priority)) errors.push(`${file}: shutdownGracePeriodByPodPriority[${i}].priority ${entry.priority} is listed twice; allowed: one entry per priority`);
    seen.add(entry.priority);
  }
  return errors;
}

/**
 * The groups, lowest priority first: shutdownGracePeriodByPodPriority as given, or upstream's two
 * groups of shutdownGracePeriod (pods below system-critical priority get the period less the
 * critical pods' time, critical pods that time). Empty when graceful shutdown is off.
 */
export function resolveShutdownGroups(c: KubeletConfigInput): ShutdownGroup[] {
  const byPriority = c.shutdownGracePeriodByPodPriority ?? [];
  if (byPriority.length > 0) {
    const groups = byPriority.map((e) => ({ priority: e.priority, gracePeriodSeconds: e.shutdownGracePeriodSeconds })).sort((a, b) => a.priority - b.priority);
    return groups.some((g) => g.gracePeriodSeconds > 0) ? groups : [];
  }
  const period = seconds(c.shutdownGracePeriod);
  if (period <= 0) return [];
  const critical = seconds(c.shutdownGracePeriodCriticalPods);
  return [
    { priority: 0, gracePeriodSeconds: period - critical },
    { priority: SYSTEM_CRITICAL_PRIORITY, gracePeriodSeconds: critical },
  ];
}

/** Whole seconds of a duration setting, as upstream's int64(Seconds()). */
function seconds(value: string | number | undefined): number {
  if (value === undefined) return 0;
  return Math.floor(parseDuration(value) / 1000);
}
