import { AsyncSeriesBailHook, AsyncSeriesHook, AsyncSeriesWaterfallHook, HookMap, SyncHook } from 'tapable';
import type { V1Container, V1Node, V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1PodStatus, V1Volume } from '@kubernetes/client-node';
import type { StorageObjectSource } from './objects/storage-objects.ts';
import type { ContainerConfig, PodSandboxConfig, PullAuth, SandboxStatus } from './runtime/types.ts';
import type { ObjectSource } from './objects/object-source.ts';
import type { HookContext } from './util/cancellation.ts';
import type { MountInfo } from './util/mount-info.ts';

export type { HookContext } from './util/cancellation.ts';

/**
 * Tap stages: a tap's `stage` orders it among the taps of one hook (lower runs first).
 * Plugins pass one of these instead of inventing numbers, so the order reads as intent.
 */
export const STAGE = Object.freeze({
  /** Admission and policy: runs first, may veto or rewrite before anyone builds on it. */
  POLICY: -100,
  /** Ordinary behaviour: runtime, network and storage providers. */
  DEFAULT: 0,
  /** Observers (metrics, recorders, audit): run last and see the final value. */
  OBSERVE: 100,
});

/** What `afterSandbox` sees: the sandbox is running and its network is set up. */
export interface SandboxReadyEvent { pod: V1Pod; sandboxId: string; config: PodSandboxConfig; status: SandboxStatus }

/** What `beforeContainerCreate` taps see besides the config they may change. */
export interface ContainerCreateContext { pod: V1Pod; container: V1Container; sandboxId: string; sandboxConfig: PodSandboxConfig; restartCount: number }

/** A registry credential for one image, as CRI's AuthConfig carries it, and where it came from (for messages and logs; never the secret). */
export interface ImageCredential extends PullAuth { from: string }

/** A provider that could not answer for an image (it failed, timed out, or answered garbage): one Warning event on the pod. */
export interface ImageCredentialFailure { provider: string; message: string }

/** What `imageCredentials` taps add to and return: credentials in the order to try them, and the providers that failed. */
export interface ImageCredentials { credentials: ImageCredential[]; failures: ImageCredentialFailure[] }

/** What `imageCredentials` taps see besides the draft: the image a container needs pulled. */
export interface ImageCredentialsRequest {
  pod: V1Pod;
  container: V1Container;
  /** The image as the container spec names it (`registry.example.com/app:v1`). */
  image: string;
  /** Its repository, as upstream hands it to credential providers: `docker.io/library/busybox`, `127.0.0.1:5000/team/app` (no tag or digest). */
  repository: string;
}

/** What `afterStart` sees: a container of the pod was started by the runtime. */
export interface ContainerStartedEvent { pod: V1Pod; container: V1Container; containerId: string; sandboxId: string; podIP: string }

/** What `beforeKill` sees: a running container is about to get its stop signal. */
export interface ContainerKillEvent { pod: V1Pod; container: V1Container | undefined; containerId: string; podIP: string; gracePeriodSeconds: number; reason: string }

export type ProbeType = 'liveness' | 'readiness' | 'startup';
export type ProbeOutcome = 'success' | 'failure' | 'unknown';

/** What `onProbe` sees: a probe's result changed for one container. */
export interface ProbeResultEvent { pod: V1Pod; containerName: string; containerId: string; probe: ProbeType; result: ProbeOutcome; output: string }

/** One container's use and requests, as an eviction policy ranks and explains it (bytes). */
export interface ContainerUsage { name: string; memoryBytes?: number; memoryRequestBytes: number; ephemeralStorageBytes?: number; ephemeralStorageRequestBytes: number }

/** One candidate pod's use and requests, from the stats service (bytes; processes as a count). */
export interface PodUsage {
  memoryBytes?: number;
  memoryRequestBytes: number;
  /** Local ephemeral storage: writable layers, logs and local volumes (emptyDir, ...). */
  ephemeralStorageBytes?: number;
  ephemeralStorageRequestBytes: number;
  inodes?: number;
  processes?: number;
  containers: ContainerUsage[];
}

/**
 * What `onPressure` sees: an eviction signal crossed its threshold (hard, or soft past its grace
 * period) after the node-level reclaim the core does first (dead containers; unused images for imagefs).
 */
export interface PressureEvent {
  /** The signal: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available. */
  signal: string;
  /** The threshold as configured ('100Mi', '10%'), and what it is in units of the signal ('104857600'). */
  threshold: string;
  thresholdQuantity: string;
  /** What is available now, as a quantity ('87Mi' as bytes: '91226112'). */
  observed: string;
  /** The resource being reclaimed, as upstream names it in messages: memory, ephemeral-storage, inodes, pids. */
  resource: 'memory' | 'ephemeral-storage' | 'inodes' | 'pids';
  /** A hard threshold: the evicted pod gets no grace period; a soft one: min(evictionMaxPodGracePeriod, the pod's). */
  hard: boolean;
  /** The pods the policy may evict: active and not critical (critical pods are never offered). */
  pods: V1Pod[];
  /** Each candidate's use by pod UID (missing when the stats service has no figures for it yet). */
  usage: Record<string, PodUsage>;
}

/**
 * What an `onPressure` tap returns: the pods the policy chose to evict (upstream: one a round),
 * with the message shown on the pod and its event; `reason` is upstream's `Evicted`.
 */
export interface EvictionDecision { evict: Array<{ pod: V1Pod; reason: string; message: string }> }

/**
 * What a volume provider (a `mountVolume.for(type)` tap) gets: one volume of one pod to set up.
 * Providers must be idempotent: the same request comes again after a failure, after a
 * kubelet restart, and on every sync for volumes that asked for `requiresRemount`.
 */
export interface VolumeMountRequest {
  pod: V1Pod;
  volume: V1Volume;
  /** The volume type: the key of its source in the pod spec (`emptyDir`, `csi`, or a vendor's). */
  type: string;
  /** The volume's directory, `<rootDir>/pods/<uid>/volumes/<plugin~type>/<name>` (its parent exists). */
  dir: string;
  /** The kubelet's root dir (for global paths such as CSI staging). */
  rootDir: string;
  /** What this provider returned the last time it set the volume up, if it did (survives restarts). */
  previous: VolumeMountResult | undefined;
  /**
   * Where the pod's Secrets and ConfigMaps come from (e.g. a CSI `nodePublishSecretRef`): the
   * API server's, watched, for an API pod; files under `localObjectsDir` for a static pod.
   */
  objects: ObjectSource;
  /**
   * For a volume from a claim (`persistentVolumeClaim`, generic `ephemeral`): the PersistentVolume
   * bound to it (its source is what to set up; `type` is that source's key), the claim, and
   * whether the pod mounts it read-only. The core has checked the binding (upstream's checks).
   */
  persistentVolume?: { volume: V1PersistentVolume; claim: V1PersistentVolumeClaim; readOnly: boolean };
  /** The API server's storage objects (CSIDriver, VolumeAttachment), for a pod from the API server. */
  storage?: StorageObjectSource;
  /** This node's name (CSI VolumeAttachments are named after the volume, the driver and the node). */
  nodeName: string;
}

/** What a volume provider returns once the volume is set up; the volume manager keeps it with the pod. */
export interface VolumeMountResult {
  /** The host path that containers bind (volumeMounts and their subPaths point into it). */
  path: string;
  /** `path` is a mount point the provider made: after a restart it is checked against /proc/self/mountinfo. */
  mountPoint?: boolean;
  /** Set up again on every sync of the pod (configMap, secret: the content follows its source). */
  requiresRemount?: boolean;
  /** Containers get it read-only whatever their volumeMounts say. */
  readOnly?: boolean;
  /**
   * `path` is a block device (a `volumeMode: Block` volume), not a directory: containers get it
   * through their `volumeDevices` as a device node (CRI `Device`), never as a mount. The path
   * may be a symlink to the device or a file with the device bind-mounted on it; the runtime
   * resolves it.
   */
  blockDevice?: boolean;
  /**
   * Upstream's unique volume name, for a volume the attach/detach controller attaches or the
   * node stages (a CSI PersistentVolume: `kubernetes.io/csi/<driver>^<volumeHandle>`): reported
   * in the Node's status.volumesInUse while set up, so the volume is not detached under the pod.
   */
  uniqueVolumeName?: string;
  /** Provider data (JSON) handed back on unmount and on the next mount, kept across kubelet restarts. */
  data?: Record<string, unknown>;
}

/** What an `unmountVolume.for(type)` tap gets: a volume to tear down after the pod's last container is gone. */
export interface VolumeUnmountRequest {
  podUID: string;
  volumeName: string;
  type: string;
  /** The volume's directory, as in the mount request. */
  dir: string;
  rootDir: string;
  /** What the provider returned when it set the volume up. */
  mounted: VolumeMountResult;
  /**
   * The node's mounts, read once when the teardown of the whole pod began (its containers had
   * stopped), for every volume of the pod: a provider may check against it instead of reading
   * `/proc/self/mountinfo` itself for each volume (a pod of hundreds of volumes on a node of
   * thousands of mounts). Absent when one volume is torn down on its own.
   */
  mountTable?: readonly MountInfo[];
}

/** What a `volumeStats.for(type)` tap gets: a set-up volume whose use `/stats/summary` reports (a PersistentVolume's). */
export interface VolumeStatsRequest {
  podUID: string;
  volumeName: string;
  type: string;
  /** What the provider returned when it set the volume up. */
  mounted: VolumeMountResult;
}

/** A volume's use as its provider measures it (CSI NodeGetVolumeStats); absent figures are unknown. */
export interface VolumeUsage {
  capacityBytes?: number;
  availableBytes?: number;
  usedBytes?: number;
  inodes?: number;
  inodesFree?: number;
  inodesUsed?: number;
  /** The provider found the volume unhealthy (CSI VolumeCondition abnormal): the message says why. */
  abnormal?: string;
}

/**
 * What an `expandVolume.for(type)` tap gets: a set-up persistent volume whose PersistentVolume
 * grew beyond what its claim's status says (the control plane's resizer expanded it and left the
 * file system to the node, upstream's `FileSystemResizePending`): grow what the pod sees to
 * `newSizeBytes` (CSI NodeExpandVolume). The core then updates the claim and records the events.
 */
export interface VolumeExpandRequest {
  pod: V1Pod;
  volumeName: string;
  type: string;
  /** What the provider returned when it set the volume up. */
  mounted: VolumeMountResult;
  /** The PersistentVolume as read now (its grown `spec.capacity`), its claim, and whether the pod mounts it read-only. */
  persistentVolume: { volume: V1PersistentVolume; claim: V1PersistentVolumeClaim; readOnly: boolean };
  /** The size to grow to: the PV's `spec.capacity.storage`, in bytes. */
  newSizeBytes: number;
  /** Where Secrets come from (a CSI `nodeExpandSecretRef`). */
  objects: ObjectSource;
  storage?: StorageObjectSource;
}

/**
 * How an expansion went: `expanded` (the claim's status gets the new size), or `not-supported`
 * (the volume needs nothing from the node, e.g. a CSI driver without the node EXPAND_VOLUME
 * capability: upstream leaves the claim as it is and does not ask again for that size).
 */
export type VolumeExpandOutcome = 'expanded' | 'not-supported';

/** A node condition as `nodeStatus` taps set it; the core fills lastHeartbeatTime and lastTransitionTime. */
export interface NodeConditionDraft { type: string; status: 'True' | 'False' | 'Unknown'; reason: string; message: string }

/**
 * What `nodeStatus` taps change before each node status post: quantities by resource name
 * (canonical strings such as '2', '3948464Ki'), conditions (the core's Ready and the
 * MemoryPressure / DiskPressure / PIDPressure it defaults to False), and labels for the Node
 * (only those NodeRestriction lets a node set are posted).
 */
export interface NodeStatusDraft {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  conditions: NodeConditionDraft[];
  labels: Record<string, string>;
}

/** What `nodeStatus` taps see besides the draft: the node's name and its Node as the API server last returned it (undefined before registration). */
export interface NodeStatusContext { nodeName: string; node: V1Node | undefined }

/** What `started` sees once the host is up. */
export interface HostStartedEvent { nodeName: string; nodeIP: string; runtime: { name: string; version: string; apiVersion: string } }

/**
 * Builds the hooks of one kubelet. Declared in one place, grouped by phase. Each hook's doc is
 * its contract, in four parts a plugin author can rely on:
 *
 * - **Again**: whether it fires more than once for the same pod (or container): on retries,
 *   on every sync, and after a restart of the kubelet, which adopts the pods it finds running.
 *   A tap of a hook that fires again must be idempotent.
 * - **Changes**: what a tap may change. A waterfall tap changes the value by returning it (it
 *   may edit the object it was given, which was built for this call, and return it). Every
 *   other argument (the pod, an event, a context) is the kubelet's own: read-only.
 * - **Time**: every promise or callback tap is bounded by `hookTimeout` (default 2 m); past it
 *   the tap counts as failed and the core goes on. Every asynchronous hook's taps get a
 *   `HookContext` as their last argument (`ctx`): `ctx.signal` is an AbortSignal of the tap's
 *   own that aborts when the tap's hookTimeout expires (its reason: the timeout's error) or when
 *   the work the hook is part of is given up on (a pod's sync when the pod is to be terminated,
 *   the kubelet stopping), so the work stops instead of running on; pass it to fetch, child
 *   processes, loops and the runtime calls the tap makes (`{ signal: ctx.signal }`). A sync tap
 *   is not bounded and gets no context: it blocks the event loop, keep it short.
 * - **Throw**: what a throw (or an overrun) does. Every error leaving a tap is a
 *   `PluginError` naming the plugin and the hook, logged where it happens. On the
 *   notification hooks (NOTIFICATION_HOOKS below) a throw is logged and nothing else: the
 *   hook's other taps still run.
 *
 * The generic on each constructor is the hook's type, so declaration and behaviour cannot
 * drift apart.
 */
export function createHooks() {
  return Object.freeze({
    // Host
    /**
     * Series. After plugins are applied and started and the runtime answered: taps may start background work.
     * Again: once per start of the kubelet. Changes: nothing. Time: hookTimeout per tap.
     * Throw: fails the kubelet's start, naming the plugin (the process exits; systemd starts it again).
     */
    started: new AsyncSeriesHook<[HostStartedEvent, HookContext]>(['event', 'ctx']),
    /**
     * Series, a notification. On stop, after pod workers and before plugin cleanups: taps flush and stop background work.
     * Again: once per stop. Changes: nothing. Time: hookTimeout per tap, and all of it within
     * the stop's bound (about 20 s for the whole stop: what is left over is cut short, logged).
     * Throw: logged; the other taps and the stop go on.
     */
    shutdown: new AsyncSeriesHook<[HookContext]>(['ctx']),

    // Admission
    /**
     * Bail (the first policy to refuse decides): before a pod is accepted, return a reason string to reject it.
     * Again: once each time a source hands the kubelet the pod as new: after a restart of the
     * kubelet for every pod again, running ones too (a refusal then stops a running pod).
     * Changes: nothing (return the reason instead). Time: hookTimeout per tap.
     * Throw: rejects the pod (UnexpectedAdmissionError) with the error as its message.
     */
    admitPod: new AsyncSeriesBailHook<[V1Pod, HookContext], string | undefined>(['pod', 'ctx']),

    // Sandbox
    /**
     * Waterfall: the pod's sandbox config is built; taps may change and must return it.
     * Again: on every sandbox creation attempt (a retry after a failure, a sandbox recreated
     * after it died or its spec changed), and when a restarted kubelet adopts a running
     * sandbox (the config is rebuilt for the pod's containers; the runtime never sees it):
     * taps must return the same for the same pod. Changes: the config; the pod is read-only.
     * Time: hookTimeout per tap.
     * Throw: fails the sandbox creation (FailedCreatePodSandBox on every container), retried with
     * back-off; on adoption it fails the pod's sync, retried.
     */
    beforeSandbox: new AsyncSeriesWaterfallHook<[PodSandboxConfig, V1Pod, HookContext]>(['config', 'pod', 'ctx']),
    /**
     * Series. The sandbox this kubelet created runs and its network is set up: taps observe IPs, may add side effects.
     * Again: never for the same sandbox: not on a retry of the sync, not when a restarted
     * kubelet adopts the sandbox (a new sandbox of the pod fires it again). Changes: nothing.
     * Time: hookTimeout per tap.
     * Throw: fails the pod's sync (its containers wait in ContainerCreating with the error),
     * retried with back-off; the sandbox stays and the retry does not fire this hook again.
     */
    afterSandbox: new AsyncSeriesHook<[SandboxReadyEvent, HookContext]>(['event', 'ctx']),

    // Containers
    /**
     * Waterfall: before the runtime creates a container, taps may change and must return the config.
     * Again: for every creation of the container: each restart (restartCount in the context),
     * each retry after a failure; never on adoption. Changes: the config; the context is read-only.
     * Time: hookTimeout per tap.
     * Throw: the container waits (CreateContainerError, a Warning event with the error), retried at the next sync.
     */
    beforeContainerCreate: new AsyncSeriesWaterfallHook<[ContainerConfig, ContainerCreateContext, HookContext]>(['config', 'context', 'ctx']),
    /**
     * Series. A container has started and its postStart handler (run by the core, before this
     * hook) succeeded: taps start per-container work (probe workers).
     * Again: after every start of the container (each restart is a new container ID); never
     * on adoption (a restarted kubelet's plugins find running containers through ctx.pods()).
     * Changes: nothing. Time: hookTimeout per tap.
     * Throw: fails that start as a failed postStart does: the container is killed and restarted
     * per policy (FailedPostStartHook).
     */
    afterStart: new AsyncSeriesHook<[ContainerStartedEvent, HookContext]>(['event', 'ctx']),
    /**
     * Series, a notification. A running container is about to be stopped by the kubelet: taps
     * run first, then the core runs the container's preStop handler with what is left of the
     * grace period, then the stop. Not fired for a container that exits by itself.
     * Again: each time the kubelet stops a container (a restart, the pod's termination, an
     * eviction); a termination that failed and is retried fires it again for what still runs.
     * Changes: nothing. Time: hookTimeout per tap, and it counts against the grace period.
     * Throw: logged; the other taps and the stop go on.
     */
    beforeKill: new AsyncSeriesHook<[ContainerKillEvent, HookContext]>(['event', 'ctx']),

    // Images
    /**
     * Waterfall: before the core pulls an image, taps add the registry credentials they have for
     * it (`credentials`, tried after the pod's pull secrets', in order, until a pull succeeds) or a
     * `failures` entry for a provider that could not answer, and must return the draft. A throw
     * loses the credentials of this lookup (the pull goes on with the pull secrets') and, like each
     * failure, is one Warning event on the pod; the next attempt, after the pull back-off, asks again.
     * Again: before every pull, so for the same pod and image on each retry after the pull
     * back-off and for each container that pulls; never when the image is present and not pulled.
     * Changes: the draft only, by returning it (credentials added, failures added); never the pod,
     * the container or the request. Time: hookTimeout per tap.
     * Throw: this lookup's credentials are lost, one Warning event names the plugin, the pull goes on.
     */
    imageCredentials: new AsyncSeriesWaterfallHook<[ImageCredentials, ImageCredentialsRequest, HookContext]>(['credentials', 'request', 'ctx']),

    // Volumes (per-type dispatch: plugins tap `mountVolume.for('csi')`, the host fires `get(type)`)
    /**
     * Bail per volume type: set up one volume before the pod's containers are created; the first tap returning a result serves it; none → `no volume plugin for type "x"`.
     * Again: on every sync of the pod for volumes that asked for `requiresRemount` (with
     * `previous`, what the provider returned before), on every retry of a failed set-up, and
     * after a restart of the kubelet for a volume whose mount point is gone: idempotent (a
     * volume the restarted kubelet finds set up is not asked again). Changes: nothing (return
     * the result). Time: hookTimeout per tap.
     * Throw: the pod's containers wait in ContainerCreating (a FailedMount event with the error); retried.
     */
    mountVolume: new HookMap(() => new AsyncSeriesBailHook<[VolumeMountRequest, HookContext], VolumeMountResult | undefined>(['request', 'ctx'])),
    /**
     * Bail per volume type: tear down one volume after the pod's last container is gone; the first tap returning true handled it.
     * Again: until it succeeds (the termination is retried), and for volumes of pods gone while
     * the kubelet was down (housekeeping): idempotent. Changes: nothing. Time: hookTimeout per tap.
     * Throw: fails the pod's termination, retried with back-off until it succeeds.
     */
    unmountVolume: new HookMap(() => new AsyncSeriesBailHook<[VolumeUnmountRequest, HookContext], true | undefined>(['request', 'ctx'])),
    /**
     * Bail per volume type: the use of one set-up persistent volume, for `/stats/summary`; the first tap returning figures serves it; none → the volume is left out.
     * Again: at most once per minute per volume (upstream's volumeStatsAggPeriod), when a summary is asked for. Changes: nothing. Time: hookTimeout per tap.
     * Throw: the volume is left out of the summary (logged at debug).
     */
    volumeStats: new HookMap(() => new AsyncSeriesBailHook<[VolumeStatsRequest, HookContext], VolumeUsage | undefined>(['request', 'ctx'])),
    /**
     * Bail per volume type: grow one set-up persistent volume whose PV grew (a resize the control plane left to the node); the first tap returning an outcome serves it; none → `not-supported`.
     * Again: on a sync of the pod while the PV's capacity is above its claim's status capacity (a
     * failure is retried on the next sync), right after the volume is set up too; idempotent (the
     * same size may be asked again). Changes: nothing (the core patches the claim's status). Time: hookTimeout per tap.
     * Throw: a `VolumeResizeFailed` Warning event on the pod with the error; retried on the next sync; the pod runs on.
     */
    expandVolume: new HookMap(() => new AsyncSeriesBailHook<[VolumeExpandRequest, HookContext], VolumeExpandOutcome | undefined>(['request', 'ctx'])),

    // Health and pressure
    /**
     * Series, a notification. A probe result changed: the core has already recorded it and synced the pod.
     * Again: at each change of a container's result, not for each probe run. Changes: nothing.
     * Time: hookTimeout per tap. Throw: logged; the other taps go on, the result stands.
     */
    onProbe: new AsyncSeriesHook<[ProbeResultEvent, HookContext]>(['event', 'ctx']),
    /**
     * Bail (one policy decides): an eviction signal crossed a threshold (core/eviction, every
     * evictionMonitoringPeriod); the first tap returning a decision chooses what to evict, and the core carries it out.
     * Again: every round while the threshold stays crossed (about the node, not one pod).
     * Changes: nothing (return the decision). Time: hookTimeout per tap.
     * Throw: ends that round (logged); the next round asks again.
     */
    onPressure: new AsyncSeriesBailHook<[PressureEvent, HookContext], EvictionDecision | undefined>(['event', 'ctx']),
    /**
     * Waterfall: before each node status post, taps may change and must return the draft (pressure conditions, extra capacity, labels).
     * Again: before every post (nodeStatusUpdateFrequency). Changes: the draft; the context is
     * read-only. Time: hookTimeout per tap. Throw: fails that post; the next update period tries again.
     */
    nodeStatus: new AsyncSeriesWaterfallHook<[NodeStatusDraft, NodeStatusContext, HookContext]>(['status', 'context', 'ctx']),

    // Status and removal
    /**
     * Waterfall: a pod's status was computed; taps may change and must return it (conditions, readiness gates).
     * Again: at every computation: each sync, each change the runtime shows, each step of the
     * termination, and after a restart of the kubelet. Changes: the status; the pod is read-only.
     * Time: hookTimeout per tap.
     * Throw: fails the pod's sync, retried with back-off; a status computed outside a sync (a
     * runtime change while the pod's worker is busy, a removal) is not published, logged
     * naming the pod and the plugin.
     */
    podStatus: new AsyncSeriesWaterfallHook<[V1PodStatus, V1Pod, HookContext]>(['status', 'pod', 'ctx']),
    /**
     * Sync, a notification (observers only, nothing to wait for): a pod's status changed in a
     * way users see (phase, readiness, a container's state or restarts).
     * Again: at each such change, and once for every pod after a restart of the kubelet (its
     * first computed status). Changes: nothing. Time: not bounded (a sync tap): keep it short.
     * Throw: logged naming the plugin; nothing else (the pod's sync goes on).
     */
    podStatusChanged: new SyncHook<[V1Pod, V1PodStatus]>(['pod', 'status']),
    /**
     * Series. A pod is gone: its containers and sandbox are removed, its volumes torn down;
     * taps release what they held for it.
     * Again: once, when the termination succeeds; a pod whose runtime objects a restarted
     * kubelet finds with no source wanting it fires it with a stand-in pod (name, namespace,
     * UID); a pod gone entirely while the kubelet was down never does. Changes: nothing.
     * Time: hookTimeout per tap.
     * Throw: the termination fails and is retried with back-off until every tap succeeds, so
     * taps that succeeded see the pod again (idempotent). A tap that always throws keeps the
     * pod terminating for good; each retry records a Warning event (FailedPodRemovedHook)
     * naming the plugin, so an operator sees why the pod does not go.
     */
    podRemoved: new AsyncSeriesHook<[V1Pod, HookContext]>(['pod', 'ctx']),
  });
}

export type KubeletHooks = ReturnType<typeof createHooks>;
export type HookName = keyof KubeletHooks;

/**
 * The hooks whose taps are told, not asked: a tap's throw (or overrun of hookTimeout) is
 * logged naming the plugin and goes no further (the hook's other taps still run, and the
 * core's work goes on as if the tap had succeeded).
 */
export const NOTIFICATION_HOOKS: ReadonlySet<HookName> = new Set<HookName>(['shutdown', 'beforeKill', 'onProbe', 'podStatusChanged']);

/** The names of the per-key hooks (HookMaps). */
export type HookMapName = { [K in HookName]: KubeletHooks[K] extends HookMap<any> ? K : never }[HookName];

/**
 * The tap side of a hook: what plugins may use. Firing (`call`, `promise`) stays with the host.
 * For a HookMap, `for(key)` hands out the tap side of that key's hook (`get`, `intercept` stay with the host).
 */
export type TapOnly<H> = H extends HookMap<infer Inner>
  ? { for(key: string): TapOnly<Inner> }
  : H extends { tapPromise: unknown }
  ? Pick<H, Extract<keyof H, 'tap' | 'tapAsync' | 'tapPromise'>>
  : Pick<H, Extract<keyof H, 'tap'>>;

/** The hooks object as a plugin sees it. */
export type PluginHooks = { readonly [K in HookName]: TapOnly<KubeletHooks[K]> };
