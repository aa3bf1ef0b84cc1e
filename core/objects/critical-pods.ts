/**
 * Pods eviction never touches, as upstream's kubelet decides (pkg/kubelet/types IsCriticalPod):
 * static pods, mirror pods, and pods of system-critical priority (system-node-critical,
 * system-cluster-critical: priority 2000000000 and above). Critical pods are also admitted
 * under node pressure. `evictStaticPods` (kubelet-ts) lets a standalone node, whose pods are
 * all static, treat static pods like API pods.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { isMirrorPod, isStaticPod } from './pod-origin.ts';

/** Upstream scheduling.SystemCriticalPriority: the lowest priority of the system-critical classes. */
export const SYSTEM_CRITICAL_PRIORITY = 2_000_000_000;
const CRITICAL_CLASSES = new Set(['system-node-critical', 'system-cluster-critical']);

export function isCriticalPod(pod: V1Pod, opts: { evictStaticPods: boolean }): boolean {
  if (isMirrorPod(pod)) return true;
  if (isStaticPod(pod) && !opts.evictStaticPods) return true;
  const priority = pod.spec?.priority;
  if (priority !== undefined && priority !== null && priority >= SYSTEM_CRITICAL_PRIORITY) return true;
  // A static pod has no admission plugin to resolve its class to a priority: the class name says it.
  return CRITICAL_CLASSES.has(pod.spec?.priorityClassName ?? '');
}
