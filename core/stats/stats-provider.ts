/**
 * The kubelet's one collector of resource use: the runtime's CRI stats (ListPodSandboxStats,
 * ListContainerStats, ImageFsInfo), the host's cgroups and /proc, and statfs and bounded walks of
 * the filesystems (nodefs, imagefs, volumes, logs), put together as upstream's summary
 * (`stats/v1alpha1`). `/stats/summary`, `/metrics/resource` and the eviction manager all read
 * `snapshot()`: one collection serves every caller within its max age, and concurrent callers
 * share the one in flight, so the runtime is asked once however many read.
 *
 * For the eviction manager: `snapshot(maxAgeMs)` gives `summary.node.memory.availableBytes`
 * (memory.available), `summary.node.fs` (nodefs.available, nodefs.inodesFree),
 * `summary.node.runtime.imageFs` (imagefs.*), `summary.node.rlimit` (pid.available), and per pod
 * `memory.workingSetBytes` and `ephemeral-storage.usedBytes` to rank pods.
 *
 * The runtime is asked for ListPodSandboxStats, whose answer holds the containers' stats too;
 * ListContainerStats only when a running container is missing from it.
 *
 * CPU rates (usageNanoCores) are computed here from the cumulative counters of successive
 * collections at least a second apart (containerd computes its own only for its own callers).
 * When the runtime lacks ListPodSandboxStats (it answers Unimplemented), pod CPU, memory and
 * network come from the pod's cgroup and network namespace, or the sum of its containers, as
 * upstream's cAdvisor-less stats path does; containerd 1.6 on cgroup v1 answers it.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { readdir } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { LABEL, managedSelector } from '../runtime/labels.ts';
import type { ContainerRuntime, ContainerStats as CriContainerStats, ContainerSummary, FilesystemUsage, PodSandboxStats, SandboxSummary } from '../runtime/types.ts';
import { DiskUsageCache } from './disk-usage.ts';
import { CgroupReader, fsFigures, proc, type FsFigures } from './host-readers.ts';
import type { PodCgroups } from '../cgroups/pod-cgroups.ts';
import {
  statsTime,
  type CPUStats, type ContainerStats, type FsStats, type MemoryStats, type NetworkStats, type NodeStats, type PodStats, type Summary, type VolumeStats,
} from './summary-types.ts';

/** How long a volume's measured use is reused by default (upstream volumeStatsAggPeriod). */
const VOLUME_STATS_TTL_MS = 60_000;
/** How long a container's measured log use is reused. */
const LOG_STATS_TTL_MS = 10_000;
/** A CPU rate needs two samples at least this far apart. */
const MIN_RATE_WINDOW_MS = 1000;
/** Volume types whose directories the kubelet owns and measures (upstream: the local ephemeral ones). */
const LOCAL_VOLUME_PLUGINS = ['kubernetes.io~empty-dir', 'kubernetes.io~configmap', 'kubernetes.io~secret', 'kubernetes.io~downward-api', 'kubernetes.io~projected'];

export interface StatsProviderDeps {
  nodeName: string;
  rootDir: string;
  podLogsDir: string;
  /** The pod cgroups, when the kubelet makes them: where kubepods and each pod's cgroup are. */
  cgroups: Pick<PodCgroups, 'kubepodsPath' | 'podPath'> | undefined;
  runtime: () => ContainerRuntime | undefined;
  /** The pods the kubelet knows (their start times). */
  pods: () => V1Pod[];
  logger: Logger;
  /** The kubelet's runtimeInstance: which sandboxes and containers are its own (see managedSelector). */
  runtimeInstance?: string;
  /** The pod's persistent volumes as their providers measure them (with pvcRef); none without. */
  persistentVolumes?: (uid: string, namespace: string, time: string) => Promise<VolumeStats[]>;
  /** How long a local volume's measured use is reused (volumeStatsAggPeriod; default 1 min); 0: volumes are not measured. */
  volumeStatsPeriodMs?: number;
  /** Reads cgroup files (tests: another host's). */
  cgroupReader?: CgroupReader;
  now?: () => number;
}

/** One collection. */
export interface StatsSnapshot {
  summary: Summary;
  /** When it was collected (ms since the epoch). */
  collectedAt: number;
  /** What could not be read this time ("ListPodSandboxStats: ...", "nodefs: ..."). */
  errors: string[];
  /**
   * The containers' figures could not be had (ListContainers or ListContainerStats failed):
   * `/metrics/resource` reports it as a scrape error. A failed ListPodSandboxStats is not one:
   * pods are then filled from their cgroups and containers (containerd fails the whole call when
   * one sandbox has no cgroup, as with cgroupsPerQOS false).
   */
  containerStatsFailed: boolean;
}

/** Cumulative counter → rate, per key, over windows of at least MIN_RATE_WINDOW_MS. */
class RateTracker {
  private readonly last = new Map<string, { t: number; v: number; rate: number | undefined; seen: number }>();
  private generation = 0;

  /** Nanocores from a cumulative nanosecond counter sampled at `t` (ms). */
  rate(key: string, t: number, v: number): number | undefined {
    const prev = this.last.get(key);
    if (!prev || v < prev.v || t < prev.t) {
      this.last.set(key, { t, v, rate: undefined, seen: this.generation });
      return undefined;
    }
    prev.seen = this.generation;
    if (t - prev.t < MIN_RATE_WINDOW_MS) return prev.rate;
    const rate = Math.round(((v - prev.v) * 1000) / (t - prev.t));
    this.last.set(key, { t, v, rate, seen: this.generation });
    return rate;
  }

  /** Forgets keys not asked for in the collection that just ended. */
  endCollection(): void {
    for (const [k, e] of this.last) if (e.seen !== this.generation) this.last.delete(k);
    this.generation++;
  }
}

export class StatsProvider {
  private readonly cgroups: CgroupReader;
  private readonly now: () => number;
  private readonly rates = new RateTracker();
  private readonly volumeUsage: DiskUsageCache;
  private readonly logUsage = new DiskUsageCache(LOG_STATS_TTL_MS);
  /** Sandbox id → its process's pid (0: the runtime did not tell), for network figures containerd 1.6 does not give. */
  private readonly sandboxPids = new Map<string, number>();
  private last: StatsSnapshot | undefined;
  private inflight: Promise<StatsSnapshot> | undefined;
  /** The last collection of the node's figures alone (`pods: false`), and the one in flight. */
  private lastNodeOnly: StatsSnapshot | undefined;
  private inflightNodeOnly: Promise<StatsSnapshot> | undefined;
  private memTotal: number | undefined;
  private sandboxStatsUnimplemented = false;

  constructor(private readonly deps: StatsProviderDeps) {
    this.cgroups = deps.cgroupReader ?? new CgroupReader();
    this.now = deps.now ?? Date.now;
    this.volumeUsage = new DiskUsageCache(deps.volumeStatsPeriodMs ?? VOLUME_STATS_TTL_MS);
  }

  /**
   * The node's and pods' resource use, collected at most `maxAgeMs` ago (default 1 s).
   * `pods: false` asks for the node's figures only (its cgroups, /proc, filesystems and the
   * image filesystem): the runtime is not asked for every sandbox's and container's stats and no
   * log or volume is measured, which is most of what a collection with 110 pods costs the
   * kubelet and containerd. Its `summary.pods` is empty. A full collection fresh enough, or
   * one in flight, serves such a caller too.
   */
  snapshot(maxAgeMs = 1000, opts: { pods?: boolean } = {}): Promise<StatsSnapshot> {
    const fresh = (s: StatsSnapshot | undefined): s is StatsSnapshot => s !== undefined && this.now() - s.collectedAt <= maxAgeMs;
    if (fresh(this.last)) return Promise.resolve(this.last);
    if (opts.pods === false) {
      if (fresh(this.lastNodeOnly)) return Promise.resolve(this.lastNodeOnly);
      if (this.inflight) return this.inflight;
      this.inflightNodeOnly ??= this.collect(false).then((s) => {
        this.lastNodeOnly = s;
        return s;
      }).finally(() => {
        this.inflightNodeOnly = undefined;
      });
      return this.inflightNodeOnly;
    }
    this.inflight ??= this.collect(true).then(
      (s) => {
        this.last = s;
        return s;
      },
    ).finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** The summary; `onlyCpuAndMemory` leaves out network, filesystems and volumes (upstream's `only_cpu_and_memory=true`). */
  async summary(opts: { maxAgeMs?: number; onlyCpuAndMemory?: boolean } = {}): Promise<Summary> {
    const { summary } = await this.snapshot(opts.maxAgeMs);
    return opts.onlyCpuAndMemory ? cpuAndMemoryOnly(summary) : summary;
  }

  private async collect(withPods: boolean): Promise<StatsSnapshot> {
    const started = this.now();
    const errors: string[] = [];
    const rt = this.deps.runtime();
    const selector = managedSelector(this.deps.runtimeInstance);
    const soft = async <T>(what: string, fn: (() => Promise<T>) | undefined, quiet?: (err: unknown) => boolean): Promise<T | undefined> => {
      if (!fn) return undefined;
      try {
        return await fn();
      } catch (err) {
        if (!quiet?.(err)) errors.push(`${what}: ${errorMessage(err)}`);
        return undefined;
      }
    };
    const unimplemented = (err: unknown) => {
      // gRPC UNIMPLEMENTED (12), whatever the runtime's words for it.
      const grpcCode = (err as { cause?: { code?: unknown } }).cause?.code;
      if (grpcCode !== 12 && !/unimplemented|not implement/i.test(errorMessage(err))) return false;
      if (!this.sandboxStatsUnimplemented) this.deps.logger.info('the runtime does not implement ListPodSandboxStats: pod stats come from pod cgroups and container stats');
      this.sandboxStatsUnimplemented = true;
      return true;
    };
    // The runtime, asked for the pods' figures only when they are wanted.
    const podRt = withPods ? rt : undefined;
    const [sandboxStats, imageFsList, sandboxes, containers, node] = await Promise.all([
      soft('ListPodSandboxStats', podRt?.listPodSandboxStats && !this.sandboxStatsUnimplemented ? () => podRt.listPodSandboxStats!(selector) : undefined, unimplemented),
      soft('ImageFsInfo', rt?.imageFsInfo ? () => rt.imageFsInfo!() : undefined),
      soft('ListPodSandbox', podRt ? () => podRt.listPodSandboxes(selector) : undefined),
      soft('ListContainers', podRt ? () => podRt.listContainers(selector) : undefined),
      this.nodeStats(errors),
    ]);
    // containerd's ListPodSandboxStats carries each sandbox's containers' stats (it runs
    // ListContainerStats for every sandbox): asking for both had the runtime measure every
    // container twice. ListContainerStats is asked only when a running container is missing
    // from the sandboxes' figures (the call failed, is unimplemented, or leaves them out).
    const covered = new Set((sandboxStats ?? []).flatMap((s) => s.containers.map((c) => c.id)));
    const uncovered = (containers ?? []).some((c) => c.state === 'CONTAINER_RUNNING' && !covered.has(c.id));
    const containerStats = uncovered ? await soft('ListContainerStats', podRt?.listContainerStats ? () => podRt.listContainerStats!(selector) : undefined) : [];
    const imageFs = await this.imageFsStats(imageFsList?.[0]);
    if (imageFs) node.runtime = { imageFs, containerFs: imageFs };
    let pods: PodStats[] = [];
    if (withPods) {
      pods = await this.podStats(sandboxes ?? [], containers ?? [], sandboxStats, containerStats ?? [], imageFs).catch((err: unknown) => {
        errors.push(`pods: ${errorMessage(err)}`);
        return [] as PodStats[];
      });
      // Only after a full collection: a node-only one did not read the pods' CPU counters, and
      // their last samples must stay for the next full collection's rates.
      this.rates.endCollection();
    }
    if (errors.length) this.deps.logger.debug({ errors }, 'stats: some sources could not be read');
    const containerStatsFailed = withPods && (!rt || errors.some((e) => e.startsWith('ListContainerStats:') || e.startsWith('ListContainers:') || e.startsWith('ListPodSandbox:')));
    return { summary: { node, pods }, collectedAt: started, errors, containerStatsFailed };
  }

  // ---------------------------------------------------------------- node

  private async nodeStats(errors: string[]): Promise<NodeStats> {
    const t = this.now();
    const time = statsTime(t);
    const cg = this.cgroups;
    const kubepods = this.deps.cgroups?.kubepodsPath;
    const [cpuNs, mem, meminfo, net, fs, limits, boot, podsCpu, podsMem] = await Promise.all([
      cg.hasCpuacct ? cg.cpuUsageNs('/') : proc.cpuNs(),
      cg.hasMemory ? cg.memory('/') : undefined,
      this.memTotal === undefined ? proc.meminfo() : undefined,
      proc.network('self'),
      fsFigures(this.deps.rootDir),
      proc.pidLimits(),
      proc.bootTimeMs(),
      kubepods !== undefined ? cg.cpuUsageNs(kubepods) : undefined,
      kubepods !== undefined ? cg.memory(kubepods) : undefined,
    ]);
    if (meminfo) this.memTotal = meminfo.get('MemTotal');
    const node: NodeStats = { nodeName: this.deps.nodeName, startTime: statsTime(boot ?? t) };
    if (cpuNs !== undefined) node.cpu = this.cpu('node', t, cpuNs);
    else errors.push('node cpu: no cpuacct cgroup and no /proc/stat');
    if (mem) node.memory = memoryStats(time, mem, this.memTotal);
    else if (meminfo) {
      // No memory counters at the root (cgroup v2, or no v1 memory hierarchy): /proc/meminfo,
      // as runc reads v2's root (usage = MemTotal - MemFree, less the inactive file pages).
      const total = meminfo.get('MemTotal') ?? 0;
      const usage = total - (meminfo.get('MemFree') ?? 0);
      const workingSet = Math.max(0, usage - (meminfo.get('Inactive(file)') ?? 0));
      node.memory = { time, usageBytes: usage, workingSetBytes: workingSet, availableBytes: Math.max(0, total - workingSet) };
    }
    if (net) node.network = networkStats(time, net.primary, net.interfaces);
    if (fs) node.fs = fsStats(time, fs);
    else errors.push(`nodefs: cannot statfs ${this.deps.rootDir}`);
    node.rlimit = { time, ...(limits.maxpid !== undefined ? { maxpid: limits.maxpid } : {}), ...(limits.curproc !== undefined ? { curproc: limits.curproc } : {}) };
    const usage = process.cpuUsage();
    const rss = process.memoryUsage.rss();
    const system: ContainerStats[] = [{
      name: 'kubelet',
      startTime: statsTime(Date.now() - process.uptime() * 1000),
      cpu: this.cpu('kubelet', t, (usage.user + usage.system) * 1000),
      memory: { time, usageBytes: rss, workingSetBytes: rss, rssBytes: rss },
    }];
    if (podsCpu !== undefined || podsMem) {
      system.push({
        name: 'pods',
        startTime: node.startTime,
        ...(podsCpu !== undefined ? { cpu: this.cpu('pods', t, podsCpu) } : {}),
        ...(podsMem ? { memory: memoryStats(time, podsMem, this.memTotal) } : {}),
      });
    }
    node.systemContainers = system;
    return node;
  }

  private async imageFsStats(usage: FilesystemUsage | undefined): Promise<FsStats | undefined> {
    if (!usage?.mountpoint) return undefined;
    const fs = await fsFigures(usage.mountpoint);
    const time = statsTime(usage.timestamp || this.now());
    if (!fs) return { time, ...(usage.usedBytes !== undefined ? { usedBytes: usage.usedBytes } : {}), ...(usage.inodesUsed !== undefined ? { inodesUsed: usage.inodesUsed } : {}) };
    return { ...fsStats(time, fs), usedBytes: usage.usedBytes ?? fs.usedBytes, inodesUsed: usage.inodesUsed ?? fs.inodesUsed };
  }

  // ---------------------------------------------------------------- pods

  private async podStats(
    sandboxes: SandboxSummary[],
    containers: ContainerSummary[],
    sandboxStats: PodSandboxStats[] | undefined,
    containerStats: CriContainerStats[],
    imageFs: FsStats | undefined,
  ): Promise<PodStats[]> {
    const known = new Map(this.deps.pods().map((p) => [p.metadata?.uid ?? '', p]));
    const bySandbox = new Map((sandboxStats ?? []).map((s) => [s.id, s]));
    const statsById = new Map<string, CriContainerStats>();
    for (const s of sandboxStats ?? []) for (const c of s.containers) statsById.set(c.id, c);
    for (const c of containerStats) statsById.set(c.id, c);
    // The newest ready sandbox of each pod.
    const sandboxOf = new Map<string, SandboxSummary>();
    for (const s of sandboxes) {
      if (s.state !== 'SANDBOX_READY') continue;
      const uid = s.metadata.uid;
      const cur = sandboxOf.get(uid);
      if (!cur || s.createdAt > cur.createdAt) sandboxOf.set(uid, s);
    }
    const runningByPod = new Map<string, ContainerSummary[]>();
    for (const c of containers) {
      if (c.state !== 'CONTAINER_RUNNING') continue;
      const uid = c.labels[LABEL.podUID] ?? '';
      const list = runningByPod.get(uid) ?? [];
      list.push(c);
      runningByPod.set(uid, list);
    }
    const nodefs = await fsFigures(this.deps.rootDir);
    // The pids of sandboxes that went are forgotten (a pid is reused by the host in time).
    const live = new Set([...sandboxOf.values()].map((s) => s.id));
    for (const id of this.sandboxPids.keys()) if (!live.has(id)) this.sandboxPids.delete(id);
    return Promise.all([...sandboxOf.values()].map(async (sandbox) => {
      const uid = sandbox.metadata.uid;
      const pod = known.get(uid);
      const t = this.now();
      const time = statsTime(t);
      const ref = { name: sandbox.metadata.name, namespace: sandbox.metadata.namespace, uid };
      const logDir = path.join(this.deps.podLogsDir, `${ref.namespace}_${ref.name}_${uid}`);
      const ctrs = await Promise.all((runningByPod.get(uid) ?? []).map(async (c): Promise<ContainerStats> => {
        const s = statsById.get(c.id);
        const name = c.labels[LABEL.containerName] ?? c.metadata.name;
        const out: ContainerStats = { name, startTime: statsTime(c.createdAt) };
        if (s?.cpu) out.cpu = this.criCpu(`ctr:${c.id}`, s.cpu);
        if (s?.memory) out.memory = criMemory(s.memory);
        if (s?.writableLayer) out.rootfs = { ...(imageFs ? pickCapacity(imageFs) : {}), time: statsTime(s.writableLayer.timestamp || t), usedBytes: s.writableLayer.usedBytes ?? 0, inodesUsed: s.writableLayer.inodesUsed ?? 0 };
        const logs = await this.logUsage.get(path.join(logDir, name));
        if (logs) out.logs = { ...(nodefs ? pickCapacity(fsStats(time, nodefs)) : {}), time, usedBytes: logs.bytes, inodesUsed: logs.inodes };
        return out;
      }));
      const out: PodStats = { podRef: ref, startTime: pod?.status?.startTime ? statsTime(new Date(pod.status.startTime).getTime()) : statsTime(sandbox.createdAt), containers: ctrs };
      const sb = bySandbox.get(sandbox.id);
      if (sb) {
        if (sb.cpu) out.cpu = this.criCpu(`pod:${uid}`, sb.cpu);
        if (sb.memory) out.memory = criMemory(sb.memory);
        if (sb.network) out.network = networkStats(statsTime(sb.network.timestamp || t), sb.network.defaultInterface, [...(sb.network.defaultInterface ? [sb.network.defaultInterface] : []), ...sb.network.interfaces]);
        if (sb.processCount !== undefined) out.process_stats = { process_count: sb.processCount };
      } else {
        await this.podFromHost(out, uid, t, ctrs);
      }
      // containerd 1.6 gives sandbox stats without network: read it in the sandbox's network
      // namespace (a hostNetwork pod's is the node's, reported as the node's, not the pod's).
      if (!out.network && pod?.spec?.hostNetwork !== true) {
        const net = await this.sandboxNetwork(sandbox.id);
        if (net) out.network = networkStats(time, net.primary, net.interfaces);
      }
      const volumes = await this.volumeStats(uid, time);
      // Persistent volumes are listed, not counted as the pod's ephemeral storage.
      const persistent = (await this.deps.persistentVolumes?.(uid, ref.namespace, time)) ?? [];
      if (volumes.length || persistent.length) out.volume = [...volumes, ...persistent];
      out['ephemeral-storage'] = ephemeralStorage(time, ctrs, volumes, nodefs);
      return out;
    }));
  }

  /** A sandbox's interfaces through its process (its pid asked of the runtime once per sandbox). */
  private async sandboxNetwork(sandboxId: string): Promise<Awaited<ReturnType<typeof proc.network>>> {
    let pid = this.sandboxPids.get(sandboxId);
    if (pid === undefined) {
      try {
        pid = (await this.deps.runtime()?.podSandboxStatus(sandboxId))?.pid ?? 0;
      } catch {
        return undefined; // no figures this time (asked again next time) is no reason to fail the pod's stats
      }
      this.sandboxPids.set(sandboxId, pid);
    }
    return pid > 0 ? proc.network(pid) : undefined;
  }

  /** Pod CPU, memory and network without sandbox stats: the pod's cgroup and namespace, else its containers summed. */
  private async podFromHost(out: PodStats, uid: string, t: number, ctrs: ContainerStats[]): Promise<void> {
    const time = statsTime(t);
    const cgroup = await this.deps.cgroups?.podPath(uid);
    const [cpuNs, mem] = cgroup ? await Promise.all([this.cgroups.cpuUsageNs(cgroup), this.cgroups.memory(cgroup)]) : [undefined, undefined];
    if (cpuNs !== undefined) out.cpu = this.cpu(`pod:${uid}`, t, cpuNs);
    else if (ctrs.some((c) => c.cpu?.usageCoreNanoSeconds !== undefined)) {
      out.cpu = this.cpu(`pod:${uid}`, t, ctrs.reduce((a, c) => a + (c.cpu?.usageCoreNanoSeconds ?? 0), 0));
    }
    if (mem) out.memory = memoryStats(time, mem, this.memTotal);
    else if (ctrs.some((c) => c.memory)) {
      const sum = (f: (m: MemoryStats) => number | undefined) => ctrs.reduce((a, c) => a + (c.memory ? f(c.memory) ?? 0 : 0), 0);
      out.memory = { time, usageBytes: sum((m) => m.usageBytes), workingSetBytes: sum((m) => m.workingSetBytes), rssBytes: sum((m) => m.rssBytes) };
    }
    const pid = cgroup ? await this.cgroups.firstPid(cgroup) : undefined;
    const net = pid ? await proc.network(pid) : undefined;
    if (net) out.network = networkStats(time, net.primary, net.interfaces);
  }

  /** The pod's local volumes (emptyDir, configMap, secret, downwardAPI, projected): measured use and their filesystem. */
  private async volumeStats(uid: string, time: string): Promise<VolumeStats[]> {
    const base = path.join(this.deps.rootDir, 'pods', uid, 'volumes');
    const out: VolumeStats[] = [];
    // volumeStatsAggPeriod 0 (upstream: negative): volume stats collection disabled.
    if (this.deps.volumeStatsPeriodMs === 0) return out;
    // One read of the pod's volumes directory says which plugin directories exist: a pod
    // without local volumes (most, every collection) costs one failed readdir, not one per
    // plugin (failed calls are the expensive ones: each builds an Error).
    let present: Set<string>;
    try {
      present = new Set(await readdir(base));
    } catch {
      return out;
    }
    for (const plugin of LOCAL_VOLUME_PLUGINS) {
      if (!present.has(plugin)) continue;
      let names: string[];
      try {
        names = await readdir(path.join(base, plugin));
      } catch {
        continue;
      }
      for (const name of names) {
        const dir = path.join(base, plugin, name);
        const [usage, fs] = await Promise.all([this.volumeUsage.get(dir), fsFigures(dir)]);
        if (!usage) continue;
        out.push({ name, ...(fs ? fsStats(time, fs) : { time }), usedBytes: usage.bytes, inodesUsed: usage.inodes });
      }
    }
    return out;
  }

  // ---------------------------------------------------------------- helpers

  private cpu(key: string, t: number, usageNs: number): CPUStats {
    const rate = this.rates.rate(key, t, usageNs);
    return { time: statsTime(t), usageCoreNanoSeconds: usageNs, ...(rate !== undefined ? { usageNanoCores: rate } : {}) };
  }

  /** CRI CPU: the runtime's rate when it has one, else the one computed here. */
  private criCpu(key: string, c: { timestamp: number; usageCoreNanoSeconds?: number; usageNanoCores?: number }): CPUStats {
    const t = c.timestamp || this.now();
    if (c.usageCoreNanoSeconds === undefined) return { time: statsTime(t), ...(c.usageNanoCores !== undefined ? { usageNanoCores: c.usageNanoCores } : {}) };
    const mine = this.cpu(key, t, c.usageCoreNanoSeconds);
    return c.usageNanoCores ? { ...mine, usageNanoCores: c.usageNanoCores } : mine;
  }
}

function memoryStats(time: string, m: { usageBytes: number; workingSetBytes: number; rssBytes?: number | undefined; pageFaults?: number | undefined; majorPageFaults?: number | undefined; limitBytes?: number | undefined }, memTotal: number | undefined): MemoryStats {
  // The kernel's "no limit" is a page-rounded 2^63: the machine's memory is the real bound.
  const bound = [m.limitBytes, memTotal].filter((v): v is number => v !== undefined && v > 0 && v < 2 ** 62);
  const limit = bound.length ? Math.min(...bound) : undefined;
  return {
    time,
    usageBytes: m.usageBytes,
    workingSetBytes: m.workingSetBytes,
    ...(limit !== undefined ? { availableBytes: Math.max(0, limit - m.workingSetBytes) } : {}),
    ...(m.rssBytes !== undefined ? { rssBytes: m.rssBytes } : {}),
    ...(m.pageFaults !== undefined ? { pageFaults: m.pageFaults } : {}),
    ...(m.majorPageFaults !== undefined ? { majorPageFaults: m.majorPageFaults } : {}),
  };
}

function criMemory(m: { timestamp: number; workingSetBytes?: number; availableBytes?: number; usageBytes?: number; rssBytes?: number; pageFaults?: number; majorPageFaults?: number }): MemoryStats {
  const { timestamp, ...rest } = m;
  return { time: statsTime(timestamp || Date.now()), ...rest };
}

function networkStats(time: string, primary: { name: string; rxBytes?: number; rxErrors?: number; txBytes?: number; txErrors?: number } | undefined, all: Array<{ name: string; rxBytes?: number; rxErrors?: number; txBytes?: number; txErrors?: number }>): NetworkStats {
  return { time, ...(primary ?? { name: '' }), interfaces: all };
}

function fsStats(time: string, f: FsFigures): FsStats {
  return { time, availableBytes: f.availableBytes, capacityBytes: f.capacityBytes, usedBytes: f.usedBytes, inodesFree: f.inodesFree, inodes: f.inodes, inodesUsed: f.inodesUsed };
}

/** The filesystem's size and free space, without its use (a container's share of it is its own). */
function pickCapacity(f: FsStats): Partial<FsStats> {
  return {
    ...(f.availableBytes !== undefined ? { availableBytes: f.availableBytes } : {}),
    ...(f.capacityBytes !== undefined ? { capacityBytes: f.capacityBytes } : {}),
    ...(f.inodesFree !== undefined ? { inodesFree: f.inodesFree } : {}),
    ...(f.inodes !== undefined ? { inodes: f.inodes } : {}),
  };
}

/** A pod's local ephemeral storage: its containers' writable layers and logs, and its local volumes (upstream calcEphemeralStorage). */
function ephemeralStorage(time: string, ctrs: ContainerStats[], volumes: VolumeStats[], nodefs: FsFigures | undefined): FsStats {
  let used = 0;
  let inodes = 0;
  for (const c of ctrs) {
    used += (c.rootfs?.usedBytes ?? 0) + (c.logs?.usedBytes ?? 0);
    inodes += (c.rootfs?.inodesUsed ?? 0) + (c.logs?.inodesUsed ?? 0);
  }
  for (const v of volumes) {
    used += v.usedBytes ?? 0;
    inodes += v.inodesUsed ?? 0;
  }
  return { ...(nodefs ? pickCapacity(fsStats(time, nodefs)) : {}), time, usedBytes: used, inodesUsed: inodes };
}

function cpuAndMemoryOnly(s: Summary): Summary {
  const ctr = (c: ContainerStats): ContainerStats => ({ name: c.name, startTime: c.startTime, ...(c.cpu ? { cpu: c.cpu } : {}), ...(c.memory ? { memory: c.memory } : {}) });
  const n = s.node;
  return {
    node: { nodeName: n.nodeName, startTime: n.startTime, ...(n.systemContainers ? { systemContainers: n.systemContainers.map(ctr) } : {}), ...(n.cpu ? { cpu: n.cpu } : {}), ...(n.memory ? { memory: n.memory } : {}) },
    pods: s.pods.map((p) => ({ podRef: p.podRef, startTime: p.startTime, containers: p.containers.map(ctr), ...(p.cpu ? { cpu: p.cpu } : {}), ...(p.memory ? { memory: p.memory } : {}) })),
  };
}
