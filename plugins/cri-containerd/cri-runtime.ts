import { clampSeconds, type CallOptions, type ContainerConfig, type ContainerEvent, type ContainerEventsEnd, type ContainerRuntime, type ContainerStats, type ContainerStatus, type ContainerSummary, type CpuUsage, type ExecResult, type FilesystemUsage, type ImageInfo, type MemoryUsage, type NetworkInterfaceUsage, type PodSandboxConfig, type PodSandboxStats, type PullAuth, type PullProgress, type RuntimeCondition, type RuntimeConfig, type RuntimeHandlerInfo, type RuntimeVersion, type SandboxStatus, type SandboxSummary, type StreamOptions } from 'kubelet-ts';
import type { CriClient } from './cri-client.ts';

/** Deadlines of the calls: most use `requestTimeoutMs`; these need their own. */
export interface CriTimeouts { requestTimeoutMs: number; pullTimeoutMs: number }

/** CRI int64 nanoseconds (a decimal string with our loader options) → milliseconds. */
/**
 * Nanoseconds (int64 as a decimal string) to whole milliseconds. A non-negative value is cut
 * at its last six digits (exact, and far cheaper than BigInt at a relist's 220 items a second).
 */
const nsToMs = (ns: string | number | null | undefined): number => {
  if (!ns) return 0;
  if (typeof ns === 'string' && /^\d+$/.test(ns)) return ns.length > 6 ? Number(ns.slice(0, -6)) : 0;
  return Number(BigInt(ns) / 1_000_000n);
};

/** A google.protobuf.Timestamp ({seconds: '…', nanos}) → milliseconds since the epoch; 0 when unset or not a number. */
function timestampMs(t: { seconds?: string | number; nanos?: number } | null | undefined): number {
  if (!t) return 0;
  const ms = Number(t.seconds ?? 0) * 1000 + Math.floor(Number(t.nanos ?? 0) / 1e6);
  return Number.isFinite(ms) && ms > 0 ? ms : 0;
}

/** pullProgress is asked about once a second: an answer later than this is of no use. */
const PULL_PROGRESS_TIMEOUT_MS = 2000;
/** CRI's ContainerEventType names (proto-loader gives enums as names). */
const EVENT_TYPES: Record<string, ContainerEvent['type']> = {
  CONTAINER_CREATED_EVENT: 'created', CONTAINER_STARTED_EVENT: 'started', CONTAINER_STOPPED_EVENT: 'stopped', CONTAINER_DELETED_EVENT: 'deleted',
};

const labelsOf = (m: Record<string, string> | null | undefined) => ({ ...(m ?? {}) });

/**
 * ContainerRuntime over CRI v1: maps the core's calls one to one onto RuntimeService and
 * ImageService RPCs (the core's types already use CRI's field names).
 */
export class CriRuntime implements ContainerRuntime {
  constructor(private readonly client: CriClient, private readonly timeouts: CriTimeouts) {}

  private rt<T = any>(method: string, request: object, options: CallOptions | undefined, timeoutMs = this.timeouts.requestTimeoutMs): Promise<T> {
    return this.client.callRuntime<T>(method, request, timeoutMs, options?.signal);
  }

  async version(options?: CallOptions): Promise<RuntimeVersion> {
    const r = await this.rt('Version', { version: 'v1' }, options);
    return { runtimeName: r.runtimeName, runtimeVersion: r.runtimeVersion, runtimeApiVersion: r.runtimeApiVersion };
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', options?: CallOptions): Promise<string> {
    const r = await this.rt('RunPodSandbox', { config, runtimeHandler }, options);
    return r.podSandboxId;
  }

  async stopPodSandbox(id: string, options?: CallOptions): Promise<void> {
    await this.rt('StopPodSandbox', { podSandboxId: id }, options);
  }

  async removePodSandbox(id: string, options?: CallOptions): Promise<void> {
    await this.rt('RemovePodSandbox', { podSandboxId: id }, options);
  }

  async podSandboxStatus(id: string, options?: CallOptions): Promise<SandboxStatus> {
    const r = await this.rt('PodSandboxStatus', { podSandboxId: id, verbose: true }, options);
    const s = r.status;
    let netnsPath: string | undefined;
    let pid: number | undefined;
    try {
      const info = JSON.parse(r.info?.info ?? '{}');
      netnsPath = info?.runtimeSpec?.linux?.namespaces?.find((n: { type: string }) => n.type === 'network')?.path;
      pid = Number.isInteger(info?.pid) && info.pid > 0 ? info.pid : undefined;
    } catch {
      netnsPath = undefined;
    }
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: nsToMs(s.createdAt),
      labels: labelsOf(s.labels),
      annotations: labelsOf(s.annotations),
      ip: s.network?.ip ?? '',
      additionalIps: (s.network?.additionalIps ?? []).map((p: { ip: string }) => p.ip),
      ...(netnsPath ? { netnsPath } : {}),
      ...(pid ? { pid } : {}),
    };
  }

  async listPodSandboxes(filter?: { labelSelector?: Record<string, string> }, options?: CallOptions): Promise<SandboxSummary[]> {
    const r = await this.rt('ListPodSandbox', { filter: filter?.labelSelector ? { labelSelector: filter.labelSelector } : null }, options);
    // The items are shared with later answers (list-item-cache.ts): copy what is handed out.
    return (r.items ?? []).map((s: any) => ({
      id: s.id, metadata: { ...s.metadata }, state: s.state, createdAt: nsToMs(s.createdAt),
      labels: labelsOf(s.labels), annotations: labelsOf(s.annotations),
    }));
  }

  async createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, options?: CallOptions): Promise<string> {
    const r = await this.rt('CreateContainer', { podSandboxId: sandboxId, config, sandboxConfig }, options);
    return r.containerId;
  }

  async startContainer(id: string, options?: CallOptions): Promise<void> {
    await this.rt('StartContainer', { containerId: id }, options);
  }

  async stopContainer(id: string, timeoutSeconds: number, options?: CallOptions): Promise<void> {
    // The runtime waits up to `timeout` before SIGKILL: the deadline must outlast it.
    const timeout = clampSeconds(timeoutSeconds);
    await this.rt('StopContainer', { containerId: id, timeout }, options, timeout * 1000 + this.timeouts.requestTimeoutMs);
  }

  async removeContainer(id: string, options?: CallOptions): Promise<void> {
    await this.rt('RemoveContainer', { containerId: id }, options);
  }

  async listContainers(filter?: { labelSelector?: Record<string, string>; podSandboxId?: string }, options?: CallOptions): Promise<ContainerSummary[]> {
    const f = filter ? { labelSelector: filter.labelSelector ?? {}, podSandboxId: filter.podSandboxId ?? '' } : null;
    const r = await this.rt('ListContainers', { filter: f }, options);
    // The items are shared with later answers (list-item-cache.ts): copy what is handed out.
    return (r.containers ?? []).map((c: any) => ({
      id: c.id, podSandboxId: c.podSandboxId, metadata: { ...c.metadata }, image: c.image?.image ?? '', imageRef: c.imageRef,
      state: c.state, createdAt: nsToMs(c.createdAt), labels: labelsOf(c.labels), annotations: labelsOf(c.annotations),
    }));
  }

  async containerStatus(id: string, options?: CallOptions): Promise<ContainerStatus> {
    const r = await this.rt('ContainerStatus', { containerId: id, verbose: false }, options);
    const s = r.status;
    const labels = labelsOf(s.labels);
    return {
      id: s.id,
      podSandboxId: '',
      metadata: s.metadata,
      image: s.image?.image ?? '',
      imageRef: s.imageRef,
      state: s.state,
      createdAt: nsToMs(s.createdAt),
      startedAt: nsToMs(s.startedAt),
      finishedAt: nsToMs(s.finishedAt),
      exitCode: s.exitCode,
      reason: s.reason,
      message: s.message,
      labels,
      annotations: labelsOf(s.annotations),
      logPath: s.logPath,
      mounts: (s.mounts ?? []).map((m: any) => ({ containerPath: m.containerPath ?? '', hostPath: m.hostPath ?? '', readonly: m.readonly === true })),
    };
  }

  async execSync(id: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecResult> {
    const timeout = clampSeconds(timeoutSeconds);
    const r = await this.rt('ExecSync', { containerId: id, cmd, timeout }, options, timeout * 1000 + this.timeouts.requestTimeoutMs);
    return { stdout: Buffer.from(r.stdout ?? []), stderr: Buffer.from(r.stderr ?? []), exitCode: r.exitCode };
  }

  async imageStatus(image: string, options?: CallOptions): Promise<ImageInfo | null> {
    const r = await this.client.callImage('ImageStatus', { image: { image } }, this.timeouts.requestTimeoutMs, options?.signal);
    const i = r.image;
    if (!i || !i.id) return null;
    // The image's user (containerd: the config's User before any ':group', numeric as uid, else as username).
    const uid = i.uid?.value !== undefined && i.uid?.value !== null ? Number(i.uid.value) : undefined;
    return {
      id: i.id, repoTags: i.repoTags ?? [], repoDigests: i.repoDigests ?? [], size: Number(i.size ?? 0),
      ...(uid !== undefined && Number.isFinite(uid) ? { uid } : {}),
      ...(i.username ? { username: String(i.username) } : {}),
      // As ListImages: the runtime keeps it (containerd's sandbox image), so must image GC.
      ...(i.pinned ? { pinned: true } : {}),
    };
  }

  async pullImage(image: string, auth?: PullAuth, sandboxConfig?: PodSandboxConfig, options?: CallOptions): Promise<string> {
    const r = await this.client.callImage('PullImage', { image: { image }, auth: auth ?? null, sandboxConfig: sandboxConfig ?? null }, this.timeouts.pullTimeoutMs, options?.signal);
    return r.imageRef;
  }

  /**
   * The downloads in flight, from containerd's content service (ListStatuses in the CRI
   * namespace): CRI has no progress for PullImage, and the content store is where containerd
   * itself (`ctr pull`, nerdctl) reads it. One cheap call, read-only, on the socket the plugin
   * already speaks to; the core attributes the downloads to its pulls. A CRI runtime that is no
   * containerd answers Unimplemented, and the core stops asking.
   */
  async pullProgress(options?: CallOptions): Promise<PullProgress[]> {
    const r = await this.client.callContent('ListStatuses', { filters: [] }, Math.min(this.timeouts.requestTimeoutMs, PULL_PROGRESS_TIMEOUT_MS), options?.signal);
    return (r.statuses ?? []).map((s: any): PullProgress => ({
      ref: typeof s.ref === 'string' ? s.ref : '',
      offsetBytes: Number(s.offset ?? 0),
      totalBytes: Number(s.total ?? 0),
      startedAt: timestampMs(s.startedAt),
      updatedAt: timestampMs(s.updatedAt),
    }));
  }

  async listImages(options?: CallOptions): Promise<ImageInfo[]> {
    const r = await this.client.callImage('ListImages', { filter: null }, this.timeouts.requestTimeoutMs, options?.signal);
    return (r.images ?? []).map((i: any) => ({ id: i.id, repoTags: i.repoTags ?? [], repoDigests: i.repoDigests ?? [], size: Number(i.size ?? 0), ...(i.pinned ? { pinned: true } : {}) }));
  }

  async reopenContainerLog(containerId: string, options?: CallOptions): Promise<void> {
    await this.rt('ReopenContainerLog', { containerId }, options);
  }

  async removeImage(image: string, options?: CallOptions): Promise<void> {
    await this.client.callImage('RemoveImage', { image: { image } }, this.timeouts.requestTimeoutMs, options?.signal);
  }

  /**
   * containerd >= 1.7's container events (CRI GetContainerEvents), as they happen. containerd
   * 1.6 answers UNIMPLEMENTED: 'unsupported', and the core relists only. The event's own pod
   * and container statuses are not read: the core relists on an event (types.ts says why).
   */
  async containerEvents(onEvent: (event: ContainerEvent) => void, options?: CallOptions): Promise<ContainerEventsEnd> {
    try {
      await this.client.streamRuntime('GetContainerEvents', {}, (e: { containerId?: string; containerEventType?: string; createdAt?: string }) => {
        const type = EVENT_TYPES[e.containerEventType ?? ''];
        if (type && e.containerId) onEvent({ containerId: e.containerId, type, at: nsToMs(e.createdAt) });
      }, options?.signal);
      return 'ended';
    } catch (err) {
      if ((err as { cause?: { code?: unknown } }).cause?.code === 12) return 'unsupported';
      throw err;
    }
  }

  /** containerd >= 2.0 says its cgroup driver (CRI RuntimeConfig). */
  async runtimeConfig(options?: CallOptions): Promise<RuntimeConfig | undefined> {
    let r: { linux?: { cgroupDriver?: string } };
    try {
      r = await this.rt('RuntimeConfig', {}, options);
    } catch (err) {
      // gRPC UNIMPLEMENTED (12): a runtime before CRI RuntimeConfig (containerd 1.x) does not say.
      if ((err as { cause?: { code?: unknown } }).cause?.code === 12) return undefined;
      throw err;
    }
    const driver = r.linux?.cgroupDriver;
    return driver === 'SYSTEMD' ? { cgroupDriver: 'systemd' } : driver === 'CGROUPFS' ? { cgroupDriver: 'cgroupfs' } : {};
  }

  async runtimeHandlers(options?: CallOptions): Promise<RuntimeHandlerInfo[]> {
    const r = await this.rt('Status', { verbose: false }, options);
    return (r.runtimeHandlers ?? []).map((h: { name?: string; features?: { userNamespaces?: boolean; recursiveReadOnlyMounts?: boolean } }) => ({
      name: h.name ?? '',
      userNamespaces: h.features?.userNamespaces === true,
      recursiveReadOnlyMounts: h.features?.recursiveReadOnlyMounts === true,
    }));
  }

  /**
   * containerd 1.6/1.7 say their sandbox image in the verbose Status (`info.config`, the CRI
   * plugin's config, `sandboxImage`). containerd 2.x split that plugin: `info.config` is the
   * runtime half's config only, and the sandbox image (`pinned_images.sandbox` of the images
   * half) is not in Status at all; there it is known by the `pinned` flag containerd sets on it
   * (ImageInfo.pinned, which image GC keeps). A `pinnedImages.sandbox` is read if a version has it.
   */
  async sandboxImage(options?: CallOptions): Promise<string | undefined> {
    const r = await this.rt('Status', { verbose: true }, options);
    try {
      const cfg = JSON.parse(r.info?.config ?? '{}') as { sandboxImage?: unknown; pinnedImages?: { sandbox?: unknown } };
      const image = cfg.sandboxImage ?? cfg.pinnedImages?.sandbox;
      return typeof image === 'string' && image ? image : undefined;
    } catch {
      return undefined;
    }
  }

  async status(options?: CallOptions): Promise<RuntimeCondition[]> {
    const r = await this.rt('Status', { verbose: false }, options);
    return (r.status?.conditions ?? []).map((c: any) => ({ type: c.type, status: c.status === true, reason: c.reason ?? '', message: c.message ?? '' }));
  }

  async exec(req: { containerId: string; cmd: string[] } & StreamOptions, options?: CallOptions): Promise<string> {
    const r = await this.rt('Exec', { containerId: req.containerId, cmd: req.cmd, tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr }, options);
    return r.url;
  }

  async attach(req: { containerId: string } & StreamOptions, options?: CallOptions): Promise<string> {
    const r = await this.rt('Attach', { containerId: req.containerId, tty: req.tty, stdin: req.stdin, stdout: req.stdout, stderr: req.stderr }, options);
    return r.url;
  }

  async portForward(podSandboxId: string, ports: number[], options?: CallOptions): Promise<string> {
    const r = await this.rt('PortForward', { podSandboxId, port: ports }, options);
    return r.url;
  }

  async listContainerStats(filter?: { labelSelector?: Record<string, string>; podSandboxId?: string }, options?: CallOptions): Promise<ContainerStats[]> {
    const f = filter ? { id: '', podSandboxId: filter.podSandboxId ?? '', labelSelector: filter.labelSelector ?? {} } : null;
    const r = await this.rt('ListContainerStats', { filter: f }, options);
    return (r.stats ?? []).map(containerStatsOf);
  }

  async listPodSandboxStats(filter?: { labelSelector?: Record<string, string> }, options?: CallOptions): Promise<PodSandboxStats[]> {
    const r = await this.rt('ListPodSandboxStats', { filter: filter ? { id: '', labelSelector: filter.labelSelector ?? {} } : null }, options);
    return (r.stats ?? []).map((s: any): PodSandboxStats => {
      const l = s.linux ?? {};
      const net = l.network;
      return {
        id: s.attributes?.id ?? '',
        metadata: s.attributes?.metadata,
        labels: labelsOf(s.attributes?.labels),
        annotations: labelsOf(s.attributes?.annotations),
        ...(l.cpu ? { cpu: cpuOf(l.cpu) } : {}),
        ...(l.memory ? { memory: memoryOf(l.memory) } : {}),
        ...(net ? { network: { timestamp: nsToMs(net.timestamp), ...(net.defaultInterface ? { defaultInterface: ifaceOf(net.defaultInterface) } : {}), interfaces: (net.interfaces ?? []).map(ifaceOf) } } : {}),
        ...(l.process?.processCount ? { processCount: u64(l.process.processCount) } : {}),
        containers: (l.containers ?? []).map(containerStatsOf),
      };
    });
  }

  async imageFsInfo(options?: CallOptions): Promise<FilesystemUsage[]> {
    const r = await this.client.callImage('ImageFsInfo', {}, this.timeouts.requestTimeoutMs, options?.signal);
    return (r.imageFilesystems ?? []).map(fsUsageOf);
  }

  async close(_options?: CallOptions): Promise<void> {
    this.client.close();
  }
}

// CRI stats: UInt64Value wrappers ({value: '123'} with our loader options) → numbers; unset → undefined.
const u64 = (v: { value?: string | number } | null | undefined): number | undefined => (v && v.value !== undefined && v.value !== null ? Number(v.value) : undefined);

function defined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as Array<keyof T>) if (o[k] === undefined) delete o[k];
  return o;
}

const cpuOf = (c: any): CpuUsage => defined({ timestamp: nsToMs(c.timestamp), usageCoreNanoSeconds: u64(c.usageCoreNanoSeconds), usageNanoCores: u64(c.usageNanoCores) });
const memoryOf = (m: any): MemoryUsage => defined({
  timestamp: nsToMs(m.timestamp), workingSetBytes: u64(m.workingSetBytes), availableBytes: u64(m.availableBytes), usageBytes: u64(m.usageBytes),
  rssBytes: u64(m.rssBytes), pageFaults: u64(m.pageFaults), majorPageFaults: u64(m.majorPageFaults),
});
const ifaceOf = (i: any): NetworkInterfaceUsage => defined({ name: i.name ?? '', rxBytes: u64(i.rxBytes), rxErrors: u64(i.rxErrors), txBytes: u64(i.txBytes), txErrors: u64(i.txErrors) });
const fsUsageOf = (f: any): FilesystemUsage => defined({ timestamp: nsToMs(f.timestamp), mountpoint: f.fsId?.mountpoint ?? '', usedBytes: u64(f.usedBytes), inodesUsed: u64(f.inodesUsed) });

function containerStatsOf(c: any): ContainerStats {
  return {
    id: c.attributes?.id ?? '',
    metadata: c.attributes?.metadata ?? { name: '', attempt: 0 },
    labels: labelsOf(c.attributes?.labels),
    annotations: labelsOf(c.attributes?.annotations),
    ...(c.cpu ? { cpu: cpuOf(c.cpu) } : {}),
    ...(c.memory ? { memory: memoryOf(c.memory) } : {}),
    ...(c.writableLayer ? { writableLayer: fsUsageOf(c.writableLayer) } : {}),
  };
}
