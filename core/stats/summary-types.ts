/**
 * The kubelet's stats summary, in upstream's `stats/v1alpha1` shape (k8s.io/kubelet/pkg/apis/stats/v1alpha1),
 * which `/stats/summary` serves, metrics-server and `kubectl get --raw .../stats/summary` read,
 * and the eviction manager decides on. Field names are the JSON names; times are RFC 3339 with
 * milliseconds (Go's time parsing accepts the fraction); numbers are bytes, nanoseconds, counts.
 */

export interface CPUStats {
  time: string;
  /** Average over the last sampling window, in billionths of a core. */
  usageNanoCores?: number;
  /** Cumulative CPU time, nanoseconds. */
  usageCoreNanoSeconds?: number;
}

export interface MemoryStats {
  time: string;
  availableBytes?: number;
  usageBytes?: number;
  /** Usage less inactive file cache: what the OOM killer and eviction look at. */
  workingSetBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

export interface InterfaceStats {
  name: string;
  rxBytes?: number;
  rxErrors?: number;
  txBytes?: number;
  txErrors?: number;
}

/** The default interface's figures at the top level, every interface in `interfaces`. */
export interface NetworkStats extends InterfaceStats {
  time: string;
  interfaces?: InterfaceStats[];
}

export interface FsStats {
  time: string;
  availableBytes?: number;
  capacityBytes?: number;
  usedBytes?: number;
  inodesFree?: number;
  inodes?: number;
  inodesUsed?: number;
}

export interface RuntimeStats {
  /** The filesystem holding images (the runtime's snapshotter). */
  imageFs?: FsStats;
  /** The filesystem holding containers' writable layers (the same as imageFs unless the runtime splits them). */
  containerFs?: FsStats;
}

export interface RlimitStats {
  time: string;
  maxpid?: number;
  curproc?: number;
}

export interface ContainerStats {
  name: string;
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  /** The container's writable layer. */
  rootfs?: FsStats;
  /** The container's log files. */
  logs?: FsStats;
}

export interface NodeStats {
  nodeName: string;
  /** `kubelet` (this process) and `pods` (the kubepods cgroup). */
  systemContainers?: ContainerStats[];
  startTime: string;
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  /** The filesystem holding the kubelet's root dir (nodefs). */
  fs?: FsStats;
  runtime?: RuntimeStats;
  rlimit?: RlimitStats;
}

export interface PodReference { name: string; namespace: string; uid: string }

export interface VolumeStats extends FsStats {
  name: string;
  pvcRef?: { name: string; namespace: string };
}

export interface PodStats {
  podRef: PodReference;
  startTime: string;
  containers: ContainerStats[];
  cpu?: CPUStats;
  memory?: MemoryStats;
  network?: NetworkStats;
  volume?: VolumeStats[];
  /** Writable layers, logs and local ephemeral volumes together. */
  'ephemeral-storage'?: FsStats;
  process_stats?: { process_count?: number };
}

export interface Summary {
  node: NodeStats;
  pods: PodStats[];
}

/** RFC 3339 with milliseconds, UTC. */
export function statsTime(ms: number): string {
  return new Date(ms).toISOString();
}
