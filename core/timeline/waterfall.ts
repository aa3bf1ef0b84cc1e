import type { PodStartTimeline, TimelineStep } from './pod-timeline.ts';
import type { PullSnapshot } from '../runtime/pull-progress.ts';
import { formatPullProgress } from '../runtime/pull-progress-format.ts';

const BAR_WIDTH = 40;
/** The step column's width at most; a longer label gets a line of its own, never cut. */
const MAX_LABEL_WIDTH = 48;

/** One row of the waterfall: a step, or a step tried again and again merged into one. */
interface Row {
  label: string;
  startMs: number;
  endMs: number;
  /** Time spent in the step, summed over its attempts. */
  durationMs: number;
  attempts: number;
  failures: number;
  /** The last failure's message. */
  error: string | undefined;
  /** The last failure that says why (a back-off only says that an earlier failure is waited out). */
  cause: string | undefined;
  /** Whether the last attempt failed (the step has not succeeded since). */
  failing: boolean;
  /** An attempt is running now (its time so far is in the row); what it tells of its progress. */
  running: boolean;
  step: string;
  progress: PullSnapshot | undefined;
  /** The last successful attempt's note (`pulled 48 MB in 6.9s, 7 MB/s`). */
  note: string | undefined;
}

const labelOf = (s: TimelineStep) => (s.detail ? `${s.step} (${s.detail})` : s.step);

/**
 * Merges the attempts of one step (the same step of the same thing: an image pull in
 * back-off, a volume retried every second) into one row, placed where the first began.
 */
function mergeAttempts(steps: TimelineStep[]): Row[] {
  const rows = new Map<string, Row>();
  for (const s of steps) {
    const label = labelOf(s);
    const end = s.lastEndMs ?? s.startMs + s.durationMs;
    // An entry may already stand for several failed attempts in a row (PodTimelines.record).
    const attempts = s.attempts ?? 1;
    const row = rows.get(label);
    if (!row) {
      rows.set(label, {
        label, startMs: s.startMs, endMs: end, durationMs: s.durationMs, attempts: s.running ? 0 : attempts, failures: s.error ? attempts : 0,
        error: s.error, cause: causeOf(s.error), failing: !!s.error, running: !!s.running, step: s.step, progress: s.progress, note: s.note,
      });
      continue;
    }
    row.endMs = Math.max(row.endMs, end);
    row.durationMs += s.durationMs;
    // The attempt running now is no try yet: it neither failed nor succeeded.
    if (s.running) {
      row.running = true;
      row.failing = false;
      row.progress = s.progress;
      continue;
    }
    row.note = s.note ?? row.note;
    row.attempts += attempts;
    if (s.error) {
      row.failures += attempts;
      row.error = s.error;
      row.cause = causeOf(s.error) ?? row.cause;
    }
    row.failing = !!s.error;
  }
  return [...rows.values()];
}

const causeOf = (error: string | undefined) => (error && !/back-?off/i.test(error) ? error : undefined);

/**
 * `failed: why` for a step that has not succeeded; `failed 3 of 4 tries, then succeeded` for
 * one that did; `pulling: 45.1 / 300 MB (15%), 12 MB/s` for a pull going on now, and what a
 * finished step notes of itself (`pulled 48 MB in 6.9s, 7 MB/s`).
 */
function outcome(r: Row): string {
  if (r.running) {
    const doing = r.step === 'image' ? 'pulling' : 'running';
    const before = r.failures ? ` (after ${r.failures} failed ${r.failures === 1 ? 'try' : 'tries'}: ${r.cause ?? r.error})` : '';
    return `  ${doing}${r.progress ? `: ${formatPullProgress(r.progress)}` : ''}${before}`;
  }
  const note = r.note && !r.failing ? `  ${r.note}` : '';
  if (!r.failures) return note;
  const tries = r.attempts > 1 ? ` ${r.failures === r.attempts ? `all ${r.attempts} tries` : `${r.failures} of ${r.attempts} tries`}` : '';
  const why = r.cause && r.cause !== r.error ? `${r.cause} (now ${r.error})` : r.error;
  return r.failing ? `  failed${tries}: ${why}` : `  failed${tries}, then succeeded (last error: ${r.cause ?? r.error})${note}`;
}

/**
 * Renders a start timeline as a terminal waterfall: one line per step with its offset from
 * when the kubelet saw the pod, its duration, and a bar placed on a common time axis. Repeated
 * attempts of a step are one row with their count (`×37`); a failed step says so and why.
 */
export function renderWaterfall(t: PodStartTimeline, opts: { color?: boolean } = {}): string {
  const end = Math.max(t.readyMs ?? 0, ...t.steps.map((s) => s.startMs + s.durationMs), t.seenMs + 1);
  const span = end - t.seenMs;
  const rows = mergeAttempts(t.steps);
  // Attempts shown: the finished ones and the one running now.
  const shown = (r: Row) => r.attempts + (r.running ? 1 : 0);
  const title = (r: Row) => (shown(r) > 1 ? `${r.label} ×${shown(r)}` : r.label);
  const width = Math.min(MAX_LABEL_WIDTH, Math.max(12, ...rows.map((r) => title(r).length).filter((n) => n <= MAX_LABEL_WIDTH)));
  const lines: string[] = [];
  const total = t.readyMs !== undefined ? `Ready after ${t.readyMs - t.seenMs} ms` : `not Ready yet (${span} ms so far)`;
  lines.push(`${t.namespace}/${t.name}  seen ${new Date(t.seenMs).toISOString()}  ${total}`);
  lines.push(`  ${'step'.padEnd(width)}  ${'start'.padStart(8)}  ${'took'.padStart(8)}`);
  for (const r of rows) {
    const offset = r.startMs - t.seenMs;
    const from = Math.min(Math.floor((offset / span) * BAR_WIDTH), BAR_WIDTH - 1);
    // A merged row's bar covers its first attempt's start to its last attempt's end.
    const len = Math.max(1, Math.round(((shown(r) > 1 ? r.endMs - r.startMs : r.durationMs) / span) * BAR_WIDTH));
    const bar = ' '.repeat(from) + (r.failing ? 'x' : '█').repeat(Math.min(len, BAR_WIDTH - from));
    const name = title(r);
    // Too long for the column: the label on a line of its own, the figures below it.
    if (name.length > width) lines.push(`  ${name}`);
    const text = `  ${(name.length > width ? '' : name).padEnd(width)}  ${`${offset} ms`.padStart(8)}  ${`${r.durationMs} ms`.padStart(8)}  |${bar.padEnd(BAR_WIDTH)}|${outcome(r)}`;
    lines.push(opts.color && r.failing ? `\x1b[31m${text}\x1b[0m` : text);
  }
  return `${lines.join('\n')}\n`;
}
