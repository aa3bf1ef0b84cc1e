import type { V1CSIDriver, V1PersistentVolume, V1PersistentVolumeClaim, V1VolumeAttachment } from '@kubernetes/client-node';

/**
 * Reading the storage objects a pod's persistent volumes need from the API server: the claim,
 * the PersistentVolume bound to it, and for CSI volumes the CSIDriver (attachRequired,
 * podInfoOnMount) and this node's VolumeAttachment. A file of its own so the hooks (and the
 * SDK) can name it without importing the API client. Only API-server mode has one: a static
 * pod's claim cannot be resolved (upstream: static pods may not refer to API objects).
 *
 * `persistentVolumeClaim` and `persistentVolume` throw the API's error (a 404 reads as the
 * server's `persistentvolumeclaims "x" not found`); the optional objects resolve undefined
 * when they do not exist.
 */
export interface StorageObjectSource {
  persistentVolumeClaim(namespace: string, name: string): Promise<V1PersistentVolumeClaim>;
  persistentVolume(name: string): Promise<V1PersistentVolume>;
  csiDriver(name: string): Promise<V1CSIDriver | undefined>;
  volumeAttachment(name: string): Promise<V1VolumeAttachment | undefined>;
}

/** Writes a finished node expansion into a claim's status (the API server's side, kept out of the volume manager's decision). */
export interface ClaimResizeStatusWriter {
  /** status.capacity.storage = `newSize`, and the resize conditions (`Resizing`, `FileSystemResizePending`) gone. */
  markResizeFinished(claim: V1PersistentVolumeClaim, newSize: string): Promise<void>;
}
