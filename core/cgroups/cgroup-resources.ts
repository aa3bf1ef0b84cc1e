/**
 * The resources the kubelet sets on a cgroup it owns (kubepods, the QoS tiers, pod cgroups),
 * in cgroup v1 units as upstream's `ResourceConfig` keeps them, and their cgroup v2 and systemd
 * spellings. A limit left undefined means "no limit", and is written as such: a cgroup that is
 * ensured again converges to exactly these values.
 */
export interface CgroupResources {
  /** CPU shares (v1 `cpu.shares`; v2 `cpu.weight` through {@link sharesToWeight}). */
  cpuShares: number;
  /** CFS quota in µs per period; undefined: no CPU limit. */
  cpuQuotaUs?: number | undefined;
  /** CFS period in µs. Default {@link CPU_PERIOD_US}. */
  cpuPeriodUs?: number | undefined;
  /** Memory limit in bytes; undefined: none. */
  memoryLimitBytes?: number | undefined;
  /** Most processes (`pids.max`); undefined: none. */
  pidsLimit?: number | undefined;
}

/** Upstream's default CFS period (cpuCFSQuotaPeriod 100ms). */
export const CPU_PERIOD_US = 100_000;
/** The kernel's bounds of cpu.shares, which upstream clamps to. */
export const MIN_SHARES = 2;
export const MAX_SHARES = 262_144;

/** The smallest CFS quota upstream sets (MinQuotaPeriod, 1 ms). */
const MIN_QUOTA_US = 1000;

/** Upstream's MilliCPUToShares: 1024 shares a CPU, at least the kernel's minimum. */
export function milliCPUToShares(milli: number): number {
  return milli <= 0 ? MIN_SHARES : Math.max(MIN_SHARES, Math.floor((milli * 1024) / 1000));
}

/** Upstream's MilliCPUToQuota over the default period, at least 1 ms. */
export function milliCPUToQuota(milli: number): number {
  return Math.max(MIN_QUOTA_US, Math.floor((milli * CPU_PERIOD_US) / 1000));
}

/**
 * cpu.shares → cpu.weight as runc and the kubelet convert them (1..10000 from 2..262144),
 * so a pod gets the same relative CPU on v2 as on v1: the minimum share is weight 1, the
 * default 1024 is weight 39.
 */
export function sharesToWeight(shares: number): number {
  const s = Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor(shares)));
  return 1 + Math.floor(((s - MIN_SHARES) * 9999) / (MAX_SHARES - MIN_SHARES));
}

/** The v2 files and values of these resources, in the order they are written. */
export function v2Files(r: CgroupResources): Array<[file: string, value: string]> {
  const period = r.cpuPeriodUs ?? CPU_PERIOD_US;
  return [
    ['cpu.weight', String(sharesToWeight(r.cpuShares))],
    ['cpu.max', `${r.cpuQuotaUs === undefined ? 'max' : Math.floor(r.cpuQuotaUs)} ${period}`],
    ['memory.max', r.memoryLimitBytes === undefined ? 'max' : String(Math.floor(r.memoryLimitBytes))],
    ['pids.max', r.pidsLimit === undefined ? 'max' : String(Math.floor(r.pidsLimit))],
  ];
}

/** The v1 files of these resources by controller, in the order they are written (period before quota). */
export function v1Files(r: CgroupResources): Array<[controller: string, file: string, value: string]> {
  return [
    ['cpu', 'cpu.shares', String(Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor(r.cpuShares))))],
    ['cpu', 'cpu.cfs_period_us', String(r.cpuPeriodUs ?? CPU_PERIOD_US)],
    ['cpu', 'cpu.cfs_quota_us', r.cpuQuotaUs === undefined ? '-1' : String(Math.floor(r.cpuQuotaUs))],
    ['memory', 'memory.limit_in_bytes', r.memoryLimitBytes === undefined ? '-1' : String(Math.floor(r.memoryLimitBytes))],
    ['pids', 'pids.max', r.pidsLimit === undefined ? 'max' : String(Math.floor(r.pidsLimit))],
  ];
}
