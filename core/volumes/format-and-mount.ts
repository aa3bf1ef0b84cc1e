import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { probeDevice, stderrOf } from './device-probe.ts';

const run = promisify(execFile);

/**
 * Mounts a block device that holds (or is to hold) a file system at `dir`: upstream's
 * SafeFormatAndMount as a `local` PersistentVolume of volumeMode Filesystem on a device uses it.
 * A device with no file system (blkid finds none) is formatted with `fsType` first (`mkfs.ext4
 * -F -m0`, as upstream does for ext3/ext4; `mkfs.<type>` otherwise), unless the volume is
 * read-only; one with a partition table is refused rather than formatted over. A file system of
 * another type than `fsType` is left alone: the mount names the mismatch. Upstream's fsck before
 * mounting is not done. Calls for one device are serialised, so two pods starting together on
 * one new device do not both format it.
 */
export async function formatAndMount(device: string, dir: string, fsType: string, readOnly: boolean): Promise<void> {
  // The type names a program (mkfs.<type>): only a plain name, never a path.
  if (!/^[a-z0-9]{1,16}$/.test(fsType)) throw new Error(`fsType ${JSON.stringify(fsType)} is not a file system type name (lower-case letters and digits, such as ext4 or xfs)`);
  const prev = inFlight.get(device) ?? Promise.resolve();
  const next = prev.catch(() => {}).then(() => formatAndMountNow(device, dir, fsType, readOnly));
  inFlight.set(device, next);
  try {
    await next;
  } finally {
    if (inFlight.get(device) === next) inFlight.delete(device);
  }
}

const inFlight = new Map<string, Promise<void>>();

async function formatAndMountNow(device: string, dir: string, fsType: string, readOnly: boolean): Promise<void> {
  const found = await probeDevice(device);
  if (!found.type) {
    if (found.partitionTable) throw new Error(`${device} has a ${found.partitionTable} partition table and no file system: not formatting it as ${fsType}`);
    if (readOnly) throw new Error(`${device} has no file system and the volume is read-only: not formatting it as ${fsType}`);
    const args = fsType === 'ext3' || fsType === 'ext4' ? ['-F', '-m0', device] : [device];
    try {
      await run(`mkfs.${fsType}`, args);
    } catch (err) {
      throw new Error(`formatting ${device} as ${fsType} (mkfs.${fsType} ${args.join(' ')}): ${stderrOf(err)}`);
    }
  }
  const args = ['-t', fsType, ...(readOnly ? ['-o', 'ro'] : []), device, dir];
  try {
    await run('mount', args);
  } catch (err) {
    throw new Error(`mount ${args.join(' ')}${found.type && found.type !== fsType ? ` (the device holds ${found.type})` : ''}: ${stderrOf(err)}`);
  }
}
