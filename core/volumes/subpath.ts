/**
 * subPath mounts without a time-of-check/time-of-use window (upstream's fix for
 * CVE-2017-1002101).
 *
 * A container that can write into a volume can swap a directory of it for a symlink to the
 * host's `/` at any moment. Checking the path and then handing the runtime a string it
 * resolves again later is therefore not enough: the runtime may follow the symlink that
 * appeared in between. Instead the kubelet walks the subPath itself, one component at a time
 * from a file descriptor of the volume root, opening each component with O_NOFOLLOW (a
 * symlink is never followed by the kernel; one inside the volume is resolved by us, checked,
 * and walked again from the root), and bind-mounts the file descriptor it ends with onto a
 * path only the kubelet can write (`<pod dir>/volume-subpaths/...`). The runtime gets that path:
 * what it binds is the inode the kubelet checked, whatever the container does afterwards.
 */
import { spawn } from 'node:child_process';
import { constants as C } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import { isMountPoint, isWithin, unmount } from './mount-utils.ts';

/**
 * Binds a subPath of a volume for one volumeMount of a container and returns the host path
 * the runtime mounts (a bind mount the kubelet made, bindSubPath below): never a path string
 * inside the volume, which the container could change before the runtime resolves it.
 */
export type SubPathBinder = (req: { volumeName: string; volumePath: string; subPath: string; mountIndex: number }) => Promise<string>;

/** Linux O_PATH: a descriptor for walking and binding only; opening it has no side effect (a FIFO does not block, a device is not opened). */
const O_PATH = 0o10000000;
// libuv opens every descriptor close-on-exec already.
const WALK = O_PATH | C.O_NOFOLLOW;
/** As the kernel bounds symlink resolution (ELOOP after 40). */
const MAX_SYMLINK_HOPS = 40;

/**
 * Checks a subPath as upstream's validation does: relative, and no `..` element (so it
 * cannot name anything outside the volume by itself; symlinks are checked when walking).
 */
export function validateSubPath(subPath: string): void {
  if (path.isAbsolute(subPath)) throw new Error(`subPath "${subPath}" must be a relative path`);
  if (subPath.split('/').includes('..')) throw new Error(`subPath "${subPath}" must not contain '..'`);
}

/** A walked subPath: an O_PATH descriptor of what it names, and whether that is a directory. */
export interface OpenedSubPath {
  handle: FileHandle;
  isDirectory: boolean;
}

/** `/proc/self/fd/N/name`: the kernel looks `name` up in the directory N refers to, as openat(N, name) would. */
const at = (h: FileHandle, name: string) => `/proc/self/fd/${h.fd}/${name}`;

/**
 * Walks `subPath` inside the volume at `root` and returns a descriptor of what it names
 * (the caller closes it). A missing component is created as a directory (0755) inside the
 * volume, as upstream does; a symlink is followed only when it resolves inside the volume,
 * and then walked again from the root without following anything; a component that turns
 * into a symlink while being walked fails the walk (it is retried on the next sync).
 */
export async function openSubPath(root: string, subPath: string): Promise<OpenedSubPath> {
  validateSubPath(subPath);
  const realRoot = await fs.realpath(root);
  const rootHandle = await fs.open(realRoot, WALK | C.O_DIRECTORY);
  let cur = rootHandle;
  const release = async (h: FileHandle) => {
    if (h !== rootHandle) await h.close().catch(() => {});
  };
  try {
    let parts = subPath.split('/').filter((p) => p !== '' && p !== '.');
    let hops = 0;
    while (parts.length > 0) {
      const part = parts.shift()!;
      const more = parts.length > 0;
      const name = at(cur, part);
      const st = await fs.lstat(name).catch((err: NodeJS.ErrnoException) => {
        if (err.code === 'ENOENT') return undefined;
        throw err;
      });
      if (st?.isSymbolicLink()) {
        if (++hops > MAX_SYMLINK_HOPS) throw new Error(`subPath "${subPath}": too many levels of symbolic links`);
        // Resolved by us, on the host: then checked, then walked again from the root by names only.
        const real = await fs.realpath(name).catch(() => undefined);
        if (!real || !isWithin(realRoot, real)) throw new Error(`subPath "${subPath}": ${part} is a symlink that points outside the volume`);
        parts = [...path.relative(realRoot, real).split('/').filter(Boolean), ...parts];
        await release(cur);
        cur = rootHandle;
        continue;
      }
      if (!st) {
        await fs.mkdir(name, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
          if (err.code !== 'EEXIST') throw err;
        });
      }
      let next: FileHandle;
      try {
        next = await fs.open(name, WALK | (more || !st ? C.O_DIRECTORY : 0));
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code === 'ENOTDIR') throw new Error(`subPath "${subPath}": ${part} is not a directory`);
        throw new Error(`subPath "${subPath}": cannot open ${part}: ${code ?? (err as Error).message}`);
      }
      await release(cur);
      cur = next;
      // O_PATH|O_NOFOLLOW opens a symlink itself instead of failing: one here appeared after
      // the lstat above, so something is swapping the path under us.
      const opened = await cur.stat();
      if (opened.isSymbolicLink()) throw new Error(`subPath "${subPath}": ${part} changed into a symlink while being resolved`);
      if (more && !opened.isDirectory()) throw new Error(`subPath "${subPath}": ${part} is not a directory`);
    }
    // An empty subPath ('.') names the root itself: hand out a descriptor of its own.
    const final = cur === rootHandle ? await fs.open(at(rootHandle, '.'), WALK | C.O_DIRECTORY) : cur;
    cur = rootHandle;
    return { handle: final, isDirectory: (await final.stat()).isDirectory() };
  } catch (err) {
    await release(cur);
    throw err;
  } finally {
    await rootHandle.close().catch(() => {});
  }
}

/**
 * Binds what `subPath` names inside the volume at `root` onto `target` (a path only the
 * kubelet writes; made here as a directory or an empty file to match), after unmounting
 * what an earlier start bound there. `mount` binds the walked descriptor itself, passed as
 * its fd 3, with canonicalization off: no path string is resolved again.
 */
export async function bindSubPath(root: string, subPath: string, target: string): Promise<void> {
  const opened = await openSubPath(root, subPath);
  try {
    if (await isMountPoint(target)) await unmount(target);
    const st = await fs.lstat(target).catch(() => undefined);
    if (st && st.isDirectory() !== opened.isDirectory) await fs.rm(target, { recursive: true, force: true });
    await fs.mkdir(opened.isDirectory ? target : path.dirname(target), { recursive: true, mode: 0o750 });
    if (!opened.isDirectory) await (await fs.open(target, 'a', 0o640)).close();
    await mountFd(opened.handle.fd, target, `subPath "${subPath}"`);
  } finally {
    await opened.handle.close().catch(() => {});
  }
}

/** `mount --no-canonicalize --bind /proc/self/fd/3 target`, with `fd` as the child's fd 3. */
function mountFd(fd: number, target: string, what: string): Promise<void> {
  return new Promise((resolve, reject) => {
    const child = spawn('mount', ['--no-canonicalize', '--bind', '/proc/self/fd/3', target], { stdio: ['ignore', 'ignore', 'pipe', fd] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => {
      if (stderr.length < 4096) stderr += d;
    });
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`mount --bind of ${what} onto ${target}: ${err.message}`));
    });
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      if (code === 0) resolve();
      else reject(new Error(`mount --bind of ${what} onto ${target}: ${stderr.trim() || `exit ${code ?? signal}`}`));
    });
  });
}
