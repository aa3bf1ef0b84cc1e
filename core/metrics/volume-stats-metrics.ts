import { Gauge, type Registry } from 'prom-client';
import type { VolumeUsage } from '../hooks.ts';

/**
 * Upstream's kubelet_volume_stats_* gauges (pkg/kubelet/metrics/collectors/volume_stats.go): the
 * use of each PersistentVolumeClaim mounted on the node, labelled by its namespace and name,
 * gathered at each scrape from what the volumes' providers last reported (CSI
 * NodeGetVolumeStats, asked at most once a minute per volume). A claim mounted by several pods
 * is reported once, as upstream's.
 */

/** One claim's figures as a volume provider reported them (the `volumeStats` hook's answer), by claim. */
export type ClaimUsage = Omit<VolumeUsage, 'abnormal'> & {
  namespace: string;
  claim: string;
  /** The provider found the volume abnormal (CSI VolumeCondition). */
  abnormal: boolean;
};

type Figure = Exclude<keyof ClaimUsage, 'namespace' | 'claim' | 'abnormal'>;

/** Gauge name → the figure it reports, with upstream's help texts. */
const GAUGES: ReadonlyArray<[name: string, figure: Figure, help: string]> = [
  ['kubelet_volume_stats_capacity_bytes', 'capacityBytes', 'Capacity in bytes of the volume'],
  ['kubelet_volume_stats_available_bytes', 'availableBytes', 'Number of available bytes in the volume'],
  ['kubelet_volume_stats_used_bytes', 'usedBytes', 'Number of used bytes in the volume'],
  ['kubelet_volume_stats_inodes', 'inodes', 'Maximum number of inodes in the volume'],
  ['kubelet_volume_stats_inodes_free', 'inodesFree', 'Number of free inodes in the volume'],
  ['kubelet_volume_stats_inodes_used', 'inodesUsed', 'Number of used inodes in the volume'],
];
const LABELS = ['namespace', 'persistentvolumeclaim'] as const;

/** Registers the gauges on `registry`; `claims` is asked at each scrape. */
export function registerVolumeStatsMetrics(registry: Registry, claims: () => Promise<ClaimUsage[]>): void {
  // Gauges collected at the same time share one answer (the figures themselves are cached a
  // minute by their source, so a gauge collected later asks again cheaply).
  let pending: Promise<ClaimUsage[]> | undefined;
  const once = (): Promise<ClaimUsage[]> => {
    pending ??= claims()
      .catch(() => [] as ClaimUsage[])
      .finally(() => (pending = undefined));
    return pending;
  };
  const unique = (list: ClaimUsage[]) => [...new Map(list.map((c) => [`${c.namespace}/${c.claim}`, c])).values()];
  for (const [name, figure, help] of GAUGES) {
    new Gauge({
      name,
      help,
      labelNames: LABELS,
      registers: [registry],
      async collect() {
        this.reset();
        for (const c of unique(await once())) {
          const v = c[figure];
          if (v !== undefined) this.set({ namespace: c.namespace, persistentvolumeclaim: c.claim }, v);
        }
      },
    });
  }
  new Gauge({
    name: 'kubelet_volume_stats_health_status_abnormal',
    help: 'Abnormal volume health status. The count is either 1 or 0. 1 indicates the volume is unhealthy, 0 indicates volume is healthy',
    labelNames: LABELS,
    registers: [registry],
    async collect() {
      this.reset();
      for (const c of unique(await once())) this.set({ namespace: c.namespace, persistentvolumeclaim: c.claim }, c.abnormal ? 1 : 0);
    },
  });
}
