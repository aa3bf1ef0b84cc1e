import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger, VolumeMountRequest, VolumeMountResult, VolumeUnmountRequest } from 'kubelet-ts';
import { ephemeralVolumeHandle, inlinePublishRequest } from './inline-volume.ts';
import { applyFsGroup, fsGroupPlan, fsGroupPolicyOf } from './fs-group.ts';
import type { PersistentCsiVolumes } from './persistent-volume.ts';
import type { PersistentVolumeData } from './persistent-volume-data.ts';
import type { Publication, PublicationCleanup } from './publication-cleanup.ts';
import type { CsiDriver } from './registration.ts';

export { CONTEXT_KEYS, ephemeralVolumeHandle } from './inline-volume.ts';

/** What the plugin keeps with each volume (VolumeMountResult.data): the publication to undo on teardown. */
type CsiVolumeData = Publication;

const notRegistered = (name: string) => new Error(`driver name ${name} not found in the list of registered CSI drivers`);

/**
 * Sets up and tears down `csi` volumes. Without an API server the only ones are inline
 * ephemeral volumes (`volumes[].csi` in the pod), and those upstream never stages: the
 * driver creates the volume in NodePublishVolume, published straight into
 * `<pod volume dir>/mount` (a staging driver refuses NodeStageVolume for a volume it has not
 * created yet). Teardown is NodeUnpublishVolume; what a failed publish leaves is undone by
 * PublicationCleanup, at once when the driver's answer was final, else once it is safe.
 */
export class CsiVolumes {
  constructor(private readonly deps: {
    drivers: { driver(name: string): CsiDriver | undefined };
    cleanup: PublicationCleanup;
    /** Whether the driver gets the pod info keys in the volume context (the CSIDriver's podInfoOnMount). */
    podInfoOnMount: (driver: string) => boolean;
    /** PersistentVolumes with a csi source (a pod's claim). */
    persistent: PersistentCsiVolumes;
    logger: Logger;
  }) {}

  private driver(name: string): CsiDriver {
    const d = this.deps.drivers.driver(name);
    if (!d) throw notRegistered(name);
    return d;
  }

  /** Sets up a CSI volume; `signal` (the hook's) cancels the driver calls when the pod's sync is given up on or the tap times out. */
  async mount(r: VolumeMountRequest, signal?: AbortSignal): Promise<VolumeMountResult> {
    if (r.persistentVolume) return this.deps.persistent.mount(r, signal);
    const src = r.volume.csi!;
    if (!src.driver) throw new Error('csi volume has no driver');
    const driver = this.driver(src.driver);
    const uid = r.pod.metadata!.uid!;
    const volumeHandle = ephemeralVolumeHandle(uid, r.volume.name);
    const targetPath = path.join(r.dir, 'mount');
    // What can fail without touching the disk comes first: a failure here leaves nothing to undo.
    const secrets = await this.secrets(r, src.nodePublishSecretRef?.name);
    const nodeCapabilities = await driver.client.nodeCapabilities();
    const csiDriver = r.storage ? await r.storage.csiDriver(src.driver) : undefined;
    const fsGroup = fsGroupPlan({ pod: r.pod, nodeCapabilities, policy: fsGroupPolicyOf(csiDriver), fsType: src.fsType ?? '', readOnly: src.readOnly === true });
    // What an earlier failed set-up of this target left is settled first, never raced.
    await this.deps.cleanup.beforeSetUp(targetPath);
    // The CO makes the target's parent; the driver makes the target itself.
    await fs.mkdir(r.dir, { recursive: true, mode: 0o750 });
    await fs.writeFile(path.join(r.dir, 'vol_data.json'), JSON.stringify({ driverName: src.driver, volumeHandle, specVolID: r.volume.name, volumeLifecycleMode: 'Ephemeral', podUID: uid }));
    const publication: Publication = { driver: src.driver, volumeHandle, targetPath };
    try {
      await driver.client.nodePublishVolume(inlinePublishRequest({
        pod: r.pod, source: src, volumeId: volumeHandle, targetPath, nodeCapabilities, podInfoOnMount: this.deps.podInfoOnMount(src.driver), secrets,
        ...(fsGroup.kind === 'driver' ? { volumeMountGroup: fsGroup.volumeMountGroup } : {}),
      }), signal ? { signal } : {});
      await applyFsGroup(fsGroup, targetPath, { readOnly: src.readOnly === true, logger: this.deps.logger, pod: `${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`, volume: r.volume.name });
    } catch (err) {
      // The volume manager keeps no record of a failed set-up, so nothing else would undo it.
      await this.deps.cleanup.afterFailure(publication, uid, err);
      throw err;
    }
    const data: CsiVolumeData = publication;
    return { path: targetPath, mountPoint: true, readOnly: src.readOnly === true, data: { ...data } };
  }

  async unmount(r: VolumeUnmountRequest): Promise<true> {
    const data = r.mounted.data as unknown as CsiVolumeData | PersistentVolumeData | undefined;
    if (!data?.driver) throw new Error(`no record of the CSI driver of volume "${r.volumeName}"`);
    if ('persistent' in data && data.persistent) return this.deps.persistent.unmount(r, data);
    // Resolved here so an unregistered driver reads as upstream's error before anything is tried.
    this.driver(data.driver);
    await this.deps.cleanup.undo(data);
    return true;
  }

  /** The `nodePublishSecretRef` Secret's data, read where the pod's objects come from (the API for an API pod). */
  private async secrets(r: VolumeMountRequest, name: string | undefined): Promise<Record<string, string>> {
    if (!name) return {};
    const secret = await r.objects.secret(r.pod.metadata?.namespace ?? 'default', name);
    if (!secret) throw new Error(`nodePublishSecretRef: secret "${name}" not found`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] = v;
    return out;
  }
}
