import type { Logger } from '../logger.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { PluginHooks, ProbeOutcome, ProbeResultEvent, ProbeType } from '../hooks.ts';
import type { KubeletConfig } from '../config/types.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import type { DeviceManagerView } from '../devices/device-types.ts';
import type { TapObserver } from './tap-isolation.ts';

/**
 * Capability slots: behaviour the core needs exactly one provider for. A plugin fills a
 * slot with `ctx.provide(slot, impl)`. Later plugin kinds add slots here by declaration
 * merging (`declare module 'kubelet-ts' { interface Capabilities { network: ... } }`).
 */
export interface Capabilities {
  /** The container runtime: required, exactly one. */
  runtime: ContainerRuntime;
}

/** What the host lends plugins besides hooks and slots; the kubelet fills it. */
export interface HostServices {
  runtime(): ContainerRuntime;
  pods(): V1Pod[];
  reportProbe(event: ProbeResultEvent): Promise<void>;
  observeProbeRun(run: ProbeRun): void;
  recordEvent(event: PluginEvent): void;
  /** Sees every plugin tap's run (tap duration metrics, start timeline). */
  observeTap?: TapObserver;
  /** The device manager as plugin `plugin` uses it. */
  devices?(plugin: string): DeviceManagerView;
}

/**
 * An event a plugin records: about a pod (one of its containers when `container` is set) or,
 * without `pod`, about the node. Reasons and wording as upstream's where one exists
 * (`Unhealthy`, `FailedMount`, ...); the core correlates and rate-limits events.
 */
export interface PluginEvent { pod?: V1Pod; container?: string; type: 'Normal' | 'Warning'; reason: string; message: string }

/** One probe run, for the probe metrics. */
export interface ProbeRun { pod: V1Pod; containerName: string; probe: ProbeType; result: ProbeOutcome }

/** Slots the host refuses to start without. */
export const REQUIRED_SLOTS: ReadonlyArray<keyof Capabilities> = ['runtime'];

/**
 * The kind a plugin must be to fill a slot, for the slots that have one (a slot another plugin
 * adds by declaration merging has none: any kind may fill it). A plugin of one of these kinds
 * provides its slot unless it declares `provides` otherwise.
 */
export const SLOT_KINDS: Readonly<Record<string, NonNullable<KubeletPlugin['kind']>>> = Object.freeze({ runtime: 'runtime', network: 'network' });

/** The kinds a plugin may be; the host refuses any other `kind` at load. */
export const PLUGIN_KINDS = Object.freeze(['runtime', 'network', 'storage', 'device', 'policy', 'probe', 'observability', 'other'] as const);
export type PluginKind = (typeof PLUGIN_KINDS)[number];

/** What a plugin's `apply` receives: its own view of the host. */
export interface PluginContext {
  /** The plugin's name; every tap it makes is attributed to it. */
  readonly name: string;
  /** The hooks, tap side only. */
  readonly hooks: PluginHooks;
  /** A child logger with `{plugin}` set. */
  readonly logger: Logger;
  /** A directory of the plugin's own under the kubelet's root dir, created before apply. */
  readonly stateDir: string;
  /** The resolved kubelet configuration (read-only). */
  readonly config: Readonly<KubeletConfig>;
  /** The container runtime (the `runtime` slot's provider, timed by the core); usable once every plugin is applied. */
  runtime(): ContainerRuntime;
  /** The pods this kubelet runs or is terminating, with their current status. */
  pods(): V1Pod[];
  /** Reports a probe result; the host fires `onProbe`, and the core sets readiness or restarts the container. */
  reportProbe(event: ProbeResultEvent): Promise<void>;
  /** Counts one probe run, whatever its result (`prober_probe_total` counts every run, not only changes). */
  observeProbeRun(run: ProbeRun): void;
  /** Records an event (shown by `kubectl describe` / `kubelet-ts events`); never throws. */
  recordEvent(event: PluginEvent): void;
  /**
   * The device manager: register a device provider of an extended resource (in `onStart`, as it
   * touches the node's capacity), read the resources and their allocations. See
   * `DeviceProvider` and docs/operating/device-plugins.md.
   */
  devices(): DeviceManagerView;
  /**
   * Gives hooks this plugin made for other plugins (an object of tapable hooks, such as
   * cni-exec's network hooks) the isolation the core's hooks have: an error leaving a tap
   * names the tapping plugin and the hook, a promise tap fails after `hookTimeout`, and tap
   * durations go to the metrics. Call once, before the hooks are offered.
   */
  isolateHooks(hooks: object): void;
  /** The provider of a capability slot another plugin filled (undefined if none): how plugins use each other's services. */
  use<K extends keyof Capabilities>(slot: K): Capabilities[K] | undefined;
  /** Fills a capability slot; the host fails at start if two plugins claim one slot. */
  provide<K extends keyof Capabilities>(slot: K, impl: Capabilities[K]): void;
  /**
   * Registers cleanup to run at shutdown; plugins close in reverse load order, each cleanup
   * bounded (5 s, and the whole stop's bound). Dropped when the plugin then skips itself. The
   * runtime slot's provider is closed by the host (`ContainerRuntime.close`), not through this.
   */
  onClose(fn: () => void | Promise<void>): void;
  /**
   * Registers what touches the node (connections, sockets, files, watchers) for the start
   * phase, which runs once every plugin is applied, in apply order, each bounded by
   * hookTimeout. `apply` itself only registers (taps, slots), so `kubelet-ts plugins` can apply
   * every plugin to list them without touching the node.
   */
  onStart(fn: () => void | Promise<void>): void;
  /**
   * Declines to load, with a reason the host logs (an optional plugin whose prerequisites this
   * node lacks). Only before the plugin tapped a hook or filled a slot; it does not return.
   */
  skip(reason: string): never;
}

/**
 * A kubelet-ts plugin: a module whose default export is one of these. Vendors publish
 * plugins as npm packages; operators list them in `plugins` of kubelet.config.ts.
 */
export interface KubeletPlugin<Options = Record<string, unknown>> {
  /** A unique name, used in logs, errors and `kubelet-ts plugins`. */
  name: string;
  /** What the plugin is, for people reading `kubelet-ts plugins` (one of PLUGIN_KINDS; checked at load). */
  kind?: PluginKind;
  /**
   * The capability slots this plugin fills (checked: it must fill exactly these in apply).
   * Default: its kind's slot, for the kinds that have one (`runtime`, `network`).
   */
  provides?: Array<keyof Capabilities>;
  /**
   * What this plugin uses of other plugins: capability slots (`'network'`), or plugin names.
   * Their providers are applied first, whatever the config order; a requirement nobody
   * provides, or a cycle, fails the load naming it.
   */
  requires?: string[];
  /** The kubelet-ts versions this plugin works with, as an npm range (`'^0.1'`); checked at load. */
  kubeletTs?: string;
  /** JSON schema of the options; ajv validates them (and fills defaults) before apply. */
  optionsSchema?: object;
  /** Taps hooks and provides slots. May be async; bounded by hookTimeout (what takes long belongs in `ctx.onStart`). */
  apply(ctx: PluginContext, options: Options): void | Promise<void>;
}

/** Gives plugin authors types: `export default definePlugin<MyOptions>({...})`. */
export function definePlugin<Options = Record<string, unknown>>(plugin: KubeletPlugin<Options>): KubeletPlugin<Options> {
  return plugin;
}
