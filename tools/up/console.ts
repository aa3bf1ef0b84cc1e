/**
 * The console of `npm run up` / `scripts/up.sh`: timestamped lines, long ones wrapped (never
 * cut: a pull failure's cause is at its end), and writes that survive the console going away.
 * `scripts/up.sh | tee log` and Ctrl-C: tee dies first, and the next write gets EPIPE. Node
 * reports that as an 'error' event on process.stdout, which without a listener kills the
 * process before it has stopped the kubelet, containerd and the pods. Here the console just
 * goes quiet and the stop goes on.
 */
import type { Writable } from 'node:stream';

/** Wrap width when the output is no terminal (a pipe to tee, a file). */
const DEFAULT_WIDTH = 120;
/** Narrower than this and wrapping would do more harm than good. */
const MIN_WIDTH = 60;
const CLOCK_WIDTH = 8;
const GAP = '  ';

export class UpConsole {
  private closed = false;

  constructor(
    private readonly out: Writable & { columns?: number; isTTY?: boolean } = process.stdout,
    private readonly now: () => Date = () => new Date(),
  ) {
    // A console that went away (EPIPE, EBADF) is no reason to leave the node behind.
    out.on('error', () => {
      this.closed = true;
    });
  }

  /** False once the console went away; what is said then is dropped. */
  get open(): boolean {
    return !this.closed && !this.out.destroyed;
  }

  /** `HH:MM:SS  text`, wrapped at the terminal's width with continuation lines indented under the text. */
  say(text: string): void {
    const clock = this.now().toTimeString().slice(0, CLOCK_WIDTH);
    this.write(wrap(`${clock}${GAP}${text}`, this.width(), CLOCK_WIDTH + GAP.length));
  }

  /** Text as it is (a log tail), each line wrapped. */
  raw(text: string): void {
    this.write(wrap(text, this.width(), 2));
  }

  private width(): number {
    const columns = this.out.isTTY ? this.out.columns : undefined;
    return Math.max(MIN_WIDTH, columns ?? DEFAULT_WIDTH);
  }

  private write(text: string): void {
    if (!this.open) return;
    try {
      this.out.write(`${text}\n`);
    } catch {
      // A synchronous failure (a destroyed stream): the console is gone.
      this.closed = true;
    }
  }
}

/**
 * Wraps each line of `text` to `width` columns at spaces (a word longer than a line is split),
 * indenting continuation lines by `indent`.
 */
export function wrap(text: string, width: number, indent: number): string {
  const pad = ' '.repeat(indent);
  const out: string[] = [];
  for (const line of text.split('\n')) {
    let rest = line;
    let first = true;
    while (true) {
      const room = first ? width : width - indent;
      const prefix = first ? '' : pad;
      if (rest.length <= room) {
        out.push(prefix + rest);
        break;
      }
      let cut = rest.lastIndexOf(' ', room);
      if (cut <= (first ? indent : 0)) cut = room;
      out.push(prefix + rest.slice(0, cut).trimEnd());
      rest = rest.slice(cut).trimStart();
      first = false;
      if (!rest) break;
    }
  }
  return out.join('\n');
}
