/**
 * fsGroup ownership of volumes, as upstream's SetVolumeOwnership does it
 * (pkg/volume/volume_linux.go): every file and directory of the volume gets the pod's fsGroup
 * as its group and the group bits the pod needs (read-write volumes rw, read-only ones r;
 * directories also x and setgid, so files created later inherit the group). With
 * `fsGroupChangePolicy: OnRootMismatch` the walk is skipped when the volume's root already has
 * that group and those bits; the root is changed last, so an interrupted walk is done again.
 *
 * A volume's content may have been written by a container, so the walk never follows a
 * symlink, and never resolves a path string twice: each directory is held open (O_PATH) and
 * its entries are named through `/proc/self/fd/<dir>/<name>` (the kernel looks the name up in
 * that very directory, as openat would); ownership changes with lchown (a symlink gets the
 * group itself, its target is untouched) and modes are changed through a descriptor of the
 * entry, never of a symlink. A container that swaps an entry for a symlink mid-walk can make
 * the kubelet change the symlink, nothing outside the volume.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { constants as C } from 'node:fs';
import fs, { type FileHandle } from 'node:fs/promises';

/** Linux O_PATH: a descriptor for naming an inode only (opening a FIFO or device this way has no effect). */
const O_PATH = 0o10000000;
const S_ISGID = 0o2000;
/** Upstream rwMask, roMask and execMask. */
const RW_MASK = 0o660;
const RO_MASK = 0o440;
const EXEC_MASK = 0o110;
/** Directories deeper than this are not walked (each level holds a descriptor while it is walked). */
const MAX_DEPTH = 256;

/** The pod's fsGroup and its change policy, when it has one. */
export function podFsGroup(pod: V1Pod): { fsGroup: number; changePolicy: 'Always' | 'OnRootMismatch' } | undefined {
  const sc = pod.spec?.securityContext;
  const g = sc?.fsGroup;
  if (g === undefined || g === null || !Number.isInteger(Number(g)) || Number(g) < 0) return undefined;
  return { fsGroup: Number(g), changePolicy: sc?.fsGroupChangePolicy === 'OnRootMismatch' ? 'OnRootMismatch' : 'Always' };
}

/** The mode an entry gets under an fsGroup (upstream changeFilePermission): the group bits added, setgid on directories. */
export function fsGroupMode(mode: number, isDirectory: boolean, readOnly: boolean): number {
  let m = (mode & 0o7777) | (readOnly ? RO_MASK : RW_MASK);
  if (isDirectory) m |= EXEC_MASK | S_ISGID;
  return m;
}

/** Upstream requiresPermissionChange: false when the root already has the group and at least the bits (and setgid). */
export async function rootNeedsChange(dir: string, fsGroup: number, readOnly: boolean): Promise<boolean> {
  const st = await fs.lstat(dir).catch(() => undefined);
  if (!st || !st.isDirectory() || st.gid !== fsGroup) return true;
  const want = (readOnly ? RO_MASK : RW_MASK) | EXEC_MASK;
  return (st.mode & want) !== want || (st.mode & S_ISGID) === 0;
}

const at = (h: FileHandle, name: string) => `/proc/self/fd/${h.fd}/${name}`;
const self = (h: FileHandle) => `/proc/self/fd/${h.fd}`;

/**
 * Gives the volume at `dir` to the pod's fsGroup (see the module comment). `dir` itself is
 * the kubelet's (the volume's directory); everything below it is treated as hostile.
 * Returns the number of entries changed.
 */
export async function setVolumeOwnership(dir: string, opts: { fsGroup: number; readOnly: boolean; changePolicy?: 'Always' | 'OnRootMismatch'; onSkip?: (why: string) => void }): Promise<number> {
  if (opts.changePolicy === 'OnRootMismatch' && !(await rootNeedsChange(dir, opts.fsGroup, opts.readOnly))) return 0;
  const root = await fs.open(dir, O_PATH | C.O_DIRECTORY | C.O_NOFOLLOW);
  try {
    let changed = await walk(root, opts, 1);
    // The root last: with OnRootMismatch, a walk that did not finish is done again next time.
    const st = await root.stat();
    await fs.chown(self(root), st.uid, opts.fsGroup);
    await fs.chmod(self(root), fsGroupMode(st.mode, true, opts.readOnly));
    return ++changed;
  } finally {
    await root.close();
  }
}

async function walk(dirHandle: FileHandle, opts: { fsGroup: number; readOnly: boolean; onSkip?: (why: string) => void }, depth: number): Promise<number> {
  let changed = 0;
  const names = await fs.readdir(self(dirHandle)).catch((err: NodeJS.ErrnoException) => {
    if (err.code === 'ENOENT') return [] as string[];
    throw err;
  });
  for (const name of names) {
    let entry: FileHandle;
    try {
      // O_PATH | O_NOFOLLOW: a symlink is opened as itself, a FIFO or device without effect.
      entry = await fs.open(at(dirHandle, name), O_PATH | C.O_NOFOLLOW);
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue; // removed meanwhile
      throw err;
    }
    try {
      const st = await entry.stat();
      if (st.isDirectory()) {
        if (depth >= MAX_DEPTH) {
          opts.onSkip?.(`${name}: deeper than ${MAX_DEPTH} levels, not walked`);
        } else {
          changed += await walk(entry, opts, depth + 1);
        }
      }
      // The group on the entry itself, whatever is at that name now: lchown never follows.
      await fs.lchown(at(dirHandle, name), -1, opts.fsGroup).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw err;
      });
      // chmod through the descriptor of an entry known not to be a symlink (chmod would follow one).
      if (!st.isSymbolicLink()) await fs.chmod(self(entry), fsGroupMode(st.mode, st.isDirectory(), opts.readOnly));
      changed++;
    } finally {
      await entry.close();
    }
  }
  return changed;
}
