/**
 * What the stats service reads from the host itself, as cAdvisor reads it for upstream's kubelet:
 * cgroup v1 cpuacct and memory counters (the node is the root cgroup, a pod its pod cgroup),
 * `/proc/net/dev` of a network namespace, statfs of a filesystem, the boot time and process
 * limits. Parsers are pure functions of the files' text; readers return undefined for what this
 * host does not have (no cgroup v1 hierarchy, a cgroup gone meanwhile) instead of failing.
 */
import { readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import { cgroupV1Mounts } from '../cgroups/pod-cgroups.ts';
import type { InterfaceStats } from './summary-types.ts';

/** USER_HZ: /proc/stat counts CPU time in 1/100 s on Linux. */
const USER_HZ = 100;

/** Interfaces of /proc/net/dev (loopback left out, as cAdvisor does). */
export function parseNetDev(text: string): InterfaceStats[] {
  const out: InterfaceStats[] = [];
  for (const line of text.split('\n').slice(2)) {
    const m = /^\s*([^:\s]+):\s*(.*)$/.exec(line);
    if (!m || m[1] === 'lo') continue;
    const f = m[2]!.trim().split(/\s+/).map(Number);
    if (f.length < 16 || f.some((n) => !Number.isFinite(n))) continue;
    out.push({ name: m[1]!, rxBytes: f[0]!, rxErrors: f[2]!, txBytes: f[8]!, txErrors: f[10]! });
  }
  return out;
}

/** The interface figures lead with: eth0 when there is one (upstream's default), else the default route's, else the first. */
export function defaultInterface(ifaces: InterfaceStats[], routeText = ''): InterfaceStats | undefined {
  const eth0 = ifaces.find((i) => i.name === 'eth0');
  if (eth0) return eth0;
  for (const line of routeText.split('\n').slice(1)) {
    const [iface, dest] = line.trim().split(/\s+/);
    if (dest === '00000000') {
      const found = ifaces.find((i) => i.name === iface);
      if (found) return found;
    }
  }
  return ifaces[0];
}

/** `key value` lines of memory.stat. */
export function parseKeyValues(text: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const line of text.split('\n')) {
    const [k, v] = line.trim().split(/\s+/);
    if (k && v !== undefined && /^\d+$/.test(v)) out.set(k, Number(v));
  }
  return out;
}

/** Non-idle CPU time of the `cpu` line of /proc/stat, in nanoseconds (the host without cgroup v1 cpuacct). */
export function parseProcStatCpuNs(text: string): number | undefined {
  const line = text.split('\n').find((l) => /^cpu\s/.test(l));
  if (!line) return undefined;
  const [user = 0, nice = 0, system = 0, , , irq = 0, softirq = 0, steal = 0] = line.trim().split(/\s+/).slice(1).map(Number);
  return ((user + nice + system + irq + softirq + steal) * 1e9) / USER_HZ;
}

/** The boot time of /proc/stat (`btime`, seconds) in milliseconds. */
export function parseBootTimeMs(text: string): number | undefined {
  const m = /^btime\s+(\d+)/m.exec(text);
  return m ? Number(m[1]) * 1000 : undefined;
}

/** Tasks on the host: the total of /proc/loadavg's `running/total` field. */
export function parseLoadavgTasks(text: string): number | undefined {
  const m = /^\S+\s+\S+\s+\S+\s+\d+\/(\d+)/.exec(text);
  return m ? Number(m[1]) : undefined;
}

async function readText(file: string): Promise<string | undefined> {
  try {
    return await readFile(file, 'utf8');
  } catch {
    return undefined;
  }
}

export interface CgroupMemory {
  usageBytes: number;
  workingSetBytes: number;
  rssBytes: number | undefined;
  pageFaults: number | undefined;
  majorPageFaults: number | undefined;
  /** The cgroup's limit (the kernel's "no limit" is a huge number). */
  limitBytes: number | undefined;
}

/** Reads cgroup v1 counters of a cgroup given relative to each hierarchy's root ('/' is the host). */
export class CgroupReader {
  constructor(private readonly mounts: Map<string, string> = cgroupV1Mounts()) {}

  get hasCpuacct(): boolean {
    return this.mounts.has('cpuacct');
  }

  get hasMemory(): boolean {
    return this.mounts.has('memory');
  }

  private file(controller: string, cgroup: string, name: string): string | undefined {
    const mount = this.mounts.get(controller);
    return mount ? path.join(mount, cgroup, name) : undefined;
  }

  /** Cumulative CPU time (cpuacct.usage), nanoseconds. */
  async cpuUsageNs(cgroup: string): Promise<number | undefined> {
    const f = this.file('cpuacct', cgroup, 'cpuacct.usage');
    const text = f && (await readText(f));
    const n = text ? Number(text.trim()) : NaN;
    return Number.isFinite(n) ? n : undefined;
  }

  /** Memory use as cAdvisor computes it: working set = usage - inactive file pages (hierarchical counters). */
  async memory(cgroup: string): Promise<CgroupMemory | undefined> {
    const usageFile = this.file('memory', cgroup, 'memory.usage_in_bytes');
    const [usageText, statText, limitText] = await Promise.all([
      usageFile ? readText(usageFile) : undefined,
      readText(this.file('memory', cgroup, 'memory.stat') ?? ''),
      readText(this.file('memory', cgroup, 'memory.limit_in_bytes') ?? ''),
    ]);
    const usage = usageText ? Number(usageText.trim()) : NaN;
    if (!Number.isFinite(usage)) return undefined;
    const stat = parseKeyValues(statText ?? '');
    const inactiveFile = stat.get('total_inactive_file') ?? stat.get('inactive_file') ?? 0;
    const limit = limitText ? Number(limitText.trim()) : NaN;
    return {
      usageBytes: usage,
      workingSetBytes: Math.max(0, usage - inactiveFile),
      rssBytes: stat.get('total_rss') ?? stat.get('rss'),
      pageFaults: stat.get('total_pgfault') ?? stat.get('pgfault'),
      majorPageFaults: stat.get('total_pgmajfault') ?? stat.get('pgmajfault'),
      limitBytes: Number.isFinite(limit) ? limit : undefined,
    };
  }

  /** Some process of the cgroup (cpu hierarchy), to read its network namespace. */
  async firstPid(cgroup: string): Promise<number | undefined> {
    for (const controller of ['cpu', 'memory', 'pids']) {
      const f = this.file(controller, cgroup, 'cgroup.procs');
      const text = f && (await readText(f));
      const pid = text ? Number(text.split('\n')[0]) : NaN;
      if (pid > 0) return pid;
    }
    return undefined;
  }

  /** Whether the cgroup exists (in the memory hierarchy). */
  async exists(cgroup: string): Promise<boolean> {
    const f = this.file('memory', cgroup, 'memory.usage_in_bytes');
    return f !== undefined && (await readText(f)) !== undefined;
  }
}

/** Host-wide figures, from /proc. */
export const proc = {
  /** Non-idle CPU time of the host, ns (without cgroup v1). */
  async cpuNs(): Promise<number | undefined> {
    const t = await readText('/proc/stat');
    return t ? parseProcStatCpuNs(t) : undefined;
  },
  async bootTimeMs(): Promise<number | undefined> {
    const t = await readText('/proc/stat');
    return t ? parseBootTimeMs(t) : undefined;
  },
  /** The interfaces of the network namespace of `pid` ('self': the kubelet's, the host's) and the default one. */
  async network(pid: number | 'self' = 'self'): Promise<{ interfaces: InterfaceStats[]; primary: InterfaceStats | undefined } | undefined> {
    const t = await readText(`/proc/${pid}/net/dev`);
    if (!t) return undefined;
    const interfaces = parseNetDev(t);
    return { interfaces, primary: defaultInterface(interfaces, (await readText(`/proc/${pid}/net/route`)) ?? '') };
  },
  /** MemTotal and MemAvailable-based use, for a host without the cgroup v1 memory hierarchy. */
  async meminfo(): Promise<Map<string, number> | undefined> {
    const t = await readText('/proc/meminfo');
    if (!t) return undefined;
    const out = new Map<string, number>();
    for (const m of t.matchAll(/^([\w()]+):\s+(\d+)(?:\s+kB)?$/gm)) out.set(m[1]!, Number(m[2]) * 1024);
    return out;
  },
  async pidLimits(): Promise<{ maxpid: number | undefined; curproc: number | undefined }> {
    const [max, load] = await Promise.all([readText('/proc/sys/kernel/pid_max'), readText('/proc/loadavg')]);
    const maxpid = max ? Number(max.trim()) : NaN;
    return { maxpid: Number.isFinite(maxpid) ? maxpid : undefined, curproc: load ? parseLoadavgTasks(load) : undefined };
  },
};

export interface FsFigures { capacityBytes: number; availableBytes: number; usedBytes: number; inodes: number; inodesFree: number; inodesUsed: number }

/** Capacity, free space and inodes of the filesystem holding `p` (used = capacity - free, as df counts it). */
export async function fsFigures(p: string): Promise<FsFigures | undefined> {
  try {
    const s = await statfs(p);
    return {
      capacityBytes: s.blocks * s.bsize,
      availableBytes: s.bavail * s.bsize,
      usedBytes: (s.blocks - s.bfree) * s.bsize,
      inodes: s.files,
      inodesFree: s.ffree,
      inodesUsed: s.files - s.ffree,
    };
  } catch {
    return undefined;
  }
}
