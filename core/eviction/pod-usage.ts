/**
 * Each candidate pod's use (from the stats service's summary) next to its requests (from its
 * spec), in the shape `onPressure` taps rank by: memory working set, local ephemeral storage
 * (writable layers, logs, local volumes), inodes, processes, and the same per container.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ContainerUsage, PodUsage } from '../hooks.ts';
import { podRequests } from '../pod/admission.ts';
import { quantityValue } from '../objects/quantity.ts';
import type { PodStats } from '../stats/summary-types.ts';

/** A container's request of a resource in bytes; a limit without a request implies it, as API defaulting does. */
function containerRequest(c: V1Container, resource: 'memory' | 'ephemeral-storage'): number {
  const v = quantityValue(c.resources?.requests?.[resource] ?? c.resources?.limits?.[resource]);
  return v !== undefined && Number.isFinite(v) && v > 0 ? Math.ceil(v) : 0;
}

/** The use of every pod the summary has, by UID, with its requests (pods without stats get requests only). */
export function podUsages(pods: V1Pod[], stats: PodStats[]): Record<string, PodUsage> {
  const byUid = new Map(stats.map((s) => [s.podRef.uid, s]));
  const out: Record<string, PodUsage> = {};
  for (const pod of pods) {
    const uid = pod.metadata?.uid ?? '';
    const s = byUid.get(uid);
    const requests = podRequests(pod);
    const containers: ContainerUsage[] = (pod.spec?.containers ?? []).map((c) => {
      const cs = s?.containers.find((x) => x.name === c.name);
      const ephemeral = cs && (cs.rootfs || cs.logs) ? (cs.rootfs?.usedBytes ?? 0) + (cs.logs?.usedBytes ?? 0) : undefined;
      return {
        name: c.name,
        ...(cs?.memory?.workingSetBytes !== undefined ? { memoryBytes: cs.memory.workingSetBytes } : {}),
        memoryRequestBytes: containerRequest(c, 'memory'),
        ...(ephemeral !== undefined ? { ephemeralStorageBytes: ephemeral } : {}),
        ephemeralStorageRequestBytes: containerRequest(c, 'ephemeral-storage'),
      };
    });
    // The pod's working set, or its containers' when the runtime gave no pod figure.
    const memory = s?.memory?.workingSetBytes ?? (containers.some((c) => c.memoryBytes !== undefined) ? containers.reduce((n, c) => n + (c.memoryBytes ?? 0), 0) : undefined);
    const eph = s?.['ephemeral-storage'];
    out[uid] = {
      ...(memory !== undefined ? { memoryBytes: memory } : {}),
      memoryRequestBytes: requests.memory,
      ...(eph?.usedBytes !== undefined ? { ephemeralStorageBytes: eph.usedBytes } : {}),
      ephemeralStorageRequestBytes: requests['ephemeral-storage'],
      ...(eph?.inodesUsed !== undefined ? { inodes: eph.inodesUsed } : {}),
      ...(s?.process_stats?.process_count !== undefined ? { processes: s.process_stats.process_count } : {}),
      containers,
    };
  }
  return out;
}
