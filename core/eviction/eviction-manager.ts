/**
 * The eviction manager (upstream pkg/kubelet/eviction managerImpl): every
 * `evictionMonitoringPeriod` it reads the node's signals from the stats service, keeps the
 * pressure conditions (MemoryPressure, DiskPressure, PIDPressure) with their transition period,
 * enforces local ephemeral storage limits, and when a threshold is met it first reclaims
 * node-level resources for disk signals (dead containers; unused images for imagefs) and then fires
 * `onPressure`: the policy (the eviction-default plugin, or a vendor's) chooses the pod, the
 * manager carries the choice out. One pod per round (the policy's first choice), then it
 * observes again, as upstream, so that one eviction's effect is seen before the next.
 *
 * A round reads the node's figures only, unless a pod set a local storage limit or a threshold
 * is met: upstream collects every pod's stats each round; the decisions are the same, and a
 * steady node does not pay for 110 pods' stats every 10 s that nothing reads.
 *
 * Critical pods (core/objects/critical-pods.ts) are never offered to the policy, and a decision naming one,
 * or a pod that was no candidate, is refused and logged.
 */
import { roundedBinaryQuantity } from '../objects/quantity.ts';
import type { V1Pod } from '@kubernetes/client-node';
import type { EvictionSettings, EvictionSignal } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import type { EvictionDecision, PressureEvent } from '../hooks.ts';
import type { Logger } from '../logger.ts';
import type { StatsSnapshot } from '../stats/stats-provider.ts';
import { isCriticalPod } from '../objects/critical-pods.ts';
import { hasLocalStorageLimit, localStorageViolations } from './local-storage.ts';
import { podUsages } from './pod-usage.ts';
import { PressureState, isCrossed, type PressureCondition } from './pressure-state.ts';
import { podFullName } from '../objects/pod-util.ts';
import { setTimeout as sleep } from 'node:timers/promises';
import { observeSignals, type SignalObservations } from './signals.ts';
import { SIGNAL_RESOURCE, thresholdQuantity, thresholdsOf, type Threshold } from './thresholds.ts';

/** Upstream's reason of an evicted pod and of its event. */
export const EVICTED_REASON = 'Evicted';
/** The event on an evicted pod saying what its stop gave back (no upstream equivalent: upstream only logs it at V(3)). */
export const EVICTION_RECLAIMED_REASON = 'EvictionReclaimed';
/** Upstream's podCleanupTimeout: how long the manager waits for evicted pods' resources before it observes again. */
const POD_CLEANUP_TIMEOUT_MS = 30_000;
/** How often the wait looks (upstream's podCleanupPollFreq is 1 s). */
const POD_CLEANUP_POLL_MS = 250;

/** How a condition reads True and False (upstream's node status setters), and the node events on a change. */
const CONDITION_TEXT: Record<PressureCondition, { trueReason: string; trueMessage: string; falseReason: string; falseMessage: string; trueEvent: string; falseEvent: string }> = {
  MemoryPressure: { trueReason: 'KubeletHasInsufficientMemory', trueMessage: 'kubelet has insufficient memory available', falseReason: 'KubeletHasSufficientMemory', falseMessage: 'kubelet has sufficient memory available', trueEvent: 'NodeHasInsufficientMemory', falseEvent: 'NodeHasSufficientMemory' },
  DiskPressure: { trueReason: 'KubeletHasDiskPressure', trueMessage: 'kubelet has disk pressure', falseReason: 'KubeletHasNoDiskPressure', falseMessage: 'kubelet has no disk pressure', trueEvent: 'NodeHasDiskPressure', falseEvent: 'NodeHasNoDiskPressure' },
  PIDPressure: { trueReason: 'KubeletHasInsufficientPID', trueMessage: 'kubelet has insufficient PID available', falseReason: 'KubeletHasSufficientPID', falseMessage: 'kubelet has sufficient PID available', trueEvent: 'NodeHasInsufficientPID', falseEvent: 'NodeHasSufficientPID' },
};

export const PRESSURE_CONDITION_TYPES: readonly PressureCondition[] = ['MemoryPressure', 'DiskPressure', 'PIDPressure'];

export interface EvictionManagerDeps {
  evictionHard: Partial<Record<EvictionSignal, string>>;
  settings: EvictionSettings;
  /** The one stats collector of the kubelet. */
  stats: { snapshot(maxAgeMs?: number, opts?: { pods?: boolean }): Promise<StatsSnapshot> };
  /** The pods that are active on the node (admitted, not terminal, not terminating). */
  activePods(): V1Pod[];
  /** Fires `onPressure`. */
  decide(event: PressureEvent): Promise<EvictionDecision | undefined>;
  /**
   * Fails the pod with reason Evicted and kills it with this grace; false when it was already
   * failed. `disruptionTarget`: its status also carries DisruptionTarget (a pressure eviction).
   */
  evict(pod: V1Pod, message: string, gracePeriodSeconds: number, disruptionTarget: boolean): boolean;
  /** Frees node-level resources before pods are evicted for a disk signal (dead containers; unused images for imagefs signals, and for nodefs ones when images share the node's disk). */
  reclaimNodeLevel(signal: EvictionSignal): Promise<void>;
  /** A node event (condition changes). */
  nodeEvent(type: 'Normal' | 'Warning', reason: string, message: string): void;
  /**
   * What an evicted pod gave back once it stopped (its volumes; its cgroup is gone), or
   * undefined while it has not. Without it, a round does not wait for the evicted pod.
   */
  podReclaimed?(uid: string): { volumes: string[] } | undefined;
  /** An event on a pod (what its eviction reclaimed). */
  podEvent?(pod: V1Pod, type: 'Normal' | 'Warning', reason: string, message: string): void;
  /** How long a round waits for evicted pods to give their resources back (upstream's podCleanupTimeout, 30 s). */
  podCleanupTimeoutMs?: number;
  logger: Logger;
  now?: () => number;
}

export class EvictionManager {
  private readonly thresholds: Threshold[];
  private readonly state: PressureState;
  private readonly now: () => number;
  private current = new Set<PressureCondition>();
  private timer: NodeJS.Timeout | undefined;
  private running: Promise<void> | undefined;
  private stopped = false;
  /** The last round's figures, for logs and status views. */
  private lastObservations: SignalObservations = new Map();

  constructor(private readonly deps: EvictionManagerDeps) {
    this.thresholds = thresholdsOf(deps.evictionHard, deps.settings);
    this.state = new PressureState(this.thresholds, deps.settings.pressureTransitionPeriodMs);
    this.now = deps.now ?? Date.now;
  }

  /** Starts the rounds: the first at once, then every monitoring period (a slow round delays the next, never overlaps it). */
  start(): void {
    this.stopped = false;
    const loop = async () => {
      this.running = this.round().catch((err: unknown) => this.deps.logger.warn({ err: errorMessage(err) }, 'eviction round failed'));
      await this.running;
      this.running = undefined;
      if (!this.stopped) this.timer = setTimeout(() => void loop(), this.deps.settings.monitoringPeriodMs);
    };
    this.timer = setTimeout(() => void loop(), 0);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** The pressure conditions that are True now. */
  conditions(): ReadonlySet<PressureCondition> {
    return this.current;
  }

  /** The node's pressure conditions as node status reports them (True or False, upstream's reasons and messages). */
  conditionDrafts(): Array<{ type: PressureCondition; status: 'True' | 'False'; reason: string; message: string }> {
    return PRESSURE_CONDITION_TYPES.map((type) => {
      const t = CONDITION_TEXT[type];
      return this.current.has(type) ? { type, status: 'True', reason: t.trueReason, message: t.trueMessage } : { type, status: 'False', reason: t.falseReason, message: t.falseMessage };
    });
  }

  /** Whether a pod is critical (never evicted, admitted under pressure). */
  isCritical(pod: V1Pod): boolean {
    return isCriticalPod(pod, { evictStaticPods: this.deps.settings.evictStaticPods });
  }

  /** One round (exported for tests): observe, update conditions, enforce local storage limits, evict for a met threshold. */
  async round(): Promise<void> {
    const maxAgeMs = this.deps.settings.monitoringPeriodMs / 2;
    const candidates = this.deps.activePods().filter((p) => !this.isCritical(p));
    // The pods' figures (every sandbox's and container's stats from the runtime, their logs and
    // volumes measured) are most of what a collection costs; a round needs them only for pods
    // that set a local storage limit, or to rank pods once a threshold is met. The signals are
    // the node's.
    const limited = candidates.some(hasLocalStorageLimit);
    let snapshot = await this.deps.stats.snapshot(maxAgeMs, { pods: limited });
    const observations = observeSignals(snapshot.summary);
    this.lastObservations = observations;
    const { met, conditions } = this.state.observe(observations, this.now());
    this.publishConditions(conditions, observations);
    if (this.stopped) return;

    // Limits the pods set themselves come first (upstream: localStorageEviction, then return).
    const violations = limited ? localStorageViolations(candidates, snapshot.summary.pods) : [];
    if (violations.length > 0) {
      const evicted: V1Pod[] = [];
      for (const v of violations) {
        this.deps.logger.warn({ pod: podFullName(v.pod), message: v.message }, 'evicting pod over its local storage limit');
        // Upstream gives no DisruptionTarget here: the pod broke its own limit, the node did not need it gone.
        if (this.deps.evict(v.pod, v.message, 0, false)) evicted.push(v.pod);
      }
      await this.waitForCleanup(evicted, undefined, observations);
      return;
    }
    if (met.length === 0) return;
    // Memory first, then disk, then pids (EVICTION_SIGNALS' order, as upstream's byEvictionPriority).
    const threshold = met[0]!;
    let obs = observations.get(threshold.signal)!;
    if (SIGNAL_RESOURCE[threshold.signal] !== 'memory' && SIGNAL_RESOURCE[threshold.signal] !== 'pids') {
      await this.deps.reclaimNodeLevel(threshold.signal).catch((err: unknown) => this.deps.logger.warn({ err: errorMessage(err), signal: threshold.signal }, 'node-level reclaim failed'));
      const after = observeSignals((await this.deps.stats.snapshot(0, { pods: false })).summary);
      if (!isCrossed(threshold, after, true)) {
        this.deps.logger.info({ signal: threshold.signal }, 'node-level reclaim freed enough: no pod evicted');
        return;
      }
      obs = after.get(threshold.signal) ?? obs;
    }
    if (candidates.length === 0) {
      this.deps.logger.warn({ signal: threshold.signal, threshold: threshold.text, available: obs.available }, 'eviction threshold met but no pod may be evicted');
      return;
    }
    if (!limited) snapshot = await this.deps.stats.snapshot(maxAgeMs, { pods: true });
    const event: PressureEvent = {
      signal: threshold.signal,
      threshold: threshold.text,
      thresholdQuantity: String(thresholdQuantity(threshold.value, obs.capacity)),
      observed: String(obs.available),
      resource: SIGNAL_RESOURCE[threshold.signal],
      hard: threshold.hard,
      pods: candidates,
      usage: podUsages(candidates, snapshot.summary.pods),
    };
    this.deps.logger.warn({ signal: event.signal, threshold: event.threshold, available: obs.available, hard: event.hard, candidates: candidates.length }, 'eviction threshold met: asking the eviction policy');
    const decision = await this.deps.decide(event);
    if (!decision || decision.evict.length === 0) {
      this.deps.logger.warn({ signal: event.signal }, 'no eviction policy chose a pod (is a plugin tapping onPressure loaded?)');
      return;
    }
    const byUid = new Map(candidates.map((p) => [p.metadata?.uid, p]));
    // One pod per round, as upstream: the policy's first valid choice.
    for (const choice of decision.evict) {
      const pod = byUid.get(choice.pod.metadata?.uid);
      if (!pod) {
        this.deps.logger.warn({ pod: podFullName(choice.pod) }, 'the eviction policy chose a pod that is no candidate (critical, or not active): refused');
        continue;
      }
      const grace = threshold.hard ? 0 : this.softGrace(pod);
      this.deps.logger.warn({ pod: podFullName(pod), signal: event.signal, gracePeriodSeconds: grace, message: choice.message }, 'evicting pod');
      if (this.deps.evict(pod, choice.message, grace, true)) {
        await this.waitForCleanup([pod], threshold.signal, observations);
        return;
      }
    }
  }

  /**
   * Waits (at most podCleanupTimeout) until the evicted pods stopped and gave their volumes and
   * cgroups back, then, for a disk signal, removes their dead containers and logs (the
   * node-level reclaim), as upstream's manager waits before it observes again: otherwise the
   * next round sees the disk still full and evicts an innocent pod for what the first one
   * holds. What came back is logged and told on each pod.
   */
  private async waitForCleanup(pods: V1Pod[], signal: EvictionSignal | undefined, before: SignalObservations): Promise<void> {
    const reclaimed = this.deps.podReclaimed;
    if (!reclaimed || pods.length === 0) return;
    const t0 = performance.now();
    const pending = new Map(pods.map((p) => [p.metadata!.uid!, p]));
    const done = new Map<string, { pod: V1Pod; volumes: string[] }>();
    while (pending.size > 0 && !this.stopped && performance.now() - t0 < (this.deps.podCleanupTimeoutMs ?? POD_CLEANUP_TIMEOUT_MS)) {
      for (const [uid, pod] of pending) {
        const r = reclaimed(uid);
        if (!r) continue;
        pending.delete(uid);
        done.set(uid, { pod, volumes: r.volumes });
      }
      if (pending.size > 0) await sleep(POD_CLEANUP_POLL_MS);
    }
    for (const pod of pending.values()) {
      this.deps.logger.warn({ pod: podFullName(pod), waitedMs: Math.round(performance.now() - t0) }, 'evicted pod did not give its resources back in time: observing again anyway');
    }
    if (done.size === 0 || this.stopped) return;
    // Disk: the evicted pods' dead containers (writable layers) and their logs go now, not at the next threshold.
    // (A pod over its own storage limit frees its volumes; the node is not short of disk.)
    const disk = signal !== undefined && SIGNAL_RESOURCE[signal] !== 'memory' && SIGNAL_RESOURCE[signal] !== 'pids';
    if (disk) await this.deps.reclaimNodeLevel(signal).catch((err: unknown) => this.deps.logger.warn({ err: errorMessage(err) }, 'node-level reclaim after an eviction failed'));
    const after = observeSignals((await this.deps.stats.snapshot(0, { pods: false })).summary);
    const shown = signal ? [signal] : (['nodefs.available', 'imagefs.available'] as EvictionSignal[]).filter((s) => after.has(s));
    const figures = shown.map((s) => `${s} ${readable(before.get(s)?.available)} → ${readable(after.get(s)?.available)}`).join(', ');
    for (const { pod, volumes } of done.values()) {
      const what = [volumes.length > 0 ? `volumes ${volumes.join(', ')} torn down` : 'no volumes to tear down', 'pod cgroup removed', ...(disk ? ['dead containers and their logs removed'] : [])].join(', ');
      const message = `Reclaimed after the eviction in ${Math.round((performance.now() - t0) / 100) / 10}s: ${what}${figures ? `; ${figures}` : ''}`;
      this.deps.logger.info({ pod: podFullName(pod), volumes, ...Object.fromEntries(shown.map((s) => [s, { before: before.get(s)?.available, after: after.get(s)?.available }])) }, 'evicted pod\'s resources reclaimed');
      this.deps.podEvent?.(pod, 'Normal', EVICTION_RECLAIMED_REASON, message);
    }
  }

  /** A soft eviction's grace: the pod's own, at most evictionMaxPodGracePeriod when that is set. */
  private softGrace(pod: V1Pod): number {
    const own = Number(pod.spec?.terminationGracePeriodSeconds ?? 30);
    const max = this.deps.settings.maxPodGracePeriodSeconds;
    return max > 0 ? Math.min(max, own) : own;
  }

  private publishConditions(next: Set<PressureCondition>, observations: SignalObservations): void {
    for (const type of PRESSURE_CONDITION_TYPES) {
      const was = this.current.has(type);
      const is = next.has(type);
      if (was === is) continue;
      const t = CONDITION_TEXT[type];
      const figures = Object.fromEntries([...observations].map(([s, o]) => [s, o.available]));
      if (is) this.deps.logger.warn({ condition: type, available: figures }, `node condition ${type} is True: ${t.trueMessage}`);
      else this.deps.logger.info({ condition: type, available: figures }, `node condition ${type} is False: ${t.falseMessage}`);
      this.deps.nodeEvent('Normal', is ? t.trueEvent : t.falseEvent, `Node status is now: ${is ? t.trueEvent : t.falseEvent}`);
    }
    this.current = next;
  }

  /** What the last round observed (available, capacity) by signal. */
  observations(): SignalObservations {
    return this.lastObservations;
  }
}

/** Bytes as a person reads them in an event: 58.2Mi, 1.5Gi ('?' when unknown). */
function readable(n: number | undefined): string {
  return n === undefined ? '?' : roundedBinaryQuantity(n);
}
