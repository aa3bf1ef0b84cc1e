/**
 * How pull progress reads, in every view (the waiting container's message, `explain`,
 * `pods -w`, the up console): `45.1 / 300 MB (15%), 12 MB/s`. Sizes in decimal units, as
 * `docker pull`, `crictl` and registries print them.
 */
import type { PullSnapshot } from './pull-progress.ts';

const UNITS = ['B', 'kB', 'MB', 'GB', 'TB', 'PB'] as const;

/** The unit a byte count reads best in, and its divisor. */
function unitOf(bytes: number): { unit: string; div: number } {
  let i = 0;
  let div = 1;
  while (i < UNITS.length - 1 && bytes >= div * 1000) {
    div *= 1000;
    i++;
  }
  return { unit: UNITS[i]!, div };
}

/** A number of a unit: one decimal below 100 (`45.1`), none above (`300`), none for bytes. */
function amount(value: number, unit: string): string {
  if (unit === 'B') return String(Math.round(value));
  return value < 100 ? value.toFixed(1).replace(/\.0$/, '') : value.toFixed(0);
}

/** `45.1 MB`, `300 MB`, `512 B`. */
export function formatBytes(bytes: number): string {
  const n = Number.isFinite(bytes) && bytes > 0 ? bytes : 0;
  const { unit, div } = unitOf(n);
  return `${amount(n / div, unit)} ${unit}`;
}

/** `12 MB/s`. */
export function formatRate(bytesPerSecond: number): string {
  return `${formatBytes(bytesPerSecond)}/s`;
}

/**
 * `45.1 / 300 MB (15%), 12 MB/s`; without a total `45.1 MB, 12 MB/s`; a rate only once it is
 * known; `, node-wide` when other pulls ran at the same time and the bytes are shared.
 */
export function formatPullProgress(s: PullSnapshot): string {
  let text: string;
  if (s.totalBytes > 0) {
    const { unit, div } = unitOf(s.totalBytes);
    const done = Math.min(s.doneBytes, s.totalBytes);
    const percent = Math.floor((done / s.totalBytes) * 100);
    text = `${amount(done / div, unit)} / ${amount(s.totalBytes / div, unit)} ${unit} (${percent}%)`;
  } else text = formatBytes(s.doneBytes);
  if (s.bytesPerSecond > 0) text += `, ${formatRate(s.bytesPerSecond)}`;
  if (s.shared) text += ', node-wide';
  return text;
}

/** The waiting container's message while its image pulls: `Pulling image "x": 45.1 / 300 MB (15%), 12 MB/s`. */
export function pullingMessage(image: string, s: PullSnapshot | undefined): string {
  return `Pulling image "${image}"${s ? `: ${formatPullProgress(s)}` : ''}`;
}

/** A finished pull as `explain` shows it: `pulled 48 MB in 6.9s, 7 MB/s` (the size when the runtime tells it). */
export function pulledNote(p: { sizeBytes?: number; pullMs: number }): string {
  const seconds = Math.max(0, p.pullMs) / 1000;
  const time = seconds < 10 ? `${seconds.toFixed(1)}s` : `${Math.round(seconds)}s`;
  if (p.sizeBytes === undefined || !(p.sizeBytes > 0)) return `pulled in ${time}`;
  const rate = seconds > 0 ? `, ${formatRate(p.sizeBytes / seconds)}` : '';
  return `pulled ${formatBytes(p.sizeBytes)} in ${time}${rate}`;
}

const PULLING = /^Pulling image "[^"]*"(?:: (.*))?$/s;
const PERCENT = / \((\d{1,3})%\)/;

/**
 * What a view that prints changes (the up console, `pods -w`) needs of a waiting message:
 * whether it is pull progress, and how far along it is (the percentage, when the total is
 * known), so it can print a line when the pull has moved on noticeably rather than every second.
 */
export function pullProgressOfMessage(message: string | undefined): { percent: number | undefined } | undefined {
  const m = message ? PULLING.exec(message) : null;
  if (!m) return undefined;
  const p = m[1] ? PERCENT.exec(m[1]) : null;
  return { percent: p ? Number(p[1]) : undefined };
}

/** The message without its figures (`Pulling image "x"`): what stays the same while a pull moves on. */
export function withoutProgress(message: string): string {
  return pullProgressOfMessage(message) ? message.replace(/^(Pulling image "[^"]*"):.*$/s, '$1') : message;
}
