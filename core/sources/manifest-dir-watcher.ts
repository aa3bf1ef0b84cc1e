import * as fs from 'node:fs';
import * as path from 'node:path';
import type { Logger } from '../logger.ts';

/** What the watcher tells the static pod directory source (static-dir.ts, the reconciler). */
export interface ManifestDirWatcherEvents {
  /** Something in the directory (or its appearance) may have changed: rescan it. */
  rescan(): void;
  /** `file` was written to in place (a watch `change` event): it may still be growing. */
  written(file: string): void;
  /** True for a name the source never reads (editors' swap files, an atomic write's temp file). */
  ignored(name: string): boolean;
}

/**
 * Watches the static pod manifest directory for the source: fs.watch on the directory (again
 * when it was replaced by a new inode), on its parent while it is missing, and the debounce
 * that turns a burst of events into two rescans. Reading the directory and turning files
 * into pods is the source's (static-dir.ts).
 */
export class ManifestDirWatcher {
  private watcher: fs.FSWatcher | undefined;
  private watchedIno: bigint | undefined;
  private parentWatcher: fs.FSWatcher | undefined;
  private debounceTimer: NodeJS.Timeout | undefined;
  private eventsWhileDebouncing = false;
  private closed = false;

  constructor(
    private readonly dir: string,
    private readonly debounceMs: number,
    private readonly events: ManifestDirWatcherEvents,
    private readonly log: Logger,
  ) {}

  /** True while fs.watch runs on the directory (without it, no write events come). */
  get watching(): boolean {
    return this.watcher !== undefined;
  }

  /**
   * Rescans at once on the first event (a new manifest should not wait: it is on the pod
   * start path), then once more after `debounceMs` if more events came, so a burst of
   * events (an editor saving) costs two scans and the final state is always read.
   */
  scheduleRescan(): void {
    if (this.closed) return;
    if (this.debounceTimer) {
      this.eventsWhileDebouncing = true;
      return;
    }
    this.eventsWhileDebouncing = false;
    this.events.rescan();
    this.debounceTimer = setTimeout(() => {
      this.debounceTimer = undefined;
      if (this.eventsWhileDebouncing) this.events.rescan();
    }, this.debounceMs);
  }

  /** Watches the directory itself; re-watches if it was replaced (new inode). */
  watchDir(ino: bigint): void {
    if (this.closed) return;
    this.closeParentWatcher();
    if (this.watcher && this.watchedIno === ino) return;
    this.closeWatcher();
    try {
      // Events for names the source ignores (an editor's swap file, the temp file of an atomic
      // write) must not start the debounce window that would hold back the real file's event.
      const w = fs.watch(this.dir, { persistent: true }, (event, filename) => {
        if (filename !== null && this.events.ignored(filename.toString())) return;
        // `change` is a write to the file itself (in place); `rename` is an entry appearing or
        // going (an atomic save renames a complete file into place).
        if (event === 'change' && filename !== null) this.events.written(path.join(this.dir, filename.toString()));
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

  /** The directory is gone or unreadable: stop watching it, and, while it is missing, watch its parent so its creation is noticed quickly. */
  dirUnavailable(missing: boolean): void {
    this.closeWatcher();
    if (missing) this.watchParent();
  }

  close(): void {
    this.closed = true;
    if (this.debounceTimer) clearTimeout(this.debounceTimer);
    this.debounceTimer = undefined;
    this.closeWatcher();
    this.closeParentWatcher();
  }

  private watchParent(): void {
    if (this.closed || this.parentWatcher) return;
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
}
