import type { V1Pod } from '@kubernetes/client-node';
import { AsyncSeriesHook } from 'tapable';
import type { HookContext } from '../util/cancellation.ts';
import type { TapOnly } from '../hooks.ts';

/**
 * The `network` capability slot: what a network plugin provides and what other plugins (and
 * the network contract, `describeNetworkContract`) may rely on. It is neutral about how the
 * network is made: cni-exec makes it by executing CNI plugins and adds its CNI result to the
 * events and attachments (its own extension); another vendor may program a dataplane
 * directly. The container runtime creates the pod's network namespace and asks the network
 * plugin for the network (containerd: through its CNI config), so the plugin sees a sandbox
 * when the runtime's `runPodSandbox` runs, and its end on `stopPodSandbox`/`removePodSandbox`.
 *
 * Error contract: `check` rejects with a coded error (`KubeletError`): `NotFound` when the
 * sandbox has no attachment of this plugin, another code (`Unavailable`) when the attachment
 * is no longer as it was set up. `attachment` answers undefined, never NotFound.
 */

/** Who a pod is, when only what the plugin stored of it is left (the pod may be gone from the kubelet). */
export interface PodRef { namespace: string; name: string; uid: string }

/** A sandbox's network as the plugin set it up: one interface in the pod's network namespace. */
export interface PodNetwork {
  sandboxId: string;
  /** The interface in the pod (`eth0`). */
  ifName: string;
  /** The pod's network namespace path, as it was at set-up. */
  netns: string;
  /** The name of the network the pod is on. */
  network: string;
  /** The pod's IPs on `ifName`, without prefix length; at least one. */
  ips: string[];
  pod: PodRef | undefined;
}

/** What `networkSetUp` taps see: the pod's network is made and about to be handed to the runtime. */
export interface NetworkSetUpEvent {
  pod: V1Pod;
  sandboxId: string;
  /** The pod's network namespace path. */
  netns: string;
  ifName: string;
  /** The network the pod is on. */
  network: string;
  /** The pod's IPs on `ifName`, without prefix length. */
  ips: string[];
}

/** What `networkTearDown` taps see: the network of a sandbox the plugin set up is about to be taken down. */
export interface NetworkTearDownEvent {
  /** The pod, if the kubelet still knows it (a pod being removed usually is still known). */
  pod: V1Pod | undefined;
  podRef: PodRef | undefined;
  sandboxId: string;
  /** Empty when the runtime already removed the namespace (containerd does on StopPodSandbox). */
  netns: string;
  ifName: string;
  network: string;
}

/**
 * Builds a network plugin's hooks; one line each on when it fires and what a tap may do. A
 * plugin whose events carry more (cni-exec: the CNI result) passes its own event types.
 * Both are series hooks: taps run in order and each may wait (add a route, record an IP); as
 * every hook, their taps get a HookContext last (`ctx.signal`: the set-up or tear-down is given up on).
 */
export function createNetworkHooks<SetUp extends NetworkSetUpEvent = NetworkSetUpEvent, TearDown extends NetworkTearDownEvent = NetworkTearDownEvent>() {
  return Object.freeze({
    /** Series, once per attachment, after the network is made and before the runtime gets it: taps may add routes or record IPs; a throw fails the set-up, which is rolled back (nothing of it stays). */
    networkSetUp: new AsyncSeriesHook<[SetUp, HookContext]>(['event', 'ctx']),
    /** Series, once per attachment, before the network is taken down: taps undo what they did at set-up; a throw is logged and does not stop the tear-down. */
    networkTearDown: new AsyncSeriesHook<[TearDown, HookContext]>(['event', 'ctx']),
  });
}

export type NetworkHooks<SetUp extends NetworkSetUpEvent = NetworkSetUpEvent, TearDown extends NetworkTearDownEvent = NetworkTearDownEvent> = ReturnType<typeof createNetworkHooks<SetUp, TearDown>>;

/** The network hooks as other plugins see them: tap side only (firing stays with the network plugin). */
export type NetworkHooksView<SetUp extends NetworkSetUpEvent = NetworkSetUpEvent, TearDown extends NetworkTearDownEvent = NetworkTearDownEvent> = {
  readonly [K in keyof NetworkHooks<SetUp, TearDown>]: TapOnly<NetworkHooks<SetUp, TearDown>[K]>;
};

/** The tap-only view of a network plugin's hooks, to hand out in its service (a plugin that got it cannot fire a hook). */
export function networkHooksView<SetUp extends NetworkSetUpEvent, TearDown extends NetworkTearDownEvent>(hooks: NetworkHooks<SetUp, TearDown>): NetworkHooksView<SetUp, TearDown> {
  const view: Record<string, unknown> = {};
  for (const [name, hook] of Object.entries(hooks)) {
    view[name] = Object.freeze({ tap: hook.tap.bind(hook), tapAsync: hook.tapAsync.bind(hook), tapPromise: hook.tapPromise.bind(hook) });
  }
  return Object.freeze(view) as unknown as NetworkHooksView<SetUp, TearDown>;
}

/**
 * The service a network plugin provides in the `network` slot. Other plugins get it with
 * `ctx.use('network')` (after `requires: ['network']`) and tap its hooks. A plugin whose
 * events and attachments carry more narrows the type parameters (cni-exec does).
 */
export interface NetworkService<SetUp extends NetworkSetUpEvent = NetworkSetUpEvent, TearDown extends NetworkTearDownEvent = NetworkTearDownEvent, Attachment extends PodNetwork = PodNetwork> {
  /** hooks are the network hooks, tap side only. */
  readonly hooks: NetworkHooksView<SetUp, TearDown>;
  /** attachment returns the network of a sandbox as the plugin set it up (default interface `eth0`), or undefined once torn down or never set up. */
  attachment(sandboxId: string, ifName?: string): Promise<Attachment | undefined>;
  /** check, if the plugin can, verifies an attachment is still as it was set up; rejects NotFound without one, another coded error when it is broken. */
  check?(sandboxId: string, ifName?: string): Promise<void>;
}

// The slot is declared here, with its interface, rather than in the registry: the registry
// knows slots by name, and the SDK is where a vendor reads what filling one means.
declare module '../plugins/plugin-api.ts' {
  interface Capabilities {
    /** Pod networking: at most one provider (a plugin of kind `network`, such as cni-exec). */
    network: NetworkService;
  }
}
