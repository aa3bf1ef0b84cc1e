/**
 * Bounds for delays and deadlines computed from pod specs (grace periods, probe and handler
 * timeouts): a spec may say `terminationGracePeriodSeconds: 999999999999`, and nothing the
 * kubelet derives from it may throw or misfire. setTimeout fires a delay above 2^31-1 ms at
 * once (with a warning), and grpc-js throws "Deadline is too far in the future" from inside
 * a call for deadlines past ~3.6e11 s; both are kept out of reach here.
 */

/** The longest delay setTimeout honours: 2^31-1 ms, about 24.8 days. */
export const MAX_TIMER_MS = 2 ** 31 - 1;

/** The longest grace period the kubelet waits out (about 24.8 days): a longer one is this long. */
export const MAX_GRACE_SECONDS = Math.floor(MAX_TIMER_MS / 1000);

/** `ms` as a delay setTimeout honours: 0 for negative or NaN, at most MAX_TIMER_MS. */
export function clampTimerMs(ms: number): number {
  if (Number.isNaN(ms) || ms <= 0) return 0;
  return Math.min(ms, MAX_TIMER_MS);
}

/** Seconds from a spec as a timer delay in ms (clamped as {@link clampTimerMs}). */
export function secondsToTimerMs(seconds: number): number {
  return clampTimerMs(seconds * 1000);
}

/** Whole seconds from a spec, clamped to [0, MAX_GRACE_SECONDS] (NaN → 0). */
export function clampSeconds(seconds: number): number {
  if (Number.isNaN(seconds) || seconds <= 0) return 0;
  return Math.min(Math.floor(seconds), MAX_GRACE_SECONDS);
}
