/**
 * The static pod manifest directory source (upstream kubelet --pod-manifest-path /
 * staticPodPath, pkg/kubelet/config/file.go): every non-hidden regular file in the
 * directory holds one Pod. This file is the reconciler: it reads the directory and turns its
 * files into the source's pod set. It rescans when its watcher (manifest-dir-watcher.ts:
 * fs.watch, debounced) says so and periodically as a safety net; files are re-read only when
 * their (inode, size, mtime, ctime) changed.
 *
 * Files are hostile input, and what an operator's editor does to them is not atomic:
 *  - a file being written in place (watch `change` events, or a very recent mtime when no
 *    watch runs) is read only once it has been still for `settleMs`: a half-written file
 *    never becomes a pod;
 *  - a file that turns invalid keeps the pod of its last valid content running (the error
 *    is reported); removing the file removes the pod. Upstream drops the pod at once: a
 *    broken save must not kill what runs (kubelet-ts);
 *  - of two files declaring one pod, the one that was there first keeps it (across
 *    restarts too, through `isRunning`), and the newcomer is reported;
 *  - a symlink is followed only to a regular file inside the directory, nothing but regular
 *    files is read, and a file name that is not UTF-8 is reported, not read under a wrong name.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { PodSource } from './pod-source.ts';
import { loadObjectModels } from '../objects/object-decoder.ts';
import { applyStaticPodDefaults, canonicalJson, parseManifest, MAX_MANIFEST_BYTES } from './manifest.ts';
import { CONFIG_SEEN_ANNOTATION } from '../objects/pod-origin.ts';
import { podFullName } from '../objects/pod-util.ts';
import { ManifestDirWatcher } from './manifest-dir-watcher.ts';

export interface StaticPodDirSourceOptions {
  /** The manifest directory. */
  dir: string;
  /** This node's name (static pod names get `-<nodeName>`). */
  nodeName: string;
  /** Period of the safety-net full rescan (upstream default fileCheckFrequency: 20 s). */
  rescanPeriodMs: number;
  logger: Logger;
  /** Delay between a watch event and the rescan it triggers (default 100 ms). */
  debounceMs?: number;
  /** How long a file written in place must stay unchanged before it is read (default 300 ms). */
  settleMs?: number;
  /**
   * Whether a pod UID runs on the node now (the kubelet asks its runtime cache): of two
   * files declaring one pod, the one whose pod runs keeps it, also right after a restart.
   */
  isRunning?: (uid: string) => boolean;
}

interface CacheEntry {
  /** `${ino}:${size}:${mtimeNs}:${ctimeNs}` of the file when it was read. */
  stamp: string;
  /** The pod of the file's content, or of its last valid content when `error` is set. */
  pod?: V1Pod;
  /** Fingerprint of the pod content (excluding config.seen). */
  fingerprint?: string;
  error?: string;
  /** Order in which files first gave a pod: of two files declaring one pod, the earlier wins. */
  seq: number;
}

/** A file name as bytes, printable: invalid UTF-8 shown as \xNN escapes. */
function printableName(name: Buffer): string {
  let out = '';
  for (const ch of name.toString('latin1')) {
    const c = ch.charCodeAt(0);
    out += c >= 0x20 && c < 0x7f ? ch : `\\x${c.toString(16).padStart(2, '0')}`;
  }
  return out;
}

/**
 * Whether a directory entry is skipped: hidden files (upstream globs `[^.]*`), and editor
 * leftovers that are not hidden: backups `name~`, emacs autosaves `#name#`, vim swap files.
 */
export function isIgnoredManifestName(name: string): boolean {
  return (
    name.startsWith('.') ||
    name.endsWith('~') ||
    (name.startsWith('#') && name.endsWith('#')) ||
    /\.sw[a-p]$/.test(name)
  );
}

export class StaticPodDirSource implements PodSource {
  readonly name = 'file';

  private readonly dir: string;
  private readonly nodeName: string;
  private readonly rescanPeriodMs: number;
  private readonly settleMs: number;
  private readonly isRunning: (uid: string) => boolean;
  private readonly log: Logger;
  /** The directory's real path: symlinked manifests must resolve inside it. */
  private realDir: string | undefined;
  /** When each file last had a `change` watch event (being written in place). */
  private readonly changedAt = new Map<string, number>();
  private settleTimer: NodeJS.Timeout | undefined;
  private nextSeq = 0;

  private onSet: ((pods: V1Pod[]) => void) | undefined;
  private started = false;
  private stopped = false;

  private readonly cache = new Map<string, CacheEntry>();
  /** Current problems by file path: invalid manifests and name conflicts. */
  private readonly problems = new Map<string, string>();
  /** config.seen per UID, so a re-read of an unchanged pod keeps its first-seen time. */
  private seenByUid = new Map<string, string>();
  private lastEmitted: string | undefined;
  private loggedConflicts = new Set<string>();
  private loggedSkips = new Set<string>();
  private dirState: 'unknown' | 'ok' | 'missing' | 'error' = 'unknown';
  private lastDirError = '';

  /** fs.watch on the directory (or its parent while it is missing) and the debounce of its events. */
  private readonly watcher: ManifestDirWatcher;
  private rescanTimer: NodeJS.Timeout | undefined;

  private scanning: Promise<void> | undefined;
  private rescanRequested = false;

  constructor(opts: StaticPodDirSourceOptions) {
    this.dir = path.resolve(opts.dir);
    this.nodeName = opts.nodeName;
    this.rescanPeriodMs = opts.rescanPeriodMs;
    this.settleMs = opts.settleMs ?? 300;
    this.isRunning = opts.isRunning ?? (() => false);
    this.log = opts.logger.child({ component: 'static-pod-source', source: 'file', dir: this.dir });
    this.watcher = new ManifestDirWatcher(this.dir, opts.debounceMs ?? 100, {
      rescan: () => void this.rescan(),
      written: (file) => this.changedAt.set(file, Date.now()),
      ignored: isIgnoredManifestName,
    }, this.log);
  }

  /** Scans once (the first emission happens before this resolves), then watches. */
  async start(onSet: (pods: V1Pod[]) => void): Promise<void> {
    if (this.started) throw new Error('StaticPodDirSource already started');
    this.started = true;
    this.onSet = onSet;
    await this.rescan();
    if (this.stopped) return;
    if (this.rescanPeriodMs > 0) {
      this.rescanTimer = setInterval(() => void this.rescan(), this.rescanPeriodMs);
    }
  }

  async stop(): Promise<void> {
    this.stopped = true;
    if (this.rescanTimer) clearInterval(this.rescanTimer);
    if (this.settleTimer) clearTimeout(this.settleTimer);
    this.rescanTimer = undefined;
    this.settleTimer = undefined;
    this.watcher.close();
    if (this.scanning) await this.scanning.catch(() => undefined);
    this.onSet = undefined;
  }

  /** Files currently excluded, with the reason: invalid manifests and duplicate pods. */
  errors(): Map<string, string> {
    return new Map(this.problems);
  }

  /**
   * Rescans the directory now (coalescing with a scan in progress). Resolves when the
   * directory state at call time has been processed.
   */
  rescan(): Promise<void> {
    if (this.stopped) return Promise.resolve();
    if (this.scanning) {
      this.rescanRequested = true;
      return this.scanning;
    }
    const run = async (): Promise<void> => {
      try {
        do {
          this.rescanRequested = false;
          try {
            await this.scanOnce();
          } catch (err) {
            this.log.error({ err }, 'static pod directory scan failed');
          }
        } while (this.rescanRequested && !this.stopped);
      } finally {
        this.scanning = undefined;
      }
    };
    this.scanning = run();
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    let dirStat: fs.BigIntStats;
    try {
      dirStat = await fsp.stat(this.dir, { bigint: true });
      if (!dirStat.isDirectory()) throw Object.assign(new Error(`${this.dir} is not a directory`), { code: 'ENOTDIR' });
      this.realDir = await fsp.realpath(this.dir);
    } catch (err) {
      return this.dirUnavailable(err);
    }
    this.watcher.watchDir(dirStat.ino);

    let entries: Buffer[];
    try {
      entries = await fsp.readdir(this.dir, { encoding: 'buffer' });
    } catch (err) {
      return this.dirUnavailable(err);
    }
    if (this.stopped) return;
    if (this.dirState !== 'ok') {
      if (this.dirState !== 'unknown') this.log.info('static pod directory is available');
      this.dirState = 'ok';
      this.lastDirError = '';
    }

    const present = new Set<string>();
    const names: string[] = [];
    for (const raw of entries) {
      const name = raw.toString('utf8');
      if (!Buffer.from(name, 'utf8').equals(raw)) {
        // Read as UTF-8 the name would be another (missing) file: say what it is instead.
        const shown = path.join(this.dir, printableName(raw));
        present.add(shown);
        this.logSkipOnce(shown, 'file name is not valid UTF-8');
        continue;
      }
      if (!isIgnoredManifestName(name)) names.push(name);
    }
    names.sort();
    let settling = false;
    for (const name of names) {
      const file = path.join(this.dir, name);
      const st = await this.statManifest(file);
      if (!st) continue;
      present.add(file);
      const stamp = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      const cached = this.cache.get(file);
      if (cached && cached.stamp === stamp) continue;
      if (this.isSettling(file, st)) {
        // Being written: the last good content (if any) stays until the file is still.
        settling = true;
        continue;
      }
      this.changedAt.delete(file);
      this.cache.set(file, await this.readManifest(file, stamp, st, cached));
      if (this.stopped) return;
    }
    if (settling) this.scheduleSettleRescan();
    for (const file of [...this.cache.keys()]) {
      if (!present.has(file)) {
        this.cache.delete(file);
        this.changedAt.delete(file);
        this.log.info({ file }, 'static pod manifest removed');
      }
    }
    for (const key of [...this.loggedSkips]) if (!present.has(key.split('\0')[0]!)) this.loggedSkips.delete(key);
    this.publish();
  }

  /**
   * The stat of a manifest to read, or undefined (logged once) for an entry that is not one:
   * a directory, a device or FIFO, a dangling symlink, or a symlink out of the directory
   * (following one would read, and report errors about, any file of the host).
   */
  private async statManifest(file: string): Promise<fs.BigIntStats | undefined> {
    let lst: fs.BigIntStats;
    try {
      lst = await fsp.lstat(file, { bigint: true });
    } catch (err) {
      this.logSkipOnce(file, `cannot stat: ${errorMessage(err)}`);
      return undefined;
    }
    if (lst.isSymbolicLink()) {
      const real = await fsp.realpath(file).catch(() => undefined);
      if (!real) return void this.logSkipOnce(file, 'dangling symlink');
      const rel = path.relative(this.realDir ?? this.dir, real);
      if (rel === '' || rel.startsWith('..') || path.isAbsolute(rel)) return void this.logSkipOnce(file, 'symlink to a file outside the manifest directory');
    }
    let st: fs.BigIntStats;
    try {
      st = lst.isSymbolicLink() ? await fsp.stat(file, { bigint: true }) : lst;
    } catch (err) {
      this.logSkipOnce(file, `cannot stat: ${errorMessage(err)}`);
      return undefined;
    }
    if (st.isDirectory()) return void this.logSkipOnce(file, 'not recursing into subdirectory');
    if (!st.isFile()) return void this.logSkipOnce(file, 'not a regular file');
    return st;
  }

  /** True while the file is being written in place: a `change` event or a fresh mtime less than `settleMs` ago. */
  private isSettling(file: string, st: fs.BigIntStats): boolean {
    const now = Date.now();
    const changed = this.changedAt.get(file);
    if (changed !== undefined && now - changed < this.settleMs) return true;
    // Without a watch there are no events: a file modified moments ago may still be growing.
    if (!this.watcher.watching && now - Number(st.mtimeMs) < this.settleMs) return true;
    return false;
  }

  private scheduleSettleRescan(): void {
    if (this.stopped || this.settleTimer) return;
    this.settleTimer = setTimeout(() => {
      this.settleTimer = undefined;
      void this.rescan();
    }, this.settleMs);
  }

  private async readManifest(file: string, stamp: string, st: fs.BigIntStats, previous: CacheEntry | undefined): Promise<CacheEntry> {
    const seq = previous?.seq ?? this.nextSeq++;
    try {
      if (st.size > BigInt(MAX_MANIFEST_BYTES)) throw new Error(`static pod manifest ${file}: file is larger than ${MAX_MANIFEST_BYTES} bytes`);
      const text = await readRegularFile(file, MAX_MANIFEST_BYTES);
      await loadObjectModels();
      const parsed = parseManifest(text, file);
      const pod = applyStaticPodDefaults(parsed, { nodeName: this.nodeName, source: this.name, file });
      const fingerprint = podFingerprint(pod);
      if (previous?.error !== undefined) this.log.info({ file }, 'static pod manifest is valid again');
      else if (previous?.fingerprint !== fingerprint) {
        this.log.info({ file, pod: podFullName(pod), uid: pod.metadata?.uid }, previous ? 'static pod manifest changed' : 'static pod manifest added');
      }
      return { stamp, pod, fingerprint, seq };
    } catch (err) {
      // The message only: it names the file, the field and the reason, never the file's content.
      const message = errorMessage(err);
      // Logged once per change of the file: the entry is cached under this stamp, so
      // rescans of the unchanged file do not log again.
      const kept = previous?.pod;
      this.log.warn({ file, err: message, ...(kept ? { keptPod: kept.metadata?.uid } : {}) }, kept ? 'invalid static pod manifest; its pod keeps running as last read' : 'invalid static pod manifest; ignoring it');
      return { stamp, error: message, seq, ...(kept ? { pod: kept, fingerprint: previous!.fingerprint! } : {}) };
    }
  }

  private logSkipOnce(file: string, reason: string): void {
    const key = `${file}\0${reason}`;
    if (this.loggedSkips.has(key)) return;
    this.loggedSkips.add(key);
    this.log.info({ file, reason }, 'skipping entry in static pod directory');
  }

  private dirUnavailable(err: unknown): void {
    const code = (err as NodeJS.ErrnoException | undefined)?.code;
    this.watcher.dirUnavailable(code === 'ENOENT');
    if (code === 'ENOENT') {
      if (this.dirState !== 'missing') this.log.warn({ dir: this.dir }, 'static pod directory does not exist; waiting for it to appear');
      this.dirState = 'missing';
      // Upstream: a missing path is an empty set (so the source counts as seen).
      this.cache.clear();
      this.publish();
      return;
    }
    const message = errorMessage(err);
    if (this.dirState !== 'error' || this.lastDirError !== message) this.log.error({ err }, 'cannot read static pod directory; keeping the current pods');
    this.dirState = 'error';
    this.lastDirError = message;
    // Keep the previous set (as upstream does on read errors), but the first emission is due.
    if (this.lastEmitted === undefined) this.emit([], '');
  }

  /**
   * Builds the set from the cache and emits it if it changed. Of files declaring one pod (one
   * namespace/name or one UID), the one whose pod runs wins, then the one that gave a pod first,
   * then the first by name; the others are reported naming the winner.
   */
  private publish(): void {
    this.problems.clear();
    const byKey = new Map<string, string>();
    const byUid = new Map<string, string>();
    const pods: V1Pod[] = [];
    const fingerprints: string[] = [];
    const conflicts = new Set<string>();
    const order = [...this.cache.entries()].map(([file, e]) => ({ file, e, running: e.pod ? this.isRunning(e.pod.metadata!.uid!) : false }));
    order.sort((a, b) => Number(b.running) - Number(a.running) || a.e.seq - b.e.seq || (a.file < b.file ? -1 : a.file > b.file ? 1 : 0));
    for (const { file, e: entry } of order) {
      if (entry.error !== undefined) this.problems.set(file, entry.error);
      if (!entry.pod) continue;
      const pod = entry.pod;
      const key = podFullName(pod);
      const uid = pod.metadata!.uid!;
      const first = byKey.get(key) ?? byUid.get(uid);
      if (first !== undefined) {
        const what = byKey.has(key) ? `pod ${key}` : `pod UID ${uid}`;
        const msg = `duplicate ${what}: already declared by ${first}; ignoring ${file}`;
        this.problems.set(file, msg);
        const ck = `${first}\0${file}\0${entry.stamp}`;
        conflicts.add(ck);
        if (!this.loggedConflicts.has(ck)) this.log.error({ file, conflictsWith: first, pod: key }, msg);
        continue;
      }
      byKey.set(key, file);
      byUid.set(uid, file);
      pods.push(pod);
      fingerprints.push(`${uid}:${entry.fingerprint}`);
    }
    this.loggedConflicts = conflicts;

    // The same set as emitted last (every periodic rescan of an unchanged directory): nothing
    // to emit, so no copies to make (cloning every pod each second was most of a steady
    // node's rescan cost). config.seen per UID cannot have changed either: same UIDs.
    const signature = fingerprints.sort().join(',');
    if (signature === this.lastEmitted) return;

    // Keep config.seen stable for pods already seen; forget UIDs that left the set.
    const seen = new Map<string, string>();
    const out = pods.map((p) => {
      const uid = p.metadata!.uid!;
      const first = this.seenByUid.get(uid) ?? p.metadata!.annotations![CONFIG_SEEN_ANNOTATION]!;
      seen.set(uid, first);
      const copy = structuredClone(p);
      copy.metadata!.annotations![CONFIG_SEEN_ANNOTATION] = first;
      return copy;
    });
    this.seenByUid = seen;
    this.emit(out, signature);
  }

  private emit(pods: V1Pod[], signature: string): void {
    if (this.stopped || !this.onSet) return;
    if (this.lastEmitted === signature) return;
    this.lastEmitted = signature;
    this.log.debug({ pods: pods.map((p) => p.metadata?.name) }, 'static pod set changed');
    try {
      this.onSet(pods);
    } catch (err) {
      this.log.error({ err }, 'static pod set handler threw');
    }
  }
}

/**
 * Reads a regular file without following a symlink planted after the check and without
 * reading more than `max` bytes (a file that grows while read is cut, then fails to parse).
 */
async function readRegularFile(file: string, max: number): Promise<string> {
  const real = await fsp.realpath(file);
  const fh = await fsp.open(real, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW | fs.constants.O_NONBLOCK);
  try {
    const st = await fh.stat();
    if (!st.isFile()) throw new Error(`static pod manifest ${file}: not a regular file`);
    const buf = Buffer.alloc(Math.min(st.size, max));
    const { bytesRead } = await fh.read(buf, 0, buf.length, 0);
    try {
      // Kubernetes refuses a manifest that is not UTF-8 (replacement characters would be read as
      // content). A byte order mark is kept: the YAML decoder drops one at the start, as YAML
      // allows, and must see the text as the file holds it (a second one is content).
      return new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(buf.subarray(0, bytesRead));
    } catch {
      throw new Error(`static pod manifest ${file}: not valid UTF-8`);
    }
  } finally {
    await fh.close();
  }
}

/** Content fingerprint of a prepared static pod, ignoring its config.seen time. */
function podFingerprint(pod: V1Pod): string {
  const copy = structuredClone(pod);
  delete copy.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
  return createHash('sha256').update(canonicalJson(copy)).digest('hex').slice(0, 32);
}
