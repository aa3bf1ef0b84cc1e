import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

/**
 * Upstream's paths for CSI PersistentVolumes (1.28, csi_attacher.go makeDeviceMountPath): a
 * volume is staged once per node at
 * `<rootDir>/plugins/kubernetes.io/csi/<driver>/<sha256(volumeHandle)>/globalmount`, with
 * vol_data.json (driverName, volumeHandle) beside `globalmount`; a driver written for upstream
 * finds what it expects there. Pods publish it at `<rootDir>/pods/<uid>/volumes/kubernetes.io~csi/<pv>/mount`.
 */
export function deviceMountPath(rootDir: string, driver: string, volumeHandle: string): string {
  const sha = crypto.createHash('sha256').update(volumeHandle).digest('hex');
  return path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', driver, sha, 'globalmount');
}

/**
 * Upstream's paths for a CSI block volume (1.28, csi_block.go), under
 * `<rootDir>/plugins/kubernetes.io/csi/volumeDevices/`, by PV name:
 * - `staging/<pv>`: the staging target path (a dir) of NodeStageVolume, once per node;
 * - `<pv>/data`: vol_data.json (driverName, volumeHandle) and kubelet-ts's staged marker;
 * - `publish/<pv>/<podUID>`: the target path of NodePublishVolume, a file the driver makes the
 *   device at (its parent dir is the CO's to make); what the pod's containers get as a device.
 */
export function blockPaths(rootDir: string, pvName: string, podUID: string): { stagingPath: string; dataDir: string; publishPath: string } {
  const base = path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices');
  return { stagingPath: path.join(base, 'staging', pvName), dataDir: path.join(base, pvName, 'data'), publishPath: path.join(base, 'publish', pvName, podUID) };
}

/** The dirs holding vol_data.json of block volumes staged on this node (`volumeDevices/<pv>/data`), with their staging paths. */
export async function stagedBlockVolumes(rootDir: string): Promise<Array<{ dataDir: string; stagingPath: string }>> {
  const base = path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices');
  const out: Array<{ dataDir: string; stagingPath: string }> = [];
  for (const name of await fs.readdir(base).catch(() => [] as string[])) {
    if (name === 'staging' || name === 'publish') continue;
    out.push({ dataDir: path.join(base, name, 'data'), stagingPath: path.join(base, 'staging', name) });
  }
  return out;
}

/** Upstream's VolumeAttachment name: `csi-` + sha256(volumeHandle + driver + nodeName). */
export function attachmentName(volumeHandle: string, driver: string, nodeName: string): string {
  return `csi-${crypto.createHash('sha256').update(`${volumeHandle}${driver}${nodeName}`).digest('hex')}`;
}

/** What vol_data.json in a pod's CSI volume dir holds (upstream's keys; kubelet-ts reads driverName and volumeHandle). */
interface PodVolData { driverName?: string; volumeHandle?: string }

/**
 * The pod volume dirs on this node that still hold a publication of the volume (their
 * vol_data.json names it), except `exceptDir`: a staged volume is unstaged only when none is
 * left. A dir of a failed set-up whose undo is still owed counts too: unstaging under it
 * would leave its publication dangling.
 */
export async function podsUsingVolume(rootDir: string, driver: string, volumeHandle: string, exceptDir?: string): Promise<string[]> {
  const podsDir = path.join(rootDir, 'pods');
  const users: string[] = [];
  for (const uid of await fs.readdir(podsDir).catch(() => [] as string[])) {
    const csiDir = path.join(podsDir, uid, 'volumes', 'kubernetes.io~csi');
    for (const name of await fs.readdir(csiDir).catch(() => [] as string[])) {
      const dir = path.join(csiDir, name);
      if (dir === exceptDir) continue;
      let data: PodVolData;
      try {
        data = JSON.parse(await fs.readFile(path.join(dir, 'vol_data.json'), 'utf8')) as PodVolData;
      } catch {
        continue;
      }
      if (data.driverName === driver && data.volumeHandle === volumeHandle) users.push(dir);
    }
  }
  return users;
}
