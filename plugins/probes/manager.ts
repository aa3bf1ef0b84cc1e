import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { errorMessage, Limiter, podFullName, type ContainerRuntime, type Logger, type PluginEvent, type ProbeOutcome, type ProbeResultEvent, type ProbeRun, type ProbeType } from 'kubelet-ts';
import { runHandler } from './handlers/index.ts';
import { PROBE_FIELD, PROBE_NAME, declaredProbes, normalizeProbe } from './probe-spec.ts';
import { ProbeWorker, realTimers, type ProbeRunResult, type Timers } from './probe-worker.ts';

/** What the manager needs from the host (a PluginContext has all of it). */
export interface ProbeManagerDeps {
  runtime(): ContainerRuntime;
  pods(): V1Pod[];
  reportProbe(event: ProbeResultEvent): Promise<void>;
  /** Counts every probe run (the kubelet's prober_probe_total). */
  observeProbeRun(run: ProbeRun): void;
  /** Records an event (Unhealthy on each failed run, ProbeWarning, as upstream's prober). */
  recordEvent?(event: PluginEvent): void;
  logger: Logger;
  timers?: Timers;
  random?: () => number;
}

export interface ProbeManagerOptions {
  /** At most this many exec probes run at once (all containers together). */
  execConcurrency: number;
  /** Spread the first runs of workers started while the kubelet is young (upstream); false for tests. */
  jitter: boolean;
}

/** The probe workers of one container instance. */
interface ContainerProbes {
  uid: string;
  name: string;
  containerId: string;
  container: V1Container;
  /** The pod's IP when the container started (the current status's IP is preferred). */
  podIP: string;
  workers: Map<ProbeType, ProbeWorker>;
  /** The startup probe's published result; liveness and readiness wait for 'success'. */
  startup: ProbeOutcome | undefined;
}

const uidOf = (pod: V1Pod) => pod.metadata?.uid ?? '';
/** `containerd://<id>` → `<id>`. */
const bareId = (id: string | undefined) => (id ? id.slice(id.indexOf('://') + 3) : '');

/**
 * Keeps one worker per running container × declared probe (upstream prober_manager.go):
 * started when the core starts a container (`afterStart`) or finds one running without workers
 * (`podStatusChanged`, e.g. adopted after a kubelet restart); stopped when the container is
 * about to be killed (`beforeKill`), when the status shows it exited, and when its pod is
 * removed. A container's workers are never restarted: a new container gets new workers.
 */
export class ProbeManager {
  private readonly containers = new Map<string, ContainerProbes>();
  /** Container IDs whose workers were stopped, by pod UID: a stale status never restarts them. */
  private readonly stoppedIds = new Map<string, Set<string>>();
  private readonly timers: Timers;
  private readonly random: () => number;
  private readonly startedAt: number;
  private readonly execLimiter: Limiter;
  private closed = false;

  constructor(private readonly deps: ProbeManagerDeps, private readonly options: ProbeManagerOptions) {
    this.timers = deps.timers ?? realTimers;
    this.random = deps.random ?? Math.random;
    this.startedAt = this.timers.now();
    this.execLimiter = new Limiter(options.execConcurrency);
  }

  /** Workers by container ID (tests, `kubelet-ts plugins`). */
  workers(containerId: string): ReadonlyMap<ProbeType, ProbeWorker> | undefined {
    return this.containers.get(containerId)?.workers;
  }

  /** Number of running workers. */
  get size(): number {
    let n = 0;
    for (const c of this.containers.values()) for (const w of c.workers.values()) if (!w.stopped) n++;
    return n;
  }

  /** A container started: start its probes' workers (app containers only; init containers have no probes). */
  containerStarted(pod: V1Pod, container: V1Container, containerId: string, podIP: string, startedAt: number): void {
    if (this.closed || !containerId) return;
    const uid = uidOf(pod);
    const index = (pod.spec?.containers ?? []).findIndex((c) => c.name === container.name);
    if (index < 0) return;
    if (this.containers.has(containerId) || this.stoppedIds.get(uid)?.has(containerId)) return;
    const probes = declaredProbes(container);
    if (probes.length === 0) return;

    const entry: ContainerProbes = { uid, name: container.name, containerId, container, podIP, workers: new Map(), startup: undefined };
    this.containers.set(containerId, entry);
    const log = this.deps.logger.child({ pod: podFullName(pod), container: container.name, containerId: containerId.slice(0, 13) });
    for (const [type, probe] of probes) {
      const checked = normalizeProbe(probe, type, `spec.containers[${index}].${PROBE_FIELD[type]}`);
      if ('errors' in checked) {
        // Upstream validation rejects such a probe; here the probe alone is refused, with its reason.
        const message = `${PROBE_NAME[type]} probe refused: ${checked.errors.join('; ')}`;
        log.warn({ probe: type, errors: checked.errors }, message);
        void this.report(pod, entry, type, 'unknown', message, log);
        continue;
      }
      const spec = checked.spec;
      const periodMs = spec.periodSeconds * 1000;
      // upstream: only while the kubelet started less than one period ago, so that workers of
      // adopted containers do not all probe at once.
      const firstDelayMs = this.options.jitter && this.timers.now() - this.startedAt < periodMs ? Math.floor(this.random() * periodMs) : 0;
      let lastError = '';
      const worker: ProbeWorker = new ProbeWorker({
        type,
        timing: spec,
        startedAt,
        firstDelayMs,
        timers: this.timers,
        started: () => !container.startupProbe || entry.startup === 'success',
        run: async (): Promise<ProbeRunResult> => {
          const current = this.currentPod(uid);
          if (!current) return { stop: 'the pod is gone' };
          const r = await runHandler(spec.handler, { pod: current, container, containerId, podIP: current.status?.podIP || entry.podIP, timeoutSeconds: spec.timeoutSeconds }, { runtime: this.deps.runtime, execLimiter: this.execLimiter });
          if ('error' in r) {
            if (r.error !== lastError) log.warn({ probe: type, err: r.error }, `${PROBE_NAME[type]} probe errored`);
            lastError = r.error;
          } else if ('result' in r) {
            lastError = '';
            if (r.result === 'failure') {
              log.debug({ probe: type, output: r.output }, `${PROBE_NAME[type]} probe failed`);
              this.deps.recordEvent?.({ pod: current, container: container.name, type: 'Warning', reason: 'Unhealthy', message: `${PROBE_NAME[type]} probe failed: ${r.output}` });
            } else if (r.warning) {
              log.warn({ probe: type, output: r.output }, `${PROBE_NAME[type]} probe warning`);
              this.deps.recordEvent?.({ pod: current, container: container.name, type: 'Warning', reason: 'ProbeWarning', message: `${PROBE_NAME[type]} probe warning: ${r.output}` });
            }
          }
          return r;
        },
        report: (result, output) => this.report(this.currentPod(uid) ?? pod, entry, type, result, output, log),
        counted: (result) => this.deps.observeProbeRun({ probe: type, result, containerName: container.name, pod: this.currentPod(uid) ?? pod }),
        onCrash: (err) => log.error({ probe: type, err: errorMessage(err) }, 'probe worker run crashed'),
      });
      entry.workers.set(type, worker);
    }
    for (const w of entry.workers.values()) w.start();
    if (entry.workers.size > 0) log.debug({ probes: [...entry.workers.keys()] }, 'probe workers started');
  }

  /**
   * A pod's status changed: stop the workers of containers the status shows exited (never on
   * mere absence: a status computed before a start may not list the new container yet), start
   * workers for running containers that have none, stop liveness and startup of a pod being
   * deleted (upstream stops them for a quiet shutdown), and run a not-ready container's readiness
   * probe now (upstream's manual trigger from UpdatePodStatus).
   */
  reconcile(pod: V1Pod, status: V1PodStatus): void {
    if (this.closed) return;
    const uid = uidOf(pod);
    const statuses = status.containerStatuses ?? [];
    if (status.phase === 'Succeeded' || status.phase === 'Failed') {
      for (const entry of this.entriesOf(uid)) this.stopContainer(entry);
      return;
    }
    const exited = new Set<string>();
    for (const cs of statuses) {
      // Exited means terminated, never merely "not running": a status read between the
      // container's create and start shows it waiting with its ID, and its workers (started
      // by afterStart a moment later) must not be stopped for good by that stale view.
      const id = bareId(cs.containerID);
      if (id && cs.state?.terminated) exited.add(id);
      const last = bareId(cs.lastState?.terminated?.containerID);
      if (last) exited.add(last);
    }
    for (const entry of this.entriesOf(uid)) if (exited.has(entry.containerId)) this.stopContainer(entry);

    for (const cs of statuses) {
      const id = bareId(cs.containerID);
      if (!id || !cs.state?.running) continue;
      const spec = (pod.spec?.containers ?? []).find((c) => c.name === cs.name);
      if (spec && !this.containers.has(id)) {
        const startedAt = cs.state.running.startedAt ? new Date(cs.state.running.startedAt).getTime() : this.timers.now();
        this.containerStarted(pod, spec, id, status.podIP ?? '', Number.isFinite(startedAt) ? startedAt : this.timers.now());
      }
      const entry = this.containers.get(id);
      if (!entry) continue;
      if (pod.metadata?.deletionTimestamp) {
        for (const type of ['liveness', 'startup'] as const) entry.workers.get(type)?.stop();
      } else if (cs.ready === false && (!entry.container.startupProbe || entry.startup === 'success')) {
        entry.workers.get('readiness')?.trigger();
      }
    }
  }

  /** A container is about to be killed: its workers stop for good. */
  containerStopping(pod: V1Pod, containerId: string): void {
    const entry = this.containers.get(containerId);
    if (entry) this.stopContainer(entry);
    else this.tombstone(uidOf(pod), containerId);
  }

  /** A pod is gone: every worker of it stops and its bookkeeping is dropped. */
  podRemoved(pod: V1Pod): void {
    const uid = uidOf(pod);
    for (const entry of this.entriesOf(uid)) {
      for (const w of entry.workers.values()) w.stop();
      this.containers.delete(entry.containerId);
    }
    this.stoppedIds.delete(uid);
  }

  /** Stops everything (shutdown). */
  stopAll(): void {
    this.closed = true;
    for (const entry of this.containers.values()) for (const w of entry.workers.values()) w.stop();
    this.containers.clear();
    this.stoppedIds.clear();
  }

  private stopContainer(entry: ContainerProbes): void {
    for (const w of entry.workers.values()) w.stop();
    this.containers.delete(entry.containerId);
    this.tombstone(entry.uid, entry.containerId);
  }

  private tombstone(uid: string, containerId: string): void {
    let set = this.stoppedIds.get(uid);
    if (!set) this.stoppedIds.set(uid, (set = new Set()));
    set.add(containerId);
    // Bounded: a pod that restarts a container forever keeps only recent IDs.
    if (set.size > 64) set.delete(set.values().next().value!);
  }

  private entriesOf(uid: string): ContainerProbes[] {
    return [...this.containers.values()].filter((c) => c.uid === uid);
  }

  private currentPod(uid: string): V1Pod | undefined {
    return this.deps.pods().find((p) => p.metadata?.uid === uid);
  }

  private async report(pod: V1Pod, entry: ContainerProbes, type: ProbeType, result: ProbeOutcome, output: string, log: Logger): Promise<void> {
    if (type === 'startup') entry.startup = result;
    log.info({ probe: type, result, output: output.length > 512 ? `${output.slice(0, 512)}…` : output }, `${PROBE_NAME[type]} probe result changed`);
    try {
      await this.deps.reportProbe({ pod, containerName: entry.name, containerId: entry.containerId, probe: type, result, output });
    } catch (err) {
      log.warn({ probe: type, err: errorMessage(err) }, 'reporting the probe result failed');
    }
    // The container has started: readiness need not wait for its next period (upstream's
    // manual trigger fires on the status update that follows).
    if (type === 'startup' && result === 'success') entry.workers.get('readiness')?.trigger();
  }
}
