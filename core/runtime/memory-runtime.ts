import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { KubeletError, errorMessage, notFound, invalidInput } from '../errors.ts';
import { signalOf, type CallOptions } from '../util/cancellation.ts';
import type {
  ContainerConfig,
  ContainerRuntime,
  ContainerState,
  ContainerStatus,
  ContainerSummary,
  ExecResult,
  ImageInfo,
  PodSandboxConfig,
  PullAuth,
  PullProgress,
  RuntimeCondition,
  RuntimeVersion,
  SandboxStatus,
  SandboxSummary,
} from './types.ts';

/**
 * A container runtime held in memory: the `runtime` slot without containerd, for fast tests of
 * the core and of plugins that use the runtime (probes, networks, volumes). It keeps the
 * runtime contract (`describeRuntimeContract` passes against it) and simulates processes by
 * their command:
 *
 * - `['exit', 'N']` exits at once with code N; `['echo', ...words]` writes the words to the
 *   container's log and exits 0;
 * - anything else runs until stopped (exit code 137, reason `Error`, as a killed process);
 * - exec: `echo` prints its arguments, `true`/`false` exit 0/1, `exit N` exits N, anything
 *   else exits 127 with `<cmd>: not found` on stderr, as a shell would.
 *
 * Every call honours its signal (`options.signal`): refused when it is already aborted, and a
 * slow pull (with `pulls`) stops when it aborts. Images are present once pulled (or listed in `images`); nothing is ever really run. With
 * `pulls`, a pull of an absent image takes as long as downloading `bytes` at `bytesPerSecond`
 * would, and `pullProgress` reports it as one download (as containerd reports a layer), so
 * tests can watch pull progress without a registry.
 */
export class MemoryRuntime implements ContainerRuntime {
  private readonly sandboxes = new Map<string, { summary: SandboxSummary; config: PodSandboxConfig; runtimeHandler: string }>();
  private readonly containers = new Map<string, { status: ContainerStatus; config: ContainerConfig; logFile: string }>();
  private readonly images = new Map<string, ImageInfo>();
  private readonly downloads = new Map<string, { startedAt: number; totalBytes: number }>();
  private readonly pulls: { bytes: number; bytesPerSecond: number } | undefined;

  constructor(options: { images?: string[]; pulls?: { bytes: number; bytesPerSecond: number } } = {}) {
    for (const image of options.images ?? []) this.addImage(image);
    this.pulls = options.pulls;
  }

  async version(options?: CallOptions): Promise<RuntimeVersion> {
    refuseIfAborted(options);
    return { runtimeName: 'memory', runtimeVersion: '0.1.0', runtimeApiVersion: 'v1' };
  }

  async status(options?: CallOptions): Promise<RuntimeCondition[]> {
    refuseIfAborted(options);
    return [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ];
  }

  async runPodSandbox(config: PodSandboxConfig, runtimeHandler = '', options?: CallOptions): Promise<string> {
    refuseIfAborted(options);
    if (!config.metadata?.name || !config.metadata.uid) throw invalidInput('sandbox metadata needs a name and a uid');
    // As runc refuses it: the node's network namespace comes with the node's UTS namespace.
    if (config.hostname && config.linux?.securityContext?.namespaceOptions?.network === 'NODE') throw invalidInput('unable to set hostname without a private UTS namespace');
    const id = newId();
    this.sandboxes.set(id, {
      summary: { id, metadata: { ...config.metadata }, state: 'SANDBOX_READY', createdAt: Date.now(), labels: { ...config.labels }, annotations: { ...config.annotations } },
      config,
      runtimeHandler,
    });
    return id;
  }

  async stopPodSandbox(id: string, options?: CallOptions): Promise<void> {
    refuseIfAborted(options);
    const s = this.sandbox(id);
    for (const c of this.containers.values()) if (c.status.podSandboxId === id) this.exit(c.status, 137, 'Error');
    s.summary.state = 'SANDBOX_NOTREADY';
  }

  async removePodSandbox(id: string, options?: CallOptions): Promise<void> {
    refuseIfAborted(options);
    if (!this.sandboxes.has(id)) return; // NotFound counts as done
    for (const [cid, c] of this.containers) if (c.status.podSandboxId === id) this.containers.delete(cid);
    this.sandboxes.delete(id);
  }

  async podSandboxStatus(id: string, options?: CallOptions): Promise<SandboxStatus> {
    refuseIfAborted(options);
    const s = this.sandbox(id);
    const hostNetwork = s.config.linux?.securityContext?.namespaceOptions?.network === 'NODE';
    return { ...copy(s.summary), ip: hostNetwork ? '' : `10.244.0.${(hash(id) % 250) + 2}`, additionalIps: [] };
  }

  async listPodSandboxes(filter: { labelSelector?: Record<string, string> } = {}, options?: CallOptions): Promise<SandboxSummary[]> {
    refuseIfAborted(options);
    return [...this.sandboxes.values()].map((s) => s.summary).filter((s) => matches(s.labels, filter.labelSelector)).map(copySummary);
  }

  async createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, options?: CallOptions): Promise<string> {
    refuseIfAborted(options);
    const s = this.sandbox(sandboxId);
    if (s.summary.state !== 'SANDBOX_READY') throw invalidInput(`sandbox ${sandboxId} is not ready`);
    const image = this.images.get(config.image.image);
    if (!image) throw notFound(`image "${config.image.image}" not found`);
    const id = newId();
    const logFile = config.logPath ? path.join(sandboxConfig.logDirectory || s.config.logDirectory, config.logPath) : '';
    this.containers.set(id, {
      config,
      logFile,
      status: {
        id, podSandboxId: sandboxId, metadata: { ...config.metadata }, image: config.image.image, imageRef: image.id, state: 'CONTAINER_CREATED',
        createdAt: Date.now(), startedAt: 0, finishedAt: 0, exitCode: 0, reason: '', message: '', logPath: logFile,
        labels: { ...config.labels }, annotations: { ...config.annotations }, mounts: config.mounts.map((m) => ({ ...m })),
      },
    });
    return id;
  }

  async startContainer(id: string, options?: CallOptions): Promise<void> {
    refuseIfAborted(options);
    const c = this.container(id);
    if (c.status.state !== 'CONTAINER_CREATED') throw invalidInput(`container ${id} is ${c.status.state}, not CONTAINER_CREATED`);
    c.status.state = 'CONTAINER_RUNNING';
    c.status.startedAt = Date.now();
    const argv = [...c.config.command, ...c.config.args];
    if (argv[0] === 'exit') this.exit(c.status, Number(argv[1] ?? 0), Number(argv[1] ?? 0) === 0 ? 'Completed' : 'Error');
    else if (argv[0] === 'echo') {
      if (c.logFile) {
        await fs.mkdir(path.dirname(c.logFile), { recursive: true });
        await fs.appendFile(c.logFile, `${new Date().toISOString()} stdout F ${argv.slice(1).join(' ')}\n`);
      }
      this.exit(c.status, 0, 'Completed');
    }
  }

  async stopContainer(id: string, _timeoutSeconds: number, options?: CallOptions): Promise<void> {
    refuseIfAborted(options);
    const c = this.container(id);
    if (c.status.state === 'CONTAINER_RUNNING') this.exit(c.status, 137, 'Error');
    else if (c.status.state === 'CONTAINER_CREATED') this.exit(c.status, 0, '');
  }

  async removeContainer(id: string, options?: CallOptions): Promise<void> {
    refuseIfAborted(options);
    const c = this.containers.get(id);
    if (!c) return; // NotFound counts as done
    if (c.status.state === 'CONTAINER_RUNNING') throw invalidInput(`container ${id} is running: stop it first`);
    this.containers.delete(id);
  }

  async listContainers(filter: { labelSelector?: Record<string, string>; podSandboxId?: string } = {}, options?: CallOptions): Promise<ContainerSummary[]> {
    refuseIfAborted(options);
    return [...this.containers.values()]
      .map((c) => c.status)
      .filter((s) => (!filter.podSandboxId || s.podSandboxId === filter.podSandboxId) && matches(s.labels, filter.labelSelector))
      .map(({ startedAt: _s, finishedAt: _f, exitCode: _e, reason: _r, message: _m, logPath: _l, mounts: _mo, ...summary }) => copySummary(summary));
  }

  async containerStatus(id: string, options?: CallOptions): Promise<ContainerStatus> {
    refuseIfAborted(options);
    return copy(this.container(id).status);
  }

  async execSync(id: string, cmd: string[], _timeoutSeconds: number, options?: CallOptions): Promise<ExecResult> {
    refuseIfAborted(options);
    const c = this.container(id);
    if (c.status.state !== 'CONTAINER_RUNNING') throw invalidInput(`container ${id} is not running`);
    const out = (stdout: string, exitCode = 0, stderr = ''): ExecResult => ({ stdout: Buffer.from(stdout), stderr: Buffer.from(stderr), exitCode });
    switch (cmd[0]) {
      case 'echo': return out(`${cmd.slice(1).join(' ')}\n`);
      case 'true': return out('');
      case 'false': return out('', 1);
      case 'exit': return out('', Number(cmd[1] ?? 0));
      default: return out('', 127, `${cmd[0]}: not found\n`);
    }
  }

  async imageStatus(image: string, options?: CallOptions): Promise<ImageInfo | null> {
    refuseIfAborted(options);
    const i = this.images.get(image);
    return i ? copy(i) : null;
  }

  async pullImage(image: string, _auth?: PullAuth, _sandboxConfig?: PodSandboxConfig, options?: CallOptions): Promise<string> {
    refuseIfAborted(options);
    if (!image) throw invalidInput('no image given');
    if (this.pulls && !this.images.has(image)) {
      const { bytes, bytesPerSecond } = this.pulls;
      const ref = `layer-sha256:${crypto.createHash('sha256').update(image).digest('hex')}`;
      this.downloads.set(ref, { startedAt: Date.now(), totalBytes: bytes });
      try {
        // A pull stops when its signal aborts (the runtime contract's cancellation rule).
        const signal = signalOf(options);
        await new Promise<void>((resolve, reject) => {
          const abort = () => {
            clearTimeout(timer);
            reject(cancelled(signal));
          };
          const timer = setTimeout(() => {
            signal.removeEventListener('abort', abort);
            resolve();
          }, Math.min(60_000, (bytes / bytesPerSecond) * 1000));
          signal.addEventListener('abort', abort, { once: true });
        });
      } finally {
        this.downloads.delete(ref);
      }
      const info = this.addImage(image);
      info.size = bytes;
      return info.id;
    }
    return this.addImage(image).id;
  }

  /** The downloads of pulls in flight (with `pulls`): bytes grow at `bytesPerSecond`. */
  async pullProgress(options?: CallOptions): Promise<PullProgress[]> {
    refuseIfAborted(options);
    const now = Date.now();
    const rate = this.pulls?.bytesPerSecond ?? 0;
    return [...this.downloads].map(([ref, d]) => ({
      ref, totalBytes: d.totalBytes, offsetBytes: Math.min(d.totalBytes, Math.floor(((now - d.startedAt) / 1000) * rate)), startedAt: d.startedAt, updatedAt: now,
    }));
  }

  async listImages(options?: CallOptions): Promise<ImageInfo[]> {
    refuseIfAborted(options);
    return [...new Set(this.images.values())].map(copy);
  }

  async close(): Promise<void> {}

  private addImage(image: string): ImageInfo {
    const info = this.images.get(image) ?? { id: `sha256:${crypto.createHash('sha256').update(image).digest('hex')}`, repoTags: [image], repoDigests: [], size: 1 << 20 };
    this.images.set(image, info);
    this.images.set(info.id, info);
    return info;
  }

  private exit(s: ContainerStatus, exitCode: number, reason: string): void {
    if (s.state === 'CONTAINER_EXITED') return;
    s.state = 'CONTAINER_EXITED' satisfies ContainerState;
    s.finishedAt = Date.now();
    s.exitCode = exitCode;
    s.reason = reason;
  }

  private sandbox(id: string) {
    const s = this.sandboxes.get(id);
    if (!s) throw notFound(`an error occurred when try to find sandbox "${id}": not found`);
    return s;
  }

  private container(id: string) {
    const c = this.containers.get(id);
    if (!c) throw notFound(`an error occurred when try to find container "${id}": not found`);
    return c;
  }
}

const newId = () => crypto.randomBytes(32).toString('hex');
const hash = (s: string) => crypto.createHash('sha256').update(s).digest().readUInt32BE(0);
const copy = <T>(v: T): T => structuredClone(v);
/**
 * A listed sandbox or container, copied field by field: its nested parts are flat string maps,
 * and a kubelet lists both every second (structuredClone of each was most of a relist's cost
 * with hundreds of pods, as `kubelet-ts hollow` runs them).
 */
const copySummary = <T extends { metadata: object; labels: Record<string, string>; annotations: Record<string, string> }>(v: T): T => ({ ...v, metadata: { ...v.metadata }, labels: { ...v.labels }, annotations: { ...v.annotations } });
const matches = (labels: Record<string, string>, selector: Record<string, string> | undefined) => Object.entries(selector ?? {}).every(([k, v]) => labels[k] === v);

function cancelled(signal: AbortSignal): KubeletError {
  return new KubeletError('DeadlineExceeded', `memory runtime: cancelled: ${errorMessage(signal.reason)}`, { cause: signal.reason });
}

/** A call whose signal already aborted does nothing. */
function refuseIfAborted(options: CallOptions | undefined): void {
  const signal = signalOf(options);
  if (signal.aborted) throw cancelled(signal);
}
