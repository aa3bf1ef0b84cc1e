import { runBounded } from '../util/bounded-command.ts';
import { figuresOfStatfs, type FsFigures } from './host-readers.ts';

/**
 * `fsFigures` of a network file system (an NFS volume's server): the statfs runs in a child
 * process (`stat -f`), bounded by `timeoutMs` and `signal`. A statfs whose server is gone waits
 * for it; in the kubelet's own process that wait would hold one of libuv's four threads until
 * the server came back, and four of them would stop every file operation of the kubelet (pods,
 * logs, volumes). Undefined when the figures did not come in time, or at all.
 */
export async function networkFsFigures(p: string, opts: { timeoutMs: number; signal?: AbortSignal }): Promise<FsFigures | undefined> {
  // %S the fundamental block size (the unit of the counts), %b blocks, %f free, %a free to non-root, %c inodes, %d free inodes.
  const r = await runBounded('stat', ['-f', '-c', '%S %b %f %a %c %d', '--', p], opts).catch(() => undefined);
  if (!r || r.code !== 0) return undefined;
  const n = r.stdout.trim().split(/\s+/).map(Number);
  if (n.length !== 6 || n.some((v) => !Number.isSafeInteger(v) || v < 0)) return undefined;
  const [bsize, blocks, bfree, bavail, files, ffree] = n as [number, number, number, number, number, number];
  return figuresOfStatfs({ bsize, blocks, bfree, bavail, files, ffree });
}
