import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage, isPluginError } from '../errors.ts';
import type { KubeletHooks } from '../hooks.ts';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import { computePodStatus, type PodRejection, type StatusInputs } from './pod-status.ts';
import type { ProbeResults } from './probe-results.ts';
import { hookContext } from '../util/cancellation.ts';
import { podFullName } from '../objects/pod-util.ts';

interface PodEntry {
  status: V1PodStatus | undefined;
  startTime: Date;
  waiting: Map<string, { reason: string; message: string }>;
  rejected?: PodRejection;
}

/**
 * Keeps the latest v1 PodStatus of every pod the kubelet knows. The pod's worker calls
 * `update` after each sync (so a container start shows at once, not one relist later);
 * readiness comes from probe results. A change users can see is logged and announced on
 * `podStatusChanged`.
 */
export class StatusManager {
  private readonly pods = new Map<string, PodEntry>();

  constructor(
    private readonly deps: {
      hooks: KubeletHooks;
      logger: Logger;
      nodeIP: string;
      runtimeName: () => string;
      probes: ProbeResults;
      /** Every computed status (changed or not): the API status sync sends what changed. */
      onUpdate?: (pod: V1Pod, status: V1PodStatus) => void;
    },
  ) {}

  /** The current status, if computed. */
  get(uid: string): V1PodStatus | undefined {
    return this.pods.get(uid)?.status;
  }

  /** Records why containers wait (from the last sync), replacing the previous reasons. */
  setWaiting(uid: string, waiting: Map<string, { reason: string; message: string }>): void {
    this.entry(uid).waiting = waiting;
  }

  /**
   * Marks a pod failed by the kubelet (rejected at admission, past its deadline, evicted): it
   * reports phase Failed with this reason; what still runs of it is stopped with
   * `gracePeriodSeconds` when given (an eviction's override), else the pod's own.
   * `disruptionTarget`: the kubelet ends a pod it had admitted for the node's sake (an eviction
   * for a pressure signal), which upstream (PodDisruptionConditions, on in 1.28) tells on the
   * pod with a DisruptionTarget condition, so controllers and users tell it from a crash.
   */
  reject(uid: string, reason: string, message: string, gracePeriodSeconds?: number, disruptionTarget: PodRejection['disruptionTarget'] = false): void {
    this.entry(uid).rejected = { reason, message, ...(gracePeriodSeconds !== undefined ? { gracePeriodSeconds } : {}), ...(disruptionTarget ? { disruptionTarget } : {}) };
  }

  /**
   * Why the kubelet failed the pod for good (rejected at admission, or past its active
   * deadline), if it did: such a pod never runs a container again.
   */
  rejection(uid: string): PodRejection | undefined {
    return this.pods.get(uid)?.rejected;
  }

  /** When the pod became active on the node (its status.startTime), once its status was computed. */
  startTime(uid: string): Date | undefined {
    const e = this.pods.get(uid);
    return e?.status ? e.startTime : undefined;
  }

  /** Recomputes a pod's status from the runtime's view; runs the podStatus hook. */
  async update(pod: V1Pod, rs: PodRuntimeStatus | undefined, terminating = false): Promise<V1PodStatus> {
    const uid = pod.metadata!.uid!;
    const entry = this.entry(uid);
    if (!entry.status) {
      // A pod that already has a start time (an API pod after a kubelet restart) keeps it.
      const known = pod.status?.startTime ? new Date(pod.status.startTime) : undefined;
      if (known && !Number.isNaN(known.getTime())) entry.startTime = known;
    }
    const inputs: StatusInputs = {
      nodeIP: this.deps.nodeIP,
      runtimeName: this.deps.runtimeName(),
      waiting: entry.waiting,
      probes: this.deps.probes,
      startTime: entry.startTime,
      previous: entry.status,
      terminating,
      ...(entry.rejected ? { rejected: entry.rejected } : {}),
    };
    let status = computePodStatus(pod, rs, inputs);
    status = await this.deps.hooks.podStatus.promise(status, pod, hookContext());
    const before = entry.status;
    entry.status = status;
    if (!before || summary(before) !== summary(status)) {
      this.deps.logger.info(
        { pod: podFullName(pod), uid, phase: status.phase, podIP: status.podIP, containers: containerSummary(status) },
        'pod status changed',
      );
      try {
        this.deps.hooks.podStatusChanged.call(pod, status);
      } catch (err) {
        // A notification (hooks.ts): the kubelet's tap isolation logs and stops a tap's throw;
        // hooks without it (a test's) end here, and the update goes on all the same.
        this.deps.logger.warn({ pod: podFullName(pod), uid, plugin: isPluginError(err) ? err.plugin : undefined, err: errorMessage(err) }, 'a podStatusChanged tap failed');
      }
    }
    this.deps.onUpdate?.(pod, status);
    return status;
  }

  /** Forgets a pod and the probe results of its containers. */
  delete(uid: string, containerIds: string[] = []): void {
    this.pods.delete(uid);
    for (const id of containerIds) this.deps.probes.forget(id);
  }

  private entry(uid: string): PodEntry {
    let e = this.pods.get(uid);
    if (!e) {
      e = { status: undefined, startTime: new Date(), waiting: new Map() };
      this.pods.set(uid, e);
    }
    return e;
  }
}

function containerSummary(s: V1PodStatus): Record<string, string> {
  const out: Record<string, string> = {};
  for (const c of [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])]) {
    const st = c.state?.running ? 'running' : c.state?.terminated ? `terminated:${c.state.terminated.reason}` : `waiting:${c.state?.waiting?.reason ?? ''}`;
    out[c.name] = `${st} ready=${c.ready} restarts=${c.restartCount}`;
  }
  return out;
}

/** What users see change: phase, IP, readiness, each container's state and restarts. */
function summary(s: V1PodStatus): string {
  return JSON.stringify([s.phase, s.podIP, s.reason, s.conditions?.map((c) => c.status), containerSummary(s)]);
}
