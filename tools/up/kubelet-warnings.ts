/**
 * The kubelet's warnings and errors on the up console, in plain words: the kubelet writes
 * them as JSON lines to its log file (`.node/kubelet.log`), where an operator watching the
 * console would never see that a manifest is broken, an image cannot be pulled, or a
 * container crash-loops. The follower reads what the file gained since the last look (the
 * file is ours: up.ts made it and the kubelet appends to it), keeps lines at warn level and
 * above, turns each into one sentence, and says a repeated one again only after a while,
 * with how often it came meanwhile.
 */
import { open } from 'node:fs/promises';
import { relative } from 'node:path';

/** pino's numeric levels. */
const WARN = 40;
const ERROR = 50;
/** The same warning again within this time is counted, not printed. */
const REPEAT_QUIET_MS = 5 * 60_000;
/** At most this much of the file is read per look (a burst of logging must not stall the console). */
const MAX_READ_BYTES = 1 << 20;

/** The fields of a kubelet log line this view reads. */
interface LogLine {
  level?: number;
  msg?: string;
  err?: string | { message?: string };
  file?: string;
  pod?: string;
  object?: string;
  event?: string;
  keptPod?: string;
  image?: string;
}

/** Log lines that only repeat what another line (an event) already says in better words. */
const REDUNDANT = new Set(['image pull failed', 'pod worker operation failed']);

/**
 * One kubelet log line as a sentence, or undefined for lines below warn and redundant ones.
 * `cwd` makes file names short (`examples/web.yaml`).
 */
export function describeLogLine(line: LogLine, cwd: string): string | undefined {
  if ((line.level ?? 0) < WARN || !line.msg) return undefined;
  const label = (line.level ?? 0) >= ERROR ? 'error' : 'warning';
  const err = typeof line.err === 'string' ? line.err : line.err?.message;
  if (REDUNDANT.has(line.msg)) return undefined;
  // Events (a failed pull with its cause, a crash loop's back-off, a failed mount) say it all.
  if (line.event) {
    // "Error: ErrImagePull" after "Failed to pull image ...: cause" adds nothing but the reason.
    if (/^Error: \w+$/.test(line.msg)) return undefined;
    return `${label}: ${(line.object ?? line.pod ?? 'node').replace(/^pod\//, '')}: ${line.msg}`;
  }
  // A manifest problem: the file, then what is wrong in it (line and column for a syntax error).
  if (line.file) {
    const file = relative(cwd, line.file) || line.file;
    const what = (err ?? line.msg).replace(/^static pod manifest [^:]*: /, '');
    // The message says what the kubelet does about it; with the reason in `err`, say it after.
    const consequence = !err ? '' : line.msg.includes('keeps running') ? '; its pod keeps running as last read' : line.msg.includes('ignoring') ? '; no pod from it' : '';
    return `${label}: ${file}: ${what}${consequence}`;
  }
  const about = line.pod ? `${line.pod}: ` : '';
  return `${label}: ${about}${line.msg}${err ? `: ${err}` : ''}`;
}

/** Follows the kubelet's log file and hands each new warning, in plain words, to `say`. */
export class KubeletWarningFollower {
  private offset = 0;
  private partial = '';
  private readonly lastSaid = new Map<string, { at: number; repeats: number }>();

  constructor(private readonly opts: { file: string; cwd: string; say: (text: string) => void; now?: () => number }) {}

  /** Reads what the file gained and reports its warnings. Never throws. */
  async poll(): Promise<void> {
    let text: string;
    try {
      const fh = await open(this.opts.file, 'r');
      try {
        const { size } = await fh.stat();
        if (size < this.offset) this.offset = 0; // truncated: a new kubelet
        const length = Math.min(size - this.offset, MAX_READ_BYTES);
        if (length <= 0) return;
        const buf = Buffer.alloc(length);
        const { bytesRead } = await fh.read(buf, 0, length, this.offset);
        this.offset += bytesRead;
        text = this.partial + buf.subarray(0, bytesRead).toString('utf8');
      } finally {
        await fh.close();
      }
    } catch {
      return; // not there yet
    }
    const lines = text.split('\n');
    this.partial = lines.pop() ?? '';
    for (const raw of lines) {
      if (!raw.startsWith('{')) continue;
      let parsed: LogLine;
      try {
        parsed = JSON.parse(raw) as LogLine;
      } catch {
        continue;
      }
      const sentence = describeLogLine(parsed, this.opts.cwd);
      if (sentence) this.report(sentence);
    }
  }

  private report(sentence: string): void {
    const now = (this.opts.now ?? Date.now)();
    const last = this.lastSaid.get(sentence);
    if (last && now - last.at < REPEAT_QUIET_MS) {
      last.repeats++;
      return;
    }
    this.lastSaid.set(sentence, { at: now, repeats: 0 });
    this.opts.say(last?.repeats ? `${sentence} (${last.repeats} more time${last.repeats > 1 ? 's' : ''} since it was last shown)` : sentence);
  }
}
