import type { V1Pod } from '@kubernetes/client-node';
import { createNetworkHooks, definePlugin, invalidInput, networkHooksView, notFound, unavailable, type KubeletPlugin, type NetworkService, type NetworkSetUpEvent, type PodNetwork } from '../../core/sdk/index.ts';
import { MemoryRuntime } from '../../core/sdk/testing/index.ts';
import { hookContext } from '../../core/util/cancellation.ts';
import type { PodSandboxConfig, SandboxStatus } from '../../core/runtime/types.ts';

/**
 * An in-memory network plugin and a runtime that calls it, for unit tests of the network
 * contract's own logic (the proof is cni-exec on containerd, test/integration/network-contract.test.ts).
 * As containerd asks CNI, the runtime asks the network for a pod network in runPodSandbox and
 * takes it down on stop and remove; the network hands out 127.0.0.x addresses (loopback: the
 * host reaches them) and fires its hooks as cni-exec does. Every step is a method a test may
 * replace to break one promise of the contract (fault injection, as in the other fakes).
 */

/** What survives a "kubelet restart": the attachments and the address leases, as cni-exec's result cache and host-local's store do on disk. */
export class MemoryNetworkStore {
  readonly attachments = new Map<string, PodNetwork>();
  /** Leased IP → the sandbox holding it. */
  readonly leases = new Map<string, string>();
  /** Sandboxes whose interface a test broke: check() must see it. */
  readonly broken = new Set<string>();
}

/** The network plugin's service and its set-up/tear-down, one instance per plugin start. */
export class MemoryNetwork implements NetworkService {
  readonly hooks = createNetworkHooks();

  constructor(readonly store: MemoryNetworkStore, private readonly pods: () => V1Pod[]) {}

  async attachment(sandboxId: string, ifName = 'eth0'): Promise<PodNetwork | undefined> {
    const a = this.store.attachments.get(sandboxId);
    return a && a.ifName === ifName ? { ...a, ips: [...a.ips] } : undefined;
  }

  async check(sandboxId: string): Promise<void> {
    if (!this.store.attachments.has(sandboxId)) throw notFound(`sandbox ${sandboxId} has no attachment`);
    if (this.store.broken.has(sandboxId)) throw unavailable(`sandbox ${sandboxId}: eth0 is gone`);
  }

  /** Makes the pod network of a new sandbox (the runtime calls it, as containerd runs CNI ADD). */
  async setUp(sandboxId: string, config: PodSandboxConfig): Promise<void> {
    const pod = this.pods().find((p) => p.metadata?.uid === config.metadata.uid);
    if (!pod) throw invalidInput(`pod ${config.metadata.namespace}/${config.metadata.name} is not known`);
    const ip = this.allocate(sandboxId);
    const a: PodNetwork = { sandboxId, ifName: 'eth0', netns: `/var/run/netns/memory-${sandboxId}`, network: 'memory', ips: [ip], pod: { namespace: config.metadata.namespace, name: config.metadata.name, uid: config.metadata.uid } };
    this.store.attachments.set(sandboxId, a);
    try {
      await this.fireSetUp({ pod, sandboxId, netns: a.netns, ifName: a.ifName, network: a.network, ips: [ip] });
    } catch (err) {
      this.rollback(sandboxId);
      throw err;
    }
  }

  /** Takes a sandbox's network down; nothing to do when it has none (stop, then remove, both call it). */
  async tearDown(sandboxId: string): Promise<void> {
    const a = this.store.attachments.get(sandboxId);
    if (!a) return;
    await this.hooks.networkTearDown.promise({ pod: this.pods().find((p) => p.metadata?.uid === a.pod?.uid), podRef: a.pod, sandboxId, netns: '', ifName: a.ifName, network: a.network }, hookContext()).catch(() => {});
    this.store.attachments.delete(sandboxId);
    this.store.broken.delete(sandboxId);
    this.release(sandboxId);
  }

  fireSetUp(event: NetworkSetUpEvent): Promise<void> {
    return this.hooks.networkSetUp.promise(event, hookContext());
  }

  rollback(sandboxId: string): void {
    this.store.attachments.delete(sandboxId);
    this.release(sandboxId);
  }

  /** The lowest free 127.0.0.x (x in 2..254). */
  allocate(sandboxId: string): string {
    for (let x = 2; x < 255; x++) {
      const ip = `127.0.0.${x}`;
      if (!this.store.leases.has(ip)) {
        this.store.leases.set(ip, sandboxId);
        return ip;
      }
    }
    throw unavailable('the memory network has no free address');
  }

  release(sandboxId: string): void {
    for (const [ip, holder] of [...this.store.leases]) if (holder === sandboxId) this.store.leases.delete(ip);
  }
}

/** MemoryRuntime that asks the network plugin for each sandbox's network, as containerd runs CNI. */
export class NetworkedMemoryRuntime extends MemoryRuntime {
  constructor(private readonly network: () => MemoryNetwork) {
    super();
  }

  /** Whether a sandbox gets a pod network: not on the node's network, as containerd skips CNI there. */
  needsNetwork(config: PodSandboxConfig): boolean {
    return config.linux?.securityContext?.namespaceOptions?.network !== 'NODE';
  }

  override async runPodSandbox(config: PodSandboxConfig, runtimeHandler = ''): Promise<string> {
    const id = await super.runPodSandbox(config, runtimeHandler);
    if (!this.needsNetwork(config)) return id;
    try {
      await this.network().setUp(id, config);
    } catch (err) {
      await super.removePodSandbox(id);
      throw err;
    }
    return id;
  }

  override async stopPodSandbox(id: string): Promise<void> {
    await this.network().tearDown(id);
    await super.stopPodSandbox(id);
  }

  override async removePodSandbox(id: string): Promise<void> {
    await this.network().tearDown(id);
    await super.removePodSandbox(id);
  }

  override async podSandboxStatus(id: string): Promise<SandboxStatus> {
    const st = await super.podSandboxStatus(id);
    return { ...st, ip: this.network().store.attachments.get(id)?.ips[0] ?? '', additionalIps: [] };
  }
}

/** The two plugins (runtime and network) over one store and one runtime, which outlive a plugin restart. */
export interface MemoryNetworkPlugins {
  plugins: KubeletPlugin[];
  store: MemoryNetworkStore;
  runtime: NetworkedMemoryRuntime;
}

/** `onStart` sees each new network instance (and the runtime), to break it. */
export function memoryNetworkPlugins(onStart?: (network: MemoryNetwork, runtime: NetworkedMemoryRuntime) => void): MemoryNetworkPlugins {
  const store = new MemoryNetworkStore();
  let current: MemoryNetwork | undefined;
  const runtime = new NetworkedMemoryRuntime(() => {
    if (!current) throw unavailable('the memory network plugin is not applied');
    return current;
  });
  const network = definePlugin({
    name: 'memory-network',
    kind: 'network',
    apply(ctx) {
      const n = new MemoryNetwork(store, () => ctx.pods());
      ctx.isolateHooks(n.hooks);
      onStart?.(n, runtime);
      current = n;
      // Calls through `n` at call time, so a test's replacement of a method is what the contract sees.
      ctx.provide('network', {
        hooks: networkHooksView(n.hooks),
        attachment: (id, ifName) => n.attachment(id, ifName),
        // A test may take check away: the service then offers none, as a plugin that cannot check.
        ...(typeof n.check === 'function' ? { check: (id: string) => n.check(id) } : {}),
      });
    },
  });
  const runtimePlugin = definePlugin({
    name: 'memory-networked-runtime',
    kind: 'runtime',
    requires: ['network'],
    apply(ctx) {
      ctx.provide('runtime', runtime);
    },
  });
  return { plugins: [network, runtimePlugin], store, runtime };
}
