import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';

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
 */
export async function writeAtomic(dir: string, payload: Payload): Promise<boolean> {
  for (const p of payload.keys()) validatePayloadPath(p);
  await fs.mkdir(dir, { recursive: true });
  const dataLink = path.join(dir, DATA_DIR);
  const oldVersion = await fs.readlink(dataLink).catch(() => undefined);
  const oldPath = oldVersion ? path.join(dir, oldVersion) : undefined;
  let changed = false;
  if (!oldPath || !(await sameContent(oldPath, payload))) {
    const version = await fs.mkdtemp(path.join(dir, tsPrefix()));
    await fs.chmod(version, 0o755);
    for (const [rel, file] of [...payload].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const target = path.join(version, rel);
      await fs.mkdir(path.dirname(target), { recursive: true, mode: 0o755 });
      await fs.writeFile(target, file.data, { mode: file.mode });
      await fs.chmod(target, file.mode);
    }
    const tmp = path.join(dir, DATA_TMP);
    await fs.rm(tmp, { force: true });
    await fs.symlink(path.basename(version), tmp);
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
    await fs.rm(tmp, { force: true });
    await fs.symlink(want, tmp);
    await fs.rename(tmp, link);
  }
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith('..') || visible.has(name)) continue;
    const st = await fs.lstat(path.join(dir, name));
    if (st.isSymbolicLink()) await fs.unlink(path.join(dir, name));
  }
  if (changed && oldPath) await fs.rm(oldPath, { recursive: true, force: true });
  // Versions left behind by a writer that died half-way.
  const current = await fs.readlink(dataLink);
  for (const name of await fs.readdir(dir)) {
    if (name.startsWith('..') && name !== DATA_DIR && name !== current && /^\.\.\d{4}_/.test(name)) await fs.rm(path.join(dir, name), { recursive: true, force: true });
  }
  return changed;
}

/** True if `versionDir` holds exactly the payload's files, bytes and modes. */
async function sameContent(versionDir: string, payload: Payload): Promise<boolean> {
  const found = await listFiles(versionDir).catch(() => undefined);
  if (!found || found.length !== payload.size) return false;
  for (const rel of found) {
    const want = payload.get(rel);
    if (!want) return false;
    const file = path.join(versionDir, rel);
    const [st, data] = await Promise.all([fs.stat(file), fs.readFile(file)]);
    if ((st.mode & 0o7777) !== want.mode || !hashEq(data, want.data)) return false;
  }
  return true;
}

function hashEq(a: Buffer, b: Buffer): boolean {
  return a.length === b.length && crypto.timingSafeEqual(a, b);
}

async function listFiles(dir: string, prefix = ''): Promise<string[]> {
  const out: string[] = [];
  for (const e of await fs.readdir(dir, { withFileTypes: true })) {
    const rel = prefix ? `${prefix}/${e.name}` : e.name;
    if (e.isDirectory()) out.push(...(await listFiles(path.join(dir, e.name), rel)));
    else out.push(rel);
  }
  return out;
}
