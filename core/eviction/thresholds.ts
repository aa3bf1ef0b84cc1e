/**
 * Eviction thresholds as upstream's kubelet reads them (pkg/kubelet/eviction/api and
 * helpers.go ParseThresholdConfig): each signal's hard threshold (`evictionHard`), soft
 * threshold (`evictionSoft`, met once crossed for its `evictionSoftGracePeriod`) and minimum
 * reclaim (`evictionMinimumReclaim`), each a quantity or a percentage of the signal's capacity.
 * A threshold of 0 or 0% is no threshold (upstream's way to turn a default off).
 */
import type { EvictionSettings, EvictionSignal, ImageGCSettings, KubeletConfigInput } from '../config/types.ts';
import { parseDuration } from '../util/duration.ts';
import { quantityValue } from '../objects/quantity.ts';

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
export type ThresholdValue = { quantity: number } | { percentage: number };

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

/**
 * Parses one threshold statement; undefined for 0 or 0% (no threshold). Throws with what is
 * allowed for anything else: the config schema already refuses most, this is the last word.
 */
export function parseThresholdValue(text: string): ThresholdValue | undefined {
  const t = text.trim();
  if (t.endsWith('%')) {
    const n = Number(t.slice(0, -1));
    if (t.length < 2 || !Number.isFinite(n) || n < 0 || n > 100) throw new Error(`eviction percentage threshold must be >= 0% and <= 100%: ${JSON.stringify(text)}`);
    return n === 0 ? undefined : { percentage: n / 100 };
  }
  const q = quantityValue(t);
  if (q === undefined || !Number.isFinite(q)) throw new Error(`${JSON.stringify(text)} is not a quantity such as '100Mi' or a percentage such as '10%'`);
  if (q < 0) throw new Error(`eviction threshold must be positive: ${JSON.stringify(text)}`);
  return q === 0 ? undefined : { quantity: q };
}

/** The threshold in units of the signal, given the signal's capacity (a percentage of it, rounded down as upstream's int64 math). */
export function thresholdQuantity(value: ThresholdValue, capacity: number): number {
  return 'quantity' in value ? value.quantity : Math.floor(value.percentage * capacity);
}

/**
 * Why the eviction fields of a config cannot work, one line each naming the field and value:
 * a threshold that does not parse or a percentage over 100 % (also caught by the schema), a
 * soft threshold without a grace period, a grace period of a signal without a soft threshold.
 */
export function evictionConfigErrors(c: KubeletConfigInput, file: string): string[] {
  const errors: string[] = [];
  for (const field of ['evictionHard', 'evictionSoft', 'evictionMinimumReclaim'] as const) {
    for (const [signal, text] of Object.entries(c[field] ?? {})) {
      try {
        parseThresholdValue(String(text));
      } catch (err) {
        errors.push(`${file}: ${field}.${signal} is ${JSON.stringify(text)}; allowed: a quantity such as '100Mi' or a percentage from 0% to 100% such as '10%' (${(err as Error).message})`);
      }
    }
  }
  const grace = c.evictionSoftGracePeriod ?? {};
  for (const signal of Object.keys(c.evictionSoft ?? {})) {
    if (grace[signal as EvictionSignal] === undefined) {
      errors.push(`${file}: evictionSoft.${signal} is ${JSON.stringify(c.evictionSoft![signal as EvictionSignal])} but evictionSoftGracePeriod.${signal} is not set; allowed: a soft threshold with its grace period, such as evictionSoftGracePeriod: {'${signal}': '1m30s'}`);
    }
  }
  for (const [signal, value] of Object.entries(grace)) {
    if (c.evictionSoft?.[signal as EvictionSignal] === undefined) {
      errors.push(`${file}: evictionSoftGracePeriod.${signal} is ${JSON.stringify(value)} but evictionSoft.${signal} is not set; allowed: grace periods only for signals with a soft threshold`);
    }
  }
  const high = c.imageGCHighThresholdPercent ?? 85;
  const low = c.imageGCLowThresholdPercent ?? 80;
  if (low >= high && high < 100) {
    errors.push(`${file}: imageGCLowThresholdPercent is ${low} and imageGCHighThresholdPercent is ${high}; allowed: a low threshold below the high one (upstream defaults 80 and 85)`);
  }
  if (c.evictionMonitoringPeriod !== undefined && parseDuration(c.evictionMonitoringPeriod) <= 0) {
    errors.push(`${file}: evictionMonitoringPeriod is ${JSON.stringify(c.evictionMonitoringPeriod)}; allowed: a Go duration > 0 such as '10s'`);
  }
  return errors;
}

/** The eviction settings after defaults (the schema filled them; the maps may be absent). */
export function resolveEvictionSettings(c: KubeletConfigInput): EvictionSettings {
  const grace: Partial<Record<EvictionSignal, number>> = {};
  for (const [signal, d] of Object.entries(c.evictionSoftGracePeriod ?? {})) grace[signal as EvictionSignal] = parseDuration(d);
  return {
    soft: { ...c.evictionSoft },
    softGracePeriodMs: grace,
    minimumReclaim: { ...c.evictionMinimumReclaim },
    pressureTransitionPeriodMs: parseDuration(c.evictionPressureTransitionPeriod ?? '5m'),
    maxPodGracePeriodSeconds: c.evictionMaxPodGracePeriod ?? 0,
    monitoringPeriodMs: parseDuration(c.evictionMonitoringPeriod ?? '10s'),
    evictStaticPods: c.evictStaticPods ?? false,
  };
}

/** Image GC's policy after defaults. */
export function resolveImageGCSettings(c: KubeletConfigInput): ImageGCSettings {
  return {
    highThresholdPercent: c.imageGCHighThresholdPercent ?? 85,
    lowThresholdPercent: c.imageGCLowThresholdPercent ?? 80,
    minAgeMs: parseDuration(c.imageMinimumGCAge ?? '2m'),
    maxAgeMs: parseDuration(c.imageMaximumGCAge ?? '0s'),
  };
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
