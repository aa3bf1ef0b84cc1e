/**
 * The OS checks of upstream's predicate admission (pkg/kubelet/lifecycle/predicate.go), done
 * before the resource checks because no preemption can help them:
 * - the pod's own `kubernetes.io/os` label (upstream reads the pod's labels here, not its
 *   nodeSelector: a nodeSelector mismatch is the NodeAffinity predicate's) must equal the node's
 *   OS, the node's label being taken as the kubelet's own OS whatever the Node object says (its
 *   status sync puts it back): PodOSSelectorNodeLabelDoesNotMatch;
 * - `spec.os.name`, when set, must be the kubelet's OS: PodOSNotSupported.
 * A pod meant for another OS would otherwise start containers built for it here and fail in
 * ways that do not say why.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { goOS } from '../node/machine-info.ts';

export const OS_LABEL = 'kubernetes.io/os';

/** Upstream's rejection for `pod` on a node running `nodeOS` (an admission Rejection), or undefined when the OS fits. */
export function checkPodOS(pod: V1Pod, nodeOS: string = goOS()): { reason: string; message: string } | undefined {
  const labels: unknown = pod.metadata?.labels;
  const wanted = labels && typeof labels === 'object' ? (labels as Record<string, unknown>)[OS_LABEL] : undefined;
  if (wanted !== undefined && wanted !== nodeOS) {
    return { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" };
  }
  const os: unknown = pod.spec?.os;
  if (os !== undefined && os !== null) {
    const name = typeof os === 'object' ? (os as { name?: unknown }).name : undefined;
    if (name !== nodeOS) return { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" };
  }
  return undefined;
}
