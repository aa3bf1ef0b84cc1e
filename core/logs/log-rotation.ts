/**
 * Container log rotation, as upstream's containerLogManager does it
 * (pkg/kubelet/logs/container_log_manager.go), with the same files in the end: every
 * `containerLogMonitorInterval` each running container's log file larger than
 * `containerLogMaxSize` is rotated:
 *
 *   1. leftovers of an interrupted rotation are removed (`*.tmp`, an uncompressed file whose
 *      `.gz` exists);
 *   2. the oldest rotated files are removed so that, with the current file and the one about to
 *      be rotated, at most `containerLogMaxFiles` remain (never more, even for a moment);
 *   3. the current file is renamed `<log>.<YYYYMMDD-hhmmss>` and the runtime is asked to reopen
 *      the log (CRI ReopenContainerLog); if it cannot, the rename is undone;
 *   4. the older rotated files are gzipped (`<log>.<time>.gz`, written as `.tmp` first): all but
 *      the newest, as upstream.
 *
 * Two things hold a container that floods its log closer to the limits than upstream's order
 * and period do: the writer is moved to a new file first, before the old files are compressed
 * (upstream compresses first, and a flooded file takes seconds to gzip while the current one
 * keeps growing); and for a whole interval after a pass that rotated something, passes come
 * every second, not once an interval: a writer still flooding its log is caught as soon as its
 * file is over the size again, even one that took longer than a second to get there.
 *
 * Readers of the log (`/containerLogs`, `kubelet-ts logs -f`) notice the new file at the path
 * and go on reading there.
 */
import { createReadStream, createWriteStream } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { pipeline } from 'node:stream/promises';
import { createGzip } from 'node:zlib';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { ContainerRuntime } from '../runtime/types.ts';

const COMPRESS_SUFFIX = '.gz';
/** The period of passes for an interval after one rotated a file: a flooding writer is caught within a second. */
const HOT_RECHECK_MS = 1000;
const TMP_SUFFIX = '.tmp';

export interface LogRotationPolicy { maxSizeBytes: number; maxFiles: number; monitorIntervalMs: number }

export interface LogRotationDeps {
  policy: LogRotationPolicy;
  runtime: () => ContainerRuntime;
  /** The running containers and their log files. */
  runningContainers: () => Array<{ id: string; logPath: string }>;
  logger: Logger;
  now?: () => Date;
}

/** `<YYYYMMDD-hhmmss>` of `d` in UTC (upstream's timestampFormat "20060102-150405"). */
export function rotationTimestamp(d: Date): string {
  const p = (n: number) => String(n).padStart(2, '0');
  return `${d.getUTCFullYear()}${p(d.getUTCMonth() + 1)}${p(d.getUTCDate())}-${p(d.getUTCHours())}${p(d.getUTCMinutes())}${p(d.getUTCSeconds())}`;
}

/**
 * When the next pass comes: after a second while the last rotation is less than a monitor
 * interval old, else after the interval. One second only was not enough: a writer that needed
 * 1.5 s to fill the size again (a flood slowed by a busy node) was found under the size by the
 * one quick pass and then waited a whole interval, twice the size on disk for that long.
 */
export function nextPassDelayMs(policy: LogRotationPolicy, msSinceLastRotation: number | undefined): number {
  const hot = msSinceLastRotation !== undefined && msSinceLastRotation < policy.monitorIntervalMs;
  return hot ? Math.min(HOT_RECHECK_MS, policy.monitorIntervalMs) : policy.monitorIntervalMs;
}

export class LogRotation {
  private timer: NodeJS.Timeout | undefined;
  /** When a pass last rotated a file (ms since the epoch). */
  private lastRotatedAt: number | undefined;
  private running: Promise<boolean> | undefined;
  private stopped = false;

  constructor(private readonly deps: LogRotationDeps) {}

  start(): void {
    if (!this.deps.runtime().reopenContainerLog) {
      this.deps.logger.info('the runtime cannot reopen container logs: they are not rotated');
      return;
    }
    this.schedule(this.deps.policy.monitorIntervalMs);
  }

  private schedule(delayMs: number): void {
    if (this.stopped) return;
    this.timer = setTimeout(() => {
      this.running = this.rotateAll();
      void this.running.then((rotated) => {
        this.running = undefined;
        const now = Date.now();
        if (rotated) this.lastRotatedAt = now;
        this.schedule(nextPassDelayMs(this.deps.policy, this.lastRotatedAt === undefined ? undefined : now - this.lastRotatedAt));
      });
    }, delayMs);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    clearTimeout(this.timer);
    await this.running;
  }

  /** One pass over the running containers (exported for tests); true when it rotated a file. Never rejects. */
  async rotateAll(): Promise<boolean> {
    let rotated = false;
    for (const c of this.deps.runningContainers()) {
      if (!c.logPath) continue;
      try {
        const st = await fs.stat(c.logPath).catch(() => undefined);
        if (!st || st.size < this.deps.policy.maxSizeBytes) continue;
        await this.rotate(c.id, c.logPath);
        rotated = true;
      } catch (err) {
        this.deps.logger.warn({ containerId: c.id, log: c.logPath, err: errorMessage(err) }, 'container log rotation failed');
      }
    }
    return rotated;
  }

  private async rotate(id: string, log: string): Promise<void> {
    const previous = await this.cleanupUnused(await this.rotatedFiles(log));
    const target = `${log}.${rotationTimestamp(this.deps.now?.() ?? new Date())}`;
    // A file rotated within this same second keeps its name: this one waits for the next pass
    // rather than replace it (a rename would).
    if (previous.some((f) => f === target || f === `${target}${COMPRESS_SUFFIX}`)) return;
    const older = await this.removeExcess(previous);
    await fs.rename(log, target);
    try {
      await this.deps.runtime().reopenContainerLog!(id);
    } catch (err) {
      // The runtime still writes to the renamed file: put it back so readers find it.
      await fs.rename(target, log).catch(() => {});
      throw new Error(`reopen container log: ${errorMessage(err)}`, { cause: err });
    }
    this.deps.logger.debug({ containerId: id, log, rotated: target }, 'container log rotated');
    for (const f of older) if (!f.endsWith(COMPRESS_SUFFIX)) await this.compress(f);
  }

  /** The rotated files of `log` (`<log>.*`), oldest first (their names sort by time). */
  private async rotatedFiles(log: string): Promise<string[]> {
    const dir = path.dirname(log);
    const base = `${path.basename(log)}.`;
    const names = await fs.readdir(dir).catch(() => [] as string[]);
    return names.filter((n) => n.startsWith(base)).sort().map((n) => path.join(dir, n));
  }

  /** Removes what an interrupted rotation left: temporary files, uncompressed files whose .gz exists. */
  private async cleanupUnused(files: string[]): Promise<string[]> {
    const set = new Set(files);
    const keep: string[] = [];
    for (const f of files) {
      if (f.endsWith(TMP_SUFFIX) || (!f.endsWith(COMPRESS_SUFFIX) && set.has(f + COMPRESS_SUFFIX))) await fs.rm(f, { force: true });
      else keep.push(f);
    }
    return keep;
  }

  /** Keeps at most maxFiles-2 rotated files (the current one and the one about to be rotated make maxFiles), removing the oldest. */
  private async removeExcess(files: string[]): Promise<string[]> {
    const keepCount = Math.max(0, this.deps.policy.maxFiles - 2);
    const excess = files.length - keepCount;
    for (const f of files.slice(0, Math.max(0, excess))) await fs.rm(f, { force: true });
    return files.slice(Math.max(0, excess));
  }

  /** gzips `file` to `file.gz` (through a .tmp, so a crash never leaves a half file under the final name) and removes it. */
  private async compress(file: string): Promise<void> {
    const tmp = `${file}${COMPRESS_SUFFIX}${TMP_SUFFIX}`;
    await pipeline(createReadStream(file), createGzip(), createWriteStream(tmp, { mode: 0o640 }));
    await fs.rename(tmp, `${file}${COMPRESS_SUFFIX}`);
    await fs.rm(file, { force: true });
  }
}
