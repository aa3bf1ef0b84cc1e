import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { probeDevice, stderrOf } from './device-probe.ts';

const run = promisify(execFile);

/**
 * Grows the file system on `device` (mounted at `mountPath`) to the device's size, online:
 * upstream's ResizeFs as a local PV's node expansion uses it (`resize2fs DEVICE` for ext2/3/4,
 * `xfs_growfs MOUNTPATH` for xfs). Another file system type is an error naming it.
 */
export async function resizeFs(device: string, mountPath: string): Promise<void> {
  const { type } = await probeDevice(device);
  const [cmd, args] = type === 'ext2' || type === 'ext3' || type === 'ext4' ? ['resize2fs', [device]] : type === 'xfs' ? ['xfs_growfs', [mountPath]] : ['', []];
  if (!cmd) throw new Error(`resizing the ${type || 'unknown'} file system on ${device} is not supported (ext2/3/4 and xfs are)`);
  try {
    await run(cmd, args);
  } catch (err) {
    throw new Error(`${cmd} ${args.join(' ')}: ${stderrOf(err)}`);
  }
}
