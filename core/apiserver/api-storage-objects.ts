import type { V1CSIDriver, V1PersistentVolume, V1PersistentVolumeClaim, V1VolumeAttachment } from '@kubernetes/client-node';
import type { StorageObjectSource } from '../objects/storage-objects.ts';
import type { ApiClient } from './api-client.ts';
import { isNotFoundError } from './api-errors.ts';

/**
 * The storage objects read straight from the API server, one GET each, as upstream's volume
 * manager does (its desired-state populator GETs the claim and the volume; the Node authorizer
 * lets a node read them only by name, through a pod bound to it). A claim and its volume are
 * read while the volume is set up and, for a volume whose provider can expand it, once per sync
 * of the pod to see a pending resize: upstream's kubelet reads both on each sync too (the pod's
 * WaitForAttachAndMount has the populator process it again, which GETs them). A pod is synced
 * once a minute and on its own changes, so a cache (a watch per claim, which the Node
 * authorizer would not allow as a list) would save little.
 */
export class ApiStorageObjects implements StorageObjectSource {
  constructor(private readonly client: () => ApiClient | undefined) {}

  private api(): ApiClient {
    const c = this.client();
    if (!c) throw new Error('no API server: persistent volumes need one');
    return c;
  }

  persistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim> {
    return this.api().request<V1PersistentVolumeClaim>('GET', `/api/v1/namespaces/${encodeURIComponent(namespace)}/persistentvolumeclaims/${encodeURIComponent(name)}`);
  }

  persistentVolume(name: string): Promise<V1PersistentVolume> {
    return this.api().request<V1PersistentVolume>('GET', `/api/v1/persistentvolumes/${encodeURIComponent(name)}`);
  }

  csiDriver(name: string): Promise<V1CSIDriver | undefined> {
    return this.optional<V1CSIDriver>(`/apis/storage.k8s.io/v1/csidrivers/${encodeURIComponent(name)}`);
  }

  volumeAttachment(name: string): Promise<V1VolumeAttachment | undefined> {
    return this.optional<V1VolumeAttachment>(`/apis/storage.k8s.io/v1/volumeattachments/${encodeURIComponent(name)}`);
  }

  private async optional<T>(path: string): Promise<T | undefined> {
    try {
      return await this.api().request<T>('GET', path);
    } catch (err) {
      if (isNotFoundError(err)) return undefined;
      throw err;
    }
  }
}
