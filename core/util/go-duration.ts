/**
 * A duration as Go's time.Duration prints it after Truncate(time.Millisecond), which is how
 * upstream's kubelet writes durations into event messages (`850ms`, `1.234s`, `1m2.5s`,
 * `1h0m0s`, `0s`), so an operator's tools that read upstream's events read ours too.
 */
export function goDurationMs(ms: number): string {
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
