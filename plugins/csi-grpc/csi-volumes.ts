import type { V1Pod } from '@kubernetes/client-node';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../core/logger.ts';
import type { VolumeMountRequest, VolumeMountResult, VolumeUnmountRequest } from '../../core/hooks.ts';
import { LocalObjects } from '../../core/volumes/builtin/local-objects.ts';
import { isMountPoint, removeUnmounted } from '../../core/volumes/mount-utils.ts';
import type { RegistrationWatcher, CsiDriver } from './registration.ts';

/** The volume context keys upstream adds for inline ephemeral volumes (and for podInfoOnMount drivers). */
export const CONTEXT_KEYS = {
  ephemeral: 'csi.storage.k8s.io/ephemeral',
  podName: 'csi.storage.k8s.io/pod.name',
  podNamespace: 'csi.storage.k8s.io/pod.namespace',
  podUID: 'csi.storage.k8s.io/pod.uid',
  serviceAccount: 'csi.storage.k8s.io/serviceAccount.name',
} as const;

/** Upstream's handle of an inline ephemeral volume: `csi-` + sha256(podUID + volume name). */
export function ephemeralVolumeHandle(podUID: string, volumeName: string): string {
  return `csi-${crypto.createHash('sha256').update(`${podUID}${volumeName}`).digest('hex')}`;
}

/** Upstream's global staging path: `<rootDir>/plugins/kubernetes.io/csi/<driver>/<sha256(handle)>/globalmount`. */
export function stagingPath(rootDir: string, driver: string, volumeHandle: string): string {
  return path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', driver, crypto.createHash('sha256').update(volumeHandle).digest('hex'), 'globalmount');
}

/** What the plugin keeps with each volume (VolumeMountResult.data). */
interface CsiVolumeData { driver: string; volumeHandle: string; targetPath: string; stagingPath?: string }

const notRegistered = (name: string) => new Error(`driver name ${name} not found in the list of registered CSI drivers`);

/**
 * Sets up and tears down `csi` volumes (inline ephemeral) through the driver's Node service:
 * NodeStageVolume into the per-volume global staging path when the driver has
 * STAGE_UNSTAGE_VOLUME (and `stageInlineVolumes` is on), then NodePublishVolume into
 * `<pod volume dir>/mount`; teardown is the reverse. All calls are idempotent per the spec,
 * so a retry after any failure is safe.
 */
export class CsiVolumes {
  private readonly objects: LocalObjects;

  constructor(private readonly deps: { drivers: RegistrationWatcher; stageInlineVolumes: boolean; localObjectsDir: string | undefined; logger: Logger }) {
    this.objects = new LocalObjects(deps.localObjectsDir);
  }

  private driver(name: string): CsiDriver {
    const d = this.deps.drivers.driver(name);
    if (!d) throw notRegistered(name);
    return d;
  }

  async mount(r: VolumeMountRequest): Promise<VolumeMountResult> {
    const src = r.volume.csi!;
    if (!src.driver) throw new Error('csi volume has no driver');
    const driver = this.driver(src.driver);
    const uid = r.pod.metadata!.uid!;
    const prev = r.previous?.data as CsiVolumeData | undefined;
    const volumeHandle = prev?.volumeHandle ?? ephemeralVolumeHandle(uid, r.volume.name);
    const targetPath = path.join(r.dir, 'mount');
    // The CO makes the target's parent; the driver makes the target itself.
    await fs.mkdir(r.dir, { recursive: true, mode: 0o750 });
    await fs.writeFile(path.join(r.dir, 'vol_data.json'), JSON.stringify({ driverName: src.driver, volumeHandle, specVolID: r.volume.name, volumeLifecycleMode: 'Ephemeral', podUID: uid }));

    const capability = { mount: { fsType: src.fsType ?? '', mountFlags: [] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } };
    const volumeContext = { ...(src.volumeAttributes ?? {}), ...podInfo(r.pod) };
    const secrets = await this.secrets(r.pod, src.nodePublishSecretRef?.name);
    const caps = await driver.client.nodeCapabilities();
    let staging: string | undefined;
    if (this.deps.stageInlineVolumes && caps.has('STAGE_UNSTAGE_VOLUME')) {
      staging = stagingPath(r.rootDir, src.driver, volumeHandle);
      await fs.mkdir(staging, { recursive: true, mode: 0o750 });
      await driver.client.nodeStageVolume({ volumeId: volumeHandle, publishContext: {}, stagingTargetPath: staging, volumeCapability: capability, secrets, volumeContext });
    }
    try {
      await driver.client.nodePublishVolume({
        volumeId: volumeHandle, publishContext: {}, stagingTargetPath: staging ?? '', targetPath, volumeCapability: capability,
        readonly: src.readOnly === true, secrets, volumeContext,
      });
    } catch (err) {
      // Nothing of a failed set-up stays behind (the manager has no record of it to tear down).
      await this.undo(driver, { driver: src.driver, volumeHandle, targetPath, ...(staging ? { stagingPath: staging } : {}) }).catch((e) =>
        this.deps.logger.warn({ volume: r.volume.name, err: (e as Error).message }, 'cleanup after a failed NodePublishVolume failed'),
      );
      throw err;
    }
    const data: CsiVolumeData = { driver: src.driver, volumeHandle, targetPath, ...(staging ? { stagingPath: staging } : {}) };
    return { path: targetPath, mountPoint: true, readOnly: src.readOnly === true, data: { ...data } };
  }

  async unmount(r: VolumeUnmountRequest): Promise<true> {
    const data = r.mounted.data as unknown as CsiVolumeData | undefined;
    if (!data?.driver) throw new Error(`no record of the CSI driver of volume "${r.volumeName}"`);
    await this.undo(this.driver(data.driver), data);
    await removeUnmounted(r.dir);
    return true;
  }

  /** NodeUnpublishVolume, then NodeUnstageVolume if staged; checks that nothing stays mounted. */
  private async undo(driver: CsiDriver, data: CsiVolumeData): Promise<void> {
    await driver.client.nodeUnpublishVolume({ volumeId: data.volumeHandle, targetPath: data.targetPath });
    if (await isMountPoint(data.targetPath)) throw new Error(`${data.targetPath} is still mounted after NodeUnpublishVolume`);
    await fs.rm(data.targetPath, { recursive: false, force: true }).catch(() => fs.rmdir(data.targetPath).catch(() => {}));
    if (data.stagingPath) {
      await driver.client.nodeUnstageVolume({ volumeId: data.volumeHandle, stagingTargetPath: data.stagingPath });
      if (await isMountPoint(data.stagingPath)) throw new Error(`${data.stagingPath} is still mounted after NodeUnstageVolume`);
      await removeUnmounted(path.dirname(data.stagingPath));
    }
  }

  private async secrets(pod: V1Pod, name: string | undefined): Promise<Record<string, string>> {
    if (!name) return {};
    const secret = await this.objects.secret(pod.metadata?.namespace ?? 'default', name);
    if (!secret) throw new Error(`nodePublishSecretRef: secret "${name}" not found`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] = v;
    return out;
  }
}

/** The pod's identity in the volume context, as upstream sends it for inline ephemeral volumes. */
export function podInfo(pod: V1Pod): Record<string, string> {
  return {
    [CONTEXT_KEYS.podName]: pod.metadata?.name ?? '',
    [CONTEXT_KEYS.podNamespace]: pod.metadata?.namespace ?? 'default',
    [CONTEXT_KEYS.podUID]: pod.metadata?.uid ?? '',
    [CONTEXT_KEYS.serviceAccount]: pod.spec?.serviceAccountName ?? 'default',
    [CONTEXT_KEYS.ephemeral]: 'true',
  };
}
