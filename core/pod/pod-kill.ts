import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage, isNotFound } from '../errors.ts';
import type { KubeletHooks } from '../hooks.ts';
import type { KubeletConfig } from '../config/types.ts';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import type { StatusManager } from '../status/status-manager.ts';
import type { ProbeResults } from '../status/probe-results.ts';
import type { EventRecorder, EventType } from '../events/event-recorder.ts';
import type { LifecycleHandlers } from './lifecycle-handlers.ts';
import { allContainersOf, isHostNetwork, isSidecar, podUID } from '../objects/pod-util.ts';
import { inLanes } from '../util/in-lanes.ts';
import { TerminationGrace } from './termination-grace.ts';
import { podLogger, recordPodEvent } from './pod-reporting.ts';
import { NEVER_ABORTS, hookContext } from '../util/cancellation.ts';

/** Upstream's minimum time a container gets to stop after its preStop hook ran over. */
export const MIN_GRACE_SECONDS = 2;
/**
 * How many of one pod's containers are being stopped at once. Upstream stops them all at
 * once; on a pod of hundreds, that many exits at the same moment leave one runtime shim (one
 * per pod) unable to answer, and the stops time out again and again. Each container still
 * gets what is left of the pod's grace period (at least MIN_GRACE_SECONDS).
 */
export const CONTAINER_STOPS_PER_POD = 8;

/** What killing uses. */
export interface PodKillerDeps {
  runtime: ContainerRuntime;
  hooks: KubeletHooks;
  config: KubeletConfig;
  status: StatusManager;
  probes: ProbeResults;
  /** postStart and preStop handlers: preStop runs here, after the beforeKill hook. */
  lifecycle: LifecycleHandlers;
  events?: EventRecorder;
  logger: Logger;
}

/**
 * Stops a pod's containers and sandboxes within its grace period: beforeKill, preStop, the
 * runtime's stop; sidecars after the containers they serve; a grace that shortens meanwhile
 * is followed.
 */
export class PodKiller {
  constructor(private readonly deps: PodKillerDeps) {}

  /**
   * Fires beforeKill, runs the container's preStop handler, and stops it, all within the grace
   * period. A `TerminationGrace` that shortens meanwhile cuts the preStop handler off at the new
   * deadline and asks the runtime again to stop the container with the new time left (the stop
   * in flight with the old timeout ends too once the container is gone).
   */
  async killContainer(pod: V1Pod, id: string, name: string, graceIn: number | TerminationGrace, reason: string, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const grace = typeof graceIn === 'number' ? new TerminationGrace(graceIn) : graceIn;
    const container = allContainersOf(pod).find((c) => c.name === name);
    const podIP = isHostNetwork(pod) ? this.deps.config.nodeIP : (this.deps.status.get(podUID(pod))?.podIP ?? '');
    try {
      await this.deps.hooks.beforeKill.promise({ pod, container, containerId: id, podIP, gracePeriodSeconds: grace.seconds, reason }, hookContext(signal));
    } catch (err) {
      this.podLogger(pod).warn({ container: name, err: errorMessage(err) }, 'a beforeKill tap failed');
    }
    // The preStop handler gets what the taps left of the grace period, however long that is.
    if (container) {
      const deadline = grace.expired();
      try {
        await Promise.race([this.deps.lifecycle.preStop({ pod, container, containerId: id, podIP }, grace.leftSeconds()), deadline.promise]);
      } finally {
        deadline.cancel();
      }
    }
    // Upstream gives a container at least MIN_GRACE_SECONDS after its preStop handler (0 stays 0: a hard eviction).
    const timeout = () => (grace.seconds === 0 ? 0 : Math.max(MIN_GRACE_SECONDS, grace.leftSeconds()));
    this.event(pod, name, 'Normal', 'Killing', /^Stopping (sidecar )?container$/.test(reason) ? `Stopping container ${name}` : reason);
    const again = grace.onShorten(() => {
      this.podLogger(pod).info({ container: name, containerId: id, gracePeriod: grace.seconds }, 'grace period shortened: stopping the container again with the time left');
      this.deps.runtime.stopContainer(id, timeout()).catch(() => {});
    });
    try {
      await this.deps.runtime.stopContainer(id, timeout());
      this.deps.probes.forget(id);
      this.podLogger(pod).info({ container: name, containerId: id, reason }, 'killed container');
    } catch (err) {
      if (!isNotFound(err)) throw err;
    } finally {
      again();
    }
  }

  /** Stops every running container (CONTAINER_STOPS_PER_POD at a time, each with what is left of the grace period), then the sandboxes. */
  async killPod(pod: V1Pod, rs: PodRuntimeStatus | undefined, graceIn: number | TerminationGrace, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const grace = typeof graceIn === 'number' ? new TerminationGrace(graceIn) : graceIn;
    const live = (rs?.containers ?? []).filter((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED');
    // Sidecars outlive the containers they serve: app and regular containers stop first, in
    // parallel; then sidecars one by one in reverse order, each with what is left of the grace period.
    const sidecarNames = (pod.spec?.initContainers ?? []).filter(isSidecar).map((c) => c.name);
    await inLanes(live.filter((c) => !sidecarNames.includes(c.metadata.name)), CONTAINER_STOPS_PER_POD, () => false, (c) => this.killContainer(pod, c.id, c.metadata.name, grace, 'Stopping container', signal));
    for (const name of [...sidecarNames].reverse()) {
      for (const c of live.filter((l) => l.metadata.name === name)) {
        const left = new TerminationGrace(grace.seconds === 0 ? 0 : Math.max(MIN_GRACE_SECONDS, grace.leftSeconds()));
        const follow = grace.onShorten(() => left.shorten(Math.max(MIN_GRACE_SECONDS, grace.leftSeconds())));
        try {
          await this.killContainer(pod, c.id, name, left, 'Stopping sidecar container', signal);
        } finally {
          follow();
        }
      }
    }
    // Every sandbox, ready or not: stopping a dead one releases what it still holds (its network).
    for (const sb of rs?.sandboxes ?? []) {
      try {
        await this.deps.runtime.stopPodSandbox(sb.id);
      } catch (err) {
        if (!isNotFound(err)) throw err;
      }
    }
  }

  private event(pod: V1Pod, container: string | undefined, type: EventType, reason: string, message: string): void {
    recordPodEvent(this.deps.events, pod, container, type, reason, message);
  }

  private podLogger(pod: V1Pod): Logger {
    return podLogger(this.deps.logger, pod);
  }
}
