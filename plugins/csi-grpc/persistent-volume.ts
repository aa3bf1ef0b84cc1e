import type { V1CSIDriver, V1CSIPersistentVolumeSource } from '@kubernetes/client-node';
import { applyFsGroup, fsGroupPlan, fsGroupPolicyOf } from './fs-group.ts';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isMountPoint, removeUnmounted, type CallOptions, type Logger, type ObjectSource, type VolumeExpandOutcome, type VolumeExpandRequest, type VolumeMountRequest, type VolumeMountResult, type VolumeUnmountRequest, type VolumeUsage } from 'kubelet-ts';
import { expandPersistentVolume } from './persistent-expansion.ts';
import { podInfo } from './inline-volume.ts';
import { attachmentName, blockPaths, deviceMountPath, podsUsingVolume, stagedBlockVolumes } from './persistent-paths.ts';
import type { PublicationCleanup } from './publication-cleanup.ts';
import { persistentAccessMode } from './access-mode.ts';
import type { PersistentVolumeData } from './persistent-volume-data.ts';
import type { CsiDriver } from './registration.ts';

/** Written beside `globalmount` once NodeStageVolume succeeded: a restarted kubelet never stages twice. */
const STAGED_MARKER = 'kubelet-ts-staged';

/**
 * Sets up and tears down CSI PersistentVolumes (a pod's claim bound to a PV with a `csi`
 * source), in upstream's order (csi_attacher.go, csi_mounter.go):
 *
 * 1. attach: when the CSIDriver says `attachRequired` (or there is no CSIDriver object, as
 *    upstream assumes), the VolumeAttachment of this node must be `attached`; its
 *    `attachmentMetadata` is the publish context. The kubelet never attaches: the
 *    attach/detach controller and the driver's external-attacher do.
 * 2. stage (driver with STAGE_UNSTAGE_VOLUME): once per volume per node at upstream's device
 *    mount path; a marker records success, so neither a second pod nor a restarted kubelet
 *    stages again.
 * 3. publish: per pod, at `<pod volume dir>/mount`.
 *
 * Teardown unpublishes, then unstages once no pod volume dir on the node names the volume.
 * Stage, publish, unpublish and unstage of one volume are serialised (a pod starting while the
 * last user goes never publishes a volume being unstaged).
 */
export class PersistentCsiVolumes {
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(private readonly deps: {
    drivers: { driver(name: string): CsiDriver | undefined };
    cleanup: PublicationCleanup;
    /** podInfoOnMount when there is no CSIDriver object to read (no API server, or none for the driver). */
    podInfoOnMount: (driver: string) => boolean;
    logger: Logger;
  }) {}

  private driver(name: string): CsiDriver {
    const d = this.deps.drivers.driver(name);
    if (!d) throw new Error(`driver name ${name} not found in the list of registered CSI drivers`);
    return d;
  }

  async mount(r: VolumeMountRequest, signal?: AbortSignal): Promise<VolumeMountResult> {
    const call = signal ? { signal } : {};
    const { volume: pv, readOnly: claimReadOnly } = r.persistentVolume!;
    const pvName = pv.metadata?.name ?? '';
    const src = pv.spec?.csi;
    if (!src) throw new Error(`PersistentVolume ${pvName} has no csi source`);
    if (!src.driver) throw new Error(`PersistentVolume ${pvName}: spec.csi.driver is empty`);
    if (!src.volumeHandle) throw new Error(`PersistentVolume ${pvName}: spec.csi.volumeHandle is empty`);
    const block = (pv.spec?.volumeMode ?? 'Filesystem') === 'Block';
    const driver = this.driver(src.driver);
    const csiDriver = r.storage ? await r.storage.csiDriver(src.driver) : undefined;
    const nodeCapabilities = await driver.client.nodeCapabilities();
    const publishContext = await this.attached(r, src, csiDriver);
    const readOnly = claimReadOnly || src.readOnly === true;
    // A raw block device has no files to give a group (upstream applies fsGroup to filesystems only).
    const fsGroup = block ? { kind: 'none' as const } : fsGroupPlan({ pod: r.pod, nodeCapabilities, policy: fsGroupPolicyOf(csiDriver), fsType: src.fsType ?? '', readOnly, persistentVolume: pv });
    const accessMode = { mode: persistentAccessMode(pv, nodeCapabilities) };
    const volumeCapability = block
      ? { block: {}, accessMode }
      : { mount: { fsType: src.fsType ?? '', mountFlags: pv.spec?.mountOptions ?? [], ...(fsGroup.kind === 'driver' ? { volumeMountGroup: fsGroup.volumeMountGroup } : {}) }, accessMode };
    const secrets = (ref: { name?: string; namespace?: string } | undefined, field: string) => this.secrets(r.objects, ref, field);
    const publishSecrets = await secrets(src.nodePublishSecretRef, 'nodePublishSecretRef');
    const stage = nodeCapabilities.has('STAGE_UNSTAGE_VOLUME');
    // A block volume is staged and published at upstream's volumeDevices paths; the pod's volume dir keeps vol_data.json.
    const bp = block ? blockPaths(r.rootDir, pvName, r.pod.metadata!.uid!) : undefined;
    const devicePath = stage ? (bp ? bp.stagingPath : deviceMountPath(r.rootDir, src.driver, src.volumeHandle)) : undefined;
    const dataDir = devicePath ? (bp ? bp.dataDir : path.dirname(devicePath)) : undefined;
    const targetPath = bp ? bp.publishPath : path.join(r.dir, 'mount');
    // With an API server the CSIDriver object decides (none: no pod info, as upstream); without one, the options.
    const podInfoOnMount = r.storage ? csiDriver?.spec?.podInfoOnMount === true : this.deps.podInfoOnMount(src.driver);
    const publication: PersistentVolumeData = {
      persistent: true, driver: src.driver, volumeHandle: src.volumeHandle, targetPath,
      ...(devicePath ? { deviceMountPath: devicePath } : {}),
      ...(bp ? { volumeDir: r.dir, ...(dataDir ? { dataDir } : {}) } : {}),
    };

    return this.locked(`${src.driver}/${src.volumeHandle}`, async () => {
      if (devicePath && dataDir) await this.stage(driver, src, { stagingPath: devicePath, dataDir }, publishContext, volumeCapability, await secrets(src.nodeStageSecretRef, 'nodeStageSecretRef'), call);
      await this.deps.cleanup.beforeSetUp(targetPath);
      // The CO makes the target's parent with vol_data.json (upstream's keys), the driver the target.
      await fs.mkdir(r.dir, { recursive: true, mode: 0o750 });
      if (bp) await fs.mkdir(path.dirname(targetPath), { recursive: true, mode: 0o750 });
      await fs.writeFile(path.join(r.dir, 'vol_data.json'), JSON.stringify({
        specVolID: pvName, volumeHandle: src.volumeHandle, driverName: src.driver, nodeName: r.nodeName, volumeLifecycleMode: 'Persistent',
        ...(publishContext ? { attachmentID: attachmentName(src.volumeHandle, src.driver, r.nodeName) } : {}),
      }));
      try {
        await driver.client.nodePublishVolume({
          volumeId: src.volumeHandle,
          publishContext: publishContext ?? {},
          stagingTargetPath: devicePath ?? '',
          targetPath,
          volumeCapability,
          readonly: readOnly,
          secrets: publishSecrets,
          volumeContext: { ...(src.volumeAttributes ?? {}), ...(podInfoOnMount ? podInfo(r.pod, false) : {}) },
        }, call);
        // Published: the pod's fsGroup where the kubelet applies it (a failure unpublishes, and the next sync tries again).
        await applyFsGroup(fsGroup, targetPath, { readOnly, logger: this.deps.logger, pod: `${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`, volume: r.volume.name });
      } catch (err) {
        await this.deps.cleanup.afterFailure(publication, r.pod.metadata!.uid!, err);
        throw err;
      }
      const uniqueVolumeName = `kubernetes.io/csi/${src.driver}^${src.volumeHandle}`;
      // A block target is a device the driver bind-mounted or made (mknod): not always a mount point.
      if (block) return { path: targetPath, blockDevice: true, readOnly, uniqueVolumeName, data: { ...publication } };
      return { path: targetPath, mountPoint: true, readOnly, uniqueVolumeName, data: { ...publication } };
    });
  }

  /**
   * Whether the volume is attached to this node, when it has to be: undefined when no attach
   * is required, else the VolumeAttachment's attachmentMetadata (the publish context). Not yet
   * attached throws; the pod's next sync asks again.
   */
  private async attached(r: VolumeMountRequest, src: V1CSIPersistentVolumeSource, csiDriver: V1CSIDriver | undefined): Promise<Record<string, string> | undefined> {
    // Upstream: attach is required unless a CSIDriver object says otherwise (its default is true).
    if (!r.storage || (csiDriver && csiDriver.spec?.attachRequired === false)) return undefined;
    const name = attachmentName(src.volumeHandle, src.driver, r.nodeName);
    const va = await r.storage.volumeAttachment(name);
    const why = csiDriver ? `CSIDriver ${src.driver} has attachRequired: true` : `there is no CSIDriver object for ${src.driver}, so attach is required`;
    if (!va) throw new Error(`volume ${src.volumeHandle} is not attached to node ${r.nodeName} yet: VolumeAttachment ${name} does not exist (${why}; the attach/detach controller creates it)`);
    if (va.status?.attachError?.message) throw new Error(`attacher.WaitForAttach failed for volume ${src.volumeHandle} (VolumeAttachment ${name}): ${va.status.attachError.message}`);
    if (va.status?.attached !== true) throw new Error(`volume ${src.volumeHandle} is not attached to node ${r.nodeName} yet: VolumeAttachment ${name} is not attached (${why}; the driver's external-attacher attaches it)`);
    return va.status.attachmentMetadata ?? {};
  }

  /** NodeStageVolume unless this node staged the volume already (the marker in its data dir, beside `globalmount` for a filesystem). */
  private async stage(driver: CsiDriver, src: V1CSIPersistentVolumeSource, paths: { stagingPath: string; dataDir: string }, publishContext: Record<string, string> | undefined, volumeCapability: object, secrets: Record<string, string>, call: CallOptions): Promise<void> {
    const { stagingPath: devicePath, dataDir } = paths;
    if (await fs.stat(path.join(dataDir, STAGED_MARKER)).then(() => true, () => false)) return;
    // vol_data.json first, as upstream: a kubelet that dies mid-stage still knows what to unstage.
    await fs.mkdir(devicePath, { recursive: true, mode: 0o750 });
    await fs.mkdir(dataDir, { recursive: true, mode: 0o750 });
    await fs.writeFile(path.join(dataDir, 'vol_data.json'), JSON.stringify({ driverName: src.driver, volumeHandle: src.volumeHandle }));
    await driver.client.nodeStageVolume({
      volumeId: src.volumeHandle,
      publishContext: publishContext ?? {},
      stagingTargetPath: devicePath,
      volumeCapability,
      secrets,
      volumeContext: src.volumeAttributes ?? {},
    }, call);
    await fs.writeFile(path.join(dataDir, STAGED_MARKER), '');
    this.deps.logger.info({ driver: src.driver, volumeHandle: src.volumeHandle, deviceMountPath: devicePath }, 'staged CSI volume');
  }

  async unmount(r: VolumeUnmountRequest, data: PersistentVolumeData): Promise<true> {
    this.driver(data.driver);
    await this.locked(`${data.driver}/${data.volumeHandle}`, async () => {
      await this.deps.cleanup.undo({ driver: data.driver, volumeHandle: data.volumeHandle, targetPath: data.targetPath, ...(data.volumeDir ? { volumeDir: data.volumeDir } : {}) });
      if (data.deviceMountPath) await this.unstageIfUnused(r.rootDir, data.driver, data.volumeHandle, { stagingPath: data.deviceMountPath, dataDir: data.dataDir ?? path.dirname(data.deviceMountPath) });
    });
    return true;
  }

  /**
   * The volume's use (NodeGetVolumeStats on the pod's publication, with its staging path), for
   * a driver with GET_VOLUME_STATS; undefined for one without. A condition the driver reports
   * abnormal comes back as `abnormal` (upstream's VolumeConditionAbnormal event), with VOLUME_CONDITION.
   */
  async stats(data: PersistentVolumeData): Promise<VolumeUsage | undefined> {
    const driver = this.driver(data.driver);
    const caps = await driver.client.nodeCapabilities();
    if (!caps.has('GET_VOLUME_STATS')) return undefined;
    const r = await driver.client.nodeGetVolumeStats({ volumeId: data.volumeHandle, volumePath: data.targetPath, stagingTargetPath: data.deviceMountPath ?? '' });
    const out: VolumeUsage = {};
    for (const u of r.usage ?? []) {
      if (u.unit === 'BYTES') Object.assign(out, { availableBytes: Number(u.available), capacityBytes: Number(u.total), usedBytes: Number(u.used) });
      else if (u.unit === 'INODES') Object.assign(out, { inodesFree: Number(u.available), inodes: Number(u.total), inodesUsed: Number(u.used) });
    }
    if (caps.has('VOLUME_CONDITION') && r.volumeCondition?.abnormal) out.abnormal = r.volumeCondition.message || 'abnormal';
    return out;
  }

  /**
   * Grows a published volume to `r.newSizeBytes` (NodeExpandVolume, see persistent-expansion.ts),
   * under the volume's lock so it never races an unpublish or unstage.
   */
  async expand(r: VolumeExpandRequest, data: PersistentVolumeData, signal?: AbortSignal): Promise<VolumeExpandOutcome> {
    const driver = this.driver(data.driver);
    const pv = r.persistentVolume.volume;
    const secrets = await this.secrets(r.objects, pv.spec?.csi?.nodeExpandSecretRef, 'nodeExpandSecretRef');
    return this.locked(`${data.driver}/${data.volumeHandle}`, () => expandPersistentVolume({ client: driver.client, pv, data, newSizeBytes: r.newSizeBytes, secrets, ...(signal ? { signal } : {}) }));
  }

  /**
   * Unstages what a kubelet that died between an unpublish and its unstage left staged: every
   * device dir of the driver whose volume no pod volume dir names any more. Run when a driver
   * registers (it has to answer NodeUnstageVolume); under the volume's lock, so a pod being set
   * up meanwhile either counts as a user or stages afresh after the sweep.
   */
  async sweepStaged(rootDir: string, driverName: string): Promise<void> {
    const driverDir = path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', driverName);
    const filesystems = (await fs.readdir(driverDir).catch(() => [] as string[])).map((sha) => ({ dataDir: path.join(driverDir, sha), stagingPath: path.join(driverDir, sha, 'globalmount') }));
    for (const paths of [...filesystems, ...(await stagedBlockVolumes(rootDir))]) {
      let data: { driverName?: string; volumeHandle?: string };
      try {
        data = JSON.parse(await fs.readFile(path.join(paths.dataDir, 'vol_data.json'), 'utf8')) as typeof data;
      } catch {
        continue;
      }
      if (data.driverName !== driverName || !data.volumeHandle) continue;
      const handle = data.volumeHandle;
      await this.locked(`${driverName}/${handle}`, () => this.unstageIfUnused(rootDir, driverName, handle, paths))
        .catch((err) => this.deps.logger.warn({ driver: driverName, volumeHandle: handle, err: (err as Error).message }, 'could not unstage a volume no pod uses; tried again when the driver registers again'));
    }
  }

  /** NodeUnstageVolume and the volume's data dir (and a block volume's staging dir) removed, once no pod on the node uses the volume. */
  private async unstageIfUnused(rootDir: string, driverName: string, volumeHandle: string, paths: { stagingPath: string; dataDir: string }): Promise<void> {
    const users = await podsUsingVolume(rootDir, driverName, volumeHandle);
    if (users.length > 0) {
      this.deps.logger.debug({ driver: driverName, volumeHandle, users }, 'volume still used by other pods: left staged');
      return;
    }
    const { stagingPath: devicePath, dataDir } = paths;
    if (!(await fs.stat(dataDir).then(() => true, () => false))) return;
    await this.driver(driverName).client.nodeUnstageVolume({ volumeId: volumeHandle, stagingTargetPath: devicePath });
    if (await isMountPoint(devicePath)) throw new Error(`${devicePath} is still mounted after NodeUnstageVolume`);
    await removeUnmounted(dataDir);
    if (path.dirname(devicePath) !== dataDir) {
      // A block volume: its staging dir and `volumeDevices/<pv>` are apart from the data dir.
      await removeUnmounted(devicePath);
      await fs.rmdir(path.dirname(dataDir)).catch(() => {});
    }
    this.deps.logger.info({ driver: driverName, volumeHandle, deviceMountPath: devicePath }, 'unstaged CSI volume: no pod on the node uses it');
  }

  /** A Secret named by a PV's secret ref (it names its own namespace). */
  private async secrets(objects: ObjectSource, ref: { name?: string; namespace?: string } | undefined, field: string): Promise<Record<string, string>> {
    if (!ref?.name) return {};
    const ns = ref.namespace ?? 'default';
    const secret = await objects.secret(ns, ref.name);
    if (!secret) throw new Error(`${field}: secret "${ns}/${ref.name}" not found`);
    const out: Record<string, string> = {};
    for (const [k, v] of Object.entries(secret.data ?? {})) out[k] = Buffer.from(v, 'base64').toString('utf8');
    for (const [k, v] of Object.entries(secret.stringData ?? {})) out[k] = v;
    return out;
  }

  private async locked<T>(key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(key) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.locks.set(key, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(key) === next) this.locks.delete(key);
    }
  }
}
