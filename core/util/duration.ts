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

/**
 * Milliseconds as Go's time.Duration prints them after Truncate(time.Millisecond), which is how
 * upstream's kubelet writes durations into messages and events (`850ms`, `1.234s`, `1m2.5s`,
 * `5m0s`, `1h0m0s`, `0s`), so tools that read upstream's messages read ours too.
 */
export function formatDuration(ms: number): string {
  // Truncated, as Go's Truncate does: 999.9 ms is `999ms`, never `1s`.
  let left = Number.isFinite(ms) && ms > 0 ? Math.floor(Math.min(ms, Number.MAX_SAFE_INTEGER)) : 0;
  if (left === 0) return '0s';
  if (left < 1000) return `${left}ms`;
  const hours = Math.floor(left / 3_600_000);
  left -= hours * 3_600_000;
  const minutes = Math.floor(left / 60_000);
  left -= minutes * 60_000;
  const seconds = Math.floor(left / 1000);
  const millis = left - seconds * 1000;
  // Go drops trailing zeros of the fraction, and the fraction itself when it is zero.
  const fraction = millis ? `.${String(millis).padStart(3, '0').replace(/0+$/, '')}` : '';
  const sec = `${seconds}${fraction}s`;
  if (hours) return `${hours}h${minutes}m${sec}`;
  if (minutes) return `${minutes}m${sec}`;
  return sec;
}
