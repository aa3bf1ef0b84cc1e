/**
 * What the API server learns from this kubelet about pods: each pod's status (an API pod's
 * own, a static pod's on its mirror pod), the mirror pods themselves, and the final delete of
 * an API pod whose deletion was asked for once its containers are gone and its volumes torn
 * down (upstream: the status manager deletes a terminated pod with grace 0). The kubelet
 * tells it what happens; it turns that into API writes, kept trying while the server is away.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { isApiPod, isStaticPod } from '../objects/pod-origin.ts';
import { ApiStatusSync, type PodTarget } from './api-status-sync.ts';
import type { ApiClient } from './api-client.ts';
import { MirrorPods } from './mirror-pods.ts';
import { PodApi, classifyPodWrite } from './pod-api.ts';


const RETRY_MS = 2000;

export class ApiPodReporter {
  readonly statuses: ApiStatusSync;
  readonly mirrors: MirrorPods;
  private readonly api: PodApi;
  /** API pods to delete once terminated, by UID, with when to try again. */
  private readonly deletions = new Map<string, { target: PodTarget; notBefore: number }>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly offRecovered: () => void;

  constructor(
    private readonly deps: {
      client: ApiClient;
      nodeName: string;
      nodeUid: () => string | undefined;
      logger: Logger;
      /** The pod's current status, by its UID on this node (for a mirror made after the status was computed). */
      statusOf: (uid: string) => { pod: V1Pod; status: V1PodStatus } | undefined;
    },
  ) {
    this.api = new PodApi(deps.client);
    const logger = deps.logger.child({ component: 'api-pods' });
    this.statuses = new ApiStatusSync({ api: this.api, logger, classify: classifyPodWrite });
    // What waits for the server goes as soon as it answers again, not at the end of its back-off.
    this.offRecovered = deps.client.connectivity.onRecovered(() => {
      this.statuses.flush();
      for (const d of this.deletions.values()) if (d.notBefore !== Infinity) d.notBefore = 0;
      void this.deleteDue();
    });
    this.mirrors = new MirrorPods({
      api: this.api,
      nodeName: deps.nodeName,
      nodeUid: deps.nodeUid,
      logger,
      classify: classifyPodWrite,
      onMirror: (staticUid) => {
        const known = deps.statusOf(staticUid);
        if (known) this.status(known.pod, known.status);
      },
    });
  }

  /** A pod's status was computed: sent to its API object (an API pod's own, a static pod's mirror). */
  status(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata!.uid!;
    if (isApiPod(pod)) this.statuses.set(uid, { namespace: pod.metadata!.namespace ?? 'default', name: pod.metadata!.name!, uid }, status);
    else if (isStaticPod(pod)) {
      const mirror = this.mirrors.mirrorOf(pod);
      // Without a mirror yet, the status waits: onMirror sends the latest once it exists.
      if (mirror) this.statuses.set(uid, mirror, status);
    }
  }

  /**
   * An API pod whose deletion was asked for has terminated (containers gone, volumes torn
   * down): delete its object with grace 0 and its UID as precondition, until that succeeds.
   */
  terminated(pod: V1Pod): void {
    if (!isApiPod(pod) || !pod.metadata?.deletionTimestamp) return;
    const uid = pod.metadata.uid!;
    this.deletions.set(uid, { target: { namespace: pod.metadata.namespace ?? 'default', name: pod.metadata.name!, uid }, notBefore: 0 });
    void this.deleteDue();
  }

  /** Forgets what was sent for a pod (it is gone from the node). */
  forget(uid: string): void {
    this.statuses.forget(uid);
  }

  stop(): void {
    this.stopped = true;
    this.offRecovered();
    clearTimeout(this.timer);
    this.statuses.stop();
    this.mirrors.stop();
  }

  private async deleteDue(): Promise<void> {
    const now = Date.now();
    for (const [uid, d] of this.deletions) {
      if (d.notBefore > now || this.stopped) continue;
      d.notBefore = Infinity;
      try {
        await this.api.deletePod(d.target);
        this.deletions.delete(uid);
        this.deps.logger.info({ pod: `${d.target.namespace}/${d.target.name}`, uid }, 'deleted the terminated pod from the API server');
      } catch (err) {
        if (classifyPodWrite(err) === 'drop') {
          // Gone already, or the name belongs to another pod now: nothing of ours to delete.
          this.deletions.delete(uid);
          continue;
        }
        d.notBefore = Date.now() + RETRY_MS;
        this.deps.logger.debug({ pod: `${d.target.namespace}/${d.target.name}`, err: errorMessage(err) }, 'could not delete the terminated pod; retrying');
        this.armRetry();
      }
    }
  }

  private armRetry(): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.deleteDue();
    }, RETRY_MS);
    this.timer.unref();
  }
}
