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
import type { ContainerRuntime } from './runtime/types.ts';
import { ProbeResults } from './status/probe-results.ts';
import type { PodCgroups } from './cgroups/pod-cgroups.ts';
import { setUpNodeCgroups } from './cgroups/node-cgroups.ts';
import { UserNamespaces } from './pod/user-namespaces.ts';
import type { PodSyncer } from './pod/pod-sync.ts';
import type { SyncLoop } from './sync-loop.ts';
import type { Pleg } from './runtime/pleg.ts';
import { createPodEngine, type PodEngine } from './pod-engine.ts';
import { withPullProgress } from './pod/pull-progress-status.ts';
import { TIMED_OUT, withTimeout } from './util/with-timeout.ts';
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
import { ServiceCache } from './apiserver/service-cache.ts';
import { TokenManager } from './apiserver/token-manager.ts';
import { LocalObjects } from './volumes/builtin/local-objects.ts';
import { readNodeResources, resourceNumber, type NodeResources } from './node/node-resources.ts';
import type { DownwardInputs } from './objects/downward-api.ts';
import type { AdmissionNode } from './pod/admission.ts';
import type { EvictionManager } from './eviction/eviction-manager.ts';
import type { ImageGC } from './eviction/image-gc.ts';
import type { LogRotation } from './logs/log-rotation.ts';
import { createNodeUpkeep, type NodeUpkeep } from './node-upkeep.ts';
import { defaultNodeLabels } from './node/node-object.ts';
import { goArch, goOS } from './node/machine-info.ts';
import type { StatsProvider } from './stats/stats-provider.ts';
import { readOnlyRoutes, type KubeletRouteDeps } from './server/kubelet-routes.ts';
import { startMainServer } from './server/start-main-server.ts';
import type { MainServer } from './server/main-server.ts';
import { checkAppliedPlugins, securityAdmissionOf } from './start-checks.ts';
// TLS bootstrap and certificate rotation, loaded with the API side (they use its client).
import type { CertificateManager } from './certificates/certificate-manager.ts';
import type { ClientCredentials } from './certificates/kubelet-certificates.ts';
import type { KubeletOptions } from './kubelet-options.ts';
import { DeviceManager } from './devices/device-manager.ts';
import { GracefulNodeShutdown, NODE_SHUTDOWN_MESSAGE, NODE_SHUTDOWN_REASON } from './node/graceful-shutdown.ts';
import { hookContext } from './util/cancellation.ts';
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
 * (hooks and plugins, volumes, the runtime from the `runtime` slot, the pod engine built on it
 * (pod-engine.ts), the node's upkeep (node-upkeep.ts), the servers, the pod sources and, with a
 * kubeconfig, the API-server side), starts them, and stops them in reverse. What start() builds
 * is held as `undefined` until then and read through `builtPart`, never half-initialised. What
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
  private runtimeImpl: ContainerRuntime | undefined;
  /** The pod cgroup hierarchy (cgroupsPerQOS), through the node's cgroup driver. */
  private cgroups: PodCgroups | undefined;
  /** Graceful node shutdown (shutdownGracePeriod), when configured; its start runs beside the kubelet's. */
  private shutdown: GracefulNodeShutdown | undefined;
  private shutdownStarting: Promise<void> | undefined;
  /** The runtime's cache and PLEG, pod status, image pulls, the pod syncer and the sync loop (core/pod-engine.ts), built at start. */
  private engine: PodEngine | undefined;
  /** The volume manager (desired and actual state of every pod's volumes), built at start. */
  private volumeManager: VolumeManager | undefined;
  private timers: NodeJS.Timeout[] = [];
  private started = false;
  /** The port the read-only server bound (0 when disabled). */
  readOnlyPort = 0;
  /** The plain-HTTP /healthz server (upstream healthzPort) and the port it bound (0 when disabled). */
  private healthzServer: KubeletServer | undefined;
  healthzPort = 0;
  /** Stats, eviction, image GC, log rotation (core/node-upkeep.ts), built at start. */
  private upkeep: NodeUpkeep | undefined;
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
  private nodeResources: NodeResources | undefined;
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
      sourcesReady: () => this.sourceNames.length > 0 && (this.engine?.loop.sourcesSeen(this.sourceNames) ?? false),
      podRunning: (uid) => this.engine?.cache.get(uid)?.containers.some((c) => c.state === 'CONTAINER_RUNNING') ?? false,
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
        reportProbe: async (event) => this.engine?.loop.reportProbe(event),
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
    return this.builtPart(this.runtimeImpl, 'runtime');
  }

  /** A part built by start(); a clear error before that. */
  private builtPart<T>(part: T | undefined, what: string): T {
    if (part === undefined) throw new Error(`the kubelet has not started: no ${what} yet`);
    return part;
  }

  /** Node and pod resource use: /stats/summary, /metrics/resource, and eviction decisions. */
  get stats(): StatsProvider {
    return this.builtPart(this.upkeep, 'stats').stats;
  }

  /** Node pressure: eviction signals, the pressure conditions, evictions through `onPressure`. */
  get eviction(): EvictionManager {
    return this.builtPart(this.upkeep, 'eviction manager').eviction;
  }

  /** Image garbage collection (also the eviction manager's reclaim for imagefs). */
  get imageGC(): ImageGC {
    return this.builtPart(this.upkeep, 'image GC').imageGC;
  }

  /** Container log rotation. */
  get logRotation(): LogRotation {
    return this.builtPart(this.upkeep, 'log rotation').logRotation;
  }

  /** The sync loop: desired and terminating pods, admission, pod workers, housekeeping. */
  private get loop(): SyncLoop {
    return this.builtPart(this.engine, 'sync loop').loop;
  }

  private get syncer(): PodSyncer {
    return this.builtPart(this.engine, 'pod syncer').syncer;
  }

  private get pleg(): Pleg {
    return this.builtPart(this.engine, 'PLEG').pleg;
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
    const securityAdmission = securityAdmissionOf(config);
    await fs.mkdir(path.join(config.rootDir, 'pods'), { recursive: true });
    // Built-in volume types first: a plugin serves them instead only by tapping at STAGE.POLICY.
    const nodeResources = this.nodeResources = await readNodeResources(config, this.options.machineInfo);
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
    const volumes = this.volumeManager = new VolumeManager({
      hooks: this.hooks, rootDir: config.rootDir, logger: logger.child({ component: 'volume-manager' }), objects: (pod) => this.objectsFor(pod), hostMounts: this.options.hostMounts ?? true,
      storage: (pod) => (this.api && isApiPod(pod) ? storageObjects : undefined), nodeName: config.nodeName, expansion,
    });
    await volumes.start();
    // Allocations made before a restart come back before any device provider registers again.
    await this.devices.start();
    this.tapDevices();
    await this.plugins.loadAll(config.plugins);
    checkAppliedPlugins(config, this.hooks);
    // Registration done; now what touches the node: runtime connections, sockets, watchers.
    await this.plugins.startAll();
    await fs.mkdir(config.podLogsDir, { recursive: true });

    const runtime = this.runtimeImpl = instrumentRuntime(this.plugins.slot('runtime'), logger, this.metrics.observeRuntime, { requestTimeoutMs: config.runtimeRequestTimeoutMs });
    const runtimeVersion = await runtime.version();
    logger.info({ runtime: runtimeVersion, provider: this.plugins.slotOwner('runtime') }, 'container runtime ready');

    const cgroups = this.cgroups = await setUpNodeCgroups({
      config, runtime, capacity: nodeResources.capacity, logger,
      activePods: () => this.engine?.loop.activePods() ?? [],
    });
    // The user ID blocks pods with hostUsers: false had before a restart, before any pod syncs.
    const userNamespaces = new UserNamespaces({ rootDir: config.rootDir, logger: logger.child({ component: 'userns' }) });
    await userNamespaces.start();
    const engine = this.engine = createPodEngine({
      config, logger, hooks: this.hooks, runtime, runtimeName: () => runtimeVersion.runtimeName, probes: this.probes, cgroups, userNamespaces,
      volumes, timelines: this.timelines, metrics: this.metrics, events: this.events, securityAdmission, devices: this.devices,
      admissionNode: () => this.admissionNode(),
      pressure: () => this.eviction,
      nodeAdmission: () => this.shutdown?.admission(),
      objects: (pod) => this.objectsFor(pod),
      downward: (pod) => this.downwardInputs(pod),
      onStatus: (pod, status) => this.reporter?.status(pod, status),
      apiClient: () => this.api?.main,
      services: () => this.services,
    });
    // First look at the runtime before any source: running pods are adopted, not duplicated.
    await engine.pleg.start();
    logger.info({ pods: engine.cache.uids().length }, 'found pods in the runtime');

    const upkeep = this.upkeep = createNodeUpkeep({
      config, logger, hooks: this.hooks, metrics: this.metrics, events: this.events, cgroups, runtime: () => runtime, volumes,
      pods: () => this.pods(), activePods: () => engine.loop.activePods(),
      runningContainers: () => engine.cache.all().flatMap((rs) => rs.containers.filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => ({ id: c.id, logPath: c.logPath }))),
      evict: (pod, message, grace, disruptionTarget) => engine.loop.evictPod(pod, message, grace, disruptionTarget),
      podReclaimed: (uid) => engine.syncer.podReclaimed(uid),
      removeDeadContainers: () => engine.loop.removeDeadContainers(),
    });
    // The main port before the API side: the Node reports the port it bound.
    const routeDeps: KubeletRouteDeps = {
      config, pods: () => this.pods(), podList: () => this.podList(), healthz: () => this.healthz(), runtime: () => runtime,
      metrics: this.metrics, stats: upkeep.stats, timelines: this.timelines, events: this.events,
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
          isRunning: (uid) => engine.cache.get(uid) !== undefined,
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
    for (const source of this.sources) await source.start((pods) => engine.loop.onSourceSet(source.name, pods));

    const sourceNames = (this.sourceNames = this.sources.map((s) => s.name));
    this.timers.push(setInterval(() => void engine.loop.housekeeping(sourceNames), HOUSEKEEPING_MS));
    this.timers.push(setInterval(() => engine.loop.resyncAll(), config.syncFrequencyMs));
    for (const t of this.timers) t.unref();
    if (this.options.nodePressure ?? true) upkeep.start();

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
    await this.hooks.started.promise({ nodeName: config.nodeName, nodeIP: config.nodeIP, runtime: { name: runtimeVersion.runtimeName, version: runtimeVersion.runtimeVersion, apiVersion: runtimeVersion.runtimeApiVersion } }, hookContext());
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
    await part('eviction manager', teardown, () => this.upkeep?.eviction.stop());
    await part('image GC', teardown, () => this.upkeep?.imageGC.stop());
    await part('log rotation', teardown, () => this.upkeep?.logRotation.stop());
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
    this.engine?.pleg.stop();
    this.engine?.loop.stopQueue();
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
    await part('shutdown hook', Date.now() + STOP_SHUTDOWN_HOOK_MS, () => this.hooks.shutdown.promise(hookContext()));
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
        runtimeVersion: () => this.runtime.version(),
        runtimeStatus: async () => ({ conditions: await this.runtime.status() }),
        plegHealthy: () => this.pleg.healthy(),
        plegLastRelist: () => this.pleg.lastSeen(),
        images: () => this.runtime.listImages(),
        volumesInUse: () => this.volumeManager?.volumesInUse() ?? [],
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
    const a = this.builtPart(this.nodeResources, 'node resources').allocatable;
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
    const status = this.engine?.status.get(pod.metadata!.uid!);
    const podIPs = pod.spec?.hostNetwork ? [this.config.nodeIP] : (status?.podIPs ?? []).map((p) => p.ip).filter((ip): ip is string => !!ip);
    const allocatable = this.builtPart(this.nodeResources, 'node resources').allocatable;
    return {
      podIPs,
      hostIPs: [this.config.nodeIP],
      allocatable: () => ({ cpu: resourceNumber(allocatable, 'cpu'), memory: resourceNumber(allocatable, 'memory'), 'ephemeral-storage': resourceNumber(allocatable, 'ephemeral-storage') }),
    };
  }

  /** The pods this kubelet runs or is terminating, with their current status. */
  pods(): V1Pod[] {
    return this.engine?.loop.pods() ?? [];
  }

  podList(): object {
    // Served with the progress of the pulls running now (never posted: core/pod/pull-progress-status.ts).
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: this.pods().map((p) => withPullProgress(p, this.engine?.puller.activePulls(p.metadata?.uid ?? '') ?? [])) };
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
