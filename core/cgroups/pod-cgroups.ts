import type { V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { bytes, milliCPU } from '../objects/quantity.ts';
import { qosClass } from '../status/pod-status.ts';

/** Controllers whose pod-level values the kubelet sets; runc creates the others' directories. */
const MANAGED = ['memory', 'cpu', 'cpuacct', 'pids'] as const;
const CPU_PERIOD_US = 100_000;
const MIN_SHARES = 2;

/** cgroup mount points by controller (v1), named hierarchy (`name=systemd`) or `unified` (v2), from /proc/self/mountinfo. */
export function cgroupV1Mounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const [fstype, , superOpts] = post.split(' ');
    const mountPoint = pre.split(' ')[4]!;
    // The unified (v2) hierarchy of a hybrid host: runc makes pod directories there too.
    if (fstype === 'cgroup2') {
      if (!out.has('unified')) out.set('unified', mountPoint);
      continue;
    }
    if (fstype !== 'cgroup') continue;
    for (const opt of (superOpts ?? '').split(',')) {
      if (['rw', 'ro'].includes(opt) || (opt.includes('=') && !opt.startsWith('name='))) continue;
      if (!out.has(opt)) out.set(opt, mountPoint);
    }
  }
  return out;
}

/** The cgroup parent (relative to each controller's root) of a pod, by QoS class, as upstream lays it out. */
export function podCgroupName(root: string, pod: V1Pod): string {
  const qos = qosClass(pod);
  const uid = pod.metadata!.uid!;
  const base = path.posix.join('/', root, 'kubepods');
  return qos === 'Guaranteed' ? path.posix.join(base, `pod${uid}`) : path.posix.join(base, qos.toLowerCase(), `pod${uid}`);
}

/** Pod-level limits: memory and CPU quota only when every container has that limit; shares from requests. */
export function podResources(pod: V1Pod): { memoryLimit?: number; cpuQuota?: number; cpuShares: number } {
  const containers = pod.spec?.containers ?? [];
  const limit = (r: 'cpu' | 'memory') => (containers.every((c) => c.resources?.limits?.[r] !== undefined)
    ? containers.reduce((sum, c) => sum + (r === 'cpu' ? milliCPU(c.resources!.limits![r]!) : bytes(c.resources!.limits![r]!)), 0)
    : undefined);
  // Init containers run before the app containers, so the pod needs the larger of the two.
  const initMax = (r: 'cpu' | 'memory') => Math.max(0, ...(pod.spec?.initContainers ?? []).map((c) => {
    const v = c.resources?.limits?.[r];
    return v === undefined ? 0 : r === 'cpu' ? milliCPU(v) : bytes(v);
  }));
  const mem = limit('memory');
  const cpu = limit('cpu');
  const requestsMilli = containers.reduce((sum, c) => {
    const q = c.resources?.requests?.cpu ?? c.resources?.limits?.cpu;
    return sum + (q === undefined ? 0 : milliCPU(q));
  }, 0);
  return {
    ...(mem !== undefined ? { memoryLimit: Math.max(mem, initMax('memory')) } : {}),
    ...(cpu !== undefined ? { cpuQuota: Math.max(1000, Math.floor((Math.max(cpu, initMax('cpu')) * CPU_PERIOD_US) / 1000)) } : {}),
    cpuShares: Math.max(MIN_SHARES, Math.floor((requestsMilli * 1024) / 1000)),
  };
}

/**
 * The cgroupfs pod hierarchy (upstream cgroupsPerQOS): `kubepods/`, `kubepods/burstable/`,
 * `kubepods/besteffort/`, and a `pod<uid>` cgroup per pod with its pod-level limits, passed to
 * the runtime as the sandbox's cgroup parent and removed when the pod goes.
 */
export class PodCgroups {
  private readonly mounts: Map<string, string>;

  constructor(private readonly opts: { root: string; logger: Logger; mounts?: Map<string, string> }) {
    this.mounts = opts.mounts ?? cgroupV1Mounts();
  }

  /** False when this host has no cgroup v1 memory/cpu hierarchy (cgroup v2 is not handled yet). */
  get supported(): boolean {
    return this.mounts.has('memory') && this.mounts.has('cpu');
  }

  /** Creates the QoS cgroups (idempotent); BestEffort gets the minimum CPU shares as upstream. */
  async ensureQoS(): Promise<void> {
    const base = path.posix.join('/', this.opts.root, 'kubepods');
    for (const dir of [base, `${base}/burstable`, `${base}/besteffort`]) await this.mkdirAll(dir);
    await this.write(`${base}/besteffort`, 'cpu', 'cpu.shares', String(MIN_SHARES));
  }

  /** Creates a pod's cgroup with its limits and returns the name to pass as cgroup parent. */
  async ensurePod(pod: V1Pod): Promise<string> {
    const name = podCgroupName(this.opts.root, pod);
    await this.mkdirAll(name);
    const r = podResources(pod);
    await this.write(name, 'cpu', 'cpu.shares', String(r.cpuShares));
    if (r.cpuQuota !== undefined) {
      await this.write(name, 'cpu', 'cpu.cfs_period_us', String(CPU_PERIOD_US));
      await this.write(name, 'cpu', 'cpu.cfs_quota_us', String(r.cpuQuota));
    }
    if (r.memoryLimit !== undefined) await this.write(name, 'memory', 'memory.limit_in_bytes', String(r.memoryLimit));
    return name;
  }

  /**
   * Removes a pod's cgroup in every controller (runc made some of them), wherever its QoS
   * class put it (an orphan's spec is unknown); only empty cgroups can go.
   */
  async removePod(uid: string): Promise<void> {
    const base = path.posix.join('/', this.opts.root, 'kubepods');
    for (const name of [`${base}/pod${uid}`, `${base}/burstable/pod${uid}`, `${base}/besteffort/pod${uid}`]) await this.removeDir(name);
  }

  private async removeDir(name: string): Promise<void> {
    for (const mount of new Set(this.mounts.values())) {
      const dir = path.join(mount, name);
      try {
        // Leftover empty child cgroups (containers runc removed late) first, then the pod's.
        for (const child of await fs.readdir(dir, { withFileTypes: true })) {
          if (child.isDirectory()) await fs.rmdir(path.join(dir, child.name)).catch(() => {});
        }
        await fs.rmdir(dir);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') this.opts.logger.warn({ cgroup: dir, err: errorMessage(err) }, 'could not remove pod cgroup');
      }
    }
  }

  /** Whether a pod's cgroup exists (in the memory controller). */
  async exists(pod: V1Pod): Promise<boolean> {
    return fs.access(path.join(this.mounts.get('memory')!, podCgroupName(this.opts.root, pod))).then(() => true, () => false);
  }

  private async mkdirAll(name: string): Promise<void> {
    for (const controller of MANAGED) {
      const mount = this.mounts.get(controller);
      if (mount) await fs.mkdir(path.join(mount, name), { recursive: true });
    }
  }

  private async write(name: string, controller: string, file: string, value: string): Promise<void> {
    const mount = this.mounts.get(controller);
    if (!mount) return;
    await fs.writeFile(path.join(mount, name, file), value);
  }
}
