/**
 * What is on a block device, as blkid sees it, and the text of a failed tool: shared by the
 * local PV's format-and-mount and its node expansion.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** What blkid sees on the device: its file system type and partition table type, '' when none. */
export async function probeDevice(device: string): Promise<{ type: string; partitionTable: string }> {
  try {
    const { stdout } = await run('blkid', ['-p', '-s', 'TYPE', '-s', 'PTTYPE', '-o', 'export', device]);
    const v = Object.fromEntries(stdout.split('\n').map((l) => l.split('=')).filter((kv) => kv.length === 2)) as Record<string, string>;
    return { type: v.TYPE ?? '', partitionTable: v.PTTYPE ?? '' };
  } catch (err) {
    // blkid exits 2 when it finds nothing on the device: an unformatted disk.
    if ((err as { code?: number }).code === 2) return { type: '', partitionTable: '' };
    throw new Error(`blkid -p ${device}: ${stderrOf(err)}`);
  }
}

export function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim();
}
