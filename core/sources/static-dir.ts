/**
 * The static pod manifest directory source (upstream kubelet --pod-manifest-path /
 * staticPodPath, pkg/kubelet/config/file.go): every non-hidden regular file in the
 * directory holds one Pod. The source watches the directory (fs.watch, debounced) and
 * rescans it periodically as a safety net; files are re-read only when their
 * (inode, size, mtime, ctime) changed.
 */
import * as fs from 'node:fs';
import * as fsp from 'node:fs/promises';
import * as path from 'node:path';
import { createHash } from 'node:crypto';
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { PodSource } from './pod-source.ts';
import { loadObjectModels } from '../api/object-decoder.ts';
import { applyStaticPodDefaults, canonicalJson, parseManifest, CONFIG_SEEN_ANNOTATION, MAX_MANIFEST_BYTES } from './manifest.ts';

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
}

interface CacheEntry {
  /** `${ino}:${size}:${mtimeNs}:${ctimeNs}` of the file when it was read. */
  stamp: string;
  pod?: V1Pod;
  /** Fingerprint of the pod content (excluding config.seen). */
  fingerprint?: string;
  error?: string;
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
  private readonly debounceMs: number;
  private readonly log: Logger;

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

  private watcher: fs.FSWatcher | undefined;
  private watchedIno: bigint | undefined;
  private parentWatcher: fs.FSWatcher | undefined;
  private rescanTimer: NodeJS.Timeout | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private eventsWhileDebouncing = false;

  private scanning: Promise<void> | undefined;
  private rescanRequested = false;

  constructor(opts: StaticPodDirSourceOptions) {
    this.dir = path.resolve(opts.dir);
    this.nodeName = opts.nodeName;
    this.rescanPeriodMs = opts.rescanPeriodMs;
    this.debounceMs = opts.debounceMs ?? 100;
    this.log = opts.logger.child({ component: 'static-pod-source', source: 'file', dir: this.dir });
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
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    this.rescanTimer = undefined;
    this.debounceTimer = undefined;
    this.closeWatcher();
    this.closeParentWatcher();
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

  /**
   * Rescans at once on the first event (a new manifest should not wait: it is on the pod
   * start path), then once more after `debounceMs` if more events came, so a burst of
   * events (an editor saving) costs two scans and the final state is always read.
   */
  private scheduleRescan(): void {
    if (this.stopped) return;
    if (this.debounceTimer) {
      this.eventsWhileDebouncing = true;
      return;
    }
    this.eventsWhileDebouncing = false;
    void this.rescan();
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      if (this.eventsWhileDebouncing) void this.rescan();
    }, this.debounceMs);
  }

  private closeWatcher(): void {
    if (this.watcher) {
      this.watcher.close();
      this.watcher = undefined;
      this.watchedIno = undefined;
    }
  }

  private closeParentWatcher(): void {
    if (this.parentWatcher) {
      this.parentWatcher.close();
      this.parentWatcher = undefined;
    }
  }

  /** Watches the directory itself; re-watches if it was replaced (new inode). */
  private ensureWatcher(ino: bigint): void {
    if (this.stopped) return;
    this.closeParentWatcher();
    if (this.watcher && this.watchedIno === ino) return;
    this.closeWatcher();
    try {
      // Events for names the source ignores (an editor's swap file, the temp file of an atomic
      // write) must not start the debounce window that would hold back the real file's event.
      const w = fs.watch(this.dir, { persistent: true }, (_event, filename) => {
        if (filename !== null && isIgnoredManifestName(filename.toString())) return;
        this.scheduleRescan();
      });
      w.on('error', (err) => {
        this.log.warn({ err }, 'watch on static pod directory failed; relying on periodic rescan');
        if (this.watcher === w) this.closeWatcher();
        this.scheduleRescan();
      });
      this.watcher = w;
      this.watchedIno = ino;
    } catch (err) {
      this.log.warn({ err }, 'cannot watch static pod directory; relying on periodic rescan');
    }
  }

  /** While the directory is missing, watch its parent so its creation is noticed quickly. */
  private ensureParentWatcher(): void {
    if (this.stopped || this.parentWatcher) return;
    const base = path.basename(this.dir);
    try {
      const w = fs.watch(path.dirname(this.dir), { persistent: true }, (_event, filename) => {
        if (filename === null || filename === base || filename.toString() === base) this.scheduleRescan();
      });
      w.on('error', () => {
        if (this.parentWatcher === w) this.closeParentWatcher();
      });
      this.parentWatcher = w;
    } catch {
      // Parent missing too: the periodic rescan picks the directory up.
    }
  }

  private async scanOnce(): Promise<void> {
    let dirStat: fs.BigIntStats;
    try {
      dirStat = await fsp.stat(this.dir, { bigint: true });
      if (!dirStat.isDirectory()) throw Object.assign(new Error(`${this.dir} is not a directory`), { code: 'ENOTDIR' });
    } catch (err) {
      return this.dirUnavailable(err);
    }
    this.ensureWatcher(dirStat.ino);

    let names: string[];
    try {
      names = await fsp.readdir(this.dir);
    } catch (err) {
      return this.dirUnavailable(err);
    }
    if (this.stopped) return;
    if (this.dirState !== 'ok') {
      if (this.dirState !== 'unknown') this.log.info('static pod directory is available');
      this.dirState = 'ok';
      this.lastDirError = '';
    }

    names = names.filter((n) => !isIgnoredManifestName(n)).sort();
    const present = new Set<string>();
    for (const name of names) {
      const file = path.join(this.dir, name);
      let st: fs.BigIntStats;
      try {
        st = await fsp.stat(file, { bigint: true });
      } catch (err) {
        // Vanished between readdir and stat, or a dangling symlink.
        this.logSkipOnce(file, `cannot stat: ${errorMessage(err)}`);
        continue;
      }
      if (st.isDirectory()) {
        this.logSkipOnce(file, 'not recursing into subdirectory');
        continue;
      }
      if (!st.isFile()) {
        this.logSkipOnce(file, 'not a regular file');
        continue;
      }
      present.add(file);
      const stamp = `${st.ino}:${st.size}:${st.mtimeNs}:${st.ctimeNs}`;
      const cached = this.cache.get(file);
      if (cached && cached.stamp === stamp) continue;
      this.cache.set(file, await this.readManifest(file, stamp, st.size, cached));
      if (this.stopped) return;
    }
    for (const file of [...this.cache.keys()]) {
      if (!present.has(file)) {
        this.cache.delete(file);
        this.log.info({ file }, 'static pod manifest removed');
      }
    }
    for (const key of [...this.loggedSkips]) if (!present.has(key.split('\0')[0]!)) this.loggedSkips.delete(key);
    this.publish();
  }

  private async readManifest(file: string, stamp: string, size: bigint, previous: CacheEntry | undefined): Promise<CacheEntry> {
    try {
      if (size > BigInt(MAX_MANIFEST_BYTES)) throw new Error(`static pod manifest ${file}: file is larger than ${MAX_MANIFEST_BYTES} bytes`);
      const text = await fsp.readFile(file, 'utf8');
      await loadObjectModels();
      const parsed = parseManifest(text, file);
      const pod = applyStaticPodDefaults(parsed, { nodeName: this.nodeName, source: this.name, file });
      const fingerprint = podFingerprint(pod);
      if (previous?.error !== undefined) this.log.info({ file }, 'static pod manifest is valid again');
      else if (previous?.fingerprint !== fingerprint) {
        this.log.info({ file, pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, uid: pod.metadata?.uid }, previous ? 'static pod manifest changed' : 'static pod manifest added');
      }
      return { stamp, pod, fingerprint };
    } catch (err) {
      const message = errorMessage(err);
      // Logged once per change of the file: the entry is cached under this stamp, so
      // rescans of the unchanged file do not log again.
      this.log.warn({ file, err }, 'invalid static pod manifest; ignoring it');
      return { stamp, error: message };
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
    this.closeWatcher();
    if (code === 'ENOENT') {
      if (this.dirState !== 'missing') this.log.warn({ dir: this.dir }, 'static pod directory does not exist; waiting for it to appear');
      this.dirState = 'missing';
      this.ensureParentWatcher();
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

  /** Builds the set from the cache (first file by name wins on conflicts) and emits it if it changed. */
  private publish(): void {
    this.problems.clear();
    const byKey = new Map<string, string>();
    const byUid = new Map<string, string>();
    const pods: V1Pod[] = [];
    const fingerprints: string[] = [];
    const conflicts = new Set<string>();
    for (const file of [...this.cache.keys()].sort()) {
      const entry = this.cache.get(file)!;
      if (entry.error !== undefined) {
        this.problems.set(file, entry.error);
        continue;
      }
      const pod = entry.pod!;
      const key = `${pod.metadata!.namespace}/${pod.metadata!.name}`;
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
    this.emit(out, fingerprints.sort().join(','));
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

/** Content fingerprint of a prepared static pod, ignoring its config.seen time. */
function podFingerprint(pod: V1Pod): string {
  const copy = structuredClone(pod);
  delete copy.metadata?.annotations?.[CONFIG_SEEN_ANNOTATION];
  return createHash('sha256').update(canonicalJson(copy)).digest('hex').slice(0, 32);
}
