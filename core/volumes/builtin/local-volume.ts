import fs from 'node:fs/promises';
import type { V1LocalVolumeSource } from '@kubernetes/client-node';

/**
 * A `local` PersistentVolume (upstream's local volume plugin): a directory of the node, named by
 * an admin in the PV (`spec.local.path`) and bound by the scheduler to pods of this node
 * (`nodeAffinity`). The kubelet bind-mounts it into the pod's volume dir, read-only when the
 * claim is, and gives it to the pod's fsGroup unless read-only, as upstream's SetUp does. A
 * block device named as a Filesystem volume is formatted with its `fsType` if it has no file
 * system and mounted (format-and-mount.ts). A `volumeMode: Block` local PV names a block device,
 * handed to the pod's volumeDevices as it is.
 * Returns what the path is: a directory, or a block device (of a Filesystem or a Block PV).
 */
export async function checkLocalVolume(pvName: string, src: V1LocalVolumeSource, volumeMode = 'Filesystem'): Promise<'directory' | 'blockDevice'> {
  const p = src.path;
  if (!p || !p.startsWith('/')) throw new Error(`local PersistentVolume ${pvName}: path "${p ?? ''}" must be absolute`);
  const st = await fs.stat(p).catch(() => undefined);
  if (!st) throw new Error(`local PersistentVolume ${pvName}: path "${p}" does not exist on this node`);
  if (volumeMode === 'Block') {
    if (!st.isBlockDevice()) throw new Error(`local PersistentVolume ${pvName} has volumeMode Block, but "${p}" is not a block device`);
    return 'blockDevice';
  }
  if (st.isBlockDevice()) return 'blockDevice';
  if (!st.isDirectory()) throw new Error(`local PersistentVolume ${pvName}: "${p}" is neither a directory nor a block device`);
  return 'directory';
}
