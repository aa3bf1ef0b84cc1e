import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import { parseMountInfo, type MountInfo } from '../util/mount-info.ts';
import { boundedFailure, runBounded } from '../util/bounded-command.ts';

export { parseMountInfo, type MountInfo };

const run = promisify(execFile);

/** The read of /proc/self/mountinfo in progress, if any. */
let reading: Promise<MountInfo[]> | undefined;
/** The read that starts when `reading` ends, shared by every caller that asked meanwhile. */
let nextRead: Promise<MountInfo[]> | undefined;

/**
 * The mounts of this process's mount namespace, in mount order, from a read of mountinfo that
 * started after this call. Callers that ask while a read is in progress share the one read
 * that starts after it: the kernel renders the whole table at every read (a node with
 * thousands of mounts makes that megabytes), and many pod workers setting up or tearing down
 * volumes at once would otherwise each render it.
 */
export function readMounts(): Promise<MountInfo[]> {
  if (!reading) return startMountRead();
  nextRead ??= reading.then(noop, noop).then(() => {
    nextRead = undefined;
    return startMountRead();
  });
  return nextRead;
}

function startMountRead(): Promise<MountInfo[]> {
  const p = fs.readFile('/proc/self/mountinfo', 'utf8').then(parseMountInfo);
  reading = p;
  p.then(noop, noop).finally(() => {
    if (reading === p) reading = undefined;
  });
  return p;
}

function noop(): void {}

/**
 * `p` as the mount table names it. First its parent's real path and its own name, which looks
 * at nothing of `p` itself: any call on the root of a network file system whose server is gone
 * (the lstat a realpath makes) waits for that server. Only when the table has nothing by that
 * name (`p` is no mount point, or a symlink to one) is `p` itself resolved.
 */
async function tableName(p: string, listed: (real: string) => boolean): Promise<string> {
  const abs = path.resolve(p);
  const parent = abs === '/' ? undefined : await fs.realpath(path.dirname(abs)).catch(() => undefined);
  const named = parent === undefined ? abs : path.join(parent, path.basename(abs));
  if (listed(named)) return named;
  return fs.realpath(abs).catch(() => named);
}

/** True if `p` is a mount point, from mountinfo (bind mounts included). */
export async function isMountPoint(p: string, mounts?: readonly MountInfo[]): Promise<boolean> {
  const table = mounts ?? (await readMounts());
  const at = (real: string) => table.some((m) => m.mountPoint === real);
  return at(await tableName(p, at));
}

/**
 * Whether `dir` is likely a mount point, judged as upstream's `IsLikelyNotMountPoint` judges
 * it: a directory on another device than its parent is one. No mount table is read, so a
 * volume's set-up costs the same on a node with thousands of mounts; a bind mount from the
 * parent's own file system is not seen, which is why only the set-up of a volume that is a
 * file system of its own (a tmpfs) asks this, as upstream's emptyDir does.
 */
export async function isLikelyMountPoint(dir: string): Promise<boolean> {
  const [self, parent] = await Promise.all([fs.stat(dir), fs.stat(path.dirname(path.resolve(dir)))]);
  return self.dev !== parent.dev;
}

/** How many times `p` is mounted (stacked mounts count each): "nothing mounted twice" checks. */
export async function mountCount(p: string, mounts?: readonly MountInfo[]): Promise<number> {
  const table = mounts ?? (await readMounts());
  const real = await tableName(p, (r) => table.some((m) => m.mountPoint === r));
  return table.filter((m) => m.mountPoint === real).length;
}

/** Mount points at or below `dir`, deepest first (the order to unmount them in). */
export async function mountsUnder(dir: string, mounts?: readonly MountInfo[]): Promise<string[]> {
  const points = (mounts ?? (await readMounts())).map((m) => m.mountPoint);
  const under = (real: string) => points.some((mp) => mp === real || mp.startsWith(real + '/'));
  const real = await tableName(dir, under);
  const list = points.filter((mp) => mp === real || mp.startsWith(real + '/'));
  return [...new Set(list)].sort((a, b) => b.length - a.length);
}

/** `mount -t tmpfs` at `dir`, with a size in bytes when given. */
export async function mountTmpfs(dir: string, opts: { sizeBytes?: number; mode?: number } = {}): Promise<void> {
  const o = [`mode=${(opts.mode ?? 0o777).toString(8)}`];
  if (opts.sizeBytes !== undefined) o.push(`size=${opts.sizeBytes}`);
  await mountCmd(['-t', 'tmpfs', '-o', o.join(','), 'tmpfs', dir]);
}

/** `mount --bind src dst`, remounted read-only when asked. */
export async function bindMount(src: string, dst: string, readOnly = false): Promise<void> {
  await mountCmd(['--bind', src, dst]);
  if (readOnly) await mountCmd(['-o', 'remount,bind,ro', dst]);
}

/** How a network file system is unmounted (`unmount`'s third argument). */
export interface UnmountOptions {
  /**
   * A plain umount that has not returned by then is killed and `umount -f` follows (upstream's
   * UnmountWithForce, which its nfs plugin uses with a minute): the way off a network file
   * system whose server is gone, which a plain umount waits for. The forced one has 30 s.
   * The path is given to umount as the table names it, with `-c` (not canonicalized: umount's
   * own realpath would wait for the server too). Without this option umount is not bounded.
   */
  forceAfterMs?: number;
  /** Stops waiting (the umount is killed) when it aborts: the caller's hook signal. */
  signal?: AbortSignal;
  /** Told when a plain umount did not return in time and `umount -f` is next (for the caller's log). */
  onForce?: (target: string) => void;
}

/**
 * Unmounts `dir` (every stacked mount on it); a path that is not mounted is left alone. Given
 * `mounts` (a table read after the mounts on `dir` were made, such as the one `mountsUnder`
 * was given), it unmounts as many times as the table lists `dir` and reads no table itself:
 * tearing down a pod's hundreds of volumes then costs one read, not two per volume.
 */
export async function unmount(dir: string, mounts?: readonly MountInfo[], opts: UnmountOptions = {}): Promise<void> {
  if (opts.forceAfterMs !== undefined) {
    const table = mounts ?? (await readMounts());
    const target = await tableName(dir, (r) => table.some((m) => m.mountPoint === r));
    for (let n = table.filter((m) => m.mountPoint === target).length; n > 0; n--) await unmountWithForce(target, opts.forceAfterMs, opts);
    return;
  }
  const umount = async () => {
    try {
      await run('umount', [dir]);
    } catch (err) {
      throw new Error(`umount ${dir}: ${stderrOf(err)}`);
    }
  };
  if (mounts) {
    for (let n = await mountCount(dir, mounts); n > 0; n--) await umount();
    return;
  }
  for (let i = 0; i < 8 && (await isMountPoint(dir)); i++) await umount();
}

/** How long `umount -f` may take (it aborts the server's calls in flight, so it returns soon or not at all). */
const FORCED_UMOUNT_MS = 30_000;

/** `umount -c target`, and `umount -c -f target` when the first has not returned after `afterMs`. */
async function unmountWithForce(target: string, afterMs: number, { signal, onForce }: UnmountOptions): Promise<void> {
  const first = { timeoutMs: afterMs, ...(signal ? { signal } : {}) };
  const plain = await runBounded('umount', ['-c', target], first);
  if (!plain.timedOut) {
    const failed = boundedFailure(`umount ${target}`, plain, first);
    if (failed) throw failed;
    return;
  }
  onForce?.(target);
  const second = { timeoutMs: FORCED_UMOUNT_MS, ...(signal ? { signal } : {}) };
  const forced = boundedFailure(`umount ${target} had no answer within ${Math.round(afterMs / 1000)} s; umount -f`, await runBounded('umount', ['-c', '-f', target], second), second);
  if (forced) throw forced;
}

/**
 * Unmounts everything mounted at or below `dir`, deepest first, against one read of the table
 * (`mounts` when the caller has one: a pod's teardown reads it once for all its volumes).
 */
export async function unmountUnder(dir: string, mounts?: readonly MountInfo[]): Promise<void> {
  const table = mounts ?? (await readMounts());
  for (const mp of await mountsUnder(dir, table)) await unmount(mp, table);
}

/**
 * `mount -t <type> [-o <options>] <source> <dir>`: a file system whose source the kernel (or a
 * `mount.<type>` helper) understands, such as an NFS export a volume plugin mounts. No shell
 * runs; each option is one word of `-o`. A mount that hangs (an NFS server that never answers)
 * is killed at `timeoutMs` or when `signal` aborts, and the error says so.
 */
export async function mountFilesystem(source: string, dir: string, type: string, options: readonly string[] = [], call: { signal?: AbortSignal; timeoutMs?: number } = {}): Promise<void> {
  // The type names a helper program (mount.<type>) and the source is an argument: neither may read as an option.
  if (!/^[a-z0-9][a-z0-9.]{0,31}$/.test(type)) throw new Error(`file system type ${JSON.stringify(type)} is not a type name (such as nfs or nfs4)`);
  if (!source || source.startsWith('-') || /[\0\n]/.test(source)) throw new Error(`mount source ${JSON.stringify(source)} is empty, starts with "-" or holds a NUL or newline`);
  for (const o of options) if (!o || /[\s\0]/.test(o)) throw new Error(`mount option ${JSON.stringify(o)} is empty or holds white space or a NUL`);
  const args = ['-t', type, ...(options.length ? ['-o', options.join(',')] : []), source, dir];
  // Bounded as umount is: the mount.<type> helper may outlive a killed mount holding its pipes.
  const failed = boundedFailure(`mount ${args.join(' ')}`, await runBounded('mount', args, call), call);
  if (failed) throw failed;
}

/** `mount` of local paths (a bind, a remount): no server to wait for. */
async function mountCmd(args: string[]): Promise<void> {
  try {
    await run('mount', args);
  } catch (err) {
    throw new Error(`mount ${args.join(' ')}: ${stderrOf(err)}`);
  }
}

function stderrOf(err: unknown): string {
  const e = err as { stderr?: string; message?: string };
  return (e.stderr || e.message || String(err)).trim();
}

/**
 * Removes `dir` and what is below it, refusing when anything below is still mounted (a
 * recursive remove would cross into the mounted file system and delete what is not ours).
 */
export async function removeUnmounted(dir: string): Promise<void> {
  const left = await mountsUnder(dir);
  if (left.length > 0) throw new Error(`cannot remove ${dir}: still mounted: ${left.join(', ')}`);
  await fs.rm(dir, { recursive: true, force: true });
}

/**
 * Removes `dir` and what is below it without crossing into another file system: a directory
 * below on another device than `dir` stops the removal with an error naming it, as upstream's
 * RemoveAllOneFilesystem does. It reads no mount table, so it is for a caller that has checked
 * the table already (a pod's teardown, against the table read when it began); a bind mount from
 * `dir`'s own file system is not seen, which the caller's table check is for.
 */
export async function removeOneFilesystem(dir: string): Promise<void> {
  const root = await fs.lstat(dir).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return undefined;
    throw err;
  });
  if (!root) return;
  const remove = async (p: string, st: import('node:fs').Stats): Promise<void> => {
    if (!st.isDirectory()) return fs.rm(p, { force: true });
    if (st.dev !== root.dev) throw new Error(`cannot remove ${dir}: ${p} is another file system (still mounted)`);
    for (const name of await fs.readdir(p)) {
      const child = path.join(p, name);
      const cst = await fs.lstat(child).catch(() => undefined);
      if (cst) await remove(child, cst);
    }
    await fs.rmdir(p);
  };
  await remove(dir, root);
}

/** True if `child` is `parent` or inside it (both absolute, normalised). */
export function isWithin(parent: string, child: string): boolean {
  const rel = path.relative(parent, child);
  return rel === '' || (rel !== '..' && !rel.startsWith('../') && !path.isAbsolute(rel));
}
