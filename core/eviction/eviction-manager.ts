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
 * Critical pods (critical-pods.ts) are never offered to the policy, and a decision naming one,
 * or a pod that was no candidate, is refused and logged.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { EvictionSettings, EvictionSignal } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import type { EvictionDecision, PressureEvent } from '../hooks.ts';
import type { Logger } from '../logger.ts';
import type { StatsSnapshot } from '../stats/stats-provider.ts';
import { isCriticalPod } from './critical-pods.ts';
import { hasLocalStorageLimit, localStorageViolations } from './local-storage.ts';
import { podUsages } from './pod-usage.ts';
import { PressureState, isCrossed, type PressureCondition } from './pressure-state.ts';
import { podFullName } from '../objects/pod-util.ts';
import { observeSignals, type SignalObservations } from './signals.ts';
import { SIGNAL_RESOURCE, thresholdQuantity, thresholdsOf, type Threshold } from './thresholds.ts';

/** Upstream's reason of an evicted pod and of its event. */
export const EVICTED_REASON = 'Evicted';

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
      for (const v of violations) {
        this.deps.logger.warn({ pod: podFullName(v.pod), message: v.message }, 'evicting pod over its local storage limit');
        // Upstream gives no DisruptionTarget here: the pod broke its own limit, the node did not need it gone.
        this.deps.evict(v.pod, v.message, 0, false);
      }
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
      if (this.deps.evict(pod, choice.message, grace, true)) return;
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

