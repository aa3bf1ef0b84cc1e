import fs from 'node:fs';
import type { FileHandle } from 'node:fs/promises';
import fsp from 'node:fs/promises';
import type { Writable } from 'node:stream';
import { CriLogParser, formatEntry, logTimeBefore, parseCriRecord, toLogTime, type CriLogEntry, type LogTime } from './cri-log.ts';

/**
 * Reading a container's CRI log file (cri-log.ts parses its records) the way the kubelet
 * serves `/containerLogs`, as upstream's pkg/kubelet/kuberuntime/logs does: the tail found
 * backwards in bounded chunks, limitBytes, sinceTime, timestamps, and follow (fs.watch with
 * polling, through rotation and truncation).
 */

const NL = 0x0a;
const HEAD_BYTES = 256;
const CHUNK_BYTES = 64 * 1024;
/** How long a follower waits for a rotated-away file's last lines when the new file stays empty. */
const ROTATION_SETTLE_MS = 1000;

/**
 * The byte offset where the last `lines` logical lines of a CRI log begin, found by reading
 * the file backwards in chunks (memory stays bounded whatever the file size). A line ends at
 * an `F` record; a trailing run of `P` records (a line still being written) counts as one
 * line; malformed records count as none. `lines < 0` means the whole file (offset 0).
 */
export async function findTailStart(fh: FileHandle, size: number, lines: number, chunkBytes = CHUNK_BYTES): Promise<number> {
  if (lines < 0 || size === 0) return 0;
  let count = 0;
  let seenRecord = false;
  let end = size; // end (exclusive, newline included) of the record being scanned
  let carry = Buffer.alloc(0); // the first bytes of the file from `pos` on (record heads that span chunks)
  let pos = size;
  const chunk = Buffer.allocUnsafe(Math.min(chunkBytes, size));

  // Visits the record [start, end): true when it is the (lines+1)-th line end from the end.
  const visit = (head: Buffer): boolean => {
    const h = head.length && head[head.length - 1] === NL ? head.subarray(0, head.length - 1) : head;
    const r = parseCriRecord(h);
    if (!r) return false;
    const isLineEnd = !r.partial || !seenRecord;
    seenRecord = true;
    return isLineEnd && ++count > lines;
  };

  while (pos > 0) {
    const len = Math.min(chunk.length, pos);
    const cs = pos - len;
    const { bytesRead } = await fh.read(chunk, 0, len, cs);
    if (bytesRead < len) throw new Error(`short read at offset ${cs}: the file shrank`);
    const view = chunk.subarray(0, len);
    for (let i = len - 1; i >= 0; i--) {
      if (view[i] !== NL) continue;
      const a = cs + i;
      if (a === end - 1) continue; // the current record's own terminator
      const recStart = a + 1;
      const headLen = Math.min(HEAD_BYTES, end - recStart);
      const fromChunk = view.subarray(i + 1, Math.min(len, i + 1 + headLen));
      const head = fromChunk.length >= headLen ? fromChunk : Buffer.concat([fromChunk, carry]).subarray(0, headLen);
      if (visit(head)) return end;
      end = recStart;
    }
    carry = Buffer.from(Buffer.concat([view.subarray(0, Math.min(len, HEAD_BYTES)), carry]).subarray(0, HEAD_BYTES));
    pos = cs;
  }
  // The first record of the file.
  if (end > 0 && visit(carry.subarray(0, Math.min(HEAD_BYTES, end)))) return end;
  return 0;
}

export interface ReadLogOptions {
  /** Only the last N lines (upstream tailLines); undefined or negative: all. */
  tailLines?: number;
  /** Stop after this many bytes of output (the last line is cut). */
  limitBytes?: number;
  /** Prefix each line with its RFC3339Nano (fixed width) timestamp and a space. */
  timestamps?: boolean;
  /** Skip lines older than this (RFC3339 string, Date or LogTime). */
  sinceTime?: Date | string | LogTime;
  /** Keep reading lines as they are appended. */
  follow?: boolean;
  /** Ends a follow (or any read) early; the promise resolves, it does not reject. */
  signal?: AbortSignal;
  /** When following: false once the container stopped; the read ends after draining the file. */
  isRunning?: () => boolean | Promise<boolean>;
  /** When following: how often to look for new data without a file event, and to ask isRunning (ms). */
  pollIntervalMs?: number;
}

/**
 * Writes a container's CRI log file to `out` as the kubelet serves it: the content of each
 * line (both streams), optionally with timestamps, from the tail offset, filtered by
 * sinceTime, cut at limitBytes. With `follow` it then waits for appended lines (fs.watch, with
 * polling as fallback) until the signal aborts, `out` closes, or `isRunning()` says the
 * container stopped and the file is drained. A file replaced under the same path (rotation)
 * is reopened from its start; a truncated one is read again from its start. `out` is not ended.
 */
export async function readContainerLog(file: string, opts: ReadLogOptions, out: Writable): Promise<void> {
  const { signal } = opts;
  const since = opts.sinceTime !== undefined ? toLogTime(opts.sinceTime) : undefined;
  const follow = opts.follow === true;
  const tail = opts.tailLines !== undefined && opts.tailLines >= 0 ? opts.tailLines : undefined;
  const pollMs = opts.pollIntervalMs ?? 500;
  // Without follow, tailLines also caps the output (lines appended meanwhile are not shown).
  let linesLeft = tail !== undefined && !follow ? tail : Infinity;
  let bytesLeft = opts.limitBytes !== undefined && opts.limitBytes > 0 ? opts.limitBytes : Infinity;
  if (linesLeft === 0 || signal?.aborted) return;

  let fh = await fsp.open(file, 'r');
  let waiter: ChangeWaiter | undefined;
  let next: FileHandle | undefined; // the file that replaced `fh` at the path (rotation)
  try {
    const size = (await fh.stat()).size;
    let pos = tail !== undefined ? await findTailStart(fh, size, tail) : 0;
    // Without follow the read is a snapshot of the file as it was when opened.
    const stopAt = follow ? Infinity : size;
    const parser = new CriLogParser();
    const buf = Buffer.allocUnsafe(CHUNK_BYTES);

    /** Writes lines; false when the read must end (a limit reached, out closed, aborted). */
    const emit = async (entries: CriLogEntry[]): Promise<boolean> => {
      for (const e of entries) {
        if (since && logTimeBefore(e.time, since)) continue;
        let data = formatEntry(e, opts.timestamps === true);
        if (data.length > bytesLeft) data = data.subarray(0, bytesLeft);
        bytesLeft -= data.length;
        if (!(await writeOut(out, data, signal))) return false;
        if (bytesLeft <= 0 || --linesLeft <= 0) return false;
      }
      return true;
    };

    let draining = false;
    let lastRunningCheck = 0;
    let nextSeenAt: number | undefined;
    for (;;) {
      if (signal?.aborted) return;
      const want = Math.min(buf.length, stopAt - pos);
      const { bytesRead } = want > 0 ? await fh.read(buf, 0, want, pos) : { bytesRead: 0 };
      if (bytesRead > 0) {
        pos += bytesRead;
        if (!(await emit(parser.push(buf.subarray(0, bytesRead))))) return;
        continue;
      }
      // End of the file (or of the snapshot).
      if (!follow || draining) {
        await emit(parser.end());
        return;
      }
      if (!waiter) {
        waiter = new ChangeWaiter(file);
        continue; // look again: data may have arrived before the watch started
      }
      // Rotation: the path now names another file. The runtime renames the log, then opens
      // the new one and only then swaps its writer, so lines may still land in the old file
      // after the new one appeared. The old file is complete once the new one has data (the
      // writer swapped) or a while passed (a quiet container): read it to its end, then switch.
      if (!next) next = await replacedFile(file, fh);
      if (next) {
        nextSeenAt ??= Date.now();
        const swapped = (await next.stat()).size > 0 || Date.now() - nextSeenAt >= Math.max(4 * pollMs, ROTATION_SETTLE_MS);
        if (swapped) {
          if (!(await drainTo(fh, pos, buf, (chunk) => emit(parser.push(chunk))))) return;
          await fh.close();
          fh = next;
          next = undefined;
          nextSeenAt = undefined;
          pos = 0;
          waiter.close();
          waiter = new ChangeWaiter(file);
          continue;
        }
      }
      if ((await fh.stat()).size < pos) {
        pos = 0;
        continue;
      }
      if (opts.isRunning && Date.now() - lastRunningCheck >= pollMs) {
        lastRunningCheck = Date.now();
        let running = true;
        try {
          running = await opts.isRunning();
        } catch {
          running = false;
        }
        if (!running) {
          draining = true; // read what was written up to the exit, then end
          continue;
        }
      }
      if (out.destroyed || out.writableEnded) return;
      await waiter.wait(pollMs, signal);
    }
  } finally {
    waiter?.close();
    await fh.close().catch(() => {});
    await next?.close().catch(() => {});
  }
}

/** Reads `fh` from `pos` to its end through `emit`; false when emit says the read must end. */
async function drainTo(fh: FileHandle, pos: number, buf: Buffer, emit: (chunk: Buffer) => Promise<boolean>): Promise<boolean> {
  for (;;) {
    const { bytesRead } = await fh.read(buf, 0, buf.length, pos);
    if (bytesRead === 0) return true;
    pos += bytesRead;
    if (!(await emit(buf.subarray(0, bytesRead)))) return false;
  }
}

/** The file now at `file` if it is not the one `fh` has open (the log was rotated). */
async function replacedFile(file: string, fh: FileHandle): Promise<FileHandle | undefined> {
  let st: fs.Stats;
  try {
    st = await fsp.stat(file);
  } catch {
    return undefined; // removed: nothing new to read; isRunning or the signal ends the follow
  }
  const cur = await fh.stat();
  if (st.ino === cur.ino && st.dev === cur.dev) return undefined;
  try {
    return await fsp.open(file, 'r');
  } catch {
    return undefined;
  }
}

/** Writes with backpressure; false when `out` is closed or the signal aborted. */
async function writeOut(out: Writable, data: Buffer, signal: AbortSignal | undefined): Promise<boolean> {
  if (out.destroyed || out.writableEnded || signal?.aborted) return false;
  if (data.length === 0) return true;
  if (out.write(data)) return true;
  await new Promise<void>((resolve) => {
    const done = () => {
      out.off('drain', done);
      out.off('close', done);
      out.off('error', done);
      signal?.removeEventListener('abort', done);
      resolve();
    };
    out.on('drain', done);
    out.on('close', done);
    out.on('error', done);
    signal?.addEventListener('abort', done, { once: true });
  });
  return !out.destroyed && !signal?.aborted;
}

/** Wakes a follower when the file changes (fs.watch), after a poll interval, or on abort. */
class ChangeWaiter {
  private watcher: fs.FSWatcher | undefined;
  private changed = false;
  private wake: (() => void) | undefined;

  constructor(file: string) {
    try {
      this.watcher = fs.watch(file, { persistent: false }, () => this.fire());
      this.watcher.on('error', () => this.closeWatcher());
    } catch {
      this.watcher = undefined; // polling only
    }
  }

  private fire(): void {
    this.changed = true;
    this.wake?.();
  }

  wait(ms: number, signal: AbortSignal | undefined): Promise<void> {
    if (this.changed || signal?.aborted) {
      this.changed = false;
      return Promise.resolve();
    }
    return new Promise<void>((resolve) => {
      const done = () => {
        clearTimeout(timer);
        signal?.removeEventListener('abort', done);
        this.wake = undefined;
        this.changed = false;
        resolve();
      };
      const timer = setTimeout(done, ms);
      signal?.addEventListener('abort', done, { once: true });
      this.wake = done;
    });
  }

  private closeWatcher(): void {
    try {
      this.watcher?.close();
    } catch {
      // already closed
    }
    this.watcher = undefined;
  }

  close(): void {
    this.closeWatcher();
    this.wake?.();
  }
}
