import crypto from 'node:crypto';
import { constants as fsConstants } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fsGroupMode } from './volume-ownership.ts';

/** One file of a projected volume: its bytes and its mode. */
export interface PayloadFile { data: Buffer; mode: number }
/** Relative path → file. */
export type Payload = Map<string, PayloadFile>;

const DATA_DIR = '..data';
const DATA_TMP = '..data_tmp';

/**
 * Checks payload paths as upstream's validatePath does: relative, no `..` element, not
 * starting with `..` (that prefix is the writer's own), not empty, not too long.
 */
export function validatePayloadPath(p: string): void {
  if (p === '') throw new Error('invalid path: must not be empty');
  if (p.length > 4096) throw new Error(`invalid path: must be less than or equal to 4096 characters`);
  if (path.isAbsolute(p)) throw new Error(`invalid path "${p}": must be relative`);
  if (p.split('/').includes('..')) throw new Error(`invalid path "${p}": must not contain '..'`);
  if (p.startsWith('..')) throw new Error(`invalid path "${p}": must not start with '..'`);
}

/** `..2006_01_02_15_04_05.` as upstream names the versions (mkdtemp adds a random suffix). */
function tsPrefix(now = new Date()): string {
  const p = (n: number, w = 2) => String(n).padStart(w, '0');
  return `..${now.getUTCFullYear()}_${p(now.getUTCMonth() + 1)}_${p(now.getUTCDate())}_${p(now.getUTCHours())}_${p(now.getUTCMinutes())}_${p(now.getUTCSeconds())}.`;
}

/** A version dir name as this writer makes them: `..<timestamp>.<random>`, one path element. */
const VERSION_NAME = /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.[A-Za-z0-9]+$/;
/**
 * Group ownership of what the writer makes (the pod's fsGroup): files, version dirs and links
 * get the group, and read-only group bits (these volumes are read-only in containers), as
 * upstream's SetVolumeOwnership leaves them after each write.
 */
export interface WriteOptions { fsGroup?: number }

/** Creating a payload file: a new file only (never an existing one, never through a symlink). */
const CREATE_NEW = fsConstants.O_WRONLY | fsConstants.O_CREAT | fsConstants.O_EXCL | fsConstants.O_NOFOLLOW;

/**
 * The version `..data` names, when it is one this writer could have made: a symlink whose
 * target is one `..<timestamp>.<random>` name inside `dir` that is a real directory. Anything
 * else there (a symlink climbing out of the volume, a directory, a file a container put in
 * its place) is not trusted, read or followed: it is replaced by the next swap.
 */
async function currentVersion(dir: string): Promise<string | undefined> {
  const dataLink = path.join(dir, DATA_DIR);
  const st = await fs.lstat(dataLink).catch(() => undefined);
  if (!st?.isSymbolicLink()) return undefined;
  const target = await fs.readlink(dataLink).catch(() => '');
  if (!VERSION_NAME.test(target)) return undefined;
  const vst = await fs.lstat(path.join(dir, target)).catch(() => undefined);
  return vst?.isDirectory() ? target : undefined;
}

/** Removes `name` in `dir`: a symlink or file is unlinked (never followed), a directory removed with what is in it. */
async function removeEntry(dir: string, name: string): Promise<void> {
  const p = path.join(dir, name);
  const st = await fs.lstat(p).catch(() => undefined);
  if (!st) return;
  // fs.rm does not follow symlinks below a directory it removes; a top-level symlink is unlinked.
  if (st.isDirectory()) await fs.rm(p, { recursive: true, force: true });
  else await fs.unlink(p);
}

/**
 * Writes `payload` into `dir` atomically, as upstream's AtomicWriter does for configMap,
 * secret, downwardAPI and projected volumes:
 *  1. if the version `..data` points to holds exactly the payload, nothing is written;
 *  2. otherwise the files go into a new hidden version dir `..<timestamp>.<random>`;
 *  3. a `..data_tmp` symlink to it is renamed over `..data` (one atomic step: readers see
 *     the old set or the new set, never a mix);
 *  4. each top-level name of the payload is a symlink `<name>` → `..data/<name>`; names no
 *     longer in the payload are removed;
 *  5. the old version dir is removed.
 * Returns whether a new version was written.
 *
 * The directory is shared with the pod's containers (read-only, but a writer must not rely
 * on that): it never follows a link a container could have planted. `..data` is trusted only
 * when it names a version dir of this writer's making, files are created with O_EXCL and
 * O_NOFOLLOW, what is compared is read only from regular files, and what is removed is
 * unlinked, never followed (CVE-2017-1002102: a `..data` symlink out of the volume made an
 * earlier writer delete a host directory).
 */
export async function writeAtomic(dir: string, payload: Payload, opts: WriteOptions = {}): Promise<boolean> {
  for (const p of payload.keys()) validatePayloadPath(p);
  const gid = opts.fsGroup;
  if (gid !== undefined) payload = new Map([...payload].map(([p, f]) => [p, { data: f.data, mode: fsGroupMode(f.mode, false, true) }]));
  await fs.mkdir(dir, { recursive: true });
  // The volume's own dir is the kubelet's; a directory-ness check keeps a chmod from following anything.
  if (gid !== undefined && (await fs.lstat(dir)).isDirectory()) await ownDir(dir, gid);
  const dataLink = path.join(dir, DATA_DIR);
  const oldVersion = await currentVersion(dir);
  let changed = false;
  if (!oldVersion || !(await sameContent(path.join(dir, oldVersion), payload, gid))) {
    const version = await fs.mkdtemp(path.join(dir, tsPrefix()));
    await fs.chmod(version, 0o755);
    if (gid !== undefined) await ownDir(version, gid);
    const madeDirs = new Set<string>();
    for (const [rel, file] of [...payload].sort(([a], [b]) => (a < b ? -1 : 1))) {
      await writeNewFile(version, rel, file, gid, madeDirs);
    }
    const tmp = path.join(dir, DATA_TMP);
    await removeEntry(dir, DATA_TMP);
    await fs.symlink(path.basename(version), tmp);
    if (gid !== undefined) await fs.lchown(tmp, -1, gid);
    // rename(2) replaces a symlink or file at `..data` but not a directory: clear one first.
    if ((await fs.lstat(dataLink).catch(() => undefined))?.isDirectory()) await removeEntry(dir, DATA_DIR);
    await fs.rename(tmp, dataLink);
    changed = true;
  }
  // User-visible names: one symlink per top-level element, through ..data.
  const visible = new Set([...payload.keys()].map((p) => p.split('/')[0]!));
  for (const name of visible) {
    const link = path.join(dir, name);
    const want = path.join(DATA_DIR, name);
    const st = await fs.lstat(link).catch(() => undefined);
    if (st?.isSymbolicLink() && (await fs.readlink(link)) === want) continue;
    if (st && !st.isSymbolicLink()) throw new Error(`cannot create symlink ${link}: a file that is not ours is in the way`);
    const tmp = `${link}..tmp`;
    await removeEntry(dir, path.basename(tmp));
    await fs.symlink(want, tmp);
    if (gid !== undefined) await fs.lchown(tmp, -1, gid);
    await fs.rename(tmp, link);
  }
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith('..') || visible.has(name)) continue;
    const st = await fs.lstat(path.join(dir, name));
    if (st.isSymbolicLink()) await fs.unlink(path.join(dir, name));
  }
  // Old versions, and versions left behind by a writer that died half-way: only names of
  // this writer's making, removed without following anything.
  const current = await currentVersion(dir);
  for (const name of await fs.readdir(dir)) {
    if (name !== current && VERSION_NAME.test(name)) await removeEntry(dir, name);
  }
  return changed;
}

/**
 * Writes one payload file into a fresh version dir, creating its parent dirs, never through a
 * link. `madeDirs`: the parents this version's earlier files made and checked, not made and
 * checked again (a projection of thousands of files 60 dirs deep was 120 syscalls a file).
 */
async function writeNewFile(version: string, rel: string, file: PayloadFile, gid: number | undefined, madeDirs: Set<string>): Promise<void> {
  let parent = version;
  for (const part of rel.split('/').slice(0, -1)) {
    parent = path.join(parent, part);
    if (madeDirs.has(parent)) continue;
    madeDirs.add(parent);
    await fs.mkdir(parent, { mode: 0o755 }).catch((err: NodeJS.ErrnoException) => {
      if (err.code !== 'EEXIST') throw err;
    });
    if (!(await fs.lstat(parent)).isDirectory()) throw new Error(`cannot write ${rel}: ${path.relative(version, parent)} is not a directory`);
    if (gid !== undefined) await ownDir(parent, gid);
  }
  const fh = await fs.open(path.join(version, rel), CREATE_NEW, file.mode);
  try {
    await fh.writeFile(file.data);
    if (gid !== undefined) await fh.chown(-1, gid);
    await fh.chmod(file.mode);
  } finally {
    await fh.close();
  }
}

/** Gives a directory the writer made (or the volume's own dir) to the fsGroup: group, group r-x and setgid. */
async function ownDir(dir: string, gid: number): Promise<void> {
  await fs.lchown(dir, -1, gid);
  const st = await fs.lstat(dir);
  if (st.isDirectory()) await fs.chmod(dir, fsGroupMode(st.mode, true, true));
}

/** True if `versionDir` holds exactly the payload's files, bytes and modes (regular files only), and the fsGroup when there is one. */
async function sameContent(versionDir: string, payload: Payload, gid?: number): Promise<boolean> {
  const found = await listFiles(versionDir).catch(() => undefined);
  if (!found || found.length !== payload.size) return false;
  for (const rel of found) {
    const want = payload.get(rel);
    if (!want) return false;
    const file = path.join(versionDir, rel);
    const st = await fs.lstat(file);
    // Only a regular file of the expected size is read (a FIFO or device planted here is never opened).
    if (!st.isFile() || st.size !== want.data.length || (st.mode & 0o7777) !== want.mode) return false;
    if (gid !== undefined && st.gid !== gid) return false;
    const fh = await fs.open(file, fsConstants.O_RDONLY | fsConstants.O_NOFOLLOW | fsConstants.O_NONBLOCK);
    let data: Buffer;
    try {
      data = await fh.readFile();
    } finally {
      await fh.close();
    }
    if (!hashEq(data, want.data)) return false;
  }
  return true;
}

function hashEq(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

/** Every entry below `dir` that is not a directory, as relative paths (symlinks are listed, not followed). */
async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out;
}
