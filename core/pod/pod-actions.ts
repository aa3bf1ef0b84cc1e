import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION } from '../runtime/labels.ts';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import type { ContainerStatus } from '../runtime/types.ts';
import type { Backoff } from './backoff.ts';
import type { FailedProbe } from './container-kill-grace.ts';
import { formatDuration } from '../util/duration.ts';
import { containerHash, ephemeralContainersOf, isSidecar, podDesc } from '../objects/pod-util.ts';
import { restartCountOf } from '../runtime/labels.ts';

/** A container to create and start, with the restart count its new instance carries. */
export interface ContainerStart {
  container: V1Container;
  restartCount: number;
  /** Set for a restart: the crash-loop back-off key to advance when it starts. */
  backoffKey?: string;
  /** When the instance it replaces finished (ms), for the back-off. */
  previousFinishedAt?: number;
}

/** What one sync must do to a pod, as upstream's computePodActions decides it. */
export interface PodActions {
  /** Stop every container and sandbox of the pod first (the sandbox is gone or changed, or the pod is done). */
  killPod: boolean;
  /** Create a new sandbox (with `attempt`) before starting containers. */
  createSandbox: boolean;
  attempt: number;
  /** The ready sandbox to start containers in, when not creating one. */
  sandboxId: string | undefined;
  /** Init container to start next (one at a time, in order). */
  nextInit: ContainerStart | undefined;
  /** App containers to start, in parallel. */
  containersToStart: ContainerStart[];
  /** Ephemeral containers to start in the running sandbox: each once, never restarted. */
  ephemeralToStart: ContainerStart[];
  /** Running containers to stop (spec changed, or a probe failed: `failedProbe` chooses the grace period). */
  containersToKill: Array<{ id: string; name: string; message: string; failedProbe?: FailedProbe }>;
  /** Containers held back by crash-loop back-off: the waiting reason and message for status. */
  waiting: Map<string, { reason: string; message: string }>;
  /** Sync again after this long (a back-off that will expire), if set. */
  requeueAfterMs: number | undefined;
}

/** The newest instance of each container name (rs.containers is newest first). */
export function latestByName(rs: PodRuntimeStatus | undefined): Map<string, ContainerStatus> {
  const out = new Map<string, ContainerStatus>();
  for (const c of rs?.containers ?? []) if (!out.has(c.metadata.name)) out.set(c.metadata.name, c);
  return out;
}

/** Whether a container that exited should run again under the pod's restart policy. */
export function shouldRestart(pod: V1Pod, c: ContainerStatus, restartPolicy = pod.spec?.restartPolicy ?? 'Always'): boolean {
  if (c.state === 'CONTAINER_RUNNING') return false;
  if (restartPolicy === 'Always') return true;
  if (restartPolicy === 'OnFailure') return c.state !== 'CONTAINER_EXITED' || c.exitCode !== 0;
  return false;
}

export function backoffKey(pod: V1Pod, container: V1Container): string {
  return `${pod.metadata!.uid}/${container.name}/${containerHash(container)}`;
}


const isDone = (c: ContainerStatus | undefined) => !!c && c.state === 'CONTAINER_EXITED' && c.exitCode === 0;

/**
 * Decides what a sync does, from the pod's spec and what the runtime holds. Pure except for
 * reading the back-off (it does not advance it: the executor does, when a restart happens).
 */
export function computePodActions(
  pod: V1Pod,
  rs: PodRuntimeStatus | undefined,
  crashBackoff: Backoff,
  now = Date.now(),
  /** Running containers whose liveness or startup probe failed, by container ID. */
  unhealthy: ReadonlyMap<string, FailedProbe> = new Map(),
): PodActions {
  const restartPolicy = pod.spec?.restartPolicy ?? 'Always';
  const actions: PodActions = {
    killPod: false, createSandbox: false, attempt: 0, sandboxId: undefined, nextInit: undefined,
    containersToStart: [], ephemeralToStart: [], containersToKill: [], waiting: new Map(), requeueAfterMs: undefined,
  };
  const sandboxes = rs?.sandboxes ?? [];
  const latestSandbox = sandboxes[0];
  const readySandboxes = sandboxes.filter((s) => s.state === 'SANDBOX_READY');
  const sandboxOK = latestSandbox?.state === 'SANDBOX_READY' && readySandboxes.length === 1;
  const latest = latestByName(rs);
  const initContainers = pod.spec?.initContainers ?? [];
  const containers = pod.spec?.containers ?? [];

  if (!sandboxOK) {
    const anyRunning = readySandboxes.length > 0 || (rs?.containers ?? []).some((c) => c.state === 'CONTAINER_RUNNING');
    actions.killPod = anyRunning;
    // A pod that never restarts and already ran keeps its dead sandbox: it is finished.
    if (latestSandbox && restartPolicy === 'Never' && (rs?.containers.length ?? 0) > 0) return actions;
    if (latestSandbox && restartPolicy === 'OnFailure' && containers.every((c) => isDone(latest.get(c.name)))) return actions;
    actions.createSandbox = true;
    // Upstream: KillPod = createPodSandbox. A dead (NOTREADY) sandbox is still stopped
    // before its replacement is made, so what it holds (its network) is released.
    actions.killPod = anyRunning || !!latestSandbox;
    actions.attempt = latestSandbox ? latestSandbox.metadata.attempt + 1 : 0;
    const start = (c: V1Container): ContainerStart => ({ container: c, restartCount: latest.has(c.name) ? restartCountOf(latest.get(c.name)) + 1 : 0 });
    if (initContainers.length > 0) actions.nextInit = start(initContainers[0]!);
    else actions.containersToStart = containers.filter((c) => !(restartPolicy === 'OnFailure' && isDone(latest.get(c.name)))).map(start);
    return actions;
  }
  actions.sandboxId = latestSandbox!.id;
  // Ephemeral containers (kubectl debug), as upstream: started once the sandbox runs, even
  // before init finished; never restarted (one that ran, whatever its end, is not started again).
  for (const ec of ephemeralContainersOf(pod)) if (!latest.has(ec.name)) actions.ephemeralToStart.push({ container: ec, restartCount: 0 });

  // Restart decision for one exited instance, honouring the crash-loop back-off.
  const planRestart = (c: V1Container, st: ContainerStatus, policy: string): ContainerStart | undefined => {
    if (!shouldRestart(pod, st, policy)) return undefined;
    const key = backoffKey(pod, c);
    if (crashBackoff.isInBackOffSince(key, st.finishedAt)) {
      actions.waiting.set(c.name, {
        reason: 'CrashLoopBackOff',
        message: `back-off ${formatDuration(crashBackoff.get(key))} restarting failed container=${c.name} pod=${podDesc(pod)}`,
      });
      const left = crashBackoff.remaining(key, st.finishedAt);
      actions.requeueAfterMs = Math.min(actions.requeueAfterMs ?? Infinity, left);
      return undefined;
    }
    return { container: c, restartCount: restartCountOf(st) + 1, backoffKey: key, previousFinishedAt: st.finishedAt };
  };

  // Init containers: one at a time, in order, each to exit 0 before the next. Sidecars (init
  // containers with restartPolicy Always) start in that order too and keep running; once the
  // app containers have run, a sidecar that exits is restarted without holding anything up.
  const appStarted = containers.some((c) => latest.has(c.name));
  const sidecarStarts: ContainerStart[] = [];
  for (const c of initContainers) {
    const st = latest.get(c.name);
    if (isSidecar(c)) {
      if (st?.state === 'CONTAINER_RUNNING') {
        const failedProbe = unhealthy.get(st.id);
        if (failedProbe) {
          actions.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} failed ${failedProbe} probe, will be restarted`, failedProbe });
          sidecarStarts.push({ container: c, restartCount: restartCountOf(st) + 1 });
        }
        continue;
      }
      let start: ContainerStart | undefined;
      if (!st) start = { container: c, restartCount: 0 };
      else if (st.state === 'CONTAINER_CREATED') {
        actions.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} was created but not started, will be replaced` });
        start = { container: c, restartCount: restartCountOf(st) + 1 };
      } else start = planRestart(c, st, 'Always');
      if (appStarted) {
        if (start) sidecarStarts.push(start);
        continue;
      }
      if (start) actions.nextInit = start;
      return actions;
    }
    if (isDone(st)) continue;
    if (!st) {
      actions.nextInit = { container: c, restartCount: 0 };
      return actions;
    }
    if (st.state === 'CONTAINER_RUNNING' || st.state === 'CONTAINER_CREATED') return actions;
    // A failed init container: OnFailure and Always retry it, Never fails the pod.
    const restart = planRestart(c, st, restartPolicy === 'Never' ? 'Never' : 'OnFailure');
    if (restart) actions.nextInit = restart;
    else if (restartPolicy === 'Never') {
      actions.killPod = true;
      actions.ephemeralToStart = [];
    }
    return actions;
  }
  actions.containersToStart.push(...sidecarStarts);

  for (const c of containers) {
    const st = latest.get(c.name);
    if (!st) {
      actions.containersToStart.push({ container: c, restartCount: 0 });
      continue;
    }
    if (st.state === 'CONTAINER_RUNNING') {
      const failedProbe = unhealthy.get(st.id);
      if (failedProbe) {
        // Upstream: kill it; restart at once unless the policy is Never.
        const restart = restartPolicy !== 'Never';
        actions.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} failed ${failedProbe} probe${restart ? ', will be restarted' : ''}`, failedProbe });
        if (restart) actions.containersToStart.push({ container: c, restartCount: restartCountOf(st) + 1 });
        continue;
      }
      if (st.annotations[ANNOTATION.containerHash] !== containerHash(c)) {
        actions.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} definition changed, will be restarted` });
        actions.containersToStart.push({ container: c, restartCount: restartCountOf(st) + 1 });
      }
      continue;
    }
    if (st.state === 'CONTAINER_CREATED') {
      // Created but never started (the kubelet died in between): replace it.
      actions.containersToKill.push({ id: st.id, name: c.name, message: `Container ${c.name} was created but not started, will be replaced` });
      actions.containersToStart.push({ container: c, restartCount: restartCountOf(st) + 1 });
      continue;
    }
    const restart = planRestart(c, st, restartPolicy);
    if (restart) actions.containersToStart.push(restart);
  }

  // A pod whose containers all finished for good is done: stop its sandbox (containers stay for logs).
  const finished = restartPolicy !== 'Always' && containers.every((c) => {
    const st = latest.get(c.name);
    return st && st.state === 'CONTAINER_EXITED' && !shouldRestart(pod, st, restartPolicy);
  });
  if (finished) {
    actions.killPod = true;
    actions.ephemeralToStart = [];
  }
  void now;
  return actions;
}
