/**
 * `activeDeadlineSeconds`, as upstream's activeDeadlineHandler enforces it
 * (pkg/kubelet/active_deadline.go): once the pod has been active on the node (since its
 * status.startTime) for that long, it is Failed with reason DeadlineExceeded and its
 * containers are killed. The pod's worker is requeued to fire at the deadline.
 */
import type { V1Pod } from '@kubernetes/client-node';

/** Upstream's reason and message (also the Normal event's). */
export const DEADLINE_EXCEEDED = Object.freeze({
  reason: 'DeadlineExceeded',
  message: 'Pod was active on the node longer than the specified deadline',
});

/**
 * Milliseconds left before the pod's active deadline (0 or less: exceeded), or undefined when
 * there is none to enforce: no activeDeadlineSeconds, or no start time yet (upstream: a pod
 * that has not started cannot be past its deadline).
 */
export function activeDeadlineLeftMs(pod: V1Pod, startTime: Date | string | undefined, now: number): number | undefined {
  const seconds = pod.spec?.activeDeadlineSeconds;
  if (seconds === undefined || seconds === null || !Number.isFinite(Number(seconds))) return undefined;
  if (startTime === undefined) return undefined;
  const start = new Date(startTime).getTime();
  if (!Number.isFinite(start) || start <= 0) return undefined;
  return start + Number(seconds) * 1000 - now;
}
