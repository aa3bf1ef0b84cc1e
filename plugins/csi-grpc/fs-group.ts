import type { V1CSIDriver, V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import { podFsGroup, setVolumeOwnership, type Logger } from 'kubelet-ts';

/**
 * A pod's fsGroup on a CSI volume, as upstream's csi_mounter decides it: the CSIDriver's
 * fsGroupPolicy (default ReadWriteOnceWithFSType: only a volume with an fsType, mounted
 * ReadWriteOnce), `File` (always), `None` (never); a read-only volume never. A driver with the
 * VOLUME_MOUNT_GROUP node capability applies it itself, given as `volume_mount_group` in
 * NodeStageVolume and NodePublishVolume; otherwise the kubelet changes the published volume's
 * ownership after NodePublishVolume (core's walk, which never follows what a container planted).
 */

export type FsGroupPolicy = 'None' | 'File' | 'ReadWriteOnceWithFSType';

/** The CSIDriver's policy; the API server's default when it has none, or when there is no CSIDriver object. */
export function fsGroupPolicyOf(csiDriver: V1CSIDriver | undefined): FsGroupPolicy {
  const p = csiDriver?.spec?.fsGroupPolicy;
  return p === 'None' || p === 'File' ? p : 'ReadWriteOnceWithFSType';
}

/** Upstream supportsFSGroup: whether the pod's fsGroup applies to this volume at all. */
export function fsGroupApplies(args: { policy: FsGroupPolicy; fsType: string; readOnly: boolean; persistentVolume?: V1PersistentVolume }): boolean {
  if (args.policy === 'None' || args.readOnly) return false;
  if (args.policy === 'File') return true;
  if (!args.fsType) return false;
  // A PersistentVolume must offer ReadWriteOnce; an inline volume is always mounted so.
  if (args.persistentVolume) return (args.persistentVolume.spec?.accessModes ?? []).includes('ReadWriteOnce');
  return true;
}

/** What a mount does about the pod's fsGroup: nothing, hand it to the driver, or change ownership after publishing. */
export type FsGroupPlan = { kind: 'none' } | { kind: 'driver'; volumeMountGroup: string } | { kind: 'kubelet'; fsGroup: number; changePolicy: 'Always' | 'OnRootMismatch' };

export function fsGroupPlan(args: { pod: V1Pod; nodeCapabilities: ReadonlySet<string>; policy: FsGroupPolicy; fsType: string; readOnly: boolean; persistentVolume?: V1PersistentVolume }): FsGroupPlan {
  const own = podFsGroup(args.pod);
  if (!own) return { kind: 'none' };
  // Upstream (DelegateFSGroupToCSIDriver, GA in 1.26): a driver that can mount with a group gets it, whatever the policy.
  if (args.nodeCapabilities.has('VOLUME_MOUNT_GROUP')) return { kind: 'driver', volumeMountGroup: String(own.fsGroup) };
  return fsGroupApplies(args) ? { kind: 'kubelet', fsGroup: own.fsGroup, changePolicy: own.changePolicy } : { kind: 'none' };
}

/** After NodePublishVolume: the kubelet's part of the plan (the volume's files given to the group). */
export async function applyFsGroup(plan: FsGroupPlan, targetPath: string, ctx: { readOnly: boolean; logger: Logger; pod: string; volume: string }): Promise<void> {
  if (plan.kind !== 'kubelet') return;
  const changed = await setVolumeOwnership(targetPath, {
    fsGroup: plan.fsGroup, readOnly: ctx.readOnly, changePolicy: plan.changePolicy,
    onSkip: (why) => ctx.logger.warn({ pod: ctx.pod, volume: ctx.volume, why }, 'fsGroup: part of the volume left unchanged'),
  });
  ctx.logger.debug({ pod: ctx.pod, volume: ctx.volume, fsGroup: plan.fsGroup, changed }, 'fsGroup applied to the CSI volume');
}
