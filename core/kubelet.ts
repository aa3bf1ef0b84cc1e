import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from './logger.ts';
import { ConfigError, errorMessage } from './errors.ts';
import { STAGE, createHooks, type KubeletHooks, type ProbeResultEvent } from './hooks.ts';
import { KubeletMetrics } from './metrics/kubelet-metrics.ts';
import type { KubeletConfig } from './config/types.ts';
import { RUNS_COMPILED } from './config/load.ts';
import { PluginHost } from './plugins/plugin-host.ts';
import { isolateTaps } from './plugins/tap-isolation.ts';
import { instrumentRuntime } from './runtime/instrumented-runtime.ts';
import { RuntimeCache } from './runtime/runtime-cache.ts';
import type { ContainerRuntime, RuntimeVersion } from './runtime/types.ts';
import { StatusManager } from './status/status-manager.ts';
import { ProbeResults } from './status/probe-results.ts';
import { PodCgroups } from './cgroups/pod-cgroups.ts';
import { Backoff } from './pod/backoff.ts';
import { ImagePuller } from './pod/image-puller.ts';
import { withPullProgress } from './pod/pull-progress-status.ts';
import { PodSyncer, evictableContainers, orphanPod, SANDBOX_SLOT_MS } from './pod/pod-sync.ts';
import { Limiter } from './util/limiter.ts';
import { LifecycleHandlers } from './pod/lifecycle-handlers.ts';
import { gracePeriodSeconds, podFullName } from './pod/pod-util.ts';
import { PodWorkers } from './pod/pod-workers.ts';
import { WorkQueue } from './pod/work-queue.ts';
import { Pleg } from './runtime/pleg.ts';
import { PodConfig, type PodUpdate } from './sources/pod-config.ts';
import type { PodSource } from './sources/pod-source.ts';
import { StaticPodDirSource } from './sources/static-dir.ts';
import { StaticPodUrlSource } from './sources/static-url.ts';
import { KubeletServer } from './server.ts';
import { PodTimelines } from './timeline/pod-timeline.ts';
import { VolumeManager } from './volumes/volume-manager.ts';
import { tapBuiltinVolumes } from './volumes/builtin/index.ts';
import { EventRecorder, nodeRef, podRef } from './events/event-recorder.ts';
import { ApiEventSink } from './events/api-event-sink.ts';
// The API node code is loaded only in API-server mode: @kubernetes/client-node's runtime (all
// generated APIs and models) costs ~70 MiB of RSS a static-only node has no use for.
import type { ApiNode } from './node/api-node.ts';
import { ApiPodReporter } from './api/api-pod-reporter.ts';
import { isApiPod, isStaticPod } from './sources/pod-origin.ts';
import { isMirrorPod } from './api/mirror-pods.ts';
import { ApiObjectCache, objectRefsOf, type ObjectSource } from './api/object-cache.ts';
import { TokenManager } from './api/token-manager.ts';
import { LocalObjects } from './volumes/builtin/local-objects.ts';
import { readNodeResources, resourceNumber, type NodeResources } from './node/node-resources.ts';
import type { DownwardInputs } from './pod/downward-api.ts';
import { checkAdmission, checkPressureAdmission, type AdmissionNode } from './pod/admission.ts';
import { EVICTED_REASON, EvictionManager, PRESSURE_CONDITION_TYPES } from './eviction/eviction-manager.ts';
import { ImageGC } from './eviction/image-gc.ts';
import { LogRotation } from './logs/log-rotation.ts';
import { defaultNodeLabels } from './node/node-object.ts';
import { goArch, goOS } from './node/machine-info.ts';
import { StatsProvider } from './stats/stats-provider.ts';
import { readOnlyRoutes, type KubeletRouteDeps } from './server/kubelet-routes.ts';
import { startMainServer } from './server/start-main-server.ts';
import type { MainServer } from './server/main-server.ts';
import { SecurityAdmission } from './pod/security-admission.ts';
import { RuntimeClasses } from './api/runtime-classes.ts';
import { withTerminationMessage } from './pod/termination-message.ts';

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
/** How soon a replacement static pod checks again whether its predecessor is gone. */
const REPLACEMENT_WAIT_MS = 200;
/**
 * How long shutdown waits for pod workers, and for the shutdown hook, before it goes on
 * without them: a stop must end even when a runtime call or a plugin hangs (pods keep
 * running; a restarted kubelet adopts them).
 */
const SHUTDOWN_STEP_MS = 10_000;
/** How long the kubelet remembers that a pod's termination finished. */
const FINISHED_MEMORY_MS = 10 * 60_000;

/**
 * The kubelet host: owns the hooks, the plugins, the pod sources and the sync machinery
 * (pod workers, PLEG, status manager, housekeeping) and the read-only server. It knows the
 * runtime only through the `runtime` slot a plugin fills.
 */
export class Kubelet {
  readonly hooks: KubeletHooks = createHooks();
  readonly plugins: PluginHost;
  readonly server: KubeletServer;
  /** The Prometheus metrics served on /metrics. */
  readonly metrics = new KubeletMetrics();
  /** Each pod's start, step by step, for /debug/pods/{ns}/{name}/timeline and `kubelet-ts explain`. */
  readonly timelines = new PodTimelines();
  /** Events about pods and the node: correlated, logged, kept for `kubelet-ts events`, sent to the API server when there is one. */
  readonly events: EventRecorder;
  /** Pods whose start was already measured (kubelet_pod_start_duration_seconds counts each once). */
  private readonly startMeasured = new Set<string>();
  /** Pods the sources want, by UID. */
  private readonly desired = new Map<string, V1Pod>();
  /** Pods being terminated (removed from their source), by UID. */
  private readonly terminating = new Map<string, V1Pod>();
  private readonly sources: PodSource[] = [];
  private readonly podConfig: PodConfig;
  private readonly probes = new ProbeResults();
  /** Sysctl and AppArmor admission (SysctlForbidden, AppArmor), built from the config at start. */
  private securityAdmission!: SecurityAdmission;
  private runtimeImpl!: ContainerRuntime;
  private runtimeVersion!: RuntimeVersion;
  private cache!: RuntimeCache;
  private status!: StatusManager;
  private syncer!: PodSyncer;
  private puller: ImagePuller | undefined;
  private workers!: PodWorkers;
  private queue!: WorkQueue;
  private pleg!: Pleg;
  /** The volume manager (desired and actual state of every pod's volumes). */
  volumes!: VolumeManager;
  private timers: NodeJS.Timeout[] = [];
  private housekeepingBusy = false;
  private started = false;
  /** The port the read-only server bound (0 when disabled). */
  readOnlyPort = 0;
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
  /** Service account tokens of API pods (API-server mode). */
  private tokens: TokenManager | undefined;
  /** The node's capacity and allocatable, read at start. */
  private nodeResources!: NodeResources;
  /**
   * Pods whose termination finished, by UID, with when: an API pod the kubelet deleted is then
   * still listed until the watch reports the delete, and its removal is not a new termination.
   * Forgotten after FINISHED_MEMORY_MS.
   */
  private readonly finished = new Map<string, number>();

  constructor(
    readonly config: KubeletConfig,
    readonly logger: Logger,
    private readonly extraSources: PodSource[] = [],
    /** Knobs tests turn to make slow things fast (a token's refresh share); never set by the CLI. */
    private readonly testHooks: { tokens?: { refreshFraction?: number } } = {},
  ) {
    this.events = new EventRecorder({ nodeName: config.nodeName, logger: logger.child({ component: 'events' }) });
    this.localObjects = new LocalObjects(config.localObjectsDir);
    this.plugins = new PluginHost({
      hooks: this.hooks,
      config,
      logger,
      services: {
        runtime: () => {
          if (!this.runtimeImpl) throw new Error('the runtime is not ready yet: call ctx.runtime() from a hook, not during apply');
          return this.runtimeImpl;
        },
        pods: () => this.pods(),
        reportProbe: (event) => this.reportProbe(event),
        observeProbeRun: (run) => this.metrics.observeProbe(run),
        recordEvent: (e) => this.events.record(e.pod ? podRef(e.pod, e.container) : nodeRef(config.nodeName), e.type, e.reason, e.message),
        observeTap: (hook, plugin, ms, err, args) => this.observeTap(hook, plugin, ms, err, args),
      },
    });
    this.server = new KubeletServer(logger.child({ component: 'server' }));
    this.podConfig = new PodConfig((u) => this.handleUpdate(u));
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
    // A kubeconfig that cannot work fails the start before anything touches the node.
    const apiNode = config.kubeconfig ? await import('./node/api-node.ts') : undefined;
    if (config.kubeconfig) apiNode?.checkKubeconfig(config.kubeconfig, config.nodeName);
    // As upstream: an allowedUnsafeSysctls entry that is not namespaced stops the start.
    try {
      this.securityAdmission = new SecurityAdmission({ allowedUnsafeSysctls: config.allowedUnsafeSysctls });
    } catch (err) {
      throw new ConfigError(`${config.configFile ?? 'config'}: ${errorMessage(err)}`);
    }
    isolateTaps(this.hooks, logger, { timeoutMs: config.hookTimeoutMs, observe: (hook, plugin, ms, err, args) => this.observeTap(hook, plugin, ms, err, args) });
    await fs.mkdir(path.join(config.rootDir, 'pods'), { recursive: true });
    // Built-in volume types first: a plugin serves them instead only by tapping at STAGE.POLICY.
    this.nodeResources = await readNodeResources(config);
    tapBuiltinVolumes(this.hooks, {
      objects: (pod) => this.objectsFor(pod),
      tokens: () => this.tokens,
      inputs: (pod) => this.downwardInputs(pod),
      logger: logger.child({ component: 'volumes' }),
    });
    this.volumes = new VolumeManager({ hooks: this.hooks, rootDir: config.rootDir, logger: logger.child({ component: 'volume-manager' }), objects: (pod) => this.objectsFor(pod) });
    await this.volumes.start();
    await this.plugins.loadAll(config.plugins);
    // Registration done; now what touches the node: runtime connections, sockets, watchers.
    await this.plugins.startAll();
    await fs.mkdir(config.podLogsDir, { recursive: true });

    this.runtimeImpl = instrumentRuntime(this.plugins.slot('runtime'), logger, this.metrics.observeRuntime);
    this.runtimeVersion = await this.runtimeImpl.version();
    logger.info({ runtime: this.runtimeVersion, provider: this.plugins.slotOwner('runtime') }, 'container runtime ready');

    // An exited container's status carries its termination message (read once, safely, from the file the kubelet made).
    this.cache = new RuntimeCache(this.runtimeImpl, { decorateExited: (s) => withTerminationMessage(config.rootDir, s) });
    let cgroups: PodCgroups | undefined;
    if (config.cgroupsPerQOS) {
      cgroups = new PodCgroups({ root: config.cgroupRoot, logger });
      if (cgroups.supported) await cgroups.ensureQoS();
      else {
        logger.warn('no cgroup v1 memory and cpu hierarchies on this host (cgroup v2 is not handled yet): pods run without pod cgroups');
        cgroups = undefined;
      }
    }
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
    const puller = this.puller = new ImagePuller({ runtime: this.runtimeImpl, backoff: pullBackoff, logger, events: this.events, ...(config.maxParallelImagePulls ? { maxParallelPulls: config.maxParallelImagePulls } : {}) });
    // A creation still running after SANDBOX_SLOT_MS gives up its slot: a hung CNI plugin delays
    // the pods behind it by that much, not by the runtime request timeout.
    const sandboxCreations = config.maxParallelSandboxCreations ? new Limiter(config.maxParallelSandboxCreations, SANDBOX_SLOT_MS) : undefined;
    this.syncer = new PodSyncer({
      runtime: this.runtimeImpl, cache: this.cache, hooks: this.hooks, config, crashBackoff, pullBackoff, puller, status: this.status,
      probes: this.probes, cgroups, volumes: this.volumes, timeline: this.timelines, events: this.events, logger,
      lifecycle: new LifecycleHandlers({ runtime: () => this.runtimeImpl, logger, events: this.events }),
      objects: (pod) => this.objectsFor(pod), downward: (pod) => this.downwardInputs(pod), ...(sandboxCreations ? { sandboxCreations } : {}),
      runtimeClasses: new RuntimeClasses({ client: () => this.api?.main, handlers: config.runtimeClassHandlers ?? {} }),
    });
    this.queue = new WorkQueue((uid) => this.resync(uid));
    this.workers = new PodWorkers(
      {
        sync: (pod) => this.syncPod(pod),
        terminate: (pod) => this.syncer.terminate(pod),
        requeue: (uid, ms) => this.queue.enqueue(uid, ms),
        terminated: (pod) => {
          this.terminating.delete(pod.metadata!.uid!);
          this.finished.set(pod.metadata!.uid!, Date.now());
          this.reporter?.terminated(pod);
          this.reporter?.forget(pod.metadata!.uid!);
          this.objectCache?.forgetPod(pod.metadata!.uid!);
          this.tokens?.forgetPod(pod.metadata!.uid!);
          this.startMeasured.delete(pod.metadata!.uid!);
          this.metrics.forgetPod(pod.metadata!.uid!);
          this.timelines.forget(pod.metadata!.uid!);
          // Wanted again while it stopped (its manifest removed or broken, then back under the
          // same UID): it starts now, not at the next periodic resync.
          const again = this.desired.get(pod.metadata!.uid!);
          if (again) {
            this.finished.delete(pod.metadata!.uid!);
            this.timelines.seen(pod.metadata!.uid!, again.metadata?.namespace ?? 'default', again.metadata?.name ?? '');
            this.workers.update(again);
          }
        },
        observe: this.metrics.observePodWorker,
      },
      logger.child({ component: 'pod-workers' }),
    );
    this.hooks.podStatusChanged.tap({ name: 'kubelet:metrics', stage: STAGE.OBSERVE }, (pod, status) => {
      this.measureStart(pod, status, puller);
      if (status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) this.timelines.ready(pod.metadata!.uid!);
    });

    // First look at the runtime before any source: running pods are adopted, not duplicated.
    this.pleg = new Pleg({
      cache: this.cache,
      periodMs: config.plegRelistPeriodMs,
      logger,
      onChange: (uids) => this.onPlegChange(uids),
      observe: (durationMs, intervalMs) => {
        this.metrics.observeRelist(durationMs, intervalMs);
        this.metrics.setRunningFrom(this.cache.all());
      },
    });
    await this.pleg.start();
    logger.info({ pods: this.cache.uids().length }, 'found pods in the runtime');

    // The main port before the API side: the Node reports the port it bound.
    this.stats = new StatsProvider({
      nodeName: config.nodeName, rootDir: config.rootDir, podLogsDir: config.podLogsDir, cgroupRoot: cgroups ? config.cgroupRoot : undefined,
      runtime: () => this.runtimeImpl, pods: () => this.pods(), logger: logger.child({ component: 'stats' }),
    });
    // Node pressure (core/eviction): the same stats, a round every evictionMonitoringPeriod once the sources run.
    this.eviction = new EvictionManager({
      evictionHard: config.evictionHard,
      settings: config.eviction,
      stats: this.stats,
      activePods: () => this.activePods(),
      decide: (event) => this.hooks.onPressure.promise(event),
      evict: (pod, message, grace) => this.evictPod(pod, message, grace),
      reclaimNodeLevel: (signal) => this.reclaimNodeLevel(signal),
      nodeEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
      logger: logger.child({ component: 'eviction' }),
    });
    this.imageGC = new ImageGC({
      settings: config.imageGC,
      runtime: () => this.runtimeImpl,
      imageFs: async () => {
        const fs = (await this.stats.snapshot(0)).summary.node.runtime?.imageFs;
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
    this.mainServer = await startMainServer({ ...routeDeps, logger, apiClient: () => this.api?.main });
    this.port = this.mainServer.port;

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
    if (config.kubeconfig && apiNode) this.startApi(config.kubeconfig, apiNode.createApiNode);
    this.sources.push(...this.extraSources);
    for (const source of this.sources) await source.start((pods) => this.onSourceSet(source.name, pods));

    this.timers.push(setInterval(() => void this.housekeeping(), HOUSEKEEPING_MS));
    this.timers.push(setInterval(() => this.resyncAll(), config.syncFrequencyMs));
    for (const t of this.timers) t.unref();
    this.eviction.start();
    this.imageGC.start();
    this.logRotation.start();

    // Only what upstream's read-only port serves: no logs, no exec, no debugging views.
    for (const [route, handler] of readOnlyRoutes(routeDeps)) this.server.route(route, handler);
    if (config.readOnlyPort > 0) this.readOnlyPort = await this.server.listen(config.address, config.readOnlyPort);
    this.started = true;
    this.events.record(nodeRef(config.nodeName), 'Normal', 'Starting', 'Starting kubelet.');
    await this.hooks.started.promise({ nodeName: config.nodeName, nodeIP: config.nodeIP, runtime: { name: this.runtimeVersion.runtimeName, version: this.runtimeVersion.runtimeVersion, apiVersion: this.runtimeVersion.runtimeApiVersion } });
    logger.info({ node: config.nodeName, nodeIP: config.nodeIP, staticPodPath: config.staticPodPath, port: this.port, readOnlyPort: this.readOnlyPort, code: RUNS_COMPILED ? 'compiled' : 'sources' }, 'kubelet started');
  }

  /**
   * Stops watching and serving; pods keep running (a restarted kubelet adopts them). Bounded:
   * busy pod workers and the shutdown hook get SHUTDOWN_STEP_MS each, plugin cleanups their own bound.
   */
  async stop(): Promise<void> {
    for (const t of this.timers.splice(0)) clearInterval(t);
    await this.eviction?.stop();
    await this.imageGC?.stop();
    await this.logRotation?.stop();
    await Promise.all(this.sources.map((s) => s.stop().catch(() => {})));
    this.reporter?.stop();
    this.tokens?.stop();
    await this.objectCache?.stop();
    this.events.setSink(undefined);
    await this.api?.stop();
    this.pleg?.stop();
    this.queue?.stop();
    await this.server.close();
    await this.mainServer?.close();
    if (this.started) {
      const busy = await this.workers.drain(SHUTDOWN_STEP_MS);
      if (busy.length > 0) this.logger.warn({ pods: busy, waitedMs: SHUTDOWN_STEP_MS }, 'stopping while pod workers are still busy; a restarted kubelet takes their pods over');
    }
    const shutdown = this.hooks.shutdown.promise().then(
      () => undefined,
      (err: unknown) => this.logger.warn({ err: errorMessage(err) }, 'shutdown hook failed'),
    );
    if ((await withTimeout(shutdown, SHUTDOWN_STEP_MS)) === 'timeout') this.logger.warn({ waitedMs: SHUTDOWN_STEP_MS }, 'shutdown hook did not finish; going on');
    await this.plugins.close();
    this.started = false;
  }

  /**
   * API-server mode: the API clients, Node registration and status, the Lease, the `api` pod
   * source, and what goes back to the server (pod statuses, mirror pods, final deletes, events).
   */
  private startApi(kubeconfig: string, createApiNode: typeof import('./node/api-node.ts').createApiNode): void {
    const { config, logger } = this;
    const api = createApiNode({
      config: { ...config, kubeconfig, port: this.port || config.port },
      hooks: this.hooks,
      logger,
      inputs: {
        runtimeVersion: () => this.runtimeImpl.version(),
        runtimeStatus: async () => ({ conditions: await this.runtimeImpl.status() }),
        plegHealthy: () => this.pleg.healthy(),
        plegLastRelist: () => this.pleg.lastSeen(),
        images: () => this.runtimeImpl.listImages(),
      },
      onEvent: (type, reason, message) => this.events.record(nodeRef(config.nodeName), type, reason, message),
    });
    this.api = api;
    this.reporter = new ApiPodReporter({
      client: api.main,
      nodeName: config.nodeName,
      nodeUid: () => api.nodeStatus?.nodeUID,
      logger,
      statusOf: (uid) => {
        const pod = this.desired.get(uid) ?? this.terminating.get(uid);
        const status = this.status.get(uid);
        return pod && status ? { pod, status } : undefined;
      },
    });
    this.events.setSink(new ApiEventSink({ client: api.events, logger: logger.child({ component: 'events' }) }));
    const resync = (uids: Iterable<string>) => {
      for (const uid of uids) this.resync(uid);
    };
    this.objectCache = new ApiObjectCache({ client: api.main, logger: logger.child({ component: 'api-objects' }), onChange: resync });
    this.tokens = new TokenManager({ client: api.main, logger: logger.child({ component: 'tokens' }), onRefreshDue: (uid) => resync([uid]), ...this.testHooks.tokens });
    api.start();
    this.sources.push(api.podSource);
  }

  /**
   * A source's complete set: to the merger, except mirror pods (the API's copies of this
   * node's static pods, which the kubelet keeps but never runs).
   */
  private onSourceSet(source: string, pods: V1Pod[]): void {
    if (source === 'api') {
      this.reporter?.mirrors.observe(pods.filter(isMirrorPod));
      pods = pods.filter((p) => !isMirrorPod(p));
    }
    this.podConfig.set(source, pods);
    this.reporter?.mirrors.setStatic([...this.desired.values()].filter(isStaticPod));
  }

  /** The pods admitted besides `except`: wanted and not rejected or finished, and those still terminating. */
  private admittedPods(except: string): V1Pod[] {
    const out: V1Pod[] = [];
    for (const [uid, p] of [...this.desired, ...this.terminating]) {
      if (uid === except || this.status.rejection(uid)) continue;
      const phase = this.status.get(uid)?.phase ?? p.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      out.push(p);
    }
    return out;
  }

  /** The pods active on the node: wanted, admitted, not failed by the kubelet, not terminal, not terminating (eviction's candidates). */
  private activePods(): V1Pod[] {
    return this.pods().filter((p) => {
      const uid = p.metadata!.uid!;
      return this.desired.has(uid) && !this.terminating.has(uid) && !this.status.rejection(uid) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
    });
  }

  /**
   * Evicts a pod the eviction manager chose: Failed with reason Evicted and the policy's
   * message (upstream's wording), a Warning event, and its containers killed with `gracePeriodSeconds`
   * by its worker (the path of a pod past its active deadline). False when it is no longer active.
   */
  private evictPod(pod: V1Pod, message: string, gracePeriodSeconds: number): boolean {
    const uid = pod.metadata!.uid!;
    const current = this.desired.get(uid);
    if (!current || this.status.rejection(uid)) return false;
    this.status.reject(uid, EVICTED_REASON, message, gracePeriodSeconds);
    this.events.record(podRef(current), 'Warning', EVICTED_REASON, message);
    this.logger.warn({ pod: podFullName(current), uid, gracePeriodSeconds, message }, 'pod evicted');
    this.workers.update(current);
    return true;
  }

  /**
   * Node-level reclaim before evicting pods for disk (upstream deleteAllUnusedContainers): every
   * dead container of a pod the kubelet failed (an evicted pod's container and log are what
   * fills the disk), and every other dead container but each name's newest (restart counts);
   * for the image filesystem, then every unused image (upstream deleteAllUnusedImages).
   */
  private async reclaimNodeLevel(signal: string): Promise<void> {
    const dead = this.cache.all().flatMap((rs) => (this.status.rejection(rs.uid)
      ? rs.containers.filter((c) => c.state === 'CONTAINER_EXITED')
      : evictableContainers(rs).flatMap(([, list]) => list)));
    for (const c of dead) await this.syncer.removeContainerAndLog(c);
    if (signal.startsWith('imagefs.')) await this.imageGC.deleteAllUnused();
  }

  /** What admission fits pods against: allocatable, the Node's labels and taints (as registered, or as it would be standalone). */
  private admissionNode(): AdmissionNode {
    const a = this.nodeResources.allocatable;
    const node = this.api?.nodeStatus?.node;
    return {
      allocatable: { cpu: Math.round(resourceNumber(a, 'cpu') * 1000), memory: resourceNumber(a, 'memory'), 'ephemeral-storage': resourceNumber(a, 'ephemeral-storage'), pods: this.config.maxPods },
      labels: node?.metadata?.labels ?? { ...defaultNodeLabels(this.config.nodeName, goOS(), goArch()), ...this.config.nodeLabels },
      taints: node?.spec?.taints ?? this.config.registerWithTaints,
    };
  }

  /**
   * A probe result from the prober: the core records it and syncs the pod at once (readiness and
   * startup feed its status; a liveness or startup failure makes the sync restart the container),
   * then `onProbe` tells the plugins. A failing tap is logged; it changes nothing of the result.
   */
  private async reportProbe(e: ProbeResultEvent): Promise<void> {
    this.probes.set(e.containerId, e.probe, e.result);
    const pod = this.desired.get(e.pod.metadata!.uid!);
    if (pod) this.workers.update(pod);
    await this.hooks.onProbe.promise(e).catch((err) => this.logger.warn({ pod: `${e.pod.metadata?.namespace}/${e.pod.metadata?.name}`, container: e.containerName, err: errorMessage(err) }, 'an onProbe tap failed'));
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
    const out: V1Pod[] = [];
    // One entry per UID: a pod its source wants again while it still stops is in both maps,
    // and what runs of it is the stopping one until its worker is done.
    for (const [uid, pod] of new Map([...this.desired, ...this.terminating])) {
      const status = this.status?.get(uid) ?? pod.status;
      out.push({ ...pod, apiVersion: 'v1', kind: 'Pod', ...(status ? { status } : {}) });
    }
    return out;
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
    await this.workers.drain();
  }

  /** The first time a pod has all its containers running: kubelet_pod_start_duration_seconds. */
  private measureStart(pod: V1Pod, status: V1PodStatus, puller: ImagePuller): void {
    const uid = pod.metadata!.uid!;
    if (this.startMeasured.has(uid) || status.phase !== 'Running') return;
    if (!(status.containerStatuses ?? []).every((c) => c.state?.running)) return;
    this.startMeasured.add(uid);
    const seconds = (Date.now() - new Date(status.startTime ?? Date.now()).getTime()) / 1000;
    // The SLI leaves out image pulls, as upstream's does.
    this.metrics.observePodStart(seconds, Math.max(0, seconds - puller.pulledMs(uid) / 1000));
  }

  private handleUpdate(u: PodUpdate): void {
    for (let pod of u.pods) {
      const uid = pod.metadata!.uid!;
      // An API pod being deleted (deletionTimestamp set): terminated with its deletion's grace
      // period, then deleted from the API server by the kubelet (see ApiPodReporter.terminated).
      const deleting = u.op !== 'REMOVE' && isApiPod(pod) && !!pod.metadata?.deletionTimestamp;
      if (u.op === 'REMOVE' || deleting) {
        // Gone from its source after the kubelet finished it (an API pod it deleted): nothing left to do.
        if (!this.desired.has(uid) && !this.terminating.has(uid) && !this.workers.has(uid) && this.finished.has(uid)) {
          if (u.op === 'REMOVE') this.finished.delete(uid);
          continue;
        }
        if (this.terminating.has(uid) && this.workers.isTerminating(uid)) continue;
        this.desired.delete(uid);
        this.queue.forget(uid);
        if (!deleting) {
          // Shown as Terminating (deletionTimestamp) while its containers get their grace period.
          const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
          pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: grace } };
        }
        this.terminating.set(uid, pod);
        void this.status.update(pod, this.cache.get(uid), true).catch(() => {});
        this.logger.info({ pod: podFullName(pod), uid, source: u.source, gracePeriod: gracePeriodSeconds(pod) }, deleting ? 'pod deleted in the API server, terminating' : 'pod removed from source, terminating');
        this.workers.update(pod, true);
        continue;
      }
      if (u.op === 'ADD') {
        this.finished.delete(uid);
        this.logger.info({ pod: podFullName(pod), uid, source: u.source }, 'pod added');
        this.timelines.seen(uid, pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? '');
        void this.admit(pod);
        continue;
      }
      this.desired.set(uid, pod);
      this.objectCache?.setPodRefs(uid, isApiPod(pod) ? objectRefsOf(pod) : []);
      this.workers.update(pod);
    }
  }

  private async admit(pod: V1Pod): Promise<void> {
    const uid = pod.metadata!.uid!;
    const admitStart = Date.now();
    this.desired.set(uid, pod);
    // Its ConfigMaps and Secrets are watched from now on: ready when its volumes are set up.
    if (isApiPod(pod)) this.objectCache?.setPodRefs(uid, objectRefsOf(pod));
    // Upstream's general predicates against the pods admitted before it (terminating ones still hold their resources).
    let rejection: { reason: string; message: string } | undefined = checkAdmission(pod, this.admittedPods(uid), this.admissionNode(), { nodeName: this.config.nodeName, isStatic: isStaticPod(pod) });
    rejection ??= this.securityAdmission.admit(pod);
    rejection ??= checkPressureAdmission(pod, this.eviction.conditions(), { critical: this.eviction.isCritical(pod) });
    if (!rejection) {
      try {
        const reason = await this.hooks.admitPod.promise(pod);
        if (reason) rejection = { reason: 'UnexpectedAdmissionError', message: reason };
      } catch (err) {
        rejection = { reason: 'UnexpectedAdmissionError', message: errorMessage(err) };
      }
    }
    if (rejection) {
      this.logger.warn({ pod: podFullName(pod), uid, ...rejection }, 'pod rejected');
      this.status.reject(uid, rejection.reason, rejection.message);
      await this.status.update(pod, undefined);
      return;
    }
    this.timelines.record(uid, { step: 'admitted', startMs: admitStart, durationMs: Date.now() - admitStart });
    if (this.desired.get(uid) === pod) this.workers.update(pod);
  }

  private async syncPod(pod: V1Pod): Promise<{ requeueAfterMs?: number }> {
    // A pod replacing another of the same namespace/name (an edited static pod) waits until its
    // predecessor has fully stopped: the two never run side by side (both may bind host ports).
    const others = this.workers.terminatingWithName(podFullName(pod)).filter((u) => u !== pod.metadata!.uid);
    others.push(...this.stopPredecessors(pod));
    if (others.length > 0) {
      await this.status.update(pod, undefined);
      return { requeueAfterMs: REPLACEMENT_WAIT_MS };
    }
    // Rejected at admission (or failed for good): it never gets a sandbox, across resyncs too.
    // The syncer still stops what runs of it (a pod past its active deadline whose kill failed is retried).
    if (this.status.rejection(pod.metadata!.uid!)) return this.syncer.sync(pod);
    // An API pod the server already has as Succeeded or Failed (it finished before a restart of
    // the kubelet) is never started again, whatever the runtime still holds of it.
    if (isApiPod(pod) && (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') && !this.status.get(pod.metadata!.uid!)) {
      const rs = this.cache.get(pod.metadata!.uid!);
      if (!rs?.containers.some((c) => c.state === 'CONTAINER_RUNNING')) return {};
    }
    return this.syncer.sync(pod);
  }

  /**
   * UIDs of pods in the runtime with this pod's namespace and name that no source wants (an
   * old version of an edited static pod, found running after a restart of the kubelet): their
   * termination starts now, not at the next housekeeping.
   */
  private stopPredecessors(pod: V1Pod): string[] {
    const uid = pod.metadata!.uid!;
    const found: string[] = [];
    for (const rs of this.cache.all()) {
      if (rs.uid === uid || rs.name !== pod.metadata?.name || rs.namespace !== (pod.metadata?.namespace ?? 'default') || this.desired.has(rs.uid)) continue;
      found.push(rs.uid);
      if (this.workers.has(rs.uid)) continue;
      this.logger.info({ pod: podFullName(pod), uid, predecessor: rs.uid }, 'stopping the earlier version of the pod before starting this one');
      this.workers.update(orphanPod(rs), true);
    }
    return found;
  }

  /** Looks at a pod again: a wanted pod syncs; one whose termination failed tries it again. */
  private resync(uid: string): void {
    const pod = this.desired.get(uid);
    if (pod) this.workers.update(pod);
    else if (this.workers.isTerminating(uid)) this.workers.retry(uid);
  }

  private resyncAll(): void {
    for (const pod of this.desired.values()) this.workers.update(pod);
  }

  private onPlegChange(uids: Set<string>): void {
    for (const uid of uids) {
      this.resync(uid);
      // A worker busy for long (a slow postStart, a hanging plugin tap) publishes the pod's
      // status only when it is done: meanwhile the status follows the runtime from here.
      const pod = this.desired.get(uid);
      if (pod && this.workers.isBusy(uid)) void this.status.update(pod, this.cache.get(uid)).catch(() => {});
    }
  }

  /** Node-wide container GC: beyond `maxContainers` dead containers, the oldest go first. */
  private async collectDeadContainers(): Promise<void> {
    const limit = this.config.maxContainers;
    if (limit < 0) return;
    const dead = this.cache.all().flatMap((rs) => evictableContainers(rs).flatMap(([, list]) => list));
    if (dead.length <= limit) return;
    dead.sort((a, b) => a.createdAt - b.createdAt);
    for (const c of dead.slice(0, dead.length - limit)) await this.syncer.removeContainerAndLog(c);
  }

  /** Terminates runtime pods that no source wants (after every source has reported once). */
  private async housekeeping(): Promise<void> {
    if (this.housekeepingBusy || !this.podConfig.seenAll(this.sources.map((s) => s.name))) return;
    this.housekeepingBusy = true;
    try {
      for (const rs of this.cache.all()) {
        if (this.desired.has(rs.uid) || this.workers.has(rs.uid)) continue;
        const pod = orphanPod(rs);
        this.logger.info({ pod: podFullName(pod), uid: rs.uid }, 'removing pod no source wants');
        this.workers.update(pod, true);
      }
      await this.collectDeadContainers();
      const now = Date.now();
      for (const [uid, at] of this.finished) if (now - at > FINISHED_MEMORY_MS) this.finished.delete(uid);
      // Volumes of pods nobody runs any more (gone while the kubelet was down, or a teardown that failed).
      const runtimeUids = new Set(this.cache.uids());
      await this.volumes.cleanupOrphans((uid) => this.desired.has(uid) || this.terminating.has(uid) || this.workers.has(uid) || runtimeUids.has(uid));
    } catch (err) {
      this.logger.warn({ err: errorMessage(err) }, 'housekeeping failed');
    } finally {
      this.housekeepingBusy = false;
    }
  }
}

/** `p`'s value, or 'timeout' once `ms` passed first. */
async function withTimeout<T>(p: Promise<T>, ms: number): Promise<T | 'timeout'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timeout'>((resolve) => {
    timer = setTimeout(() => resolve('timeout'), ms);
  });
  try {
    return await Promise.race([p, timeout]);
  } finally {
    clearTimeout(timer);
  }
}
