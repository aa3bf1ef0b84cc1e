/**
 * The grace period one container is killed with, as upstream's setTerminationGracePeriod
 * (pkg/kubelet/kuberuntime/kuberuntime_container.go, ProbeTerminationGracePeriod GA in 1.28):
 * a pod being deleted keeps its deletionGracePeriodSeconds; otherwise a container killed because
 * its liveness or startup probe failed gets that probe's terminationGracePeriodSeconds when the
 * probe sets one, and the pod's terminationGracePeriodSeconds in every other case. The probe's
 * value exists so that an application that needs a long shutdown on deletion is not left hanging
 * for that long when it is already known to be stuck.
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { gracePeriodSeconds } from '../objects/pod-util.ts';
import { clampSeconds } from '../util/timeouts.ts';

/** Which probe's failure a container is killed for, if any. */
export type FailedProbe = 'liveness' | 'startup';

/** Seconds to kill `container` of `pod` with, `failedProbe` being the reason when a probe failed. */
export function containerKillGraceSeconds(pod: V1Pod, container: V1Container | undefined, failedProbe?: FailedProbe): number {
  const deletion = pod.metadata?.deletionGracePeriodSeconds;
  if (deletion !== undefined && deletion !== null) return gracePeriodSeconds(pod);
  const probe = failedProbe === 'liveness' ? container?.livenessProbe : failedProbe === 'startup' ? container?.startupProbe : undefined;
  const own = probe?.terminationGracePeriodSeconds;
  // Validation refuses a probe grace <= 0; one arriving anyway (a static pod file) falls back to the pod's.
  if (own !== undefined && own !== null && Number.isFinite(Number(own)) && Number(own) > 0) return clampSeconds(Number(own));
  return gracePeriodSeconds(pod);
}
