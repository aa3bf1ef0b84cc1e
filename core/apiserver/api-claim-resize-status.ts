import type { V1PersistentVolumeClaim } from '@kubernetes/client-node';
import type { ClaimResizeStatusWriter } from '../objects/storage-objects.ts';
import type { ApiClient } from './api-client.ts';
import { PATCH } from './patch-types.ts';

/** The claim conditions a finished resize removes (upstream's knownResizeConditions in v1.28). */
const RESIZE_CONDITIONS = new Set(['Resizing', 'FileSystemResizePending']);

/**
 * A finished node expansion written to the claim's status subresource, as upstream's
 * MarkFSResizeFinished: `status.capacity.storage` becomes the new size and the resize conditions
 * go (the Node authorizer lets a node patch the status of a claim its pods use). A merge patch
 * with the claim's resourceVersion: a claim changed since it was read (the resizer again) fails
 * with a conflict and the next sync reads it afresh, rather than dropping a condition it never saw.
 */
export class ApiClaimResizeStatus implements ClaimResizeStatusWriter {
  constructor(private readonly client: () => ApiClient | undefined) {}

  async markResizeFinished(claim: V1PersistentVolumeClaim, newSize: string): Promise<void> {
    const api = this.client();
    if (!api) throw new Error('no API server: a claim\'s status needs one');
    const ns = claim.metadata?.namespace ?? 'default';
    const name = claim.metadata?.name ?? '';
    const conditions = (claim.status?.conditions ?? []).filter((c) => !RESIZE_CONDITIONS.has(c.type));
    await api.request('PATCH', `/api/v1/namespaces/${encodeURIComponent(ns)}/persistentvolumeclaims/${encodeURIComponent(name)}/status`, {
      body: {
        metadata: { resourceVersion: claim.metadata?.resourceVersion },
        status: { capacity: { storage: newSize }, conditions: conditions.length > 0 ? conditions : null },
      },
      contentType: PATCH.merge,
    });
  }
}
