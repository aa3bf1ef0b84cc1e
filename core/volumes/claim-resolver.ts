import type { V1PersistentVolume, V1PersistentVolumeClaim, V1PersistentVolumeSpec, V1Pod, V1Volume } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import { containersOf } from '../objects/pod-util.ts';
import type { StorageObjectSource } from '../objects/storage-objects.ts';

/** A pod volume that comes from a claim, resolved to the PersistentVolume bound to it. */
export interface ResolvedClaim {
  claimName: string;
  claim: V1PersistentVolumeClaim;
  volume: V1PersistentVolume;
  /** The PV's source type, the key of its source in the PV spec (`csi`, `hostPath`, `local`, ...): whose provider mounts it. */
  type: string;
  /** The claim is mounted read-only by the pod (`persistentVolumeClaim.readOnly`). */
  readOnly: boolean;
}

/**
 * A volume the kubelet could not turn into something to mount (the claim is missing, unbound,
 * being deleted; its volume is missing or bound to another claim): upstream's "failed to process
 * volumes", told apart from a mount that failed.
 */
export class VolumeProcessError extends Error {
  override name = 'VolumeProcessError';
}

/** The PV spec keys that are not its source. */
const NOT_SOURCES = new Set(['accessModes', 'capacity', 'claimRef', 'mountOptions', 'nodeAffinity', 'persistentVolumeReclaimPolicy', 'storageClassName', 'volumeMode', 'volumeAttributesClassName']);

/** The source type of a PV: the first set key of its spec that is a volume source. */
export function persistentVolumeType(spec: V1PersistentVolumeSpec | undefined): string | undefined {
  for (const [key, value] of Object.entries(spec ?? {})) if (!NOT_SOURCES.has(key) && value !== undefined && value !== null) return key;
  return undefined;
}

/** The claim a pod volume uses: its `persistentVolumeClaim`, or for a generic ephemeral volume upstream's `<pod>-<volume>`. */
export function claimNameOf(pod: V1Pod, volume: V1Volume): string | undefined {
  if (volume.persistentVolumeClaim) return volume.persistentVolumeClaim.claimName;
  if (volume.ephemeral) return `${pod.metadata?.name ?? ''}-${volume.name}`;
  return undefined;
}

/**
 * Resolves a claim as upstream's desired-state populator does (createVolumeSpec,
 * getPVCExtractPV, getPVSpec), with its messages: the claim must exist, not be being deleted,
 * be Bound with a volume name (and for an ephemeral volume be owned by the pod); the volume
 * must exist and its claimRef point at this claim's UID; the volume mode must fit how the
 * containers use it (volumeMounts need Filesystem, volumeDevices Block).
 */
export async function resolveClaim(storage: StorageObjectSource | undefined, pod: V1Pod, volume: V1Volume): Promise<ResolvedClaim> {
  const ns = pod.metadata?.namespace ?? 'default';
  const claimName = claimNameOf(pod, volume) ?? '';
  const fail = (why: string) => new VolumeProcessError(`error processing PVC ${ns}/${claimName}: ${why}`);
  if (!claimName) throw new VolumeProcessError(`volume ${volume.name} has a persistentVolumeClaim without a claimName`);
  // A static pod has no API objects to read (upstream refuses a mirror pod's claim the same way).
  if (!storage) throw fail('failed to fetch PVC from API server: this pod does not come from the API server; persistent volume claims need one');
  let claim: V1PersistentVolumeClaim;
  try {
    claim = await storage.persistentVolumeClaim(ns, claimName);
  } catch (err) {
    throw fail(`failed to fetch PVC from API server: ${errorMessage(err)}`);
  }
  if (volume.ephemeral && !claim.metadata?.ownerReferences?.some((o) => o.controller === true && o.uid === pod.metadata?.uid)) {
    // upstream's ephemeral.VolumeIsForPod: a claim of that name that someone else made is never used.
    throw new VolumeProcessError(`PVC ${ns}/${claimName} was not created for pod ${ns}/${pod.metadata?.name ?? ''} (pod is not owner)`);
  }
  // Pods that use a PVC being deleted must not start (StorageObjectInUseProtection).
  if (claim.metadata?.deletionTimestamp) throw fail('PVC is being deleted');
  if (claim.status?.phase !== 'Bound') throw fail('PVC is not bound');
  const pvName = claim.spec?.volumeName;
  if (!pvName) throw fail('PVC has empty pvc.Spec.VolumeName');
  let pv: V1PersistentVolume;
  try {
    pv = await storage.persistentVolume(pvName);
  } catch (err) {
    throw fail(`failed to fetch PV ${pvName} from API server: ${errorMessage(err)}`);
  }
  const ref = pv.spec?.claimRef;
  if (!ref) throw fail(`found PV object ${pvName} but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim`);
  if (ref.uid !== claim.metadata?.uid) throw fail(`found PV object ${pvName} but its pv.Spec.ClaimRef.UID ${ref.uid ?? ''} does not point to claim.UID ${claim.metadata?.uid ?? ''}`);
  const type = persistentVolumeType(pv.spec);
  if (!type) throw fail(`PV ${pvName} has no volume source`);
  const mode = pv.spec?.volumeMode ?? 'Filesystem';
  const containers = containersOf(pod);
  if (containers.some((c) => c.volumeMounts?.some((m) => m.name === volume.name)) && mode !== 'Filesystem') {
    throw new VolumeProcessError(`volume ${volume.name} has volumeMode ${mode}, but is specified in volumeMounts`);
  }
  if (containers.some((c) => c.volumeDevices?.some((d) => d.name === volume.name)) && mode !== 'Block') {
    throw new VolumeProcessError(`volume ${volume.name} has volumeMode ${mode}, but is specified in volumeDevices`);
  }
  return { claimName, claim, volume: pv, type, readOnly: volume.persistentVolumeClaim?.readOnly === true };
}
