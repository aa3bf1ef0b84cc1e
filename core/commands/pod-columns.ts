/**
 * The columns of `kubectl get pods`, computed as kubectl computes them (printPod in
 * k8s.io/kubernetes/pkg/printers/internalversion/printers.go), so an operator reads the same
 * STATUS here as in a cluster: `Init:1/2`, `Init:CrashLoopBackOff`, `CrashLoopBackOff`,
 * `ImagePullBackOff`, `Completed`, `OOMKilled`, `Terminating`, `NotReady`, `ExitCode:N`.
 */
import type { V1Container, V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { humanDuration } from './human-duration.ts';

/** One pod's row: the default columns, and those `-o wide` adds. */
export interface PodRow {
  namespace: string;
  name: string;
  uid: string;
  ready: string;
  status: string;
  restarts: string;
  age: string;
  ip: string;
  node: string;
  /** kubelet-ts (`-o wide`): the pod's ephemeral containers (kubectl debug) and their states, `debugger:Running`. */
  ephemeral: string;
}

/** Dates arrive as RFC 3339 strings on the wire, as Date objects from the client types. */
type Timestamp = Date | string | undefined;

const time = (t: Timestamp): number | undefined => (t === undefined ? undefined : new Date(t).getTime());

/** A sidecar: an init container with `restartPolicy: Always`. */
function isRestartableInit(c: V1Container | undefined): boolean {
  return c?.restartPolicy === 'Always';
}

/** When a container last terminated (its previous instance), or undefined. */
function lastTerminated(c: V1ContainerStatus): number | undefined {
  return time(c.lastState?.terminated?.finishedAt as Timestamp);
}

function terminatedReason(t: NonNullable<NonNullable<V1ContainerStatus['state']>['terminated']>, prefix = ''): string {
  if (t.reason) return `${prefix}${t.reason}`;
  return t.signal ? `${prefix}Signal:${t.signal}` : `${prefix}ExitCode:${t.exitCode}`;
}

/** READY, STATUS and RESTARTS as kubectl prints them; `now` for the restarts' "(5m ago)". */
export function podStatusColumns(pod: V1Pod, now = Date.now()): { ready: string; status: string; restarts: string } {
  const spec = pod.spec;
  const st = pod.status ?? {};
  const inits = new Map((spec?.initContainers ?? []).map((c) => [c.name, c] as const));
  let total = spec?.containers?.length ?? 0;
  for (const c of inits.values()) if (isRestartableInit(c)) total++;
  let readyCount = 0;
  let restarts = 0;
  let sidecarRestarts = 0;
  let lastRestart: number | undefined;
  let lastSidecarRestart: number | undefined;
  const later = (a: number | undefined, b: number | undefined) => (b !== undefined && (a === undefined || b > a) ? b : a);

  const phase = st.phase ?? 'Pending';
  let reason: string = st.reason || phase;
  for (const c of st.conditions ?? []) if (c.type === 'PodScheduled' && c.reason === 'SchedulingGated') reason = 'SchedulingGated';

  let initializing = false;
  const initStatuses = st.initContainerStatuses ?? [];
  for (let i = 0; i < initStatuses.length; i++) {
    const c = initStatuses[i]!;
    restarts += c.restartCount ?? 0;
    lastRestart = later(lastRestart, lastTerminated(c));
    const sidecar = isRestartableInit(inits.get(c.name));
    if (sidecar) {
      sidecarRestarts += c.restartCount ?? 0;
      lastSidecarRestart = later(lastSidecarRestart, lastTerminated(c));
    }
    const terminated = c.state?.terminated;
    const waiting = c.state?.waiting;
    if (terminated && terminated.exitCode === 0) continue;
    if (sidecar && c.started) {
      if (c.ready) readyCount++;
      continue;
    }
    if (terminated) reason = terminatedReason(terminated, 'Init:');
    else if (waiting?.reason && waiting.reason !== 'PodInitializing') reason = `Init:${waiting.reason}`;
    else reason = `Init:${i}/${inits.size}`;
    initializing = true;
    break;
  }

  const initialized = (st.conditions ?? []).some((c) => c.type === 'Initialized' && c.status === 'True');
  if (!initializing || initialized) {
    restarts = sidecarRestarts;
    lastRestart = lastSidecarRestart;
    let hasRunning = false;
    const statuses = st.containerStatuses ?? [];
    // kubectl walks them last to first: the first container's state wins the STATUS column.
    for (let i = statuses.length - 1; i >= 0; i--) {
      const c = statuses[i]!;
      restarts += c.restartCount ?? 0;
      lastRestart = later(lastRestart, lastTerminated(c));
      if (c.state?.waiting?.reason) reason = c.state.waiting.reason;
      else if (c.state?.terminated) reason = terminatedReason(c.state.terminated);
      else if (c.ready && c.state?.running) {
        hasRunning = true;
        readyCount++;
      }
    }
    // A pod with one container done and another still running is not "Completed".
    if (reason === 'Completed' && hasRunning) {
      reason = (st.conditions ?? []).some((c) => c.type === 'Ready' && c.status === 'True') ? 'Running' : 'NotReady';
    }
  }

  if (pod.metadata?.deletionTimestamp && st.reason === 'NodeLost') reason = 'Unknown';
  else if (pod.metadata?.deletionTimestamp && phase !== 'Succeeded' && phase !== 'Failed') reason = 'Terminating';

  const restartsText = restarts !== 0 && lastRestart !== undefined ? `${restarts} (${humanDuration(now - lastRestart)} ago)` : String(restarts);
  return { ready: `${readyCount}/${total}`, status: reason, restarts: restartsText };
}

/** When the pod was made: its creation time, or for a static pod when its source first saw it. */
export function podCreated(pod: V1Pod): number | undefined {
  return time(pod.metadata?.creationTimestamp as Timestamp)
    ?? time(pod.metadata?.annotations?.['kubernetes.io/config.seen'])
    ?? time(pod.status?.startTime as Timestamp);
}

/** The row of one pod, every column filled (`<none>` where kubectl prints it). */
export function podRow(pod: V1Pod, now = Date.now()): PodRow {
  const created = podCreated(pod);
  return {
    namespace: pod.metadata?.namespace ?? 'default',
    name: pod.metadata?.name ?? '',
    uid: pod.metadata?.uid ?? '',
    ...podStatusColumns(pod, now),
    age: created === undefined ? '<unknown>' : humanDuration(now - created),
    ip: pod.status?.podIP || '<none>',
    node: pod.spec?.nodeName || '<none>',
    ephemeral: ephemeralColumn(pod),
  };
}

/** `name:State` of each ephemeral container (Running, a terminated reason, a waiting reason), or `<none>`. */
function ephemeralColumn(pod: V1Pod): string {
  const byName = new Map((pod.status?.ephemeralContainerStatuses ?? []).map((s) => [s.name, s] as const));
  const cells = (pod.spec?.ephemeralContainers ?? []).map((c) => {
    const st = byName.get(c.name)?.state;
    const state = st?.running ? 'Running' : st?.terminated ? terminatedReason(st.terminated) : st?.waiting?.reason ?? 'Waiting';
    return `${c.name}:${state}`;
  });
  return cells.length ? cells.join(',') : '<none>';
}
