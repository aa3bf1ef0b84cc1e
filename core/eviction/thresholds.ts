/**
 * Eviction thresholds as upstream's kubelet reads them (pkg/kubelet/eviction/api and
 * helpers.go ParseThresholdConfig): each signal's hard threshold (`evictionHard`), soft
 * threshold (`evictionSoft`, met once crossed for its `evictionSoftGracePeriod`) and minimum
 * reclaim (`evictionMinimumReclaim`), each a quantity or a percentage of the signal's capacity.
 * A threshold of 0 or 0% is no threshold (upstream's way to turn a default off).
 */
import type { EvictionSettings, EvictionSignal } from '../config/types.ts';
import { parseThresholdValue, type ThresholdValue } from '../config/eviction-config.ts';

/** Every signal this kubelet observes, in the order rounds look at them (memory first, as its pressure hurts first). */
export const EVICTION_SIGNALS: readonly EvictionSignal[] = ['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'];

/** The node condition each signal drives (upstream signalToNodeCondition). */
export const SIGNAL_CONDITION: Readonly<Record<EvictionSignal, 'MemoryPressure' | 'DiskPressure' | 'PIDPressure'>> = {
  'memory.available': 'MemoryPressure',
  'nodefs.available': 'DiskPressure',
  'nodefs.inodesFree': 'DiskPressure',
  'imagefs.available': 'DiskPressure',
  'imagefs.inodesFree': 'DiskPressure',
  'pid.available': 'PIDPressure',
};

/** The resource a signal reclaims, as upstream names it in eviction messages (signalToResource). */
export const SIGNAL_RESOURCE: Readonly<Record<EvictionSignal, 'memory' | 'ephemeral-storage' | 'inodes' | 'pids'>> = {
  'memory.available': 'memory',
  'nodefs.available': 'ephemeral-storage',
  'nodefs.inodesFree': 'inodes',
  'imagefs.available': 'ephemeral-storage',
  'imagefs.inodesFree': 'inodes',
  'pid.available': 'pids',
};

/** A quantity (bytes, inodes, processes) or a share of the signal's capacity. */
export interface Threshold {
  signal: EvictionSignal;
  /** As configured ('100Mi', '10%'), for messages. */
  text: string;
  value: ThresholdValue;
  hard: boolean;
  /** Soft thresholds: how long it must stay crossed before it is met (0 for hard ones). */
  gracePeriodMs: number;
  /** How far past the threshold the signal must recover before the threshold stops being met. */
  minReclaim: ThresholdValue | undefined;
}

/** The threshold in units of the signal, given the signal's capacity (a percentage of it, rounded down as upstream's int64 math). */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  return 'quantity' in value ? value.quantity : Math.floor(value.percentage * capacity);
}

/** The thresholds in force: each hard one, then each soft one, with its minimum reclaim. */
export function thresholdsOf(hard: Partial<Record<EvictionSignal, string>>, settings: EvictionSettings): Threshold[] {
  const out: Threshold[] = [];
  const add = (signal: EvictionSignal, text: string, isHard: boolean) => {
    const value = parseThresholdValue(text);
    if (!value) return;
    const reclaim = settings.minimumReclaim[signal];
    out.push({ signal, text, value, hard: isHard, gracePeriodMs: isHard ? 0 : (settings.softGracePeriodMs[signal] ?? 0), minReclaim: reclaim ? parseThresholdValue(reclaim) : undefined });
  };
  for (const signal of EVICTION_SIGNALS) {
    const h = hard[signal];
    if (h !== undefined) add(signal, h, true);
    const s = settings.soft[signal];
    if (s !== undefined) add(signal, s, false);
  }
  return out;
}
