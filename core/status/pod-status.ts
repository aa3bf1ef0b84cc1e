import type { V1Container, V1ContainerState, V1ContainerStatus, V1Pod, V1PodCondition, V1PodStatus } from '@kubernetes/client-node';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import type { ContainerStatus } from '../runtime/types.ts';
import { containersOf, defaultWaitingReason, ephemeralContainersOf, isSidecar } from '../objects/pod-util.ts';
import { restartCountOf } from '../runtime/labels.ts';
import { bytes, milliCPU } from '../objects/quantity.ts';
import { isHostNetwork } from '../objects/pod-util.ts';

/** What status computation needs besides the pod and the runtime's view of it. */
/** Why the kubelet failed a pod for good (status-manager.ts keeps it). */
export interface PodRejection {
  reason: string;
  message: string;
  /** The grace its containers are stopped with (an eviction's), when not the pod's own. */
  gracePeriodSeconds?: number;
  /**
   * An admitted pod the kubelet ended for the node's sake: its status carries DisruptionTarget,
   * with the rejection's message or (a preemption) a message of its own.
   */
  disruptionTarget?: boolean | { message: string };
}

export interface StatusInputs {
  nodeIP: string;
  /** Prefix of container IDs, the runtime's name (`containerd://<id>`). */
  runtimeName: string;
  /** Why a container is not running, from the last sync (ErrImagePull, CrashLoopBackOff, ...). */
  waiting: ReadonlyMap<string, { reason: string; message: string }>;
  /** Probe results by container ID: readiness (false until a success) and startup gate a running container. */
  probes: { get(containerId: string, probe: 'readiness' | 'startup' | 'liveness'): string | undefined };
  /** When the kubelet first saw the pod. */
  startTime: Date;
  /** The previous status, to keep condition transition times. */
  previous: V1PodStatus | undefined;
  /** The pod is being terminated (removed from its source). */
  terminating: boolean;
  /** Why the kubelet failed the pod (rejected at admission, past its deadline, evicted), if it did. */
  rejected?: PodRejection;
}

const date = (ms: number) => (ms > 0 ? new Date(ms) : undefined);

function terminatedState(c: ContainerStatus, runtimeName: string): V1ContainerState {
  return {
    terminated: {
      exitCode: c.exitCode,
      reason: c.reason || (c.exitCode === 0 ? 'Completed' : 'Error'),
      ...(c.message ? { message: c.message } : {}),
      startedAt: date(c.startedAt) as Date,
      finishedAt: date(c.finishedAt) as Date,
      containerID: `${runtimeName}://${c.id}`,
    },
  };
}

function containerStatus(pod: V1Pod, spec: V1Container, instances: ContainerStatus[], inputs: StatusInputs): V1ContainerStatus {
  const [cur, prev] = instances;
  const defaultReason = defaultWaitingReason(pod);
  const waiting = inputs.waiting.get(spec.name);
  const base = { name: spec.name, image: spec.image!, imageID: cur?.imageRef ?? '', restartCount: restartCountOf(cur) };
  if (!cur) {
    return { ...base, ready: false, started: false, state: { waiting: { reason: waiting?.reason ?? defaultReason, ...(waiting?.message ? { message: waiting.message } : {}) } } };
  }
  const containerID = `${inputs.runtimeName}://${cur.id}`;
  if (cur.state === 'CONTAINER_RUNNING') {
    // With a startup probe a container is started only once it succeeded; readiness waits for that.
    const started = spec.startupProbe ? inputs.probes.get(cur.id, 'startup') === 'success' : true;
    const ready = started && !inputs.terminating && (spec.readinessProbe ? inputs.probes.get(cur.id, 'readiness') === 'success' : true);
    return {
      ...base, containerID, ready, started,
      state: { running: { startedAt: date(cur.startedAt) as Date } },
      ...(prev ? { lastState: terminatedState(prev, inputs.runtimeName) } : {}),
    };
  }
  if (cur.state === 'CONTAINER_EXITED' && waiting) {
    // Exited and held back (crash loop, or a restart that failed): waiting, with the exit as lastState.
    return { ...base, containerID, ready: false, started: false, state: { waiting: { reason: waiting.reason, message: waiting.message } }, lastState: terminatedState(cur, inputs.runtimeName) };
  }
  if (cur.state === 'CONTAINER_EXITED') {
    return { ...base, containerID, ready: false, started: false, state: terminatedState(cur, inputs.runtimeName), ...(prev ? { lastState: terminatedState(prev, inputs.runtimeName) } : {}) };
  }
  // Created and not started yet (a restart in progress): waiting, with the previous instance's end as lastState, as upstream.
  return {
    ...base, containerID, ready: false, started: false,
    state: { waiting: { reason: waiting?.reason ?? defaultReason, ...(waiting?.message ? { message: waiting.message } : {}) } },
    ...(prev ? { lastState: terminatedState(prev, inputs.runtimeName) } : {}),
  };
}

/** Upstream's getPhase, for app containers once init is done. */
export function podPhase(pod: V1Pod, statuses: V1ContainerStatus[], initDone: boolean, initFailed: boolean): string {
  const policy = pod.spec?.restartPolicy ?? 'Always';
  if (initFailed) return 'Failed';
  if (!initDone) return 'Pending';
  let waiting = 0, running = 0, stopped = 0, succeeded = 0, unknown = 0;
  for (const s of statuses) {
    if (s.state?.running) running++;
    else if (s.state?.terminated) {
      stopped++;
      if (s.state.terminated.exitCode === 0) succeeded++;
    } else if (s.state?.waiting) {
      if (s.lastState?.terminated) stopped++;
      else waiting++;
    } else unknown++;
  }
  if (waiting > 0) return 'Pending';
  if (running > 0 && unknown === 0) return 'Running';
  if (running === 0 && stopped > 0 && unknown === 0) {
    if (policy === 'Always') return 'Running';
    if (stopped === succeeded) return 'Succeeded';
    if (policy === 'Never') return 'Failed';
    return 'Running';
  }
  return 'Pending';
}

/** Guaranteed, Burstable or BestEffort, as upstream's GetPodQOS decides. */
export function qosClass(pod: V1Pod): string {
  const all = containersOf(pod);
  let any = false;
  let guaranteed = true;
  for (const c of all) {
    const req = c.resources?.requests ?? {};
    const lim = c.resources?.limits ?? {};
    for (const r of ['cpu', 'memory']) {
      // Upstream GetPodQOS ignores zero quantities.
      const amount = (q: string | undefined) => (q === undefined ? 0 : r === 'cpu' ? milliCPU(q) : bytes(q));
      const rq = amount(req[r]);
      const lm = amount(lim[r]);
      if (rq > 0 || lm > 0) any = true;
      if (lm <= 0) guaranteed = false;
      else if (rq > 0 && rq !== lm) guaranteed = false;
    }
  }
  if (!any) return 'BestEffort';
  return guaranteed ? 'Guaranteed' : 'Burstable';
}

function condition(type: string, ok: boolean, inputs: StatusInputs, reason?: string, message?: string): V1PodCondition {
  const status = ok ? 'True' : 'False';
  const prev = inputs.previous?.conditions?.find((c) => c.type === type);
  const lastTransitionTime = prev && prev.status === status ? prev.lastTransitionTime : new Date();
  return { type, status, lastTransitionTime: lastTransitionTime as Date, ...(reason && !ok ? { reason } : {}), ...(message && !ok ? { message } : {}) } as V1PodCondition;
}

/**
 * Computes a pod's full v1 PodStatus from its spec and the runtime's view: phase,
 * conditions, container, init container and ephemeral container statuses (state, lastState,
 * restartCount, image, imageID, containerID, started, ready), IPs and QoS class.
 */
/** Upstream's reason on the DisruptionTarget condition of a pod the kubelet itself ends (v1.PodReasonTerminationByKubelet). */
export const TERMINATION_BY_KUBELET = 'TerminationByKubelet';

/** The DisruptionTarget condition of a pod the kubelet evicted: True, TerminationByKubelet, the eviction's message (its time kept once set). */
function disruptionTargetCondition(message: string, inputs: StatusInputs): V1PodCondition {
  const prev = inputs.previous?.conditions?.find((c) => c.type === 'DisruptionTarget' && c.status === 'True');
  return { type: 'DisruptionTarget', status: 'True', reason: TERMINATION_BY_KUBELET, message, lastTransitionTime: (prev?.lastTransitionTime ?? new Date()) as Date };
}

/**
 * Why the pod's readiness gates hold it back, in upstream's words: a gate whose condition is
 * missing from the pod's status, or not True. The conditions are the pod's as the API server
 * has them; the kubelet's own status patches leave them there (merged by type).
 */
export function readinessGateMessages(pod: V1Pod): string[] {
  const conditions = pod.status?.conditions ?? [];
  const out: string[] = [];
  for (const gate of pod.spec?.readinessGates ?? []) {
    const c = conditions.find((x) => x.type === gate.conditionType);
    if (!c) out.push(`corresponding condition of pod readiness gate "${gate.conditionType}" does not exist.`);
    else if (c.status !== 'True') out.push(`the status of pod readiness gate "${gate.conditionType}" is not "True", but ${c.status}`);
  }
  return out;
}

export function computePodStatus(pod: V1Pod, rs: PodRuntimeStatus | undefined, inputs: StatusInputs): V1PodStatus {
  const byName = new Map<string, ContainerStatus[]>();
  for (const c of rs?.containers ?? []) {
    const list = byName.get(c.metadata.name) ?? [];
    list.push(c);
    byName.set(c.metadata.name, list);
  }
  const inits = pod.spec?.initContainers ?? [];
  // A regular init container is ready once it completed, not while it runs; a sidecar is
  // ready as an app container is (running, started, readiness probe passed).
  const initStatuses = inits.map((c) => {
    const st = containerStatus(pod, c, byName.get(c.name) ?? [], inputs);
    return isSidecar(c) ? st : { ...st, ready: st.state?.terminated?.exitCode === 0 };
  });
  const initComplete = (c: V1Container, s: V1ContainerStatus) => (isSidecar(c) ? !!s.state?.running && s.started === true : s.state?.terminated?.exitCode === 0);
  const statuses = (pod.spec?.containers ?? []).map((c) => containerStatus(pod, c, byName.get(c.name) ?? [], inputs));
  // Ephemeral containers (kubectl debug): reported apart, never ready, never part of the phase or the conditions.
  const ephemeralStatuses = ephemeralContainersOf(pod).map((c) => ({ ...containerStatus(pod, c, byName.get(c.name) ?? [], inputs), ready: false }));
  const appStarted = statuses.some((s) => !!s.containerID);
  const initDone = appStarted || initStatuses.every((s, i) => initComplete(inits[i]!, s));
  const initFailed = (pod.spec?.restartPolicy ?? 'Always') === 'Never' && initStatuses.some((s, i) => !isSidecar(inits[i]!) && (s.state?.terminated?.exitCode ?? 0) !== 0);

  const sandbox = rs?.sandboxes[0];
  const sandboxReady = sandbox?.state === 'SANDBOX_READY';
  const podIP = isHostNetwork(pod) ? inputs.nodeIP : sandboxReady ? sandbox!.ip : (inputs.previous?.podIP ?? '');
  const podIPs = isHostNetwork(pod) ? [inputs.nodeIP] : sandboxReady ? [sandbox!.ip, ...sandbox!.additionalIps].filter(Boolean) : (inputs.previous?.podIPs?.map((p) => p.ip) ?? []);

  const unready = statuses.filter((s) => !s.ready).map((s) => s.name);
  const containersReady = unready.length === 0 && statuses.length > 0;
  const unreadyMsg = `containers with unready status: [${unready.join(' ')}]`;
  const uninitialized = initStatuses.filter((s, i) => !initComplete(inits[i]!, s)).map((s) => s.name);

  let phase = podPhase(pod, statuses, initDone, initFailed);
  if (inputs.rejected) phase = 'Failed';
  // Terminal phases: reason PodCompleted / PodFailed and no message, as upstream.
  const notReadyReason = phase === 'Succeeded' ? 'PodCompleted' : phase === 'Failed' ? 'PodFailed' : 'ContainersNotReady';
  const notReadyMsg = phase === 'Succeeded' || phase === 'Failed' ? undefined : unreadyMsg;
  // Readiness gates: Ready also waits for each gate's condition, which another component sets
  // on the pod in the API (a load balancer controller, say), to be True.
  const gatesUnready = containersReady && phase === 'Running' ? readinessGateMessages(pod) : [];
  const ready = containersReady && phase === 'Running' && gatesUnready.length === 0;
  const status: V1PodStatus = {
    phase,
    conditions: [
      condition('PodReadyToStartContainers', sandboxReady, inputs),
      condition('Initialized', initDone, inputs, 'ContainersNotInitialized', `containers with incomplete status: [${uninitialized.join(' ')}]`),
      gatesUnready.length
        ? condition('Ready', false, inputs, 'ReadinessGatesNotReady', gatesUnready.join(', '))
        : condition('Ready', ready, inputs, notReadyReason, notReadyMsg),
      condition('ContainersReady', containersReady, inputs, notReadyReason, notReadyMsg),
      condition('PodScheduled', true, inputs),
    ],
    hostIP: inputs.nodeIP,
    hostIPs: [{ ip: inputs.nodeIP }],
    ...(podIP ? { podIP, podIPs: podIPs.map((ip) => ({ ip })) } : {}),
    startTime: inputs.startTime,
    ...(inits.length ? { initContainerStatuses: initStatuses } : {}),
    containerStatuses: statuses,
    ...(ephemeralStatuses.length ? { ephemeralContainerStatuses: ephemeralStatuses } : {}),
    qosClass: qosClass(pod),
  };
  if (inputs.rejected) {
    status.reason = inputs.rejected.reason;
    status.message = inputs.rejected.message;
    const disruption = inputs.rejected.disruptionTarget;
    if (disruption) status.conditions!.push(disruptionTargetCondition(typeof disruption === 'object' ? disruption.message : inputs.rejected.message, inputs));
  }
  return status;
}
