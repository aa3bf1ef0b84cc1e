import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../logger.ts';
import type { KubeletHooks, VolumeMountRequest, VolumeMountResult, VolumeUnmountRequest } from '../../hooks.ts';
import { STAGE } from '../../hooks.ts';
import { bytes } from '../../objects/quantity.ts';
import { writeAtomic, type Payload } from '../atomic-writer.ts';
import { bindMount, isLikelyMountPoint, isMountPoint, isWithin, mountTmpfs, removeOneFilesystem, removeUnmounted, unmountUnder } from '../mount-utils.ts';
import { DEFAULT_MODE, configMapPayload, downwardAPIPayload, projectedPayload, secretPayload, type ProjectionInputs } from './projection.ts';
import type { ObjectSource } from '../../objects/object-source.ts';
import type { TokenSource } from '../../objects/object-source.ts';
import { checkHostPath } from './host-path.ts';
import { checkLocalVolume } from './local-volume.ts';
import { formatAndMount } from '../format-and-mount.ts';
import { resizeFs } from '../resize-fs.ts';
import { podFsGroup, setVolumeOwnership } from '../volume-ownership.ts';
import { podFullName } from '../../objects/pod-util.ts';

/** The core's tap name on the volume hooks. */
const CORE = { name: 'kubelet', stage: STAGE.DEFAULT };

/**
 * The built-in volume types, served by the core as ordinary providers on the volume
 * HookMaps (a vendor plugin tapping `mountVolume.for('emptyDir')` at STAGE.POLICY comes first):
 *  - emptyDir: a directory in the pod's volume dir; `medium: Memory` is a tmpfs sized by `sizeLimit`;
 *  - hostPath: the host path itself, after its `type` check (a pod's, or a hostPath PersistentVolume's);
 *  - local: a `local` PersistentVolume's directory, bind-mounted into the pod's volume dir (a
 *    block device of a Filesystem PV: formatted if blank, mounted there);
 *  - configMap, secret, downwardAPI, projected: files written atomically (`..data` swap),
 *    again on every sync so edits reach running pods; secret and projected live on tmpfs;
 *    always read-only in containers.
 */
export function tapBuiltinVolumes(
  hooks: KubeletHooks,
  deps: {
    /** Where a pod's configMap and secret volumes find their objects: the API cache for API pods, local files otherwise. */
    objects: (pod: V1Pod) => ObjectSource;
    /** Service account tokens (API-server mode only). */
    tokens: () => TokenSource | undefined;
    /** The pod's and node's IPs and the node's allocatable, for downward API files. */
    inputs: (pod: V1Pod) => ProjectionInputs;
    logger: Logger;
    /**
     * False on a node that mounts nothing on its host (`kubelet-ts hollow`): no tmpfs (volumes
     * are plain directories with the same content), no hostPath type check. Default true.
     */
    hostMounts?: boolean;
  },
): void {
  const hostMounts = deps.hostMounts ?? true;
  const mount = (type: string, fn: (r: VolumeMountRequest) => Promise<VolumeMountResult>) => hooks.mountVolume.for(type).tapPromise(CORE, fn);
  const unmountWith = (type: string, fn: (r: VolumeUnmountRequest) => Promise<true>) => hooks.unmountVolume.for(type).tapPromise(CORE, fn);

  mount('emptyDir', async (r) => {
    const src = r.volume.emptyDir ?? {};
    const medium = src.medium ?? '';
    if (medium !== '' && medium !== 'Memory') throw new Error(`emptyDir medium "${medium}" is not supported (allowed: "" or Memory)`);
    await fs.mkdir(r.dir, { recursive: true });
    if (medium === 'Memory' && hostMounts) {
      if (!(await isLikelyMountPoint(r.dir))) await mountTmpfs(r.dir, src.sizeLimit !== undefined ? { sizeBytes: bytes(src.sizeLimit) } : {});
    }
    // Upstream's emptyDir is world-writable so that any user of the pod can write.
    await fs.chmod(r.dir, 0o777);
    // fsGroup: the volume's group, group rw and setgid (what a container wrote before, on a
    // set-up after a restart, is walked without following anything it planted).
    const own = podFsGroup(r.pod);
    if (own) {
      await setVolumeOwnership(r.dir, {
        fsGroup: own.fsGroup, readOnly: false, changePolicy: own.changePolicy,
        onSkip: (why) => deps.logger.warn({ pod: podFullName(r.pod), volume: r.volume.name, why }, 'fsGroup: part of the volume left unchanged'),
      });
    }
    return { path: r.dir, mountPoint: medium === 'Memory' && hostMounts };
  });
  const tearDown = hostMounts ? tearDownDir : tearDownPlainDir;
  unmountWith('emptyDir', tearDown);

  mount('hostPath', async (r) => {
    // A pod's own hostPath volume, or a hostPath PersistentVolume its claim is bound to.
    const src = r.persistentVolume?.volume.spec?.hostPath ?? r.volume.hostPath;
    if (!src) throw new Error(`volume ${r.volume.name}: no hostPath source`);
    if (r.persistentVolume?.volume.spec?.volumeMode === 'Block') throw new Error(`hostPath PersistentVolume ${r.persistentVolume.volume.metadata?.name ?? ''} has volumeMode Block: hostPath volumes are Filesystem only (a block device is a local PersistentVolume)`);
    // Without host mounts nothing on this host uses the path: the pod's node is not this host.
    if (hostMounts) await checkHostPath(src.path, src.type ?? '');
    return { path: src.path };
  });
  // The host's path is the host's: nothing to unmount or remove.
  unmountWith('hostPath', async () => true);

  mount('local', async (r) => {
    const pv = r.persistentVolume?.volume;
    const src = pv?.spec?.local;
    if (!pv || !src) throw new Error(`volume ${r.volume.name}: a local volume comes only from a PersistentVolume`);
    const pvName = pv.metadata?.name ?? '';
    const readOnly = r.persistentVolume!.readOnly;
    const block = pv.spec?.volumeMode === 'Block';
    const kind = await checkLocalVolume(pvName, src, block ? 'Block' : 'Filesystem');
    // A block device goes to the containers' volumeDevices as it is: nothing to mount.
    if (block) return { path: src.path, blockDevice: true, readOnly };
    // Without host mounts the pod's node is not this host: the path is handed over as it is.
    if (!hostMounts) return { path: src.path, readOnly };
    await fs.mkdir(r.dir, { recursive: true, mode: 0o750 });
    if (!(await isMountPoint(r.dir))) {
      // A device holding the volume's file system is mounted in the pod's dir itself (upstream
      // mounts it once under plugins/kubernetes.io/local-volume/mounts/ and bind-mounts that).
      if (kind === 'blockDevice') {
        await formatAndMount(src.path, r.dir, src.fsType || 'ext4', readOnly)
          .catch((err: Error) => { throw new Error(`local PersistentVolume ${pvName}: ${err.message}`); });
      } else {
        await bindMount(src.path, r.dir, readOnly);
      }
    }
    const own = podFsGroup(r.pod);
    if (own && !readOnly) {
      await setVolumeOwnership(r.dir, {
        fsGroup: own.fsGroup, readOnly: false, changePolicy: own.changePolicy,
        onSkip: (why) => deps.logger.warn({ pod: podFullName(r.pod), volume: r.volume.name, why }, 'fsGroup: part of the volume left unchanged'),
      });
    }
    return { path: r.dir, mountPoint: true, readOnly };
  });
  unmountWith('local', hostMounts ? tearDownLocalDir : tearDownPlainDir);
  // A local PV's node expansion (upstream's localVolumePlugin.NodeExpand), after the admin grew
  // what is under it and the PV: a directory's file system is the admin's to grow (done, as
  // upstream says: a no-op), a block device mounted as the volume gets its file system grown, a
  // Block PV's device is the pod's as it is. The core then gives the claim its new size.
  hooks.expandVolume.for('local').tapPromise(CORE, async (r) => {
    const spec = r.persistentVolume.volume.spec;
    const devicePath = spec?.local?.path ?? '';
    if (hostMounts && spec?.volumeMode !== 'Block' && (await fs.stat(devicePath).catch(() => undefined))?.isBlockDevice()) {
      await resizeFs(devicePath, r.mounted.path);
    }
    return 'expanded';
  });

  const projection = (type: string, tmpfs: boolean, payload: (pod: V1Pod, v: V1Volume) => Promise<Payload>) => {
    mount(type, async (r) => {
      const files = await payload(r.pod, r.volume);
      await fs.mkdir(r.dir, { recursive: true, mode: 0o755 });
      // Secrets never touch the node's disk: the volume is a tmpfs before anything is written.
      if (tmpfs && hostMounts && !(await isLikelyMountPoint(r.dir))) await mountTmpfs(r.dir, { mode: 0o755 });
      // fsGroup: what the writer makes gets the group and group-read bits as it is written.
      const own = podFsGroup(r.pod);
      const changed = await writeAtomic(r.dir, files, own ? { fsGroup: own.fsGroup } : {});
      if (changed && r.previous) deps.logger.info({ pod: podFullName(r.pod), volume: r.volume.name, type }, 'volume content updated');
      // Read-only in every container whatever its volumeMounts say (upstream, CVE-2017-1002102):
      // the kubelet rewrites this dir on every sync, so a container must not be able to plant
      // links in it.
      return { path: r.dir, mountPoint: tmpfs && hostMounts, requiresRemount: true, readOnly: true };
    });
    unmountWith(type, tearDown);
  };
  projection('configMap', false, (pod, v) => configMapPayload(deps.objects(pod), pod, v.configMap!, v.configMap!.defaultMode ?? DEFAULT_MODE));
  projection('secret', true, (pod, v) => secretPayload(deps.objects(pod), pod, v.secret!, v.secret!.defaultMode ?? DEFAULT_MODE));
  projection('downwardAPI', false, async (pod, v) => downwardAPIPayload(pod, v.downwardAPI!.items, v.downwardAPI!.defaultMode ?? DEFAULT_MODE, deps.inputs(pod)));
  projection('projected', true, (pod, v) => projectedPayload({ objects: deps.objects(pod), tokens: deps.tokens(), inputs: deps.inputs(pod) }, pod, v.projected!.sources, v.projected!.defaultMode ?? DEFAULT_MODE));
}

/** Removes a volume dir of a node that mounts nothing (no mount table to read). */
async function tearDownPlainDir(r: VolumeUnmountRequest): Promise<true> {
  if (!isWithin(path.join(r.rootDir, 'pods', r.podUID), r.dir)) throw new Error(`refusing to remove ${r.dir}: not in the pod's directory`);
  await fs.rm(r.dir, { recursive: true, force: true });
  return true;
}

/**
 * Unmounts what is mounted at or below the volume dir, then removes it (never across a remaining
 * mount). In a whole pod's teardown the pod's mount table serves every volume: what it lists
 * below the dir is unmounted and the removal stops at any other file system, with no read of
 * the table per volume; on its own a volume reads the table, and again before the removal.
 */
async function tearDownDir(r: VolumeUnmountRequest): Promise<true> {
  if (!isWithin(path.join(r.rootDir, 'pods', r.podUID), r.dir)) throw new Error(`refusing to remove ${r.dir}: not in the pod's directory`);
  await unmountUnder(r.dir, r.mountTable);
  if (r.mountTable) await removeOneFilesystem(r.dir);
  else await removeUnmounted(r.dir);
  return true;
}

/** A local PersistentVolume's dir binds the admin's data: its removal is always checked against a fresh read of the table. */
const tearDownLocalDir = (r: VolumeUnmountRequest): Promise<true> => {
  const { mountTable: _podTable, ...own } = r;
  return tearDownDir(own);
};
