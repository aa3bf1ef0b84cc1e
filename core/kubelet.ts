import type { V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from './logger.ts';
import { errorMessage, pluginOf } from './errors.ts';
import { STAGE, type KubeletHooks } from './hooks.ts';
import { KubeletMetrics } from './metrics/kubelet-metrics.ts';
import type { KubeletConfig } from './config/types.ts';
import { RUNS_COMPILED } from './util/package-root.ts';
import type { PluginHost } from './plugins/plugin-host.ts';
import { createPluginHost } from './plugins/create-plugin-host.ts';
import { instrumentRuntime } from './runtime/instrumented-runtime.ts';
import { RuntimeCache } from './runtime/runtime-cache.ts';
import type { ContainerRuntime, RuntimeVersion } from './runtime/types.ts';
import { StatusManager } from './status/status-manager.ts';
import { ProbeResults } from './status/probe-results.ts';
import type { PodCgroups } from './cgroups/pod-cgroups.ts';
import { setUpNodeCgroups } from './cgroups/node-cgroups.ts';
import { UserNamespaces } from './pod/user-namespaces.ts';
import { Backoff } from './pod/backoff.ts';
import { ImagePuller } from './pod/image-puller.ts';
import { withPullProgress } from './pod/pull-progress-status.ts';
import { CONTAINER_SLOT_MS, PodSyncer, SANDBOX_SLOT_MS } from './pod/pod-sync.ts';
import { Limiter } from './util/limiter.ts';
import { TIMED_OUT, withTimeout } from './util/with-timeout.ts';
import { LifecycleHandlers } from './pod/lifecycle-handlers.ts';
import { SyncLoop } from './sync-loop.ts';
import { Pleg } from './runtime/pleg.ts';
import type { PodSource } from './sources/pod-source.ts';
import { StaticPodDirSource } from './sources/static-dir.ts';
import { StaticPodUrlSource } from './sources/static-url.ts';
import { KubeletServer } from './server/read-only-server.ts';
import { PodTimelines } from './timeline/pod-timeline.ts';
import { VolumeManager } from './volumes/volume-manager.ts';
import { VolumeExpansion } from './volumes/volume-expansion.ts';
import { tapBuiltinVolumes } from './volumes/builtin/index.ts';
import { EventRecorder, nodeRef, podRef } from './events/event-recorder.ts';
import { ApiEventSink } from './apiserver/api-event-sink.ts';
// The API node code is loaded only in API-server mode: @kubernetes/client-node's runtime (all
// generated APIs and models) costs ~70 MiB of RSS a static-only node has no use for.
import type { ApiNode } from './node/api-node.ts';
import { ApiPodReporter } from './apiserver/api-pod-reporter.ts';
import { isApiPod } from './objects/pod-origin.ts';
import { ApiObjectCache, type ObjectSource } from './apiserver/object-cache.ts';
import { ApiStorageObjects } from './apiserver/api-storage-objects.ts';
import { ApiClaimResizeStatus } from './apiserver/api-claim-resize-status.ts';
import { PersistentVolumeStats } from './volumes/persistent-volume-stats.ts';
import { registerVolumeStatsMetrics } from './metrics/volume-stats-metrics.ts';
import { ServiceCache } from './apiserver/service-cache.ts';
import { TokenManager } from './apiserver/token-manager.ts';
import { LocalObjects } from './volumes/builtin/local-objects.ts';
import { readNodeResources, resourceNumber, type NodeResources } from './node/node-resources.ts';
import type { DownwardInputs } from './objects/downward-api.ts';
import type { AdmissionNode } from './pod/admission.ts';
import { EvictionManager, PRESSURE_CONDITION_TYPES } from './eviction/eviction-manager.ts';
import { ImageGC } from './eviction/image-gc.ts';
import { hasDedicatedImageFs } from './eviction/image-fs.ts';
import { LogRotation } from './logs/log-rotation.ts';
import { defaultNodeLabels } from './node/node-object.ts';
import { goArch, goOS } from './node/machine-info.ts';
import { StatsProvider } from './stats/stats-provider.ts';
import { readOnlyRoutes, type KubeletRouteDeps } from './server/kubelet-routes.ts';
import { startMainServer } from './server/start-main-server.ts';
import type { MainServer } from './server/main-server.ts';
import type { SecurityAdmission } from './pod/security-admission.ts';
import { checkAppliedPlugins, securityAdmissionOf } from './start-checks.ts';
import { RuntimeClasses } from './apiserver/runtime-classes.ts';
import { withTerminationMessage } from './pod/termination-message.ts';
// TLS bootstrap and certificate rotation, loaded with the API side (they use its client).
import type { CertificateManager } from './certificates/certificate-manager.ts';
import type { ClientCredentials } from './certificates/kubelet-certificates.ts';
import type { KubeletOptions } from './kubelet-options.ts';
import { DeviceManager } from './devices/device-manager.ts';
import { GracefulNodeShutdown, NODE_SHUTDOWN_MESSAGE, NODE_SHUTDOWN_REASON } from './node/graceful-shutdown.ts';
import { withDevices } from './devices/container-devices.ts';

/** The pod a hook call is about: hooks pass it first, second (waterfalls) or in an event's `pod`. */
function podUIDOf(args: readonly unknown[]): string | undefined {
  for (const a of args.slice(0, 2)) {
    const obj = a as { kind?: string; metadata?: { uid?: string }; spec?: unknown; pod?: { metadata?: { uid?: string } } } | undefined;
    if (obj?.pod?.metadata?.uid) return obj.pod.metadata.uid;
    if (obj?.spec && obj.metadata?.uid) return obj.metadata.uid;
  }
  return undefined;
}

/** How often housekeeping removes pods the kubelet no longer knows (upstream: 2 s). */
const HOUSEKEEPING_MS = 2000;
/**
 * The whole stop's bound, well inside a service manager's stop timeout (the systemd unit of
 * docs/operating/node.md has TimeoutStopSec=30): a stop must end even when a source, the API server, a runtime
 * call or a plugin hangs (pods keep running; a restarted kubelet adopts them). Within it:
 * sources, API side and servers at most STOP_TEARDOWN_MS together, busy pod workers at most
 * STOP_WORKERS_MS, the shutdown hook at most STOP_SHUTDOWN_HOOK_MS, and plugin cleanups what
 * is left (each at most 5 s). What does not finish in its time is cut short, and logged.
 */
const STOP_BOUND_MS = 20_000;
const STOP_TEARDOWN_MS = 5000;
const STOP_WORKERS_MS = 8000;
const STOP_SHUTDOWN_HOOK_MS = 4000;

/**
 * The composition root: builds the parts of a kubelet in the order they depend on each other
 * (hooks and plugins, the runtime from the `runtime` slot, its cache and PLEG, the status
 * manager, the pod sync, the sync loop it runs, node pressure, the servers, the pod sources
 * and, with a kubeconfig, the API-server side), starts them, and stops them in reverse. What
 * happens to pods is the sync loop's (sync-loop.ts); this file only wires.
 */
export class Kubelet {
  readonly hooks: KubeletHooks;
  readonly plugins: PluginHost;
  readonly server: KubeletServer;
  /** The Prometheus metrics served on /metrics. */
  readonly metrics = new KubeletMetrics();
  /** Each pod's start, step by step, for /debug/pods/{ns}/{name}/timeline and `kubelet-ts explain`. */
  readonly timelines = new PodTimelines();
  /** Events about pods and the node: correlated, logged, kept for `kubelet-ts events`, sent to the API server when there is one. */
  readonly events: EventRecorder;
  private readonly sources: PodSource[] = [];
  private readonly probes = new ProbeResults();
  /** Sysctl and AppArmor admission (SysctlForbidden, AppArmor), built from the config at start. */
  private securityAdmission!: SecurityAdmission;
  private runtimeImpl!: ContainerRuntime;
  private runtimeVersion!: RuntimeVersion;
  private cache!: RuntimeCache;
  private status!: StatusManager;
  private syncer!: PodSyncer;
  private puller: ImagePuller | undefined;
  /** The pod cgroup hierarchy (cgroupsPerQOS), through the node's cgroup driver. */
  private cgroups: PodCgroups | undefined;
  /** Graceful node shutdown (shutdownGracePeriod), when configured; its start runs beside the kubelet's. */
  private shutdown: GracefulNodeShutdown | undefined;
  private shutdownStarting: Promise<void> | undefined;
  /** The sync loop: desired and terminating pods, admission, pod workers, housekeeping. */
  private loop!: SyncLoop;
  private pleg!: Pleg;
  /** The volume manager (desired and actual state of every pod's volumes). */
  volumes!: VolumeManager;
  private timers: NodeJS.Timeout[] = [];
  private started = false;
  /** The port the read-only server bound (0 when disabled). */
  readOnlyPort = 0;
  /** The plain-HTTP /healthz server (upstream healthzPort) and the port it bound (0 when disabled). */
  private healthzServer: KubeletServer | undefined;
  healthzPort = 0;
  /** Node and pod resource use (CRI stats, cgroups, filesystems): /stats/summary, /metrics/resource, and eviction decisions. */
  stats!: StatsProvider;
  /** Node pressure: eviction signals, the pressure conditions, evictions through `onPressure` (core/eviction). */
  eviction!: EvictionManager;
  /** Image garbage collection (imageGCHighThresholdPercent, ...), also the eviction manager's reclaim for imagefs. */
  imageGC!: ImageGC;
  /** Container log rotation (containerLogMaxSize, containerLogMaxFiles). */
  logRotation!: LogRotation;
  /** The main port (HTTPS, authenticated and authorized) and the local socket of kubelet-ts commands. */
  mainServer: MainServer | undefined;
  /** The port the main server bound (reported as the Node's kubelet endpoint). */
  port = 0;
  /** The API server side (clients, Node, Lease, pod source), when a kubeconfig is given. */
  api: ApiNode | undefined;
  /** Pod statuses, mirror pods and final deletes to the API server, when a kubeconfig is given. */
  reporter: ApiPodReporter | undefined;
  /** ConfigMaps and Secrets of static pods: files under localObjectsDir. */
  private readonly localObjects: LocalObjects;
  /** ConfigMaps and Secrets of API pods, watched by name (API-server mode). */
  private objectCache: ApiObjectCache | undefined;
  /** The cluster's services, for service link variables (API-server mode). */
  private services: ServiceCache | undefined;
  /** Service account tokens of API pods (API-server mode). */
  private tokens: TokenManager | undefined;
  /** The node's capacity and allocatable, read at start. */
  private nodeResources!: NodeResources;
  /** Renews the client certificate (rotateCertificates) and the serving one (serverTLSBootstrap). */
  private clientCertificates: CertificateManager | undefined;
  private servingCertificates: CertificateManager | undefined;
  /** Aborted by stop(): ends a TLS bootstrap that still waits. */
  private readonly stopping = new AbortController();
  /** Device plugins' resources, their allocation to pods and its checkpoint (core/devices). */
  readonly devices: DeviceManager;
  /** The names of the pod sources, once they are set up (the device manager frees only after each reported). */
  private sourceNames: string[] = [];

  constructor(
    readonly config: KubeletConfig,
    readonly logger: Logger,
    private readonly extraSources: PodSource[] = [],
    /** Knobs tests turn to make slow things fast (a token's refresh share); never set by the CLI. */
    private readonly testHooks: { tokens?: { refreshFraction?: number }; /** The API watches' silence check (pods, services), ms. */ watchSilenceMs?: number } = {},
    /** Which parts run and what is shared with other kubelets of the process (`kubelet-ts hollow`); default all, nothing. */
    private readonly options: KubeletOptions = {},
  ) {
    this.events = new EventRecorder({ nodeName: config.nodeName, logger: logger.child({ component: 'events' }) });
    this.localObjects = new LocalObjects(config.localObjectsDir);
    this.devices = new DeviceManager({
      rootDir: config.rootDir,
      logger,
      activePods: () => this.pods().filter((p) => p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed'),
      sourcesReady: () => this.sourceNames.length > 0 && (this.loop?.sourcesSeen(this.sourceNames) ?? false),
      podRunning: (uid) => this.cache?.get(uid)?.containers.some((c) => c.state === 'CONTAINER_RUNNING') ?? false,
    });
    const { hooks, host } = createPluginHost({
      config,
      logger,
      services: {
        runtime: () => {
          if (!this.runtimeImpl) throw new Error('the runtime is not ready yet: call ctx.runtime() from a hook, not during apply');
          return this.runtimeImpl;
        },
        pods: () => this.pods(),
        reportProbe: async (event) => this.loop?.reportProbe(event),
        observeProbeRun: (run) => this.metrics.observeProbe(run),
        recordEvent: (e) => this.events.record(e.pod ? podRef(e.pod, e.container) : nodeRef(config.nodeName), e.type, e.reason, e.message),
        observeTap: (hook, plugin, ms, err, args) => this.observeTap(hook, plugin, ms, err, args),
        devices: (plugin) => this.devices.view(plugin),
      },
    });
    this.hooks = hooks;
    this.plugins = host;
    this.server = new KubeletServer(logger.child({ component: 'server' }));
  }

  /** Every plugin tap's run, on the core's hooks and on hooks plugins isolate: metrics and start timeline. */
  private observeTap(hook: string, plugin: string, ms: number, err: unknown, args: readonly unknown[] | undefined): void {
    this.metrics.observeTap(hook, plugin, ms, err, args);
    // Taps on a pod's path show in its start timeline, named for their plugin.
    const uid = podUIDOf(args ?? []);
    if (uid) this.timelines.record(uid, { step: `hook:${hook}`, startMs: Date.now() - ms, durationMs: ms, detail: plugin, ...(err ? { error: errorMessage(err) } : {}) });
  }

  /** The runtime as the core uses it (instrumented). */
  get runtime(): ContainerRuntime {
    return this.runtimeImpl;
  }

  /** Loads plugins, checks the runtime, adopts what it runs, then starts sources, loops and server. */
  async start(): Promise<void> {
    const { config, logger } = this;
    // The TLS bootstrap first (it may write the kubeconfig), and with it what rotation needs.
    const certs = config.kubeconfig ? await import('./certificates/kubelet-certificates.ts') : undefined;
    const credentials = certs && config.kubeconfig ? await certs.prepareClientCredentials({ ...config, kubeconfig: config.kubeconfig }, logger, this.stopping.signal) : undefined;
    const serving = certs && config.serverTLSBootstrap ? await certs.servingCertificateAtStart(config, logger) : undefined;
    // A kubeconfig that cannot work fails the start before anything touches the node.
    const apiNode = config.kubeconfig ? await import('./node/api-node.ts') : undefined;
    if (config.kubeconfig) apiNode?.checkKubeconfig(config.kubeconfig, config.nodeName, credentials?.overrides, this.options.api?.kubeconfig);
    // As upstream: an allowedUnsafeSysctls entry that is not namespaced stops the start.
    this.securityAdmission = securityAdmissionOf(config);
    await fs.mkdir(path.join(config.rootDir, 'pods'), { recursive: true });
    // Built-in volume types first: a plugin serves them instead only by tapping at STAGE.POLICY.
    this.nodeResources = await readNodeResources(config, this.options.machineInfo);
    tapBuiltinVolumes(this.hooks, {
      objects: (pod) => this.objectsFor(pod),
      tokens: () => this.tokens,
      inputs: (pod) => this.downwardInputs(pod),
      logger: logger.child({ component: 'volumes' }),
      hostMounts: this.options.hostMounts ?? true,
    });
    // Claims and PersistentVolumes are read from the API server, for API pods only (as ConfigMaps).
    const storageObjects = new ApiStorageObjects(() => this.api?.main);
    // A resize the control plane left to the node: the provider grows the volume, the claim's status is patched here.
    const expansion = new VolumeExpansion({
      hooks: this.hooks, claimStatus: new ApiClaimResizeStatus(() => this.api?.main), logger: logger.child({ component: 'volume-expansion' }),
      event: (object, type, reason, message) => this.events.record(object, type, reason, message), podEventRef: (pod) => podRef(pod),
    });
    this.volumes = new VolumeManager({
      hooks: this.hooks, rootDir: config.rootDir, logger: logger.child({ component: 'volume-manager' }), objects: (pod) => this.objectsFor(pod), hostMounts: this.options.hostMounts ?? true,
      storage: (pod) => (this.api && isApiPod(pod) ? storageObjects : undefined), nodeName: config.nodeName, expansion,
    });
    await this.volumes.start();
    // Allocations made before a restart come back before any device provider registers again.
    await this.devices.start();
    this.tapDevices();
    await this.plugins.loadAll(config.plugins);
    checkAppliedPlugins(config, this.hooks);
    // Registration done; now what touches the node: runtime connections, sockets, watchers.
    await this.plugins.startAll();
    await fs.mkdir(config.podLogsDir, { recursive: true });

    this.runtimeImpl = instrumentRuntime(this.plugins.slot('runtime'), logger, this.metrics.observeRuntime, { requestTimeoutMs: config.runtimeRequestTimeoutMs });
    this.runtimeVersion = await this.runtimeImpl.version();
    logger.info({ runtime: this.runtimeVersion, provider: this.plugins.slotOwner('runtime') }, 'container runtime ready');

    // An exited container's status carries its termination message (read once, safely, from the file the kubelet made).
    this.cache = new RuntimeCache(this.runtimeImpl, { decorateExited: (s) => withTerminationMessage(config.rootDir, s) });
    const cgroups = this.cgroups = await setUpNodeCgroups({
      config, runtime: this.runtimeImpl, capacity: this.nodeResources.capacity, logger,
      activePods: () => this.loop?.activePods() ?? [],
    });
    // The user ID blocks pods with hostUsers: false had before a restart, before any pod syncs.
    const userNamespaces = new UserNamespaces({ rootDir: config.rootDir, logger: logger.child({ component: 'userns' }) });
    await userNamespaces.start();
    const crashBackoff = new Backoff(config.crashLoopBackOff.initialMs, config.crashLoopBackOff.maxMs);
    const pullBackoff = new Backoff(config.imagePullBackOff.initialMs, config.imagePullBackOff.maxMs);
    this.status = new StatusManager({
      hooks: this.hooks,
      logger,
      nodeIP: config.nodeIP,
      runtimeName: () => this.runtimeVersion.runtimeName,
      probes: this.probes,
      onUpdate: (pod, status) => this.reporter?.status(pod, status),
    });
    const puller = this.puller = new ImagePuller({
      runtime: this.runtimeImpl, backoff: pullBackoff, logger, events: this.events, ...(config.maxParallelImagePulls ? { maxParallelPulls: config.maxParallelImagePulls } : {}),
      providerCredentials: (request) => this.hooks.imageCredentials.promise({ credentials: [], failures: [] }, request),
    });
    // A creation still running after SANDBOX_SLOT_MS gives up its slot: a hung CNI plugin delays
    // the pods behind it by that much, not by the runtime request timeout.
    const sandboxCreations = config.maxParallelSandboxCreations ? new Limiter(config.maxParallelSandboxCreations, SANDBOX_SLOT_MS) : undefined;
    // The same for containers: a pod of hundreds of containers (or many pods at once) keeps the
    // runtime at a load it can answer within its deadlines.
    const containerCreations = config.maxParallelContainerCreations ? new Limiter(config.maxParallelContainerCreations, CONTAINER_SLOT_MS) : undefined;
    this.syncer = new PodSyncer({
      runtime: this.runtimeImpl, cache: this.cache, hooks: this.hooks, config, crashBackoff, pullBackoff, puller, status: this.status,
      probes: this.probes, cgroups, userNamespaces, volumes: this.volumes, timeline: this.timelines, events: this.events, logger,
      lifecycle: new LifecycleHandlers({ runtime: () => this.runtimeImpl, logger, events: this.events }),
      objects: (pod) => this.objectsFor(pod), downward: (pod) => this.downwardInputs(pod), ...(sandboxCreations ? { sandboxCreations } : {}), ...(containerCreations ? { containerCreations } : {}),
      runtimeClasses: new RuntimeClasses({ client: () => this.api?.main, handlers: config.runtimeClassHandlers ?? {} }),
      services: () => this.services,
    });
    this.loop = new SyncLoop({
      config, logger, hooks: this.hooks, cache: this.cache, status: this.status, syncer: this.syncer, probes: this.probes,
      volumes: this.volumes, timelines: this.timelines, metrics: this.metrics, events: this.events, securityAdmission: this.securityAdmission,
      admissionNode: () => this.admissionNode(),
      pressure: () => this.eviction,
      pulledMs: (uid) => puller.pulledMs(uid),
      devices: this.devices,
      nodeAdmission: () => this.shutdown?.admission(),
    });
    this.hooks.podStatusChanged.tap({ name: 'kubelet:metrics', stage: STAGE.OBSERVE }, (pod, status) => {
      this.loop.measureStart(pod, status);
      if (status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) this.timelines.ready(pod.metadata!.uid!);
    });

    // First look at the runtime before any source: running pods are adopted, not duplicated.
    this.pleg = new Pleg({
      cache: this.cache,
      periodMs: config.plegRelistPeriodMs,
      logger,
      onChange: (uids) => this.loop.onPlegChange(uids),
      observe: (durationMs, intervalMs) => {
        this.metrics.observeRelist(durationMs, intervalMs);
        this.metrics.setRunningFrom(this.cache.all());
      },
    });
    await this.pleg.start();
    logger.info({ pods: this.cache.uids().length }, 'found pods in the runtime');

    // The main port before the API side: the Node reports the port it bound.
    // Persistent volumes' use, asked of their providers (csi-grpc: NodeGetVolumeStats) at most once a minute.
    const pvStats = new PersistentVolumeStats({
      hooks: this.hooks,
      mounted: (uid) => this.volumes.mountedVolumes(uid),
      logger: logger.child({ component: 'volume-stats' }),
      onAbnormal: (uid, volume, message) => {
        const pod = this.pods().find((p) => p.metadata?.uid === uid);
        if (pod) this.events.record(podRef(pod), 'Warning', 'VolumeConditionAbnormal', `Volume ${volume}: ${message}`);
      },
    });
    this.hooks.podRemoved.tapPromise({ name: 'kubelet:volume-stats', stage: STAGE.OBSERVE }, async (pod) => {
      if (pod.metadata?.uid) pvStats.forget(pod.metadata.uid);
    });
    registerVolumeStatsMetrics(this.metrics.registry, async () => {
      const perPod = await Promise.all(this.pods().map((p) => pvStats.claimsOf(p.metadata!.uid!, p.metadata?.namespace ?? 'default')));
      return perPod.flat();
    });
    this.stats = new StatsProvider({
      nodeName: config.nodeName, rootDir: config.rootDir, podLogsDir: config.podLogsDir, cgroups,
      runtime: () => this.runtimeImpl, pods: () => this.pods(), logger: logger.child({ component: 'stats' }),
      persistentVolumes: (uid, namespace, time) => pvStats.forPod(uid, namespace, time),
    });
    // Node pressure (core/eviction): the same stats, a round every evictionMonitoringPeriod once the sources run.
    this.eviction = new EvictionManager({
      evictionHard: config.evictionHard,
      settings: config.eviction,
      stats: this.stats,
      activePods: () => this.loop.activePods(),
      decide: (event) => this.hooks.onPressure.promise(event),
      evict: (pod, message, grace, disruptionTarget) => this.loop.evictPod(pod, message, grace, disruptionTarget),
      reclaimNodeLevel: (signal) => this.reclaimNodeLevel(signal),
      podReclaimed: (uid) => this.syncer.podReclaimed(uid),
      podEvent: (pod, type, reason, message) => this.events.record(podRef(pod), type, reason, message),
      nodeEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
      logger: logger.child({ component: 'eviction' }),
    });
    this.imageGC = new ImageGC({
      settings: config.imageGC,
      runtime: () => this.runtimeImpl,
      imageFs: async () => {
        const fs = (await this.stats.snapshot(0, { pods: false })).summary.node.runtime?.imageFs;
        return fs?.capacityBytes !== undefined && fs.availableBytes !== undefined ? { capacity: fs.capacityBytes, available: fs.availableBytes } : undefined;
      },
      nodeEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
      logger: logger.child({ component: 'image-gc' }),
    });
    this.logRotation = new LogRotation({
      policy: config.containerLogs,
      runtime: () => this.runtimeImpl,
      runningContainers: () => this.cache.all().flatMap((rs) => rs.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => ({ id: c.id, logPath: c.logPath }))),
      logger: logger.child({ component: 'log-rotation' }),
    });
    // The node's pressure conditions are the eviction manager's; plugins tapping later may still change them.
    this.hooks.nodeStatus.tap({ name: 'kubelet:eviction', stage: -1000 }, (draft) => {
      const pressure = this.eviction.conditionDrafts();
      const others = draft.conditions.filter((c) => !(PRESSURE_CONDITION_TYPES as readonly string[]).includes(c.type));
      return { ...draft, conditions: [...pressure, ...others] };
    });
    const routeDeps: KubeletRouteDeps = {
      config, pods: () => this.pods(), podList: () => this.podList(), healthz: () => this.healthz(), runtime: () => this.runtimeImpl,
      metrics: this.metrics, stats: this.stats, timelines: this.timelines, events: this.events,
    };
    const servers = this.options.servers ?? true;
    if (servers) {
      this.mainServer = await startMainServer({ ...routeDeps, logger, apiClient: () => this.api?.main, ...(serving ? { clusterSigned: { pair: serving.pair } } : {}) });
      this.port = this.mainServer.port;
    }

    if (config.staticPodPath) {
      this.sources.push(
        new StaticPodDirSource({
          dir: config.staticPodPath,
          nodeName: config.nodeName,
          rescanPeriodMs: config.fileCheckFrequencyMs,
          logger: logger.child({ source: 'file' }),
          // Of two manifests declaring one pod, the one whose pod runs keeps it, also after a restart.
          isRunning: (uid) => this.cache.get(uid) !== undefined,
        }),
      );
    }
    if (config.staticPodURL) {
      this.sources.push(new StaticPodUrlSource({ url: config.staticPodURL, headers: config.staticPodURLHeader, nodeName: config.nodeName, periodMs: config.httpCheckFrequencyMs, logger }));
    }
    if (config.kubeconfig && apiNode) this.startApi(config.kubeconfig, apiNode.createApiNode, credentials);
    this.startGracefulShutdown();
    if (certs && this.api) this.startCertificateRotation(certs, credentials, serving);
    this.sources.push(...this.extraSources);
    for (const source of this.sources) await source.start((pods) => this.loop.onSourceSet(source.name, pods));

    const sourceNames = (this.sourceNames = this.sources.map((s) => s.name));
    this.timers.push(setInterval(() => void this.loop.housekeeping(sourceNames), HOUSEKEEPING_MS));
    this.timers.push(setInterval(() => this.loop.resyncAll(), config.syncFrequencyMs));
    for (const t of this.timers) t.unref();
    if (this.options.nodePressure ?? true) {
      this.eviction.start();
      this.imageGC.start();
      this.logRotation.start();
    }

    // Only what upstream's read-only port serves: no logs, no exec, no debugging views.
    for (const [route, handler] of readOnlyRoutes(routeDeps)) this.server.route(route, handler);
    if (servers && config.readOnlyPort > 0) this.readOnlyPort = await this.server.listen(config.address, config.readOnlyPort);
    // Upstream's healthz server, which kubeadm's kubelet-check polls on 127.0.0.1:10248.
    if (servers && config.healthzPort > 0) {
      this.healthzServer = new KubeletServer(logger.child({ component: 'healthz' }), 'healthz');
      this.healthzServer.route('/healthz', () => this.healthz());
      this.healthzPort = await this.healthzServer.listen(config.healthzBindAddress, config.healthzPort, 'healthzPort');
    }
    this.started = true;
    this.events.record(nodeRef(config.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
    await this.hooks.started.promise({ nodeName: config.nodeName, nodeIP: config.nodeIP, runtime: { name: this.runtimeVersion.runtimeName, version: this.runtimeVersion.runtimeVersion, apiVersion: this.runtimeVersion.runtimeApiVersion } });
    logger.info({ node: config.nodeName, nodeIP: config.nodeIP, staticPodPath: config.staticPodPath, port: this.port, readOnlyPort: this.readOnlyPort, code: RUNS_COMPILED ? 'compiled' : 'sources' }, 'kubelet started');
  }

  /**
   * Stops watching and serving; pods keep running (a restarted kubelet adopts them). Bounded by
   * STOP_BOUND_MS as a whole, each part by its share; what is cut short is logged by name.
   */
  async stop(): Promise<void> {
    const deadline = Date.now() + STOP_BOUND_MS;
    const cutShort: string[] = [];
    /** Runs one part of the stop until `until` (and the stop's deadline); a failure or an overrun is logged and the stop goes on. */
    const part = async <T>(what: string, until: number, fn: () => T | Promise<T>): Promise<T | undefined> => {
      const left = Math.min(until, deadline) - Date.now();
      try {
        const done = left > 0 ? await withTimeout(fn, left) : TIMED_OUT;
        if (done !== TIMED_OUT) return done;
        cutShort.push(what);
        this.logger.warn({ part: what, waitedMs: Math.max(0, Math.round(left)) }, 'stop: part did not finish in its time; going on without it');
      } catch (err) {
        this.logger.warn({ part: what, plugin: pluginOf(err), err: errorMessage(err) }, 'stop: part failed; going on');
      }
      return undefined;
    };

    this.stopping.abort();
    for (const t of this.timers.splice(0)) clearInterval(t);
    const teardown = Date.now() + STOP_TEARDOWN_MS;
    await part('client certificate rotation', teardown, () => this.clientCertificates?.stop());
    await part('serving certificate rotation', teardown, () => this.servingCertificates?.stop());
    await part('eviction manager', teardown, () => this.eviction?.stop());
    await part('image GC', teardown, () => this.imageGC?.stop());
    await part('log rotation', teardown, () => this.logRotation?.stop());
    await part('graceful node shutdown', teardown, async () => {
      await this.shutdownStarting;
      await this.shutdown?.stop();
    });
    await Promise.all(this.sources.map((s) => part(`pod source ${s.name}`, teardown, () => s.stop())));
    this.reporter?.stop();
    this.tokens?.stop();
    await part('API objects watch', teardown, () => this.objectCache?.stop());
    await part('services watch', teardown, () => this.services?.stop());
    this.events.setSink(undefined);
    await part('API server side (node status, lease)', teardown, () => this.api?.stop());
    this.pleg?.stop();
    this.loop?.stopQueue();
    await part('read-only server', teardown, () => this.server.close());
    await part('healthz server', teardown, () => this.healthzServer?.close());
    await part('main server', teardown, () => this.mainServer?.close());
    if (this.started) {
      const waitMs = Math.max(0, Math.min(deadline, Date.now() + STOP_WORKERS_MS) - Date.now());
      const busy = await this.loop.drain(waitMs);
      if (busy.length > 0) {
        cutShort.push('pod workers');
        this.logger.warn({ pods: busy, waitedMs: waitMs }, 'stopping while pod workers are still busy; a restarted kubelet takes their pods over');
      }
    }
    await part('shutdown hook', Date.now() + STOP_SHUTDOWN_HOOK_MS, () => this.hooks.shutdown.promise());
    await this.plugins.close({ deadline });
    await part('cgroup driver', deadline, () => this.cgroups?.close());
    // The device checkpoint's last write is local and short: it gets its second even when the plugins used up the bound.
    const devicesStopped = await withTimeout(() => this.devices.stop(), 1000).catch((err: unknown) => this.logger.warn({ err: errorMessage(err) }, 'stop: device manager failed; going on'));
    if (devicesStopped === TIMED_OUT) cutShort.push('device manager');
    this.started = false;
    if (cutShort.length > 0 || Date.now() > deadline) this.logger.warn({ cutShort, boundMs: STOP_BOUND_MS }, 'the stop was cut short to stay within its bound; pods keep running and a restarted kubelet takes them over');
  }

  /**
   * API-server mode: the API clients, Node registration and status, the Lease, the `api` pod
   * source, and what goes back to the server (pod statuses, mirror pods, final deletes, events).
   */
  private startApi(kubeconfig: string, createApiNode: typeof import('./node/api-node.ts').createApiNode, credentials?: ClientCredentials): void {
    const { config, logger } = this;
    const api = createApiNode({
      config: { ...config, kubeconfig, port: this.port || config.port },
      hooks: this.hooks,
      logger,
      ...(credentials?.overrides ? { kubeconfigOverrides: credentials.overrides } : {}),
      ...(this.options.api ? { shared: this.options.api } : {}),
      ...(this.options.machineInfo ? { machineInfo: this.options.machineInfo } : {}),
      ...(this.testHooks.watchSilenceMs !== undefined ? { watchSilenceMs: this.testHooks.watchSilenceMs } : {}),
      inputs: {
        runtimeVersion: () => this.runtimeImpl.version(),
        runtimeStatus: async () => ({ conditions: await this.runtimeImpl.status() }),
        plegHealthy: () => this.pleg.healthy(),
        plegLastRelist: () => this.pleg.lastSeen(),
        images: () => this.runtimeImpl.listImages(),
        volumesInUse: () => this.volumes?.volumesInUse() ?? [],
        shuttingDown: () => this.shutdown?.isShuttingDown() ?? false,
      },
      onEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
    });
    this.api = api;
    this.reporter = new ApiPodReporter({
      client: api.main,
      nodeName: config.nodeName,
      nodeUid: () => api.nodeStatus?.nodeUID,
      logger,
      statusOf: (uid) => this.loop.statusOf(uid),
    });
    this.events.setSink(new ApiEventSink({ client: api.events, logger: logger.child({ component: 'events' }) }));
    const resync = (uids: Iterable<string>) => {
      for (const uid of uids) this.loop.resync(uid);
    };
    this.objectCache = new ApiObjectCache({ client: api.main, logger: logger.child({ component: 'api-objects' }), onChange: resync });
    this.services = new ServiceCache({ client: api.main, logger: logger.child({ component: 'services' }), ...(this.testHooks.watchSilenceMs !== undefined ? { silenceMs: this.testHooks.watchSilenceMs } : {}) });
    this.services.start();
    this.tokens = new TokenManager({ client: api.main, logger: logger.child({ component: 'tokens' }), onRefreshDue: (uid) => resync([uid]), ...this.testHooks.tokens });
    this.loop.attachApi({ reporter: this.reporter, objectCache: this.objectCache, tokens: this.tokens });
    api.start();
    this.sources.push(api.podSource);
  }

  /**
   * Certificates from the cluster (core/certificates): the client certificate renewed with
   * rotateCertificates, taken up by the API clients; with serverTLSBootstrap the main port's
   * certificate asked for and renewed, swapped into the running server.
   */
  private startCertificateRotation(
    certs: typeof import('./certificates/kubelet-certificates.ts'),
    credentials: ClientCredentials | undefined,
    serving: Awaited<ReturnType<typeof import('./certificates/kubelet-certificates.ts').servingCertificateAtStart>> | undefined,
  ): void {
    const { config, logger } = this;
    const api = this.api!;
    if (credentials?.rotation) {
      this.clientCertificates = certs.startClientRotation({ config: { ...config, kubeconfig: config.kubeconfig! }, rotation: credentials.rotation, clients: [api.main, api.heartbeat, api.events], logger });
    }
    if (serving) {
      this.servingCertificates = certs.startServingRotation({
        config,
        store: serving.store,
        initial: serving.pair,
        client: api.main,
        addresses: () => api.nodeStatus?.addresses() ?? [{ type: 'InternalIP', address: config.nodeIP }, { type: 'Hostname', address: config.nodeName }],
        onRotated: (pair) => this.mainServer?.setServingPair({ cert: pair.certPem, key: pair.keyPem, certFile: pair.source }),
        logger,
      });
    }
  }

  /**
   * Graceful node shutdown when configured (core/node/graceful-shutdown.ts): logind tells it of a
   * shutdown, it fails the pods for it by priority and lets the shutdown go on. Its start (logind's
   * delay raised, the lock taken) runs beside the kubelet's; a failure is logged and the kubelet
   * runs on without it, as upstream's.
   */
  private startGracefulShutdown(): void {
    const { config, logger } = this;
    if (config.shutdownGroups.length === 0) return;
    this.shutdown = new GracefulNodeShutdown({
      periods: config.shutdownGroups,
      logind: async () => (await import('./systemd/logind.ts')).connectLogind(),
      activePods: () => this.loop.activePods(),
      terminate: (pod, grace) => this.loop.failPod(pod, { reason: NODE_SHUTDOWN_REASON, message: NODE_SHUTDOWN_MESSAGE, gracePeriodSeconds: grace, disruptionTarget: true }),
      podStopped: (uid) => !this.loop.wanted(uid) || this.syncer.podReclaimed(uid) !== undefined,
      statusesPosted: () => (this.reporter?.statuses.backlog ?? 0) === 0,
      onStateChange: () => this.api?.nodeStatus?.readinessChanged(),
      nodeEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
      logger: logger.child({ component: 'node-shutdown' }),
    });
    this.shutdownStarting = this.shutdown.start().catch((err: unknown) => {
      logger.error({ err: errorMessage(err), shutdownGroups: config.shutdownGroups }, 'graceful node shutdown is configured but could not start; a shutdown of the node will not wait for its pods');
      this.events.record(nodeRef(config.nodeName), 'Warning', 'NodeShutdownUnavailable', `Graceful node shutdown could not start: ${errorMessage(err)}`);
    });
  }

  /**
   * Node-level reclaim before evicting pods for disk (upstream deleteAllUnusedContainers): every
   * dead container of a pod the kubelet failed (an evicted pod's container and log are what
   * fills the disk), and every other dead container but each name's newest (restart counts);
   * for the image filesystem, and for the node's when images share its disk, then every unused
   * image (upstream deleteAllUnusedImages).
   */
  private async reclaimNodeLevel(signal: string): Promise<void> {
    await this.loop.removeDeadContainers();
    const images = signal.startsWith('imagefs.') || (signal.startsWith('nodefs.') && !(await hasDedicatedImageFs(this.runtimeImpl, this.config.rootDir)));
    if (images) await this.imageGC.deleteAllUnused();
  }

  /**
   * The device manager's part of the kubelet: a container's device allocation in its config
   * (before any plugin's tap, which then sees it), devices freed when a pod is gone, and each
   * device resource in the Node's capacity and allocatable (plugins tapping later may change them).
   */
  private tapDevices(): void {
    this.hooks.beforeContainerCreate.tapPromise({ name: 'kubelet:devices', stage: -1000 }, async (config, { pod, container }) => {
      const allocation = await this.devices.containerAllocation(pod, container);
      return allocation ? withDevices(config, allocation) : config;
    });
    this.hooks.podRemoved.tap({ name: 'kubelet:devices', stage: STAGE.OBSERVE }, (pod) => {
      if (pod.metadata?.uid) this.devices.release(pod.metadata.uid);
    });
    this.hooks.nodeStatus.tap({ name: 'kubelet:devices', stage: -1000 }, (draft) => {
      const { capacity, allocatable } = this.devices.nodeResources();
      return { ...draft, capacity: { ...draft.capacity, ...capacity }, allocatable: { ...draft.allocatable, ...allocatable } };
    });
  }

  /** What admission fits pods against: allocatable, the Node's labels and taints (as registered, or as it would be standalone). */
  private admissionNode(): AdmissionNode {
    const a = this.nodeResources.allocatable;
    const node = this.api?.nodeStatus?.node;
    return {
      allocatable: { cpu: Math.round(resourceNumber(a, 'cpu') * 1000), memory: resourceNumber(a, 'memory'), 'ephemeral-storage': resourceNumber(a, 'ephemeral-storage'), pods: this.config.maxPods },
      extended: this.devices.admissionAllocatable(),
      hugePages: Object.fromEntries(Object.keys(a).filter((k) => k.startsWith('hugepages-')).map((k) => [k, resourceNumber(a, k)])),
      labels: node?.metadata?.labels ?? { ...defaultNodeLabels(this.config.nodeName, goOS(), goArch()), ...this.config.nodeLabels },
      taints: node?.spec?.taints ?? this.config.registerWithTaints,
    };
  }

  /** Where a pod's ConfigMaps and Secrets come from: the API for API pods, localObjectsDir for static pods (upstream: static pods may not use API objects). */
  private objectsFor(pod: V1Pod): ObjectSource {
    return this.objectCache && isApiPod(pod) ? this.objectCache : this.localObjects;
  }

  /** The downward API's inputs for a pod: its IPs (once it has them), the node's, the node's allocatable. */
  private downwardInputs(pod: V1Pod): DownwardInputs {
    const status = this.status?.get(pod.metadata!.uid!);
    const podIPs = pod.spec?.hostNetwork ? [this.config.nodeIP] : (status?.podIPs ?? []).map((p) => p.ip).filter((ip): ip is string => !!ip);
    const allocatable = this.nodeResources.allocatable;
    return {
      podIPs,
      hostIPs: [this.config.nodeIP],
      allocatable: () => ({ cpu: resourceNumber(allocatable, 'cpu'), memory: resourceNumber(allocatable, 'memory'), 'ephemeral-storage': resourceNumber(allocatable, 'ephemeral-storage') }),
    };
  }

  /** The pods this kubelet runs or is terminating, with their current status. */
  pods(): V1Pod[] {
    return this.loop?.pods() ?? [];
  }

  podList(): object {
    // Served with the progress of the pulls running now (never posted: core/pod/pull-progress-status.ts).
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: this.pods().map((p) => withPullProgress(p, this.puller?.activePulls(p.metadata?.uid ?? '') ?? [])) };
  }

  healthz(): string {
    if (!this.pleg.healthy()) throw Object.assign(new Error('PLEG is not healthy: no relist finished within 3m0s'), { statusCode: 500 });
    return 'ok';
  }

  /** Resolves when all pod workers are idle (tests use it to wait for quiescence). */
  async idle(): Promise<void> {
    await this.loop.drain();
  }
}
