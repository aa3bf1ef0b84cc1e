/**
 * What the stats service reads from the host itself, as cAdvisor reads it for upstream's kubelet:
 * cgroup v1 or v2 CPU and memory counters (the node is the root cgroup, a pod its pod cgroup),
 * `/proc/net/dev` of a network namespace, statfs of a filesystem, the boot time and process
 * limits. Parsers are pure functions of the files' text; readers return undefined for what this
 * host does not have (no cgroup hierarchy, a cgroup gone meanwhile) instead of failing.
 */
import { readdir, readFile, statfs } from 'node:fs/promises';
import path from 'node:path';
import { readCgroupMounts, type CgroupMounts } from '../cgroups/cgroup-mounts.ts';
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

/**
 * Reads a cgroup's counters, given its path relative to the hierarchy's root ('/' is the host),
 * from cgroup v1 (cpuacct, memory) or v2 (cpu.stat, memory.current, memory.stat) files, with
 * cAdvisor's semantics on both: working set = usage - inactive file pages, RSS = anonymous
 * memory. v2's root cgroup has no memory.current: the node's memory then comes from /proc/meminfo,
 * as runc's v2 stats read it.
 */
export class CgroupReader {
  private readonly mounts: CgroupMounts;

  /** `mounts`: this host's (default), or a v1 controller → directory map (tests). */
  constructor(mounts: CgroupMounts | Map<string, string> = readCgroupMounts()) {
    this.mounts = mounts instanceof Map ? { version: 1, v1: mounts, unified: undefined } : mounts;
  }

  get version(): 1 | 2 {
    return this.mounts.version;
  }

  /** Whether the host's CPU time can be read from its root cgroup. */
  get hasCpuacct(): boolean {
    return this.mounts.version === 2 || this.mounts.v1.has('cpuacct');
  }

  /** Whether the host's memory can be read from its root cgroup (not on v2, whose root has no memory.current). */
  get hasMemory(): boolean {
    return this.mounts.version === 1 && this.mounts.v1.has('memory');
  }

  private file(controller: string, cgroup: string, name: string): string | undefined {
    const root = this.mounts.version === 2 ? this.mounts.unified : this.mounts.v1.get(controller);
    return root === undefined ? undefined : path.join(root, cgroup, name);
  }

  /** Cumulative CPU time, nanoseconds (v1 cpuacct.usage, v2 cpu.stat usage_usec). */
  async cpuUsageNs(cgroup: string): Promise<number | undefined> {
    if (this.mounts.version === 2) {
      const text = await readText(this.file('cpu', cgroup, 'cpu.stat') ?? '');
      const usec = text ? parseKeyValues(text).get('usage_usec') : undefined;
      return usec === undefined ? undefined : usec * 1000;
    }
    const f = this.file('cpuacct', cgroup, 'cpuacct.usage');
    const text = f && (await readText(f));
    const n = text ? Number(text.trim()) : NaN;
    return Number.isFinite(n) ? n : undefined;
  }

  /** Memory use as cAdvisor computes it: working set = usage - inactive file pages (hierarchical counters). */
  async memory(cgroup: string): Promise<CgroupMemory | undefined> {
    const v2 = this.mounts.version === 2;
    const [usageText, statText, limitText] = await Promise.all([
      readText(this.file('memory', cgroup, v2 ? 'memory.current' : 'memory.usage_in_bytes') ?? ''),
      readText(this.file('memory', cgroup, 'memory.stat') ?? ''),
      readText(this.file('memory', cgroup, v2 ? 'memory.max' : 'memory.limit_in_bytes') ?? ''),
    ]);
    const usage = usageText ? Number(usageText.trim()) : NaN;
    if (!Number.isFinite(usage)) return undefined;
    const stat = parseKeyValues(statText ?? '');
    // v1's total_* counters include the descendants; v2's are hierarchical already.
    const inactiveFile = (v2 ? stat.get('inactive_file') : stat.get('total_inactive_file') ?? stat.get('inactive_file')) ?? 0;
    const limit = limitText && limitText.trim() !== 'max' ? Number(limitText.trim()) : NaN;
    return {
      usageBytes: usage,
      workingSetBytes: Math.max(0, usage - inactiveFile),
      rssBytes: v2 ? stat.get('anon') : stat.get('total_rss') ?? stat.get('rss'),
      pageFaults: v2 ? stat.get('pgfault') : stat.get('total_pgfault') ?? stat.get('pgfault'),
      majorPageFaults: v2 ? stat.get('pgmajfault') : stat.get('total_pgmajfault') ?? stat.get('pgmajfault'),
      limitBytes: Number.isFinite(limit) ? limit : undefined,
    };
  }

  /**
   * Some process of the cgroup or of a cgroup below it (a pod's processes are in its
   * containers' cgroups, and on v2 only leaves hold processes), to read its network namespace.
   */
  async firstPid(cgroup: string, depth = 2): Promise<number | undefined> {
    const controllers = this.mounts.version === 2 ? ['cpu'] : ['cpu', 'memory', 'pids'];
    for (const controller of controllers) {
      const f = this.file(controller, cgroup, 'cgroup.procs');
      const text = f && (await readText(f));
      const pid = text ? Number(text.split('\n')[0]) : NaN;
      if (pid > 0) return pid;
    }
    if (depth <= 0) return undefined;
    const dir = this.file(controllers[0]!, cgroup, '');
    const children = dir ? await readdir(dir, { withFileTypes: true }).catch(() => []) : [];
    for (const child of children) {
      if (!child.isDirectory()) continue;
      const pid = await this.firstPid(path.posix.join(cgroup, child.name), depth - 1);
      if (pid !== undefined) return pid;
    }
    return undefined;
  }

  /** Whether the cgroup exists (in the memory hierarchy; the unified one on v2). */
  async exists(cgroup: string): Promise<boolean> {
    const f = this.file('memory', cgroup, this.mounts.version === 2 ? 'cgroup.procs' : 'memory.usage_in_bytes');
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
    return figuresOfStatfs(await statfs(p));
  } catch {
    return undefined;
  }
}

/** The figures of a statfs answer (counts in units of `bsize`). */
export function figuresOfStatfs(s: { bsize: number; blocks: number; bfree: number; bavail: number; files: number; ffree: number }): FsFigures {
  return {
    capacityBytes: s.blocks * s.bsize,
    availableBytes: s.bavail * s.bsize,
    usedBytes: (s.blocks - s.bfree) * s.bsize,
    inodes: s.files,
    inodesFree: s.ffree,
    inodesUsed: s.files - s.ffree,
  };
}
