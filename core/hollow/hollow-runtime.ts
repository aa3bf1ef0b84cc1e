import { MemoryRuntime } from '../runtime/memory-runtime.ts';
import type { ExecResult, PodSandboxConfig, RuntimeVersion, SandboxStatus } from '../runtime/types.ts';
import type { KubeletPlugin } from '../plugins/plugin-api.ts';
import { KUBELET_TS_VERSION } from '../version.ts';

/** Pod IPs of node i come from 10.(128 + i / 256).(i % 256).0/24: unique across 32,768 nodes. */
const FIRST_HOST = 2;
const LAST_HOST = 254;
export const MAX_HOLLOW_NODES = 128 * 256;

/**
 * The runtime of a hollow node: kubelet-ts/testing's MemoryRuntime (containers "run" until
 * deleted, images "pull" at once, nothing is executed), with what a node of a cluster needs
 * besides: pod IPs from a /24 of the node's own, so pods of different hollow nodes never share
 * one (an Endpoints controller under test sees distinct addresses), and an exec that succeeds,
 * as in a healthy process (lifecycle exec handlers). It reports itself as `hollow://`.
 */
export class HollowRuntime extends MemoryRuntime {
  private readonly prefix: string;
  private readonly ips = new Map<string, string>();
  private readonly used = new Set<string>();
  private next = FIRST_HOST;

  constructor(nodeIndex: number) {
    super();
    if (!Number.isInteger(nodeIndex) || nodeIndex < 0 || nodeIndex >= MAX_HOLLOW_NODES) throw new RangeError(`hollow node index ${nodeIndex} is outside 0..${MAX_HOLLOW_NODES - 1}`);
    this.prefix = `10.${128 + (nodeIndex >> 8)}.${nodeIndex & 255}.`;
  }

  override async version(): Promise<RuntimeVersion> {
    return { runtimeName: 'hollow', runtimeVersion: KUBELET_TS_VERSION, runtimeApiVersion: 'v1' };
  }

  override async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const id = await super.runPodSandbox(config, runtimeHandler);
    this.ips.set(id, this.allocate());
    return id;
  }

  override async removePodSandbox(id: string): Promise<void> {
    await super.removePodSandbox(id);
    const ip = this.ips.get(id);
    if (ip !== undefined) this.used.delete(ip);
    this.ips.delete(id);
  }

  override async podSandboxStatus(id: string): Promise<SandboxStatus> {
    const status = await super.podSandboxStatus(id);
    // hostNetwork pods have no IP of their own (the node's is theirs).
    return status.ip === '' ? status : { ...status, ip: this.ips.get(id) ?? status.ip };
  }

  override async execSync(id: string, _cmd: string[], _timeoutSeconds: number): Promise<ExecResult> {
    // Throws for a container that does not exist or is not running, as a runtime does.
    await super.execSync(id, ['true'], 0);
    return { stdout: Buffer.alloc(0), stderr: Buffer.alloc(0), exitCode: 0 };
  }

  /** The next free address of the node's /24 (an address is reused only after its sandbox is removed, or when all 253 are taken). */
  private allocate(): string {
    for (let i = 0; i <= LAST_HOST - FIRST_HOST; i++) {
      const ip = `${this.prefix}${this.next}`;
      this.next = this.next >= LAST_HOST ? FIRST_HOST : this.next + 1;
      if (!this.used.has(ip)) {
        this.used.add(ip);
        return ip;
      }
    }
    return `${this.prefix}${this.next}`;
  }
}

/** The `runtime` slot of hollow node `nodeIndex`: a HollowRuntime. */
export function hollowRuntimePlugin(nodeIndex: number): KubeletPlugin {
  return {
    name: 'hollow-runtime',
    kind: 'runtime',
    apply(ctx) {
      ctx.provide('runtime', new HollowRuntime(nodeIndex));
    },
  };
}
