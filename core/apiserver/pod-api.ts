/**
 * The pod writes of a kubelet, on the API client: status patches, the final delete of a
 * terminated pod, and mirror pods. Every write carries the pod's UID as precondition, so it
 * never lands on another pod that has taken the name since.
 */
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { ApiClient } from './api-client.ts';
import { PATCH } from './patch-types.ts';
import { isConflictError, isNotFoundError } from './api-errors.ts';
import type { PodStatusApi, PodTarget, WriteFailure } from './api-status-sync.ts';

const podPath = (t: { namespace: string; name: string }) => `/api/v1/namespaces/${encodeURIComponent(t.namespace)}/pods/${encodeURIComponent(t.name)}`;

export class PodApi implements PodStatusApi {
  constructor(private readonly client: ApiClient) {}

  /**
   * A strategic merge patch of `pods/status`, as upstream's status manager sends it: the
   * server merges conditions by type, so conditions other components own (readiness gates)
   * stay; `metadata.uid` in the patch is the precondition.
   */
  async patchStatus(target: PodTarget, status: V1PodStatus): Promise<void> {
    await this.client.request('PATCH', `${podPath(target)}/status`, { body: { metadata: { uid: target.uid }, status }, contentType: PATCH.strategic });
  }

  /** Deletes a pod whose containers are gone and volumes torn down: grace 0, UID precondition. */
  async deletePod(target: PodTarget): Promise<void> {
    await this.client.request('DELETE', podPath(target), { body: { kind: 'DeleteOptions', apiVersion: 'v1', gracePeriodSeconds: 0, preconditions: { uid: target.uid } } });
  }

  /** Creates a pod (a mirror pod) and returns it as the server made it. */
  async createPod(pod: V1Pod): Promise<V1Pod> {
    return this.client.request<V1Pod>('POST', `/api/v1/namespaces/${encodeURIComponent(pod.metadata!.namespace!)}/pods`, { body: pod });
  }
}

/** 404 (gone) and 409 (a precondition failed: another pod by that name) are final; the rest is retried. */
export function classifyPodWrite(err: unknown): WriteFailure {
  return isNotFoundError(err) || isConflictError(err) ? 'drop' : 'retry';
}
