import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { errorMessage } from '../errors.ts';
import type { EventObjectRef, EventType } from '../events/event-recorder.ts';
import type { KubeletHooks, VolumeMountResult } from '../hooks.ts';
import type { Logger } from '../logger.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import { quantityValue } from '../objects/quantity.ts';
import type { ClaimResizeStatusWriter, StorageObjectSource } from '../objects/storage-objects.ts';
import { NEVER_ABORTS, hookContext } from '../util/cancellation.ts';
import { resolveClaim } from './claim-resolver.ts';

/** What to do for one claim's volume: nothing, or grow it from the claim's recorded size to the PV's. */
export type NodeExpansionDecision = { expand: false } | { expand: true; newSize: string; newSizeBytes: number; oldSizeBytes: number };

/**
 * Whether the node must expand a claim's volume, as upstream's kubelet decides with
 * RecoverVolumeExpansionFailure off (v1.28, operation_generator's expandVolumeDuringMount and
 * the reconciler's in-use expansion, whose old size is "the capacity last recorded from
 * pvc.Status.Capacity"): the PV's `spec.capacity.storage` is larger than the claim's
 * `status.capacity.storage`. The external-resizer grows the PV and, when the driver needs the
 * node, leaves the claim's status as it was with `FileSystemResizePending`; a resize that needs
 * no node sets both sizes at once, so nothing is left to do here.
 */
export function nodeExpansionNeeded(claim: V1PersistentVolumeClaim, pv: V1PersistentVolume): NodeExpansionDecision {
  const newSize = pv.spec?.capacity?.storage;
  const newSizeBytes = quantityValue(newSize);
  const oldSizeBytes = quantityValue(claim.status?.capacity?.storage) ?? 0;
  if (newSize === undefined || newSizeBytes === undefined || newSizeBytes <= oldSizeBytes) return { expand: false };
  return { expand: true, newSize, newSizeBytes, oldSizeBytes };
}

/** A claim as an event's object (upstream records the resize events on the pod and on the claim). */
function claimRef(claim: V1PersistentVolumeClaim): EventObjectRef {
  return {
    kind: 'PersistentVolumeClaim', apiVersion: 'v1', name: claim.metadata?.name ?? '', namespace: claim.metadata?.namespace ?? 'default',
    ...(claim.metadata?.uid ? { uid: claim.metadata.uid } : {}),
  };
}

/** One set-up volume of a pod that comes from a claim, as the volume manager knows it. */
export interface ExpandableVolume { name: string; type: string; result: VolumeMountResult }

/**
 * The node side of a volume resize: for a set-up claim volume whose PV grew, the provider's
 * `expandVolume` tap grows it (CSI NodeExpandVolume), then the claim's status gets the new size
 * and loses its resize conditions, and the pod (and claim) get upstream's events:
 * `FileSystemResizeSuccessful` "MountVolume.NodeExpandVolume succeeded for volume "<pv>" <node>";
 * a read-only claim gets `FileSystemResizeFailed` "... requested read-only file system" once; a
 * failure gives `VolumeResizeFailed` and is tried again on the next sync.
 */
export class VolumeExpansion {
  /** PV sizes this node settled without a claim update (read-only, not supported), by pod volume: not asked again, as upstream's actual state records them. */
  private readonly settled = new Map<string, string>();

  constructor(private readonly deps: {
    hooks: Pick<KubeletHooks, 'expandVolume'>;
    claimStatus: ClaimResizeStatusWriter;
    event: (object: EventObjectRef, type: EventType, reason: string, message: string) => void;
    podEventRef: (pod: V1Pod) => EventObjectRef;
    logger: Logger;
  }) {}

  /**
   * Expands the volume when its claim shows a pending resize. Never throws: a failure is an
   * event and a log line, and the next sync asks again (the claim and PV are read each time).
   */
  async sync(pod: V1Pod, mv: ExpandableVolume, sources: { storage: StorageObjectSource; objects: ObjectSource }, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const volume = pod.spec?.volumes?.find((v) => v.name === mv.name);
    // No provider expands this type (upstream: not a node-expandable plugin): not even the claim is read.
    const hook = this.deps.hooks.expandVolume.get(mv.type);
    if (!volume || !hook || hook.taps.length === 0) return;
    const key = `${pod.metadata?.uid ?? ''}/${mv.name}`;
    let claim: V1PersistentVolumeClaim;
    let pv: V1PersistentVolume;
    let readOnly: boolean;
    try {
      ({ claim, volume: pv, readOnly } = await resolveClaim(sources.storage, pod, volume));
    } catch (err) {
      // The volume is set up already: a claim that does not resolve now is no resize to act on.
      this.deps.logger.debug({ volume: mv.name, err: errorMessage(err) }, 'claim not resolved for the expansion check');
      return;
    }
    const decision = nodeExpansionNeeded(claim, pv);
    if (!decision.expand || this.settled.get(key) === decision.newSize) return;
    const pvName = pv.metadata?.name ?? '';
    const podEvents = this.deps.podEventRef(pod);
    if (readOnly || mv.result.readOnly) {
      const message = `MountVolume.NodeExpandVolume failed for volume "${pvName}" requested read-only file system`;
      this.deps.event(podEvents, 'Warning', 'FileSystemResizeFailed', message);
      this.deps.event(claimRef(claim), 'Warning', 'FileSystemResizeFailed', message);
      this.settled.set(key, decision.newSize);
      return;
    }
    try {
      const outcome = await hook.promise({ pod, volumeName: mv.name, type: mv.type, mounted: mv.result, persistentVolume: { volume: pv, claim, readOnly }, newSizeBytes: decision.newSizeBytes, objects: sources.objects, storage: sources.storage }, hookContext(signal));
      if (outcome !== 'expanded') {
        // Upstream: an expander that does not support node expansion counts as done, the claim untouched.
        this.deps.logger.info({ volume: mv.name, pv: pvName, type: mv.type }, 'MountVolume.NodeExpandVolume: not supported by the volume\'s provider; the claim is left as it is');
        this.settled.set(key, decision.newSize);
        return;
      }
      const message = `MountVolume.NodeExpandVolume succeeded for volume "${pvName}" ${pod.spec?.nodeName ?? ''}`;
      this.deps.event(podEvents, 'Normal', 'FileSystemResizeSuccessful', message);
      this.deps.event(claimRef(claim), 'Normal', 'FileSystemResizeSuccessful', message);
      this.deps.logger.info({ volume: mv.name, pv: pvName, from: decision.oldSizeBytes, to: decision.newSizeBytes }, message);
      try {
        await this.deps.claimStatus.markResizeFinished(claim, decision.newSize);
      } catch (err) {
        // The next sync calls the provider again (idempotent), then tries the claim again.
        throw new Error(`mountVolume.NodeExpandVolume update PVC status failed : ${errorMessage(err)}`, { cause: err });
      }
    } catch (err) {
      const message = `NodeExpandVolume.NodeExpandVolume failed for volume "${pvName}" : ${errorMessage(err)}`;
      this.deps.logger.warn({ volume: mv.name, pv: pvName }, message);
      this.deps.event(podEvents, 'Warning', 'VolumeResizeFailed', message);
    }
  }

  /** Forgets what was settled for a pod's volumes (the pod's volumes are gone). */
  forget(uid: string): void {
    for (const key of this.settled.keys()) if (key.startsWith(`${uid}/`)) this.settled.delete(key);
  }
}
