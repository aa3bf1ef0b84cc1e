import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import type { PodCgroups } from '../cgroups/pod-cgroups.ts';
import type { VolumeManager } from '../volumes/volume-manager.ts';
import { podUID } from '../objects/pod-util.ts';
import { podLogger } from './pod-reporting.ts';

export interface TerminalPodReclaimDeps {
  volumes: Pick<VolumeManager, 'releaseVolumes' | 'hasVolumes'>;
  cgroups: Pick<PodCgroups, 'removePod'> | undefined;
  logger: Logger;
}

/**
 * What a terminal pod gives back once nothing of it runs, while it stays known (as Succeeded or
 * Failed, in the API until it is deleted): its volumes (an emptyDir's contents are what an
 * eviction for disk was for) and its pod cgroup, as upstream's kubelet does for a terminated
 * pod (SyncTerminatedPod, the volume manager dropping the volumes of a pod whose runtime may be
 * removed). A terminal pod is one the kubelet failed for good (evicted, rejected, past its
 * active deadline, a node shutdown) or one that finished on its own (its containers done, its
 * restartPolicy restarting none). Its dead containers and their logs go with container GC; its
 * directory when the pod is removed.
 */
export class TerminalPodReclaim {
  /** The volumes each reclaimed pod gave back. */
  private readonly reclaimed = new Map<string, string[]>();

  constructor(private readonly deps: TerminalPodReclaimDeps) {}

  /** Releases the pod's volumes and cgroup, once; throws (the sync is retried) if a volume cannot be torn down. */
  async reclaim(pod: V1Pod): Promise<void> {
    const uid = podUID(pod);
    if (this.reclaimed.has(uid)) return;
    const volumes = await this.deps.volumes.releaseVolumes(uid);
    await this.deps.cgroups?.removePod(uid);
    this.reclaimed.set(uid, volumes);
    podLogger(this.deps.logger, pod).info({ volumes }, 'terminal pod stopped: its volumes and cgroup released');
  }

  /**
   * What the pod gave back once it stopped and released its volumes and cgroup (upstream's
   * PodResourcesAreReclaimed), or undefined while it has not.
   */
  reclaimedOf(uid: string): { volumes: string[] } | undefined {
    const volumes = this.reclaimed.get(uid);
    return volumes && !this.deps.volumes.hasVolumes(uid) ? { volumes } : undefined;
  }

  /** The pod left the node: nothing to remember. */
  forget(uid: string): void {
    this.reclaimed.delete(uid);
  }
}
