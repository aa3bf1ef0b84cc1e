import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../../logger.ts';
import type { KubeletHooks, VolumeMountRequest, VolumeMountResult, VolumeUnmountRequest } from '../../hooks.ts';
import { STAGE } from '../../hooks.ts';
import { bytes } from '../../pod/quantity.ts';
import { writeAtomic, type Payload } from '../atomic-writer.ts';
import { isMountPoint, isWithin, mountTmpfs, mountsUnder, removeUnmounted, unmount } from '../mount-utils.ts';
import { LocalObjects } from './local-objects.ts';
import { DEFAULT_MODE, configMapPayload, downwardAPIPayload, projectedPayload, secretPayload } from './projection.ts';
import { checkHostPath } from './host-path.ts';

/** The core's tap name on the volume hooks. */
const CORE = { name: 'kubelet', stage: STAGE.DEFAULT };

/**
 * The built-in volume types, served by the core as ordinary providers on the volume
 * HookMaps (a vendor plugin tapping `mountVolume.for('emptyDir')` at STAGE.POLICY comes first):
 *  - emptyDir: a directory in the pod's volume dir; `medium: Memory` is a tmpfs sized by `sizeLimit`;
 *  - hostPath: the host path itself, after its `type` check;
 *  - configMap, secret, downwardAPI, projected: files written atomically (`..data` swap),
 *    again on every sync so edits reach running pods; secret and projected live on tmpfs;
 *    always read-only in containers.
 */
export function tapBuiltinVolumes(hooks: KubeletHooks, deps: { localObjectsDir: string | undefined; logger: Logger }): void {
  const objects = new LocalObjects(deps.localObjectsDir);
  const mount = (type: string, fn: (r: VolumeMountRequest) => Promise<VolumeMountResult>) => hooks.mountVolume.for(type).tapPromise(CORE, fn);
  const unmountWith = (type: string, fn: (r: VolumeUnmountRequest) => Promise<true>) => hooks.unmountVolume.for(type).tapPromise(CORE, fn);

  mount('emptyDir', async (r) => {
    const src = r.volume.emptyDir ?? {};
    const medium = src.medium ?? '';
    if (medium !== '' && medium !== 'Memory') throw new Error(`emptyDir medium "${medium}" is not supported (allowed: "" or Memory)`);
    await fs.mkdir(r.dir, { recursive: true });
    if (medium === 'Memory') {
      if (!(await isMountPoint(r.dir))) await mountTmpfs(r.dir, src.sizeLimit !== undefined ? { sizeBytes: bytes(src.sizeLimit) } : {});
    }
    // Upstream's emptyDir is world-writable so that any user of the pod can write.
    await fs.chmod(r.dir, 0o777);
    return { path: r.dir, mountPoint: medium === 'Memory' };
  });
  unmountWith('emptyDir', tearDownDir);

  mount('hostPath', async (r) => {
    const src = r.volume.hostPath!;
    await checkHostPath(src.path, src.type ?? '');
    return { path: src.path };
  });
  // The host's path is the host's: nothing to unmount or remove.
  unmountWith('hostPath', async () => true);

  const projection = (type: string, tmpfs: boolean, payload: (pod: V1Pod, v: V1Volume) => Promise<Payload>) => {
    mount(type, async (r) => {
      const files = await payload(r.pod, r.volume);
      await fs.mkdir(r.dir, { recursive: true, mode: 0o755 });
      // Secrets never touch the node's disk: the volume is a tmpfs before anything is written.
      if (tmpfs && !(await isMountPoint(r.dir))) await mountTmpfs(r.dir, { mode: 0o755 });
      const changed = await writeAtomic(r.dir, files);
      if (changed && r.previous) deps.logger.info({ pod: `${r.pod.metadata?.namespace}/${r.pod.metadata?.name}`, volume: r.volume.name, type }, 'volume content updated');
      // Read-only in every container whatever its volumeMounts say (upstream, CVE-2017-1002102):
      // the kubelet rewrites this dir on every sync, so a container must not be able to plant
      // links in it.
      return { path: r.dir, mountPoint: tmpfs, requiresRemount: true, readOnly: true };
    });
    unmountWith(type, tearDownDir);
  };
  projection('configMap', false, (pod, v) => configMapPayload(objects, pod, v.configMap!, v.configMap!.defaultMode ?? DEFAULT_MODE));
  projection('secret', true, (pod, v) => secretPayload(objects, pod, v.secret!, v.secret!.defaultMode ?? DEFAULT_MODE));
  projection('downwardAPI', false, async (pod, v) => downwardAPIPayload(pod, v.downwardAPI!.items, v.downwardAPI!.defaultMode ?? DEFAULT_MODE));
  projection('projected', true, (pod, v) => projectedPayload(objects, pod, v.projected!.sources, v.projected!.defaultMode ?? DEFAULT_MODE));
}

/** Unmounts the volume dir if it is a mount point, then removes it (never across a remaining mount). */
async function tearDownDir(r: VolumeUnmountRequest): Promise<true> {
  if (!isWithin(path.join(r.rootDir, 'pods', r.podUID), r.dir)) throw new Error(`refusing to remove ${r.dir}: not in the pod's directory`);
  for (const mp of await mountsUnder(r.dir)) await unmount(mp);
  await removeUnmounted(r.dir);
  return true;
}
