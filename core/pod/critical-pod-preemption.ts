/**
 * Critical pod preemption, as upstream's kubelet does it (pkg/kubelet/preemption): a critical
 * pod (static, mirror, or of system-critical priority) that does not fit only for lack of
 * resources is not rejected; the kubelet ends pods of the node to make room and admits it. The
 * pods it may end are the non-critical ones and those of a lower priority; BestEffort ones go
 * first, then Burstable, then Guaranteed, and within a class the pod closest to what is missing
 * (the fewest pods that free it).
 */
import type { V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { isStaticPod } from '../objects/pod-origin.ts';
import { gracePeriodSeconds, podFullName } from '../objects/pod-util.ts';
import { qosClass } from '../status/pod-status.ts';
import { insufficientResources, resourceRequest, type AdmissionNode, type InsufficientResource, type Rejection } from './admission.ts';

/** The status message and event of a preempted pod (upstream's), reason `Preempting`. */
export const PREEMPTED_REASON = 'Preempting';
export const PREEMPTED_MESSAGE = 'Preempted in order to admit critical pod';
/** The message of the preempted pod's DisruptionTarget condition. */
export const PREEMPTED_DISRUPTION_MESSAGE = 'Pod was preempted by Kubelet to accommodate a critical pod.';

/** What is still missing once `pods` are gone (upstream admissionRequirementList.subtract). */
function subtract(missing: InsufficientResource[], pods: V1Pod[]): InsufficientResource[] {
  const left: InsufficientResource[] = [];
  for (const req of missing) {
    let quantity = req.quantity;
    for (const pod of pods) {
      quantity -= resourceRequest(pod, req.resource);
      if (quantity <= 0) break;
    }
    if (quantity > 0) left.push({ resource: req.resource, quantity });
  }
  return left;
}

/** How far a pod is from covering what is missing: the squared share of each requirement it leaves (upstream distance). */
function distance(missing: InsufficientResource[], pod: V1Pod): number {
  let d = 0;
  for (const req of missing) {
    const remaining = req.quantity - resourceRequest(pod, req.resource);
    if (remaining > 0) d += (remaining / req.quantity) ** 2;
  }
  return d;
}

/** Of two equally distant pods, the one asking less memory, then less cpu (upstream smallerResourceRequest). */
function smallerRequest(a: V1Pod, b: V1Pod): boolean {
  for (const r of ['memory', 'cpu']) {
    const [ra, rb] = [resourceRequest(a, r), resourceRequest(b, r)];
    if (ra !== rb) return ra < rb;
  }
  return true;
}

/** Greedily the pods closest to what is still missing, until nothing is (upstream getPodsToPreemptByDistance). */
function byDistance(pods: V1Pod[], missing: InsufficientResource[]): V1Pod[] {
  const pool = [...pods];
  const out: V1Pod[] = [];
  let left = missing;
  while (left.length > 0) {
    if (pool.length === 0) throw new Error(`no set of running pods found to reclaim resources: ${describe(left)}`);
    let best = 0;
    let bestDistance = left.length + 1;
    pool.forEach((pod, i) => {
      const d = distance(left, pod);
      if (d < bestDistance || (d === bestDistance && smallerRequest(pod, pool[best]!))) {
        bestDistance = d;
        best = i;
      }
    });
    const [chosen] = pool.splice(best, 1);
    out.push(chosen!);
    left = subtract(left, [chosen!]);
  }
  return out;
}

/** Upstream's admissionRequirementList.toString: `[(res: pods, q: 1), ]`. */
function describe(missing: InsufficientResource[]): string {
  return `[${missing.map((m) => `(res: ${m.resource}, q: ${m.quantity}), `).join('')}]`;
}

/** Whether `preemptor` may end `pod` (upstream kubetypes.Preemptable). */
function preemptable(preemptor: V1Pod, pod: V1Pod, isCritical: (pod: V1Pod) => boolean): boolean {
  if (isCritical(preemptor) && !isCritical(pod)) return true;
  const [a, b] = [preemptor.spec?.priority, pod.spec?.priority];
  return a !== undefined && a !== null && b !== undefined && b !== null && a > b;
}

/**
 * The pods to end so that `preemptor` fits (upstream getPodsToPreempt): as few Guaranteed pods as
 * would be needed were every BestEffort and Burstable one gone, then as few Burstable ones as
 * needed besides those, then the BestEffort ones still needed. Throws, in upstream's words, when
 * even all the pods it may end would not free enough.
 */
export function podsToPreempt(preemptor: V1Pod, pods: V1Pod[], missing: InsufficientResource[], isCritical: (pod: V1Pod) => boolean): V1Pod[] {
  const candidates = pods.filter((p) => p.metadata?.uid !== preemptor.metadata?.uid && preemptable(preemptor, p, isCritical));
  const bestEffort = candidates.filter((p) => qosClass(p) === 'BestEffort');
  const burstable = candidates.filter((p) => qosClass(p) === 'Burstable');
  const guaranteed = candidates.filter((p) => qosClass(p) === 'Guaranteed');
  const unmet = subtract(missing, [...bestEffort, ...burstable, ...guaranteed]);
  if (unmet.length > 0) throw new Error(`no set of running pods found to reclaim resources: ${describe(unmet)}`);
  const guaranteedToEnd = byDistance(guaranteed, subtract(missing, [...bestEffort, ...burstable]));
  const burstableToEnd = byDistance(burstable, subtract(missing, [...bestEffort, ...guaranteedToEnd]));
  const bestEffortToEnd = byDistance(bestEffort, subtract(missing, [...burstableToEnd, ...guaranteedToEnd]));
  return [...bestEffortToEnd, ...burstableToEnd, ...guaranteedToEnd];
}

/** What preempting for a pod needs of the kubelet. */
export interface PreemptionDeps {
  isCritical: (pod: V1Pod) => boolean;
  /**
   * Ends a pod for good (Failed, reason Preempting, DisruptionTarget) and has its worker kill it;
   * false when it is no longer active. `signal`: the first resource the critical pod lacked.
   */
  end: (victim: V1Pod, signal: string) => boolean;
  /** Whether none of the pod's containers runs any more. */
  stopped: (uid: string) => boolean;
  logger: Logger;
  nodeName: string;
}

/** Upstream's wait for a pod killed for a critical one (killPodNow): its grace and half again, and 10 s. */
const KILL_WAIT_EXTRA_MS = 10_000;
const KILL_POLL_MS = 100;

/**
 * For a critical pod that did not fit next to `admitted`: its non-resource failure (NodeAffinity,
 * NodePorts, ...) if it has one, which stands; else the pods to end are ended and waited for
 * (each at most its grace period and half again, plus 10 s, as upstream's killPodNow), and the
 * pod is admitted (undefined). When no set of pods would free enough, the rejection is upstream's
 * UnexpectedAdmissionError with the preemption's error.
 */
export async function preemptForCriticalPod(pod: V1Pod, admitted: V1Pod[], node: AdmissionNode, deps: PreemptionDeps): Promise<Rejection | undefined> {
  const { missing, otherFailure } = insufficientResources(pod, admitted, node, { nodeName: deps.nodeName, isStatic: isStaticPod(pod) });
  if (otherFailure) return otherFailure;
  let victims: V1Pod[];
  try {
    victims = podsToPreempt(pod, admitted, missing, deps.isCritical);
  } catch (err) {
    return { reason: 'UnexpectedAdmissionError', message: `Unexpected error while attempting to recover from admission failure: preemption: error finding a set of pods to preempt: ${errorMessage(err)}` };
  }
  const ended = victims.filter((victim) => {
    deps.logger.info({ pod: podFullName(victim), uid: victim.metadata?.uid, for: podFullName(pod), insufficientResources: describe(missing) }, 'preempting a pod to free resources for a critical pod');
    return deps.end(victim, missing[0]?.resource ?? '');
  });
  await Promise.all(ended.map(async (victim) => {
    const uid = victim.metadata!.uid!;
    const until = Date.now() + gracePeriodSeconds(victim) * 1500 + KILL_WAIT_EXTRA_MS;
    while (!deps.stopped(uid) && Date.now() < until) await sleep(KILL_POLL_MS);
    // Upstream goes on when a kill times out; the victim's worker keeps at it.
    if (!deps.stopped(uid)) deps.logger.warn({ pod: podFullName(victim), uid, for: podFullName(pod) }, 'a preempted pod has not stopped in its time; admitting the critical pod anyway');
  }));
  return undefined;
}
