/**
 * Which pod goes first under pressure, as upstream's kubelet ranks them
 * (pkg/kubelet/eviction/helpers.go rankMemoryPressure, rankDiskPressureFunc, rankPIDPressure):
 *   memory:                    pods using more than they request first, then lower priority,
 *                              then most use above request;
 *   ephemeral-storage, inodes: the same with local ephemeral storage (writable layers, logs,
 *                              emptyDir and other local volumes);
 *   pids:                      lower priority first, then most processes.
 * A pod the stats service has no figures for goes first (upstream: it cannot be shown innocent).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { PodUsage, PressureEvent } from 'kubelet-ts';

type Compare = (a: V1Pod, b: V1Pod) => number;

const priority = (p: V1Pod) => p.spec?.priority ?? 0;
const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';

/** Missing figures first, then `first` of two known figures. */
function known(usage: Record<string, PodUsage>, value: (u: PodUsage) => number | undefined, cmp: (a: number, b: number, ua: PodUsage, ub: PodUsage) => number): Compare {
  return (a, b) => {
    const ua = usage[uidOf(a)];
    const ub = usage[uidOf(b)];
    const va = ua ? value(ua) : undefined;
    const vb = ub ? value(ub) : undefined;
    if (va === undefined || vb === undefined) return va === vb ? 0 : va === undefined ? -1 : 1;
    return cmp(va, vb, ua!, ub!);
  };
}

const byPriority: Compare = (a, b) => priority(a) - priority(b);

/** Ranks by use against requests of one resource: exceeding first, then priority, then use above request. */
function byUse(usage: Record<string, PodUsage>, used: (u: PodUsage) => number | undefined, requested: (u: PodUsage) => number): Compare[] {
  const exceeds = known(usage, used, (va, vb, ua, ub) => Number(vb > requested(ub)) - Number(va > requested(ua)));
  const above = known(usage, used, (va, vb, ua, ub) => (vb - requested(ub)) - (va - requested(ua)));
  return [exceeds, byPriority, above];
}

function chain(cmps: Compare[]): Compare {
  return (a, b) => {
    for (const c of cmps) {
      const r = c(a, b);
      if (r !== 0) return r;
    }
    return 0;
  };
}

/** The candidates of a pressure event, the first to evict first. */
export function rankPods(event: PressureEvent): V1Pod[] {
  const u = event.usage;
  let cmps: Compare[];
  switch (event.resource) {
    case 'memory':
      cmps = byUse(u, (x) => x.memoryBytes, (x) => x.memoryRequestBytes);
      break;
    case 'ephemeral-storage':
      cmps = byUse(u, (x) => x.ephemeralStorageBytes, (x) => x.ephemeralStorageRequestBytes);
      break;
    case 'inodes':
      // Nothing requests inodes: every pod using any exceeds, the most used goes first.
      cmps = byUse(u, (x) => x.inodes, () => 0);
      break;
    case 'pids':
      cmps = [byPriority, known(u, (x) => x.processes, (va, vb) => vb - va)];
      break;
  }
  return [...event.pods].sort(chain(cmps));
}
