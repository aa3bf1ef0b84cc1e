/**
 * What the eviction manager remembers between rounds, and the decisions made from it, as
 * upstream's managerImpl.synchronize makes them (pkg/kubelet/eviction/eviction_manager.go):
 *
 *   1. a threshold is crossed when its signal's available amount is below it;
 *   2. a threshold met in the last round stays met until the signal recovers past it by its
 *      minimum reclaim (so one eviction is not followed by pressure again at once);
 *   3. node conditions follow the crossed thresholds (soft ones before their grace period), and
 *      stay True until none was crossed for the pressure transition period (no flapping);
 *   4. a soft threshold is met once it has been crossed without a break for its grace period;
 *      a hard one at once.
 *
 * Pure: time comes in as `now`, so tests drive it round by round.
 */
import type { EvictionSignal } from '../config/types.ts';
import { EVICTION_SIGNALS, SIGNAL_CONDITION, thresholdQuantity, type Threshold } from './thresholds.ts';
import type { SignalObservations } from './signals.ts';

export type PressureCondition = 'MemoryPressure' | 'DiskPressure' | 'PIDPressure';

/** One round's outcome. */
export interface PressureRound {
  /** Thresholds met (hard ones, soft ones past their grace period): the manager evicts for these. */
  met: Threshold[];
  /** The pressure conditions that are True (including the transition period). */
  conditions: Set<PressureCondition>;
}

/** Whether `t` is crossed by what is observed; with `minReclaim`, crossed until it recovered past threshold + minimum reclaim. */
export function isCrossed(t: Threshold, observations: SignalObservations, withMinReclaim: boolean): boolean {
  const o = observations.get(t.signal);
  if (!o) return false;
  let quantity = thresholdQuantity(t.value, o.capacity);
  if (withMinReclaim && t.minReclaim) quantity += thresholdQuantity(t.minReclaim, o.capacity);
  return o.available < quantity;
}

const key = (t: Threshold) => `${t.hard ? 'hard' : 'soft'}:${t.signal}`;

export class PressureState {
  /** When each crossed threshold was first seen crossed (without a break since). */
  private readonly firstCrossedAt = new Map<string, number>();
  /** When each condition was last seen True by its thresholds. */
  private readonly conditionSeenAt = new Map<PressureCondition, number>();
  /** Thresholds met last round (minimum reclaim applies to them). */
  private lastMet: Threshold[] = [];

  constructor(private readonly thresholds: Threshold[], private readonly transitionPeriodMs: number) {}

  /** Decides one round from what is observed at `now`. */
  observe(observations: SignalObservations, now: number): PressureRound {
    const crossed = this.thresholds.filter((t) => isCrossed(t, observations, false));
    for (const t of this.lastMet) {
      if (!crossed.some((c) => key(c) === key(t)) && isCrossed(t, observations, true)) crossed.push(t);
    }
    const crossedKeys = new Set(crossed.map(key));
    for (const k of [...this.firstCrossedAt.keys()]) if (!crossedKeys.has(k)) this.firstCrossedAt.delete(k);
    for (const t of crossed) if (!this.firstCrossedAt.has(key(t))) this.firstCrossedAt.set(key(t), now);

    for (const t of crossed) this.conditionSeenAt.set(SIGNAL_CONDITION[t.signal], now);
    const conditions = new Set<PressureCondition>();
    for (const [c, at] of this.conditionSeenAt) {
      if (now - at < this.transitionPeriodMs || crossed.some((t) => SIGNAL_CONDITION[t.signal] === c)) conditions.add(c);
      else this.conditionSeenAt.delete(c);
    }

    // Memory first, then disk, then pids (upstream byEvictionPriority); hard before soft.
    const rank = (t: Threshold) => EVICTION_SIGNALS.indexOf(t.signal) * 2 + (t.hard ? 0 : 1);
    const met = crossed.filter((t) => t.hard || now - this.firstCrossedAt.get(key(t))! >= t.gracePeriodMs).sort((a, b) => rank(a) - rank(b));
    this.lastMet = met;
    return { met, conditions };
  }

  /** The signals whose thresholds were met last round. */
  metSignals(): EvictionSignal[] {
    return this.lastMet.map((t) => t.signal);
  }
}
