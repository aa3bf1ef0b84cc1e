import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics, exponentialBuckets } from 'prom-client';
import type { RouteHandler } from '../util/http-route.ts';
import type { TapObserver } from '../plugins/tap-isolation.ts';
import type { RuntimeObserver } from '../runtime/instrumented-runtime.ts';
import type { ProbeOutcome, ProbeType } from '../hooks.ts';

/**
 * The kubelet's Prometheus metrics, with upstream's names, types, label names and buckets
 * (kubernetes pkg/kubelet/metrics/metrics.go, pkg/kubelet/prober/prober_manager.go), plus
 * kubelet-ts's own per-plugin hook tap histogram. Each instance owns its own prom-client
 * `Registry` (never the global one), so several kubelets can live in one process (tests).
 *
 * The observer methods match the core's callbacks so wiring is one line each:
 * `instrumentRuntime(rt, log, m.observeRuntime)`, `isolateTaps(hooks, log, { observe: m.observeTap })`,
 * PodWorkers `observe: m.observePodWorker`, Pleg `observe: m.observeRelist`.
 */

/** upstream metrics.DefBuckets (prometheus.DefBuckets). */
const DEF_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** upstream podStartupDurationBuckets. */
const POD_START_BUCKETS = [0.5, 1, 2, 3, 4, 5, 6, 8, 10, 20, 30, 45, 60, 120, 180, 240, 300, 360, 480, 600, 900, 1200, 1800, 2700, 3600];
/** upstream runtime_operations_duration_seconds: metrics.ExponentialBuckets(.005, 2.5, 14). */
const RUNTIME_OP_BUCKETS = exponentialBuckets(0.005, 2.5, 14);
/** kubelet-ts: tap durations range from microseconds (sync observers) to the hook timeout. */
const TAP_BUCKETS = [0.0001, 0.0005, 0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120];

/**
 * The core's runtime operations (ContainerRuntime method names) → upstream's operation_type
 * label values (pkg/kubelet/kuberuntime/instrumented_services.go).
 */
export const RUNTIME_OPERATION_TYPES: Readonly<Record<string, string>> = Object.freeze({
  version: 'version',
  runPodSandbox: 'run_podsandbox',
  stopPodSandbox: 'stop_podsandbox',
  removePodSandbox: 'remove_podsandbox',
  podSandboxStatus: 'podsandbox_status',
  listPodSandboxes: 'list_podsandbox',
  createContainer: 'create_container',
  startContainer: 'start_container',
  stopContainer: 'stop_container',
  removeContainer: 'remove_container',
  listContainers: 'list_containers',
  containerStatus: 'container_status',
  execSync: 'exec_sync',
  imageStatus: 'image_status',
  pullImage: 'pull_image',
  listImages: 'list_images',
  status: 'status',
  exec: 'exec',
  attach: 'attach',
  portForward: 'port_forward',
  listContainerStats: 'list_container_stats',
  listPodSandboxStats: 'list_podsandbox_stats',
  imageFsInfo: 'image_fs_info',
});

/** Core operations that are not runtime operations upstream (not counted). */
const NOT_RUNTIME_OPERATIONS = new Set(['close']);

/** upstream operation_type of a core runtime operation; unknown names become snake_case. */
export function runtimeOperationType(operation: string): string {
  return RUNTIME_OPERATION_TYPES[operation] ?? operation.replace(/([a-z0-9])([A-Z])/g, '$1_$2').toLowerCase();
}

/**
 * Pod worker operations → upstream operation_type (kubetypes.SyncPodType: 'create', 'update',
 * 'sync', 'kill'). The core's 'terminate' is upstream's 'kill'.
 */
export function podWorkerOperationType(operation: string): string {
  return operation === 'terminate' ? 'kill' : operation;
}

/** The container states upstream reports in kubelet_running_containers (kubecontainer.State). */
export const CONTAINER_STATES = ['created', 'running', 'exited', 'unknown'] as const;

/** 'CONTAINER_RUNNING' (CRI) or 'running' → 'running'. */
export function containerStateLabel(state: string): string {
  return state.replace(/^CONTAINER_/, '').toLowerCase();
}

/** upstream probe_type values (probeType.String()). */
const PROBE_TYPE: Record<ProbeType, string> = { liveness: 'Liveness', readiness: 'Readiness', startup: 'Startup' };
/** upstream result values (probeResultSuccessful/Failed/Unknown). */
const PROBE_RESULT: Record<ProbeOutcome, string> = { success: 'successful', failure: 'failed', unknown: 'unknown' };

/** What observeProbe needs: the `onProbe` event (ProbeResultEvent) has this shape. */
export interface ProbeObservation {
  probe: ProbeType;
  result: ProbeOutcome;
  containerName: string;
  pod: { metadata?: { name?: string; namespace?: string; uid?: string } };
}

/** Runtime state counted for the running gauges (PodRuntimeStatus has this shape). */
export interface RuntimePodCounts {
  sandboxes: ReadonlyArray<{ state: string }>;
  containers: ReadonlyArray<{ state: string }>;
}

export interface KubeletMetricsOptions {
  /**
   * Also export prom-client's default process metrics (process_cpu_seconds_total,
   * process_resident_memory_bytes, nodejs_*), as upstream exports Go's process metrics.
   * Default false: it starts an event-loop delay monitor per registry.
   */
  processMetrics?: boolean;
}

export class KubeletMetrics {
  readonly registry = new Registry();

  readonly podStartDuration: Histogram;
  readonly podStartSliDuration: Histogram<'first_with_network'>;
  readonly podWorkerDuration: Histogram<'operation_type'>;
  readonly plegRelistDuration: Histogram;
  readonly plegRelistInterval: Histogram;
  readonly plegLastSeen: Gauge;
  readonly runtimeOperations: Counter<'operation_type'>;
  readonly runtimeOperationsDuration: Histogram<'operation_type'>;
  readonly runtimeOperationsErrors: Counter<'operation_type'>;
  readonly runPodSandboxDuration: Histogram<'runtime_handler'>;
  readonly runPodSandboxErrors: Counter<'runtime_handler'>;
  readonly runningPods: Gauge;
  readonly runningContainers: Gauge<'container_state'>;
  readonly proberProbeTotal: Counter<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid'>;
  readonly hookTapDuration: Histogram<'hook' | 'plugin'>;
  readonly hookTapErrors: Counter<'hook' | 'plugin'>;
  /** Pods ended to admit a critical pod, by the first resource it lacked (upstream kubelet_preemptions). */
  readonly preemptions: Counter<'preemption_signal'>;

  constructor(options: KubeletMetricsOptions = {}) {
    const registers = [this.registry];
    this.podStartDuration = new Histogram({
      name: 'kubelet_pod_start_duration_seconds',
      help: 'Duration in seconds from kubelet seeing a pod for the first time to the pod starting to run',
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.podStartSliDuration = new Histogram({
      name: 'kubelet_pod_start_sli_duration_seconds',
      help: 'Duration in seconds to start a pod, excluding time to pull images and run init containers, measured from pod creation timestamp to when all its containers are reported as started and observed via watch',
      labelNames: ['first_with_network'],
      buckets: POD_START_BUCKETS,
      registers,
    });
    this.podWorkerDuration = new Histogram({
      name: 'kubelet_pod_worker_duration_seconds',
      help: 'Duration in seconds to sync a single pod. Broken down by operation type: create, update, or sync',
      labelNames: ['operation_type'],
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegRelistDuration = new Histogram({
      name: 'kubelet_pleg_relist_duration_seconds',
      help: 'Duration in seconds for relisting pods in PLEG.',
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegRelistInterval = new Histogram({
      name: 'kubelet_pleg_relist_interval_seconds',
      help: 'Interval in seconds between relisting in PLEG.',
      buckets: DEF_BUCKETS,
      registers,
    });
    this.plegLastSeen = new Gauge({
      name: 'kubelet_pleg_last_seen_seconds',
      help: 'Timestamp in seconds when PLEG was last seen active.',
      registers,
    });
    this.runtimeOperations = new Counter({
      name: 'kubelet_runtime_operations_total',
      help: 'Cumulative number of runtime operations by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runtimeOperationsDuration = new Histogram({
      name: 'kubelet_runtime_operations_duration_seconds',
      help: 'Duration in seconds of runtime operations. Broken down by operation type.',
      labelNames: ['operation_type'],
      buckets: RUNTIME_OP_BUCKETS,
      registers,
    });
    this.runtimeOperationsErrors = new Counter({
      name: 'kubelet_runtime_operations_errors_total',
      help: 'Cumulative number of runtime operation errors by operation type.',
      labelNames: ['operation_type'],
      registers,
    });
    this.runPodSandboxDuration = new Histogram({
      name: 'kubelet_run_podsandbox_duration_seconds',
      help: 'Duration in seconds of the run_podsandbox operations. Broken down by RuntimeClass.Handler.',
      labelNames: ['runtime_handler'],
      buckets: DEF_BUCKETS,
      registers,
    });
    this.runPodSandboxErrors = new Counter({
      name: 'kubelet_run_podsandbox_errors_total',
      help: 'Cumulative number of the run_podsandbox operation errors by RuntimeClass.Handler.',
      labelNames: ['runtime_handler'],
      registers,
    });
    this.runningPods = new Gauge({
      name: 'kubelet_running_pods',
      help: 'Number of pods that have a running pod sandbox',
      registers,
    });
    this.runningContainers = new Gauge({
      name: 'kubelet_running_containers',
      help: 'Number of containers currently running',
      labelNames: ['container_state'],
      registers,
    });
    this.proberProbeTotal = new Counter({
      name: 'prober_probe_total',
      help: 'Cumulative number of a liveness, readiness or startup probe for a container by result.',
      labelNames: ['probe_type', 'result', 'container', 'pod', 'namespace', 'pod_uid'],
      registers,
    });
    this.hookTapDuration = new Histogram({
      name: 'kubelet_ts_hook_tap_duration_seconds',
      help: 'Duration in seconds of one plugin tap on one kubelet hook. Broken down by hook and plugin (kubelet-ts).',
      labelNames: ['hook', 'plugin'],
      buckets: TAP_BUCKETS,
      registers,
    });
    this.hookTapErrors = new Counter({
      name: 'kubelet_ts_hook_tap_errors_total',
      help: 'Cumulative number of plugin taps that threw or timed out. Broken down by hook and plugin (kubelet-ts).',
      labelNames: ['hook', 'plugin'],
      registers,
    });
    this.preemptions = new Counter({
      name: 'kubelet_preemptions',
      help: 'Cumulative number of pod preemptions by preemption resource',
      labelNames: ['preemption_signal'],
      registers,
    });
    // Gauges read 0 before the first update, as upstream's do; the state series exist from the start.
    this.runningPods.set(0);
    for (const s of CONTAINER_STATES) this.runningContainers.set({ container_state: s }, 0);
    if (options.processMetrics) collectDefaultMetrics({ register: this.registry });
  }

  /** The Prometheus text exposition content type of `text()`. */
  get contentType(): string {
    return this.registry.contentType;
  }

  /** The metrics in the Prometheus text format. */
  text(): Promise<string> {
    return this.registry.metrics();
  }

  /**
   * RuntimeObserver: one runtime call. Counts it under upstream's operation_type, observes its
   * duration, counts errors; runPodSandbox also feeds run_podsandbox_duration_seconds
   * (runtime_handler '' unless given: the default handler, as upstream labels it).
   */
  readonly observeRuntime = ((operation: string, durationMs: number, error: unknown, runtimeHandler = ''): void => {
    if (NOT_RUNTIME_OPERATIONS.has(operation)) return;
    const type = runtimeOperationType(operation);
    const seconds = durationMs / 1000;
    this.runtimeOperations.inc({ operation_type: type });
    this.runtimeOperationsDuration.observe({ operation_type: type }, seconds);
    if (error) this.runtimeOperationsErrors.inc({ operation_type: type });
    if (type === 'run_podsandbox') {
      this.runPodSandboxDuration.observe({ runtime_handler: runtimeHandler }, seconds);
      if (error) this.runPodSandboxErrors.inc({ runtime_handler: runtimeHandler });
    }
  }) satisfies RuntimeObserver;

  /** TapObserver: one plugin tap's run on one hook. */
  readonly observeTap: TapObserver = (hook: string, plugin: string, durationMs: number, error: unknown): void => {
    this.hookTapDuration.observe({ hook, plugin }, durationMs / 1000);
    if (error) this.hookTapErrors.inc({ hook, plugin });
  };

  /** One pod worker operation ('sync' | 'terminate', or upstream's 'create' | 'update' | 'sync' | 'kill'). */
  readonly observePodWorker = (operation: string, ms: number): void => {
    this.podWorkerDuration.observe({ operation_type: podWorkerOperationType(operation) }, ms / 1000);
  };

  /**
   * One finished PLEG relist: its duration, the interval since the previous relist started
   * (0 for the first relist: not observed) and the last-seen timestamp (now).
   */
  readonly observeRelist = (durationMs: number, intervalMs: number): void => {
    this.plegRelistDuration.observe(durationMs / 1000);
    if (intervalMs > 0) this.plegRelistInterval.observe(intervalMs / 1000);
    this.plegLastSeen.set(Date.now() / 1000);
  };

  /**
   * A pod started: `seconds` from the kubelet first seeing it to all its containers running
   * (kubelet_pod_start_duration_seconds). `sliSeconds` excludes image pulls (default: the same);
   * `firstWithNetwork` marks the node's first pod with a pod network (upstream label).
   */
  readonly observePodStart = (seconds: number, sliSeconds: number = seconds, firstWithNetwork = false): void => {
    this.podStartDuration.observe(seconds);
    this.podStartSliDuration.observe({ first_with_network: String(firstWithNetwork) }, sliSeconds);
  };

  /**
   * Sets the running gauges: pods with a running sandbox and containers by state
   * ('running' or CRI's 'CONTAINER_RUNNING'). States not given read 0.
   */
  readonly setRunning = (pods: number, containersByState: Record<string, number>): void => {
    this.runningPods.set(pods);
    const counts = new Map<string, number>(CONTAINER_STATES.map((s) => [s, 0]));
    for (const [state, n] of Object.entries(containersByState)) {
      const label = containerStateLabel(state);
      counts.set(label, (counts.get(label) ?? 0) + n);
    }
    for (const [state, n] of counts) this.runningContainers.set({ container_state: state }, n);
  };

  /**
   * Sets the running gauges from the runtime cache (`cache.all()` after a relist): a pod runs
   * when one of its sandboxes is ready; every container counts under its state.
   */
  setRunningFrom(pods: Iterable<RuntimePodCounts>): void {
    let running = 0;
    const byState: Record<string, number> = {};
    for (const p of pods) {
      if (p.sandboxes.some((s) => s.state === 'SANDBOX_READY')) running++;
      for (const c of p.containers) {
        const label = containerStateLabel(c.state);
        byState[label] = (byState[label] ?? 0) + 1;
      }
    }
    this.setRunning(running, byState);
  }

  /** One probe result (the `onProbe` event), under upstream's label values. */
  readonly observeProbe = (e: ProbeObservation): void => {
    this.proberProbeTotal.inc(this.probeLabels(e));
  };

  /** Drops a removed pod's probe series (upstream deletes them when the probe worker stops). */
  forgetPod(uid: string): void {
    for (const labels of this.probeSeries.get(uid) ?? []) this.proberProbeTotal.remove(labels);
    this.probeSeries.delete(uid);
  }

  private readonly probeSeries = new Map<string, Array<Record<string, string>>>();

  private probeLabels(e: ProbeObservation): Record<'probe_type' | 'result' | 'container' | 'pod' | 'namespace' | 'pod_uid', string> {
    const m = e.pod.metadata ?? {};
    const labels = {
      probe_type: PROBE_TYPE[e.probe] ?? e.probe,
      result: PROBE_RESULT[e.result] ?? e.result,
      container: e.containerName,
      pod: m.name ?? '',
      namespace: m.namespace ?? '',
      pod_uid: m.uid ?? '',
    };
    const uid = labels.pod_uid;
    let series = this.probeSeries.get(uid);
    if (!series) this.probeSeries.set(uid, (series = []));
    if (!series.some((s) => s.probe_type === labels.probe_type && s.result === labels.result && s.container === labels.container)) series.push(labels);
    return labels;
  }
}

/**
 * The `/metrics` route for KubeletServer: Prometheus text with its content type
 * (`server.route('/metrics', metricsRouteHandler(metrics))`).
 */
export function metricsRouteHandler(metrics: KubeletMetrics): RouteHandler {
  return async (_req, _url, res) => {
    const text = await metrics.text();
    res.writeHead(200, { 'content-type': metrics.contentType }).end(text);
  };
}
