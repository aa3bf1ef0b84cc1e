// An in-process, in-memory CRI v1 gRPC server for fast unit tests.
//
// It serves runtime.v1.RuntimeService and runtime.v1.ImageService on a unix
// socket, so the real CRI plugin client talks to it exactly as it would to
// containerd. State transitions, id formats, error codes and error texts
// follow containerd 1.6's CRI plugin closely enough for the kubelet core;
// nothing runs for real. Modelled on virtual-kubelet's mock provider:
// per-RPC call counters, a request log, fault injection and delays.
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdirSync, unlinkSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { loadCriPackage } from '../../plugins/cri-containerd/proto-loader.ts';

/** CRI sandbox state names (enums travel as strings with our loader options). */
export type SandboxStateName = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
/** CRI container state names. */
export type ContainerStateName = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

/** A sandbox held by the fake (the request config is kept as received, camelCased). */
export interface FakeSandbox {
  id: string;
  metadata: { name: string; uid: string; namespace: string; attempt: number };
  state: SandboxStateName;
  /** Creation time, nanoseconds since the epoch. */
  createdAt: bigint;
  /** The PodSandboxConfig of RunPodSandbox, as decoded by proto-loader. */
  config: any;
  runtimeHandler: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** True when linux.securityContext.namespaceOptions.network == 'NODE'. */
  hostNetwork: boolean;
  /** Pod IP ('' for host-network sandboxes). */
  ip: string;
  /** Fake network namespace path ('' for host-network sandboxes). */
  netnsPath: string;
  /** Fake pid of the sandbox (pause) process; 0 once stopped. */
  pid: number;
}

/** A container held by the fake. */
export interface FakeContainer {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number };
  state: ContainerStateName;
  /** Nanoseconds since the epoch; 0n when not (yet) reached. */
  createdAt: bigint;
  startedAt: bigint;
  finishedAt: bigint;
  exitCode: number;
  reason: string;
  message: string;
  /** ImageSpec from the ContainerConfig. */
  image: any;
  /** Id ('sha256:...') of the local image the container was created from. */
  imageId: string;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  mounts: any[];
  /** Absolute log path: sandbox logDirectory joined with the container logPath. */
  logPath: string;
  /** The ContainerConfig of CreateContainer, as decoded by proto-loader. */
  config: any;
  /** Current LinuxContainerResources (from config, then UpdateContainerResources). */
  resources: any;
  /** Fake pid while running, else 0. */
  pid: number;
}

/** An image known to the fake registry and/or the local image store. */
export interface FakeImage {
  /** 'sha256:<64 hex>' (the image config digest in containerd). */
  id: string;
  /** Normalized tags, e.g. 'docker.io/library/busybox:latest'. */
  repoTags: string[];
  /** e.g. 'docker.io/library/busybox@sha256:...'. */
  repoDigests: string[];
  size: number;
  /** Credentials the registry requires for a pull, if any. */
  auth?: { username: string; password: string };
}

/** Result a custom ExecSync handler returns. */
export interface ExecSyncResult {
  exitCode?: number;
  stdout?: string | Buffer;
  stderr?: string | Buffer;
}

/** Signature of a custom ExecSync handler (see FakeCriServer.onExecSync). */
export type ExecSyncHandler = (
  req: { containerId: string; cmd: string[]; timeout: number },
  container: FakeContainer,
) => ExecSyncResult | Promise<ExecSyncResult>;

/** Options of FakeCriServer.start. */
export interface FakeCriServerOptions {
  /** VersionResponse.runtimeName (default 'fake-cri'). */
  runtimeName?: string;
  /** VersionResponse.runtimeVersion (default '0.1.0'). */
  runtimeVersion?: string;
  /** Images the fake registry serves (PullImage finds them; not local until pulled). */
  images?: string[];
  /** Images already present locally (and also pullable). */
  localImages?: string[];
  /** Exit code StopContainer gives a running container (default 137, i.e. SIGKILL). */
  stopExitCode?: number;
  /** Base of the URLs Exec/Attach/PortForward return (default 'http://127.0.0.1:10010'). */
  streamingUrlBase?: string;
}

/** An error a handler can throw to answer with a specific gRPC status. */
export class CriError extends Error {
  constructor(
    readonly code: grpc.status,
    message: string,
  ) {
    super(message);
    this.name = 'CriError';
  }
}

const RUNTIME_RPCS = [
  'Version', 'RunPodSandbox', 'StopPodSandbox', 'RemovePodSandbox', 'PodSandboxStatus', 'ListPodSandbox',
  'CreateContainer', 'StartContainer', 'StopContainer', 'RemoveContainer', 'ListContainers', 'ContainerStatus',
  'UpdateContainerResources', 'ReopenContainerLog', 'ExecSync', 'Exec', 'Attach', 'PortForward',
  'ContainerStats', 'ListContainerStats', 'PodSandboxStats', 'ListPodSandboxStats', 'UpdateRuntimeConfig', 'Status',
] as const;
const IMAGE_RPCS = ['ListImages', 'ImageStatus', 'PullImage', 'RemoveImage', 'ImageFsInfo'] as const;

const notFound = (what: string) => new CriError(grpc.status.NOT_FOUND, what);
const randomId = () => randomBytes(32).toString('hex');
const sha256 = (s: string) => createHash('sha256').update(s).digest('hex');
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * Normalizes an image reference the way containerd does:
 * 'busybox' -> 'docker.io/library/busybox:latest'; ids ('sha256:...') are returned as is.
 */
export function normalizeImageRef(ref: string): string {
  if (/^sha256:[0-9a-f]{64}$/.test(ref)) return ref;
  let name = ref;
  let digest = '';
  const at = name.indexOf('@');
  if (at >= 0) {
    digest = name.slice(at);
    name = name.slice(0, at);
  }
  let tag = '';
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) {
    tag = name.slice(colon);
    name = name.slice(0, colon);
  }
  const slash = name.indexOf('/');
  const first = slash >= 0 ? name.slice(0, slash) : '';
  const hasDomain = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
  if (!hasDomain) name = slash >= 0 ? `docker.io/${name}` : `docker.io/library/${name}`;
  if (!tag && !digest) tag = ':latest';
  return `${name}${tag}${digest}`;
}

/** In-memory CRI v1 server (RuntimeService + ImageService) on a unix socket. */
export class FakeCriServer {
  /** gRPC target to dial, 'unix:///abs/path.sock'. */
  readonly endpoint: string;
  /** Absolute path of the unix socket. */
  readonly socketPath: string;
  /** Number of calls per RPC name (every RPC pre-set to 0), e.g. calls.RunPodSandbox. */
  calls: Record<string, number> = {};
  /** Every request received, in order (the decoded request object). */
  requests: Array<{ method: string; request: any }> = [];
  /** Most calls of each RPC that were being handled at the same time (delays included). */
  maxInFlight: Record<string, number> = {};
  private readonly inFlight = new Map<string, number>();

  private server: grpc.Server;
  private readonly opts: Required<Omit<FakeCriServerOptions, 'images' | 'localImages'>>;
  private readonly sandboxMap = new Map<string, FakeSandbox>();
  private readonly containerMap = new Map<string, FakeContainer>();
  /** Images the fake registry can serve, by id. */
  private readonly registry = new Map<string, FakeImage>();
  /** Images present locally, by id. */
  private readonly local = new Map<string, FakeImage>();
  private readonly faults = new Map<string, Array<{ code: grpc.status; message: string; times: number }>>();
  private readonly delays = new Map<string, number>();
  private readonly conditions = new Map<string, { status: boolean; reason: string; message: string }>();
  private readonly stats = new Map<string, { usageCoreNanoSeconds?: number; usageNanoCores?: number; workingSetBytes?: number; writableLayerBytes?: number }>();
  /** Reserved sandbox / container names -> owning id (as containerd's name index). */
  private readonly names = new Map<string, string>();
  private execHandler: ExecSyncHandler | undefined;
  private nextIp = 2;
  private nextPid = 1000;
  private lastNs = 0n;
  private podCidr = '';

  private constructor(socketPath: string, opts: FakeCriServerOptions) {
    this.socketPath = resolve(socketPath);
    this.endpoint = `unix://${this.socketPath}`;
    this.opts = {
      runtimeName: opts.runtimeName ?? 'fake-cri',
      runtimeVersion: opts.runtimeVersion ?? '0.1.0',
      stopExitCode: opts.stopExitCode ?? 137,
      streamingUrlBase: opts.streamingUrlBase ?? 'http://127.0.0.1:10010',
    };
    for (const m of [...RUNTIME_RPCS, ...IMAGE_RPCS]) this.calls[m] = 0;
    this.conditions.set('RuntimeReady', { status: true, reason: '', message: '' });
    this.conditions.set('NetworkReady', { status: true, reason: '', message: '' });
    for (const ref of opts.images ?? []) this.addImage(ref);
    for (const ref of opts.localImages ?? []) this.addImage(ref, { present: true });
    this.server = new grpc.Server();
  }

  /** Creates the fake and starts serving on `socketPath` (a stale socket file is removed). */
  static async start(socketPath: string, opts: FakeCriServerOptions = {}): Promise<FakeCriServer> {
    const fake = new FakeCriServer(socketPath, opts);
    await fake.listen();
    return fake;
  }

  private async listen(): Promise<void> {
    mkdirSync(dirname(this.socketPath), { recursive: true });
    if (existsSync(this.socketPath)) unlinkSync(this.socketPath);
    const pkg = loadCriPackage();
    this.server.addService(pkg.RuntimeService.service, this.buildImpl(pkg.RuntimeService.service, this.runtimeHandlers()));
    this.server.addService(pkg.ImageService.service, this.buildImpl(pkg.ImageService.service, this.imageHandlers()));
    await new Promise<void>((ok, fail) =>
      this.server.bindAsync(this.endpoint, grpc.ServerCredentials.createInsecure(), (err) => (err ? fail(err) : ok())),
    );
  }

  /** Stops the server (cancelling in-flight calls) and removes the socket file. */
  async stop(): Promise<void> {
    await new Promise<void>((ok) => {
      const t = setTimeout(() => {
        this.server.forceShutdown();
        ok();
      }, 200);
      this.server.tryShutdown(() => {
        clearTimeout(t);
        ok();
      });
    });
    try {
      unlinkSync(this.socketPath);
    } catch {
      /* already gone */
    }
  }

  // ------------------------------------------------------------ test controls

  /** Makes the next `times` (default 1) calls of `method` ('*' = any RPC) fail with `code` and `message`. */
  failNext(method: string, code: grpc.status, message: string, times = 1): void {
    const list = this.faults.get(method) ?? [];
    list.push({ code, message, times });
    this.faults.set(method, list);
  }

  /** Removes all pending injected faults. */
  clearFaults(): void {
    this.faults.clear();
  }

  /** Delays every call of `method` ('*' = any RPC) by `ms` before it is handled; 0 removes the delay. */
  delay(method: string, ms: number): void {
    if (ms > 0) this.delays.set(method, ms);
    else this.delays.delete(method);
  }

  /** Removes every injected delay. */
  clearDelays(): void {
    this.delays.clear();
  }

  /** Resets call counters and the request log (state is kept). */
  resetCalls(): void {
    for (const k of Object.keys(this.calls)) this.calls[k] = 0;
    this.requests = [];
  }

  /** Requests received for one RPC, in order. */
  requestsOf(method: string): any[] {
    return this.requests.filter((r) => r.method === method).map((r) => r.request);
  }

  /**
   * Adds an image to the fake registry so PullImage finds it; `present: true` also puts it in
   * the local store; `auth` makes the registry require those credentials. Returns the image.
   */
  addImage(ref: string, opts: { present?: boolean; size?: number; auth?: { username: string; password: string } } = {}): FakeImage {
    const tag = normalizeImageRef(ref);
    const existing = this.lookup(this.registry, tag) ?? this.lookup(this.local, tag);
    const repo = tag.replace(/[:@][^/]*$/, '');
    const id = existing?.id ?? `sha256:${sha256(`config:${tag}`)}`;
    const img: FakeImage = existing ?? {
      id,
      repoTags: tag.includes('@') ? [] : [tag],
      repoDigests: [`${repo}@sha256:${sha256(`manifest:${tag}`)}`],
      size: opts.size ?? 2_000_000,
    };
    if (opts.auth) img.auth = opts.auth;
    if (opts.size) img.size = opts.size;
    this.registry.set(id, img);
    if (opts.present) this.local.set(id, img);
    return img;
  }

  /** Removes an image from the local store only (the registry still serves it). */
  deleteLocalImage(ref: string): void {
    const img = this.lookup(this.local, ref);
    if (img) this.local.delete(img.id);
  }

  /** Images present locally. */
  images(): FakeImage[] {
    return [...this.local.values()];
  }

  /** Simulates the container's process exiting (RUNNING or CREATED -> EXITED). Reason defaults to Completed/Error. */
  exitContainer(id: string, exitCode: number, reason?: string, message = ''): void {
    const c = this.mustContainer(id);
    this.finish(c, exitCode, reason, message);
  }

  /** Simulates the sandbox dying (e.g. pause killed): NOTREADY and all its containers exit with 137. */
  exitSandbox(id: string): void {
    const s = this.mustSandbox(id);
    this.stopSandbox(s);
  }

  /** Sets the runtime handlers (and their features) Status reports, as containerd 2.x does. */
  private handlers: Array<{ name: string; features: { userNamespaces?: boolean; recursiveReadOnlyMounts?: boolean } }> = [];

  setRuntimeHandlers(handlers: Array<{ name: string; features: { userNamespaces?: boolean; recursiveReadOnlyMounts?: boolean } }>): void {
    this.handlers = handlers;
  }

  /** Sets a runtime condition reported by Status (e.g. setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni config uninitialized')). */
  setCondition(type: string, status: boolean, reason = '', message = ''): void {
    this.conditions.set(type, { status, reason, message });
  }

  /** Sets the stats ContainerStats / ListContainerStats report for a container. */
  setContainerStats(id: string, s: { usageCoreNanoSeconds?: number; usageNanoCores?: number; workingSetBytes?: number; writableLayerBytes?: number }): void {
    this.stats.set(this.mustContainer(id).id, s);
  }

  /** Installs a handler for ExecSync (default: exit code 0, empty output). Pass undefined to reset. */
  onExecSync(fn: ExecSyncHandler | undefined): void {
    this.execHandler = fn;
  }

  /** Snapshot of all sandboxes (live objects; do not mutate unless you mean to). */
  sandboxes(): FakeSandbox[] {
    return [...this.sandboxMap.values()];
  }

  /** Snapshot of all containers. */
  containers(): FakeContainer[] {
    return [...this.containerMap.values()];
  }

  /** The sandbox with this id (or unique id prefix), if any. */
  sandbox(id: string): FakeSandbox | undefined {
    return this.findById(this.sandboxMap, id);
  }

  /** The container with this id (or unique id prefix), if any. */
  container(id: string): FakeContainer | undefined {
    return this.findById(this.containerMap, id);
  }

  /** Pod CIDR last set by UpdateRuntimeConfig. */
  get lastPodCidr(): string {
    return this.podCidr;
  }

  // ------------------------------------------------------------ plumbing

  private buildImpl(
    service: grpc.ServiceDefinition,
    handlers: Record<string, (req: any) => any>,
  ): grpc.UntypedServiceImplementation {
    const impl: grpc.UntypedServiceImplementation = {};
    for (const [method, def] of Object.entries(service)) {
      const handler = handlers[method];
      if (def.responseStream) {
        // Only GetContainerEvents: containerd 1.6 does not implement it.
        impl[method] = (call: grpc.ServerWritableStream<any, any>) => {
          this.record(method, call.request);
          call.emit('error', { code: grpc.status.UNIMPLEMENTED, details: `unknown method ${method} for service ${def.path.split('/')[1]}` });
        };
        continue;
      }
      impl[method] = (call: grpc.ServerUnaryCall<any, any>, callback: grpc.sendUnaryData<any>) => {
        this.record(method, call.request);
        void this.run(method, call.request, handler).then(
          (res) => callback(null, res),
          (err: unknown) => {
            if (err instanceof CriError) callback({ code: err.code, details: err.message });
            else callback({ code: grpc.status.UNKNOWN, details: err instanceof Error ? err.message : String(err) });
          },
        );
      };
    }
    return impl;
  }

  private record(method: string, request: any): void {
    this.calls[method] = (this.calls[method] ?? 0) + 1;
    this.requests.push({ method, request });
  }

  private async run(method: string, request: any, handler: ((req: any) => any) | undefined): Promise<any> {
    const now = (this.inFlight.get(method) ?? 0) + 1;
    this.inFlight.set(method, now);
    this.maxInFlight[method] = Math.max(this.maxInFlight[method] ?? 0, now);
    try {
      const ms = this.delays.get(method) ?? this.delays.get('*') ?? 0;
      if (ms > 0) await sleep(ms);
      const fault = this.takeFault(method) ?? this.takeFault('*');
      if (fault) throw new CriError(fault.code, fault.message);
      if (!handler) throw new CriError(grpc.status.UNIMPLEMENTED, `unknown method ${method}`);
      return await handler(request);
    } finally {
      this.inFlight.set(method, this.inFlight.get(method)! - 1);
    }
  }

  private takeFault(method: string): { code: grpc.status; message: string } | undefined {
    const list = this.faults.get(method);
    const f = list?.[0];
    if (!list || !f) return undefined;
    f.times -= 1;
    if (f.times <= 0) list.shift();
    if (list.length === 0) this.faults.delete(method);
    return f;
  }

  private nowNs(): bigint {
    let ns = BigInt(Date.now()) * 1_000_000n + (process.hrtime.bigint() % 1_000_000n);
    if (ns <= this.lastNs) ns = this.lastNs + 1n;
    this.lastNs = ns;
    return ns;
  }

  private findById<T>(map: Map<string, T>, id: string): T | undefined {
    if (!id) return undefined;
    const exact = map.get(id);
    if (exact) return exact;
    // containerd accepts unique id prefixes (truncindex).
    const hits = [...map.entries()].filter(([k]) => k.startsWith(id));
    return hits.length === 1 ? hits[0]![1] : undefined;
  }

  private mustSandbox(id: string): FakeSandbox {
    const s = this.findById(this.sandboxMap, id);
    if (!s) throw notFound(`an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  private mustContainer(id: string): FakeContainer {
    const c = this.findById(this.containerMap, id);
    if (!c) throw notFound(`an error occurred when try to find container "${id}": not found`);
    return c;
  }

  private lookup(store: Map<string, FakeImage>, ref: string): FakeImage | undefined {
    if (!ref) return undefined;
    const byId = store.get(ref) ?? store.get(`sha256:${ref}`);
    if (byId) return byId;
    const n = normalizeImageRef(ref);
    for (const img of store.values()) {
      if (img.repoTags.includes(n) || img.repoDigests.includes(n)) return img;
    }
    return undefined;
  }

  private finish(c: FakeContainer, exitCode: number, reason?: string, message = ''): void {
    if (c.state === 'CONTAINER_EXITED') return;
    c.state = 'CONTAINER_EXITED';
    c.finishedAt = this.nowNs();
    c.exitCode = exitCode;
    c.reason = reason ?? (exitCode === 0 ? 'Completed' : 'Error');
    c.message = message;
    c.pid = 0;
  }

  private stopSandbox(s: FakeSandbox): void {
    for (const c of this.containerMap.values()) {
      if (c.podSandboxId === s.id && (c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN')) {
        this.finish(c, 137);
      }
    }
    s.state = 'SANDBOX_NOTREADY';
    s.pid = 0;
  }

  private sandboxOut(s: FakeSandbox) {
    return {
      id: s.id,
      metadata: s.metadata,
      state: s.state,
      createdAt: s.createdAt.toString(),
      labels: s.labels,
      annotations: s.annotations,
      runtimeHandler: s.runtimeHandler,
    };
  }

  private containerOut(c: FakeContainer) {
    return {
      id: c.id,
      podSandboxId: c.podSandboxId,
      metadata: c.metadata,
      image: c.image,
      imageRef: c.imageId,
      state: c.state,
      createdAt: c.createdAt.toString(),
      labels: c.labels,
      annotations: c.annotations,
    };
  }

  private containerStatusOut(c: FakeContainer) {
    // As containerd 1.6: image = first repo tag, imageRef = first repo digest (else the id).
    const img = this.local.get(c.imageId) ?? this.registry.get(c.imageId);
    const image = img?.repoTags[0] ? { image: img.repoTags[0], annotations: {} } : c.image;
    const imageRef = img?.repoDigests[0] ?? c.imageId;
    return {
      id: c.id,
      metadata: c.metadata,
      state: c.state,
      createdAt: c.createdAt.toString(),
      startedAt: c.startedAt.toString(),
      finishedAt: c.finishedAt.toString(),
      exitCode: c.exitCode,
      image,
      imageRef,
      reason: c.reason,
      message: c.message,
      labels: c.labels,
      annotations: c.annotations,
      mounts: c.mounts,
      logPath: c.logPath,
      resources: c.resources ? { linux: c.resources } : null,
    };
  }

  private imageOut(img: FakeImage) {
    return {
      id: img.id,
      repoTags: img.repoTags,
      repoDigests: img.repoDigests,
      size: String(img.size),
      uid: null,
      username: '',
      spec: null,
      pinned: false,
    };
  }

  private containerStatsOut(c: FakeContainer) {
    const ts = this.nowNs().toString();
    const s = this.stats.get(c.id) ?? {};
    const u64 = (v: number | undefined) => ({ value: String(v ?? 0) });
    return {
      attributes: { id: c.id, metadata: c.metadata, labels: c.labels, annotations: c.annotations },
      cpu: { timestamp: ts, usageCoreNanoSeconds: u64(s.usageCoreNanoSeconds), usageNanoCores: u64(s.usageNanoCores) },
      memory: { timestamp: ts, workingSetBytes: u64(s.workingSetBytes) },
      writableLayer: {
        timestamp: ts,
        fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
        usedBytes: u64(s.writableLayerBytes),
        inodesUsed: u64(0),
      },
    };
  }

  private sandboxStatsOut(s: FakeSandbox) {
    const ts = this.nowNs().toString();
    const cs = [...this.containerMap.values()].filter((c) => c.podSandboxId === s.id && c.state === 'CONTAINER_RUNNING');
    const stats = cs.map((c) => this.containerStatsOut(c));
    const sum = (f: (x: (typeof stats)[number]) => string) => ({ value: String(stats.reduce((a, x) => a + Number(f(x)), 0)) });
    return {
      attributes: { id: s.id, metadata: s.metadata, labels: s.labels, annotations: s.annotations },
      linux: {
        cpu: { timestamp: ts, usageCoreNanoSeconds: sum((x) => x.cpu.usageCoreNanoSeconds.value), usageNanoCores: sum((x) => x.cpu.usageNanoCores.value) },
        memory: { timestamp: ts, workingSetBytes: sum((x) => x.memory.workingSetBytes.value) },
        network: s.hostNetwork ? null : {
          timestamp: ts,
          defaultInterface: { name: 'eth0', rxBytes: { value: '0' }, rxErrors: { value: '0' }, txBytes: { value: '0' }, txErrors: { value: '0' } },
          interfaces: [],
        },
        process: { timestamp: ts, processCount: { value: String(cs.length + 1) } },
        containers: stats,
      },
    };
  }

  // ------------------------------------------------------------ RuntimeService

  private runtimeHandlers(): Record<string, (req: any) => any> {
    const labelsMatch = (labels: Record<string, string>, sel: Record<string, string> | undefined) =>
      Object.entries(sel ?? {}).every(([k, v]) => labels[k] === v);

    return {
      Version: () => ({
        version: '0.1.0',
        runtimeName: this.opts.runtimeName,
        runtimeVersion: this.opts.runtimeVersion,
        runtimeApiVersion: 'v1',
      }),

      RunPodSandbox: (req) => {
        const config = req.config ?? {};
        const md = config.metadata;
        if (!md || !md.name || !md.namespace) {
          throw new CriError(grpc.status.UNKNOWN, 'sandbox config must include metadata');
        }
        const name = `${md.name}_${md.namespace}_${md.uid}_${md.attempt ?? 0}`;
        const owner = this.names.get(name);
        if (owner) {
          throw new CriError(grpc.status.UNKNOWN, `failed to reserve sandbox name "${name}": name "${name}" is reserved for "${owner}"`);
        }
        const id = randomId();
        const hostNetwork = config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
        const ip = hostNetwork ? '' : `10.88.${Math.floor(this.nextIp / 254) % 256}.${(this.nextIp % 254) + 1}`;
        if (!hostNetwork) this.nextIp++;
        const s: FakeSandbox = {
          id,
          metadata: { name: md.name, uid: md.uid ?? '', namespace: md.namespace, attempt: md.attempt ?? 0 },
          state: 'SANDBOX_READY',
          createdAt: this.nowNs(),
          config,
          runtimeHandler: req.runtimeHandler ?? '',
          labels: { ...(config.labels ?? {}) },
          annotations: { ...(config.annotations ?? {}) },
          hostNetwork,
          ip,
          netnsPath: hostNetwork ? '' : `/var/run/netns/cni-${randomBytes(16).toString('hex').replace(/^(.{8})(.{4})(.{4})(.{4})(.{12})$/, '$1-$2-$3-$4-$5')}`,
          pid: this.nextPid++,
        };
        this.names.set(name, id);
        this.sandboxMap.set(id, s);
        return { podSandboxId: id };
      },

      StopPodSandbox: (req) => {
        this.stopSandbox(this.mustSandbox(req.podSandboxId));
        return {};
      },

      RemovePodSandbox: (req) => {
        const s = this.findById(this.sandboxMap, req.podSandboxId);
        if (!s) return {}; // idempotent, as containerd
        this.stopSandbox(s);
        for (const c of [...this.containerMap.values()]) {
          if (c.podSandboxId === s.id) this.removeContainer(c);
        }
        for (const [n, owner] of this.names) if (owner === s.id) this.names.delete(n);
        this.sandboxMap.delete(s.id);
        return {};
      },

      PodSandboxStatus: (req) => {
        const s = this.mustSandbox(req.podSandboxId);
        const nsOpts = s.config.linux?.securityContext?.namespaceOptions ?? null;
        const status = {
          ...this.sandboxOut(s),
          network: { ip: s.ip, additionalIps: [] },
          linux: { namespaces: { options: nsOpts } },
        };
        const info: Record<string, string> = {};
        if (req.verbose) {
          const namespaces: Array<{ type: string; path?: string }> = [{ type: 'pid' }, { type: 'ipc' }, { type: 'uts' }, { type: 'mount' }];
          if (!s.hostNetwork) namespaces.push({ type: 'network', path: s.netnsPath });
          info.info = JSON.stringify({
            pid: s.pid,
            processStatus: s.state === 'SANDBOX_READY' ? 'running' : 'stopped',
            netNamespaceClosed: s.state !== 'SANDBOX_READY',
            image: 'registry.k8s.io/pause:3.6',
            runtimeHandler: s.runtimeHandler,
            runtimeType: 'io.containerd.runc.v2',
            config: s.config,
            runtimeSpec: { hostname: s.config.hostname ?? '', linux: { namespaces } },
          });
        }
        return { status, info, containersStatuses: [], timestamp: '0' };
      },

      ListPodSandbox: (req) => {
        const f = req.filter;
        let items = [...this.sandboxMap.values()];
        if (f) {
          if (f.id) {
            const s = this.findById(this.sandboxMap, f.id);
            items = s ? [s] : [];
          }
          if (f.state) items = items.filter((s) => s.state === f.state.state);
          items = items.filter((s) => labelsMatch(s.labels, f.labelSelector));
        }
        return { items: items.map((s) => this.sandboxOut(s)) };
      },

      CreateContainer: (req) => {
        const config = req.config ?? {};
        const s = this.findById(this.sandboxMap, req.podSandboxId);
        if (!s) throw notFound(`failed to find sandbox id "${req.podSandboxId}": not found`);
        if (s.state !== 'SANDBOX_READY') {
          throw new CriError(grpc.status.UNKNOWN, `failed to create containerd container: sandbox "${s.id}" is not running: no running task found: not found`);
        }
        const md = config.metadata;
        if (!md || !md.name) throw new CriError(grpc.status.UNKNOWN, 'container config must include metadata');
        const imageRef: string = config.image?.image ?? '';
        const img = this.lookup(this.local, imageRef);
        if (!img) {
          throw notFound(`failed to resolve image "${imageRef ? normalizeImageRef(imageRef) : imageRef}": no such image: not found`);
        }
        const sm = s.metadata;
        const name = `${md.name}_${sm.name}_${sm.namespace}_${sm.uid}_${md.attempt ?? 0}`;
        const owner = this.names.get(name);
        if (owner) {
          throw new CriError(grpc.status.UNKNOWN, `failed to reserve container name "${name}": name "${name}" is reserved for "${owner}"`);
        }
        const id = randomId();
        const logDir: string = s.config.logDirectory ?? '';
        const c: FakeContainer = {
          id,
          podSandboxId: s.id,
          metadata: { name: md.name, attempt: md.attempt ?? 0 },
          state: 'CONTAINER_CREATED',
          createdAt: this.nowNs(),
          startedAt: 0n,
          finishedAt: 0n,
          exitCode: 0,
          reason: '',
          message: '',
          image: config.image,
          imageId: img.id,
          labels: { ...(config.labels ?? {}) },
          annotations: { ...(config.annotations ?? {}) },
          mounts: config.mounts ?? [],
          logPath: config.logPath ? (logDir ? join(logDir, config.logPath) : config.logPath) : '',
          config,
          resources: config.linux?.resources ?? null,
          pid: 0,
        };
        this.names.set(name, id);
        this.containerMap.set(id, c);
        return { containerId: id };
      },

      StartContainer: (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state !== 'CONTAINER_CREATED') {
          throw new CriError(grpc.status.UNKNOWN, `failed to set starting state for container "${c.id}": container is in ${c.state} state`);
        }
        const s = this.sandboxMap.get(c.podSandboxId);
        if (!s || s.state !== 'SANDBOX_READY') {
          throw new CriError(grpc.status.UNKNOWN, `sandbox container "${c.podSandboxId}" is not running`);
        }
        c.state = 'CONTAINER_RUNNING';
        c.startedAt = this.nowNs();
        c.pid = this.nextPid++;
        return {};
      },

      StopContainer: (req) => {
        const c = this.mustContainer(req.containerId);
        // As containerd: only RUNNING/UNKNOWN containers are stopped; others are left as they are.
        if (c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_UNKNOWN') this.finish(c, this.opts.stopExitCode);
        return {};
      },

      RemoveContainer: (req) => {
        const c = this.findById(this.containerMap, req.containerId);
        if (c) this.removeContainer(c); // idempotent, as containerd
        return {};
      },

      ListContainers: (req) => {
        const f = req.filter;
        let items = [...this.containerMap.values()];
        if (f) {
          if (f.id) {
            const c = this.findById(this.containerMap, f.id);
            items = c ? [c] : [];
          }
          if (f.podSandboxId) {
            const s = this.findById(this.sandboxMap, f.podSandboxId);
            items = s ? items.filter((c) => c.podSandboxId === s.id) : [];
          }
          if (f.state) items = items.filter((c) => c.state === f.state.state);
          items = items.filter((c) => labelsMatch(c.labels, f.labelSelector));
        }
        return { containers: items.map((c) => this.containerOut(c)) };
      },

      ContainerStatus: (req) => {
        const c = this.mustContainer(req.containerId);
        const info: Record<string, string> = {};
        if (req.verbose) {
          info.info = JSON.stringify({
            sandboxID: c.podSandboxId,
            pid: c.pid,
            removing: false,
            snapshotKey: c.id,
            snapshotter: 'overlayfs',
            runtimeType: 'io.containerd.runc.v2',
            config: c.config,
          });
        }
        return { status: this.containerStatusOut(c), info };
      },

      UpdateContainerResources: (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state === 'CONTAINER_EXITED') {
          throw new CriError(grpc.status.UNKNOWN, `failed to update resources: container "${c.id}" is in CONTAINER_EXITED state`);
        }
        if (req.linux) c.resources = req.linux;
        return {};
      },

      ReopenContainerLog: (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state !== 'CONTAINER_RUNNING') throw new CriError(grpc.status.UNKNOWN, 'container is not running');
        return {};
      },

      ExecSync: async (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state !== 'CONTAINER_RUNNING') {
          throw new CriError(grpc.status.UNKNOWN, `failed to exec in container: container is in ${c.state} state`);
        }
        const r = this.execHandler ? await this.execHandler({ containerId: c.id, cmd: req.cmd ?? [], timeout: Number(req.timeout ?? 0) }, c) : {};
        return {
          stdout: Buffer.from(r.stdout ?? ''),
          stderr: Buffer.from(r.stderr ?? ''),
          exitCode: r.exitCode ?? 0,
        };
      },

      Exec: (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state !== 'CONTAINER_RUNNING') throw new CriError(grpc.status.UNKNOWN, `container is in ${c.state} state`);
        return { url: `${this.opts.streamingUrlBase}/exec/${randomBytes(4).toString('hex')}` };
      },

      Attach: (req) => {
        const c = this.mustContainer(req.containerId);
        if (c.state !== 'CONTAINER_RUNNING') throw new CriError(grpc.status.UNKNOWN, `container is in ${c.state} state`);
        return { url: `${this.opts.streamingUrlBase}/attach/${randomBytes(4).toString('hex')}` };
      },

      PortForward: (req) => {
        const s = this.mustSandbox(req.podSandboxId);
        if (s.state !== 'SANDBOX_READY') throw new CriError(grpc.status.FAILED_PRECONDITION, `sandbox container "${s.id}" is not running`);
        return { url: `${this.opts.streamingUrlBase}/portforward/${randomBytes(4).toString('hex')}` };
      },

      ContainerStats: (req) => ({ stats: this.containerStatsOut(this.mustContainer(req.containerId)) }),

      ListContainerStats: (req) => {
        const f = req.filter;
        let items = [...this.containerMap.values()];
        if (f) {
          if (f.id) items = items.filter((c) => c.id.startsWith(f.id));
          if (f.podSandboxId) items = items.filter((c) => c.podSandboxId.startsWith(f.podSandboxId));
          items = items.filter((c) => labelsMatch(c.labels, f.labelSelector));
        }
        return { stats: items.map((c) => this.containerStatsOut(c)) };
      },

      PodSandboxStats: (req) => ({ stats: this.sandboxStatsOut(this.mustSandbox(req.podSandboxId)) }),

      ListPodSandboxStats: (req) => {
        const f = req.filter;
        let items = [...this.sandboxMap.values()].filter((s) => s.state === 'SANDBOX_READY');
        if (f) {
          if (f.id) items = items.filter((s) => s.id.startsWith(f.id));
          items = items.filter((s) => labelsMatch(s.labels, f.labelSelector));
        }
        return { stats: items.map((s) => this.sandboxStatsOut(s)) };
      },

      UpdateRuntimeConfig: (req) => {
        this.podCidr = req.runtimeConfig?.networkConfig?.podCidr ?? '';
        return {};
      },

      Status: (req) => ({
        status: {
          conditions: [...this.conditions.entries()].map(([type, c]) => ({ type, ...c })),
        },
        info: req.verbose ? { config: JSON.stringify({ runtimeName: this.opts.runtimeName, podCidr: this.podCidr }) } : {},
        runtimeHandlers: this.handlers,
        features: null,
      }),
    };
  }

  private removeContainer(c: FakeContainer): void {
    this.finish(c, this.opts.stopExitCode);
    for (const [n, owner] of this.names) if (owner === c.id) this.names.delete(n);
    this.containerMap.delete(c.id);
    this.stats.delete(c.id);
  }

  // ------------------------------------------------------------ ImageService

  private imageHandlers(): Record<string, (req: any) => any> {
    return {
      // containerd 1.6 ignores the filter; so do we.
      ListImages: () => ({ images: [...this.local.values()].map((i) => this.imageOut(i)) }),

      ImageStatus: (req) => {
        const img = this.lookup(this.local, req.image?.image ?? '');
        if (!img) return { image: null, info: {} };
        const info: Record<string, string> = req.verbose
          ? { info: JSON.stringify({ imageSpec: { architecture: 'amd64', os: 'linux', config: {} } }) }
          : {};
        return { image: this.imageOut(img), info };
      },

      PullImage: (req) => {
        const ref: string = req.image?.image ?? '';
        const n = ref ? normalizeImageRef(ref) : ref;
        const img = this.lookup(this.registry, ref);
        if (!img) {
          throw notFound(`failed to pull and unpack image "${n}": failed to resolve reference "${n}": ${n}: not found`);
        }
        if (img.auth) {
          const a = req.auth ?? {};
          let user: string = a.username ?? '';
          let pass: string = a.password ?? '';
          if (!user && a.auth) [user = '', pass = ''] = Buffer.from(a.auth, 'base64').toString().split(':');
          if (user !== img.auth.username || pass !== img.auth.password) {
            const host = n.split('/')[0];
            throw new CriError(
              grpc.status.UNKNOWN,
              `failed to pull and unpack image "${n}": failed to resolve reference "${n}": pulling from host ${host} failed with status code [manifests ${n.replace(/^.*[:@]/, '')}]: 401 Unauthorized`,
            );
          }
        }
        this.local.set(img.id, img);
        return { imageRef: img.id };
      },

      RemoveImage: (req) => {
        const img = this.lookup(this.local, req.image?.image ?? '');
        if (img) this.local.delete(img.id); // idempotent
        return {};
      },

      ImageFsInfo: () => {
        const used = [...this.local.values()].reduce((a, i) => a + i.size, 0);
        return {
          imageFilesystems: [
            {
              timestamp: this.nowNs().toString(),
              fsId: { mountpoint: '/var/lib/containerd/io.containerd.snapshotter.v1.overlayfs' },
              usedBytes: { value: String(used) },
              inodesUsed: { value: String(this.local.size * 100) },
            },
          ],
          containerFilesystems: [],
        };
      },
    };
  }
}
