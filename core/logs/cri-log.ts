/**
 * The CRI container log format (what containerd and CRI-O write under the pod's log
 * directory, as upstream's pkg/kubelet/kuberuntime/logs reads it): one record per line,
 *
 *   <RFC3339Nano timestamp> <stdout|stderr> <tag> <content>\n
 *
 * where the first `:`-separated part of the tag is `P` for a partial record (a long line the
 * runtime split; its content has no newline) or `F` for the record that ends a line. This
 * module parses records and joins partial records into logical lines (per stream); reading a
 * log file the way the kubelet serves `/containerLogs` (tail, follow, ...) is log-follower.ts.
 */

export type LogStream = 'stdout' | 'stderr';

/** A point in time with nanosecond precision: seconds since the epoch and nanoseconds. */
export interface LogTime { sec: number; nsec: number }

/** One record (one file line) of a CRI log. */
export interface CriLogRecord {
  /** The timestamp as written. */
  timestamp: string;
  time: LogTime;
  stream: LogStream;
  /** Tag `P`: the line continues in the next record of the same stream. */
  partial: boolean;
  /** The content, without the record's terminating newline. */
  content: Buffer;
}

/** One logical line: the joined content of its partial records and the record that ends it. */
export interface CriLogEntry {
  /** The timestamp of the line's first record, as written. */
  timestamp: string;
  time: LogTime;
  stream: LogStream;
  /** The line's content without its newline. */
  log: Buffer;
  /**
   * False when the file ended in the middle of the line (no `F` record, or its last record has
   * no newline yet): it is written without a newline, as upstream does.
   */
  complete: boolean;
}

const SPACE = 0x20;
const NL = 0x0a;
/** RFC3339 with optional fraction (Go's RFC3339NanoLenient as the kubelet parses it). */
const TIMESTAMP = /^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:\.(\d{1,9}))?(Z|z|[+-]\d{2}:\d{2})$/;

/** Parses an RFC3339(Nano) timestamp; undefined when it is not one. */
export function parseLogTime(s: string): LogTime | undefined {
  const m = TIMESTAMP.exec(s);
  if (!m) return undefined;
  const zone = m[3] === 'z' ? 'Z' : m[3]!;
  const ms = Date.parse(`${m[1]}${zone}`);
  if (Number.isNaN(ms)) return undefined;
  return { sec: Math.floor(ms / 1000), nsec: Number((m[2] ?? '').padEnd(9, '0')) };
}

/**
 * Formats a written timestamp as Go's RFC3339NanoFixed (`2006-01-02T15:04:05.000000000Z07:00`),
 * the form upstream's kubelet prefixes lines with when `timestamps=true`.
 */
export function fixedTimestamp(s: string): string {
  const m = TIMESTAMP.exec(s);
  if (!m) return s;
  const zone = m[3] === 'z' || m[3] === '+00:00' || m[3] === '-00:00' ? 'Z' : m[3]!;
  return `${m[1]}.${(m[2] ?? '').padEnd(9, '0')}${zone}`;
}

export function logTimeBefore(a: LogTime, b: LogTime): boolean {
  return a.sec < b.sec || (a.sec === b.sec && a.nsec < b.nsec);
}

export function toLogTime(t: Date | string | LogTime): LogTime {
  if (t instanceof Date) {
    const ms = t.getTime();
    return { sec: Math.floor(ms / 1000), nsec: (((ms % 1000) + 1000) % 1000) * 1e6 };
  }
  if (typeof t === 'string') {
    const parsed = parseLogTime(t);
    if (!parsed) throw new Error(`invalid time ${JSON.stringify(t)}: expected RFC3339`);
    return parsed;
  }
  return t;
}

/**
 * Parses one record (a file line without its newline). Returns undefined for a malformed
 * record (no timestamp, an unknown stream, no tag), which upstream skips.
 */
export function parseCriRecord(line: Buffer): CriLogRecord | undefined {
  const i1 = line.indexOf(SPACE);
  if (i1 <= 0) return undefined;
  const timestamp = line.toString('latin1', 0, i1);
  const time = parseLogTime(timestamp);
  if (!time) return undefined;
  const i2 = line.indexOf(SPACE, i1 + 1);
  if (i2 < 0) return undefined;
  const stream = line.toString('latin1', i1 + 1, i2);
  if (stream !== 'stdout' && stream !== 'stderr') return undefined;
  const i3 = line.indexOf(SPACE, i2 + 1);
  if (i3 < 0) return undefined;
  // The tag field may carry more `:`-separated tags in the future; the first is P or F.
  const tag = line.toString('latin1', i2 + 1, i3).split(':')[0];
  return { timestamp, time, stream, partial: tag === 'P', content: line.subarray(i3 + 1) };
}

/**
 * A streaming parser: feed it file bytes, get complete logical lines back. Partial records
 * are joined per stream (stdout and stderr may interleave); malformed records are skipped
 * and counted. Buffers returned never alias the input, so callers may reuse their buffers.
 */
export class CriLogParser {
  /** Records that could not be parsed (skipped, as upstream does). */
  malformed = 0;
  private rest: Buffer[] = [];
  private readonly pending = new Map<LogStream, { first: CriLogRecord; parts: Buffer[] }>();

  /** Feeds bytes; returns the lines completed by them. */
  push(chunk: Buffer): CriLogEntry[] {
    const out: CriLogEntry[] = [];
    let start = 0;
    for (let nl = chunk.indexOf(NL); nl >= 0; nl = chunk.indexOf(NL, start)) {
      let line = chunk.subarray(start, nl);
      if (this.rest.length) {
        line = Buffer.concat([...this.rest, line]);
        this.rest = [];
      }
      const e = this.record(line);
      if (e) out.push(e);
      start = nl + 1;
    }
    if (start < chunk.length) this.rest.push(Buffer.from(chunk.subarray(start)));
    return out;
  }

  /** True when bytes of an unterminated record are buffered. */
  get hasIncompleteRecord(): boolean {
    return this.rest.length > 0;
  }

  /**
   * The input ended: parses an unterminated last record (upstream reads it too) and flushes
   * lines whose final record never came (as `complete: false`).
   */
  end(): CriLogEntry[] {
    const out: CriLogEntry[] = [];
    if (this.rest.length) {
      const line = Buffer.concat(this.rest);
      this.rest = [];
      // Upstream reads an unterminated last record too, and writes it without a newline.
      const e = this.record(line);
      if (e) out.push({ ...e, complete: false });
    }
    const pending = [...this.pending.values()].sort((a, b) => (logTimeBefore(a.first.time, b.first.time) ? -1 : 1));
    this.pending.clear();
    for (const p of pending) out.push(entry(p.first, Buffer.concat(p.parts), false));
    return out;
  }

  /** Parses one record (a line without its newline); returns the line it completes, if any. */
  record(line: Buffer): CriLogEntry | undefined {
    const r = parseCriRecord(line);
    if (!r) {
      this.malformed++;
      return undefined;
    }
    const p = this.pending.get(r.stream);
    if (r.partial) {
      if (p) p.parts.push(Buffer.from(r.content));
      else this.pending.set(r.stream, { first: r, parts: [Buffer.from(r.content)] });
      return undefined;
    }
    if (!p) return entry(r, Buffer.from(r.content), true);
    this.pending.delete(r.stream);
    return entry(p.first, Buffer.concat([...p.parts, r.content]), true);
  }
}

function entry(r: CriLogRecord, log: Buffer, complete: boolean): CriLogEntry {
  return { timestamp: r.timestamp, time: r.time, stream: r.stream, log, complete };
}

/** Parses a whole CRI log (for tests and small files). */
export function parseCriLog(data: string | Buffer): CriLogEntry[] {
  const p = new CriLogParser();
  return [...p.push(typeof data === 'string' ? Buffer.from(data) : data), ...p.end()];
}

/** A line as the kubelet writes it: optionally prefixed by its fixed-width timestamp and a space. */
export function formatEntry(e: CriLogEntry, timestamps: boolean): Buffer {
  const parts: Buffer[] = [];
  if (timestamps) parts.push(Buffer.from(`${fixedTimestamp(e.timestamp)} `));
  parts.push(e.log);
  if (e.complete) parts.push(Buffer.from('\n'));
  return Buffer.concat(parts);
}
