import type { V1Pod } from '@kubernetes/client-node';
import { createNetworkHooks, hookContext, notFound, unavailable, type Logger, type NetworkService, type NetworkSetUpEvent, type NetworkTearDownEvent, type PodNetwork, type PodRef } from 'kubelet-ts';
import type { CacheEntry } from './cni/cache.ts';
import { CniError, asCniError } from './cni/errors.ts';
import type { CniRuntime } from './cni/runtime.ts';
import { CNI_ERR, type CniResult } from './cni/types.ts';
import { RESULT_VERSIONS, convertResult, resultIPs } from './cni/version.ts';
import type { DelegateAnswer, DelegateRequest } from './delegate/protocol.ts';
import { capabilityArgs } from './pod/capabilities.ts';

/*
 * cni-exec fills the SDK's `network` slot (kubelet-ts `NetworkService`); what is CNI's own
 * (the chain's result, the CNI runtime) is its extension of the SDK's types, below. A plugin
 * that requires cni-exec itself, not just any network, may read it.
 */

/** `networkSetUp` as cni-exec fires it: the chain's ADD succeeded; `network` is the CNI network that ran. */
export interface CniNetworkSetUpEvent extends NetworkSetUpEvent {
  /** The final result, in the network's CNI version. */
  result: CniResult;
}

/** `networkTearDown` as cni-exec fires it: the chain's DEL is about to run. */
export interface CniNetworkTearDownEvent extends NetworkTearDownEvent {
  /** The cached ADD result; undefined if the ADD never completed. */
  result: CniResult | undefined;
}

/** A sandbox's network as cni-exec set it up (from the result cache). */
export interface CniPodNetwork extends PodNetwork {
  result: CniResult | undefined;
}

/** The `network` slot as cni-exec fills it: the SDK's service, with CNI's result and the CNI runtime itself. */
export interface CniNetworkService extends NetworkService<CniNetworkSetUpEvent, CniNetworkTearDownEvent, CniPodNetwork> {
  /** The CNI runtime that runs the chain (ADD/DEL/CHECK/VERSION, result cache). */
  readonly cni: CniRuntime;
  /** check runs CNI CHECK for a sandbox's attachment: NotFound without one, Unavailable (the CniError as cause) when a plugin disagrees. */
  check(sandboxId: string, ifName?: string): Promise<void>;
}

/** Parses `CNI_ARGS` (`K=V;K=V`). */
export function parseCniArgs(s: string | undefined): Map<string, string> {
  const m = new Map<string, string>();
  for (const part of (s ?? '').split(';')) {
    const i = part.indexOf('=');
    if (i > 0) m.set(part.slice(0, i), part.slice(i + 1));
  }
  return m;
}

const podKey = (ns: string, name: string) => `${ns}/${name}`;

/**
 * The kubelet side of the delegate: resolves the pod a runtime's CNI request is for, runs
 * the configured chain with the pod's capabilities, fires the hooks and answers with the
 * result (or the CNI error) in the version the runtime asked for.
 */
export class CniNetwork implements CniNetworkService {
  readonly hooks = createNetworkHooks<CniNetworkSetUpEvent, CniNetworkTearDownEvent>();
  /** The pod each namespace/name last had a sandbox config built for: the one a following ADD is for. */
  private readonly pending = new Map<string, V1Pod>();

  /**
   * `isolateHooks`: the host's per-tap isolation (`ctx.isolateHooks`): an error leaving a tap of
   * the network hooks names the plugin and the hook, and a tap that outlives the hook timeout fails.
   */
  constructor(readonly cni: CniRuntime, private readonly deps: { pods: () => V1Pod[]; logger: Logger; isolateHooks: (hooks: object) => void }) {
    deps.isolateHooks(this.hooks);
  }

  /** Remembers the pod a sandbox is about to be created for (called from `beforeSandbox`). */
  sandboxPending(pod: V1Pod): void {
    this.pending.set(podKey(pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? ''), pod);
  }

  /** Forgets a removed pod. */
  podRemoved(pod: V1Pod): void {
    const key = podKey(pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? '');
    if (this.pending.get(key)?.metadata?.uid === pod.metadata?.uid) this.pending.delete(key);
  }

  async attachment(sandboxId: string, ifName = 'eth0'): Promise<CniPodNetwork | undefined> {
    const e = await this.cni.cache.get(sandboxId, ifName);
    if (!e) return undefined;
    return { sandboxId, ifName, netns: e.netns, network: e.network.name, ips: resultIPs(e.result, ifName), result: e.result, pod: e.pod };
  }

  async check(sandboxId: string, ifName = 'eth0'): Promise<void> {
    const e = await this.cni.cache.get(sandboxId, ifName);
    // The SDK's error contract: the core tells "nothing to check" from "broken" by code, not by CNI's numbers.
    if (!e || e.state !== 'added') throw notFound(`sandbox ${sandboxId} has no ${ifName} attachment of cni-exec`);
    try {
      await this.cni.check({ containerId: sandboxId, ifName, netns: e.netns });
    } catch (err) {
      throw unavailable(`CNI CHECK of sandbox ${sandboxId} ${ifName}: ${asCniError(err).message}`, err);
    }
  }

  /** Answers one request the shim forwarded. Never throws: failures become the CNI error object. */
  async handle(req: DelegateRequest): Promise<DelegateAnswer> {
    const env = req.env;
    const command = env.CNI_COMMAND ?? '';
    let version = '1.0.0';
    try {
      const v = (JSON.parse(req.stdin) as { cniVersion?: unknown }).cniVersion;
      if (typeof v === 'string') version = v;
    } catch {
      // A request without a readable config: answer in 1.0.0.
    }
    const log = this.deps.logger.child({ cni: command, containerId: env.CNI_CONTAINERID?.slice(0, 12) });
    const started = performance.now();
    try {
      switch (command) {
        case 'ADD': {
          const result = await this.add(env);
          log.info({ ms: Math.round(performance.now() - started), ips: resultIPs(result, env.CNI_IFNAME || 'eth0') }, 'CNI ADD done');
          return { exitCode: 0, stdout: JSON.stringify(convertResult(result as Record<string, unknown>, version)) };
        }
        case 'DEL':
          await this.del(env);
          log.info({ ms: Math.round(performance.now() - started) }, 'CNI DEL done');
          return { exitCode: 0, stdout: '' };
        case 'CHECK':
          await this.cni.check({ containerId: need(env, 'CNI_CONTAINERID'), ifName: env.CNI_IFNAME || 'eth0', netns: env.CNI_NETNS ?? '' });
          return { exitCode: 0, stdout: '' };
        case 'VERSION':
          return { exitCode: 0, stdout: JSON.stringify({ cniVersion: version, supportedVersions: RESULT_VERSIONS }) };
        case 'STATUS':
        case 'GC':
          // Spec 1.1: the kubelet answers, so the network is ready; garbage collection is the kubelet's own.
          return { exitCode: 0, stdout: '' };
        default:
          throw new CniError({ code: CNI_ERR.INVALID_ENV, msg: `unknown CNI_COMMAND ${JSON.stringify(command)}` });
      }
    } catch (err) {
      const e = asCniError(err);
      log.warn({ err: e.message, code: e.code }, `CNI ${command} failed`);
      return { exitCode: 1, stdout: JSON.stringify(e.toJSON(version)) };
    }
  }

  private resolvePod(args: Map<string, string>): V1Pod {
    const ns = args.get('K8S_POD_NAMESPACE') ?? '';
    const name = args.get('K8S_POD_NAME') ?? '';
    const uid = args.get('K8S_POD_UID') ?? '';
    if (!ns || !name) {
      throw new CniError({ code: CNI_ERR.UNKNOWN_POD, msg: 'CNI_ARGS names no pod (K8S_POD_NAMESPACE and K8S_POD_NAME): cni-exec networks only pods of this kubelet' });
    }
    const pods = this.deps.pods();
    const sameName = (p: V1Pod) => (p.metadata?.namespace ?? 'default') === ns && p.metadata?.name === name;
    const pending = this.pending.get(podKey(ns, name));
    const pod = uid
      ? (pods.find((p) => p.metadata?.uid === uid) ?? (pending?.metadata?.uid === uid ? pending : undefined))
      : (pending ?? pods.find((p) => sameName(p) && !p.metadata?.deletionTimestamp) ?? pods.find(sameName));
    if (!pod) {
      throw new CniError({ code: CNI_ERR.UNKNOWN_POD, msg: `pod ${ns}/${name}${uid ? ` (uid ${uid})` : ''} is not known to this kubelet: cni-exec networks only the pods it runs` });
    }
    return pod;
  }

  private async add(env: Record<string, string>): Promise<CniResult> {
    const containerId = need(env, 'CNI_CONTAINERID');
    const netns = need(env, 'CNI_NETNS');
    const ifName = env.CNI_IFNAME || 'eth0';
    const given = parseCniArgs(env.CNI_ARGS);
    const pod = this.resolvePod(given);
    if (pod.spec?.hostNetwork) {
      throw new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: `pod ${pod.metadata?.namespace}/${pod.metadata?.name} uses the host network and gets no CNI network` });
    }
    const ref: PodRef = { namespace: pod.metadata?.namespace ?? 'default', name: pod.metadata!.name!, uid: pod.metadata!.uid! };
    let caps: Record<string, unknown>;
    try {
      caps = capabilityArgs(pod);
    } catch (err) {
      throw new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: `pod ${ref.namespace}/${ref.name}: ${(err as Error).message}` });
    }
    const args: Array<[string, string]> = [
      ['IgnoreUnknown', '1'],
      ['K8S_POD_NAMESPACE', ref.namespace],
      ['K8S_POD_NAME', ref.name],
      ['K8S_POD_INFRA_CONTAINER_ID', containerId],
      ['K8S_POD_UID', ref.uid],
    ];
    const { network, result } = await this.cni.add({ containerId, netns, ifName, args, capabilityArgs: caps }, ref);
    const ips = resultIPs(result, ifName);
    try {
      if (!ips.length) {
        throw new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: `the result has no IP address for interface ${ifName} (a network needs a plugin that creates ${ifName} with an IP, such as bridge or ptp with an IPAM)` }, { network: network.name });
      }
      await this.hooks.networkSetUp.promise({ pod, sandboxId: containerId, netns, ifName, network: network.name, result, ips }, hookContext());
    } catch (err) {
      await this.cni.del({ containerId, ifName, netns }).catch((delErr) => this.deps.logger.warn({ err: (delErr as Error).message }, 'rolling back the ADD failed'));
      if (err instanceof CniError) throw err;
      throw new CniError({ code: CNI_ERR.HOOK_FAILED, msg: (err as Error).message }, { network: network.name });
    }
    return result;
  }

  private async del(env: Record<string, string>): Promise<void> {
    const containerId = need(env, 'CNI_CONTAINERID');
    const ifName = env.CNI_IFNAME || 'eth0';
    const netns = env.CNI_NETNS ?? '';
    const entry: CacheEntry | undefined = await this.cni.cache.get(containerId, ifName);
    if (!entry) return; // never set up here, or already torn down: DEL is idempotent
    const pod = entry.pod ? this.deps.pods().find((p) => p.metadata?.uid === entry.pod!.uid) : undefined;
    try {
      await this.hooks.networkTearDown.promise({ pod, podRef: entry.pod, sandboxId: containerId, netns, ifName, network: entry.network.name, result: entry.result }, hookContext());
    } catch (err) {
      this.deps.logger.warn({ err: (err as Error).message }, 'networkTearDown tap failed; tearing down anyway');
    }
    await this.cni.del({ containerId, ifName, netns });
  }
}

function need(env: Record<string, string>, key: string): string {
  const v = env[key];
  if (!v) throw new CniError({ code: CNI_ERR.INVALID_ENV, msg: `${key} is not set` });
  return v;
}
