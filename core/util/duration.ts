/**
 * Durations in the config are Go duration strings, as in the upstream KubeletConfiguration
 * ("10s", "1m30s", "500ms"), so operators can copy values across. A plain number means seconds.
 */
const UNIT_MS: Record<string, number> = { ns: 1e-6, us: 1e-3, 'µs': 1e-3, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };
const PART = /(\d+(?:\.\d+)?)(ns|us|µs|ms|s|m|h)/g;

export const DURATION_PATTERN = '^((\\d+(\\.\\d+)?)(ns|us|µs|ms|s|m|h))+$|^0$';

export type Duration = string | number;

/** Parses a duration to milliseconds; throws on anything that is not one. */
export function parseDuration(value: Duration): number {
  if (typeof value === 'number') {
    if (!Number.isFinite(value) || value < 0) throw new Error(`invalid duration ${value}`);
    return value * 1000;
  }
  if (value === '0') return 0;
  if (!new RegExp(DURATION_PATTERN).test(value)) throw new Error(`invalid duration '${value}' (use Go syntax like '10s', '1m30s', '500ms')`);
  let total = 0;
  for (const match of value.matchAll(PART)) total += Number(match[1]) * UNIT_MS[match[2]!]!;
  return total;
}

/** Formats milliseconds the way Go prints durations in messages ("10s", "5m0s"). */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const totalSeconds = ms / 1000;
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = +(totalSeconds % 60).toFixed(3);
  if (h > 0) return `${h}h${m}m${s}s`;
  if (m > 0) return `${m}m${s}s`;
  return `${s}s`;
}
