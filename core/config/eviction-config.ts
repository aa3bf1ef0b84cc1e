/**
 * The eviction and image-GC fields of a config: what a threshold statement may say, why a
 * config's eviction fields cannot work (one line each naming the field), and the settings
 * after defaults. The config loader uses them; core/eviction/ builds on them. They sit with
 * the config so that loading a config needs nothing of the eviction manager.
 */
import type { EvictionSettings, EvictionSignal, ImageGCSettings, KubeletConfigInput } from './types.ts';
import { parseDuration } from '../util/duration.ts';
import { quantityValue } from '../objects/quantity.ts';

/** A threshold's amount: a quantity in the signal's units, or a share (0..1) of its capacity. */
export type ThresholdValue = { quantity: number } | { percentage: number };

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
