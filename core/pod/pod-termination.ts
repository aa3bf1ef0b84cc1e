import type { V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { KubeletHooks } from '../hooks.ts';
import type { KubeletConfig } from '../config/types.ts';
import type { RuntimeCache } from '../runtime/runtime-cache.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import type { StatusManager } from '../status/status-manager.ts';
import type { PodCgroups } from '../cgroups/pod-cgroups.ts';
import type { UserNamespaces } from './user-namespaces.ts';
import type { VolumeManager } from '../volumes/volume-manager.ts';
import type { EventRecorder, EventType } from '../events/event-recorder.ts';
import type { Backoff } from './backoff.ts';
import type { ImagePuller } from './image-puller.ts';
import { podLogDir } from './sandbox-config.ts';
import { podUID } from '../objects/pod-util.ts';
import { TerminationGrace, effectiveGracePeriod } from './termination-grace.ts';
import type { PodKiller } from './pod-kill.ts';
import type { ContainerGC } from './container-gc.ts';
import { NEVER_ABORTS, hookContext } from '../util/cancellation.ts';
import { podLogger, recordPodEvent } from './pod-reporting.ts';

/** What a termination uses besides the killer and container GC. */
export interface PodTerminationDeps {
  runtime: ContainerRuntime;
  cache: RuntimeCache;
  hooks: KubeletHooks;
  config: KubeletConfig;
  crashBackoff: Backoff;
  pullBackoff: Backoff;
  puller: ImagePuller;
  status: StatusManager;
  /** The pod cgroup hierarchy, when cgroupsPerQOS is on. */
  cgroups: PodCgroups | undefined;
  /** The user ID blocks of pods with `hostUsers: false`. */
  userNamespaces?: UserNamespaces;
  /** Sets up volumes before the pod's containers are created, tears them down on termination. */
  volumes: VolumeManager;
  /** Records the pod's events (Created, Started, Killing, BackOff, FailedMount, ...), as upstream words them. */
  events?: EventRecorder;
  logger: Logger;
}

/**
 * The end of a pod that left its source: everything of it killed and removed from the
 * runtime, its volumes, logs and cgroup gone, what the kubelet kept of it forgotten, then the
 * podRemoved taps.
 */
export class PodTermination {
  constructor(
    private readonly deps: PodTerminationDeps,
    private readonly killer: PodKiller,
    private readonly gc: ContainerGC,
  ) {}

  /**
   * Stops and removes everything of a pod that left its source; forgets its state. `grace`:
   * the termination's grace as the pod worker keeps it (it may shorten while this runs).
   */
  async terminate(pod: V1Pod, grace?: TerminationGrace, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const uid = podUID(pod);
    const rs = await this.deps.cache.refreshPod(uid);
    await this.killer.killPod(pod, rs, grace ?? new TerminationGrace(effectiveGracePeriod(undefined, pod)), signal);
    if (this.deps.status.get(uid)) await this.deps.status.update(pod, await this.deps.cache.refreshPod(uid), true);
    for (const c of rs?.containers ?? []) await this.gc.removeQuietly(() => this.deps.runtime.removeContainer(c.id));
    for (const sb of rs?.sandboxes ?? []) await this.gc.removeQuietly(() => this.deps.runtime.removePodSandbox(sb.id));
    // What a create still running in the runtime left after the list above (a create the
    // kubelet gave up waiting for lands later): stopped and removed too; anything still there
    // fails the termination, which is retried.
    const late = await this.deps.cache.refreshPod(uid);
    if (late && (late.containers.length > 0 || late.sandboxes.length > 0)) {
      await this.killer.killPod(pod, late, 0, signal);
      for (const c of late.containers) await this.gc.removeQuietly(() => this.deps.runtime.removeContainer(c.id));
      for (const sb of late.sandboxes) await this.gc.removeQuietly(() => this.deps.runtime.removePodSandbox(sb.id));
      const still = await this.deps.cache.refreshPod(uid);
      if (still && (still.containers.length > 0 || still.sandboxes.length > 0)) {
        throw new Error(`${still.containers.length} containers and ${still.sandboxes.length} sandboxes of the pod are still in the runtime`);
      }
    }
    // The last container is gone: unmount the pod's volumes (a failure retries the termination).
    await this.deps.volumes.tearDownPod(uid, signal);
    await fs.rm(podLogDir(this.deps.config, pod), { recursive: true, force: true }).catch((err: NodeJS.ErrnoException) => {
      // `<namespace>_<name>_<uid>` can be longer than a file name may be (a 253-character pod
      // name): then the directory was never made (the sandbox failed on it), nothing to remove.
      if (err.code !== 'ENAMETOOLONG') throw err;
    });
    await this.deps.cgroups?.removePod(uid);
    // Its containers and sandbox are gone: no process uses its IDs any more.
    this.deps.userNamespaces?.release(uid);
    this.deps.crashBackoff.forgetPrefix(`${uid}/`);
    this.deps.pullBackoff.forgetPrefix(`${uid}/`);
    this.deps.puller.forget(uid);
    this.deps.status.delete(uid, (rs?.containers ?? []).map((c) => c.id));
    try {
      await this.deps.hooks.podRemoved.promise(pod, hookContext(signal));
    } catch (err) {
      // The termination is retried until every tap succeeds: say on the pod, at each retry, which plugin holds it.
      this.event(pod, undefined, 'Warning', 'FailedPodRemovedHook', `${errorMessage(err)}; the pod stays terminating until its podRemoved taps succeed`);
      throw err;
    }
    this.podLogger(pod).info('pod removed');
  }

  private event(pod: V1Pod, container: string | undefined, type: EventType, reason: string, message: string): void {
    recordPodEvent(this.deps.events, pod, container, type, reason, message);
  }

  private podLogger(pod: V1Pod): Logger {
    return podLogger(this.deps.logger, pod);
  }
}
