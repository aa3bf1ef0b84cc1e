import type { V1PersistentVolume } from '@kubernetes/client-node';
import type { VolumeExpandOutcome } from 'kubelet-ts';
import type { CsiDriverClient } from './driver-client.ts';
import { persistentAccessMode } from './access-mode.ts';
import type { PersistentVolumeData } from './persistent-volume-data.ts';

/**
 * NodeExpandVolume for a published CSI PersistentVolume, as upstream's csi expander
 * (pkg/volume/csi/expander.go): only for a driver with the node EXPAND_VOLUME capability (one
 * without needs nothing from the node: `not-supported`); the pod's publish target as
 * `volume_path`, the staging path when staged, the new size as `required_bytes`, the PV's fsType,
 * mount options and access mode as the capability (a block capability for a block volume), and
 * the `nodeExpandSecretRef` Secret.
 * A failure comes back as upstream words it, `Expander.NodeExpand failed to expand the volume : ...`.
 */
export async function expandPersistentVolume(args: {
  client: CsiDriverClient;
  pv: V1PersistentVolume;
  data: PersistentVolumeData;
  newSizeBytes: number;
  secrets: Record<string, string>;
  /** The hook's signal: the expansion is given up on. */
  signal?: AbortSignal;
}): Promise<VolumeExpandOutcome> {
  const { client, pv, data } = args;
  const capabilities = await client.nodeCapabilities();
  if (!capabilities.has('EXPAND_VOLUME')) return 'not-supported';
  const src = pv.spec?.csi;
  try {
    await client.nodeExpandVolume({
      volumeId: data.volumeHandle,
      volumePath: data.targetPath,
      stagingTargetPath: data.deviceMountPath ?? '',
      capacityRange: { requiredBytes: String(args.newSizeBytes), limitBytes: '0' },
      // A block volume is expanded as it was published: a block capability, its device as the volume path.
      volumeCapability: pv.spec?.volumeMode === 'Block'
        ? { block: {}, accessMode: { mode: persistentAccessMode(pv, capabilities) } }
        : { mount: { fsType: src?.fsType ?? '', mountFlags: pv.spec?.mountOptions ?? [] }, accessMode: { mode: persistentAccessMode(pv, capabilities) } },
      secrets: args.secrets,
    }, { ...(args.signal ? { signal: args.signal } : {}) });
  } catch (err) {
    throw new Error(`Expander.NodeExpand failed to expand the volume : ${(err as Error).message}`, { cause: err });
  }
  return 'expanded';
}
