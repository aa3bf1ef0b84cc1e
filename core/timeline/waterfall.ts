import type { PodStartTimeline } from './pod-timeline.ts';

const BAR_WIDTH = 40;

/**
 * Renders a start timeline as a terminal waterfall: one line per step with its offset from
 * when the kubelet saw the pod, its duration, and a bar placed on a common time axis.
 */
export function renderWaterfall(t: PodStartTimeline, opts: { color?: boolean } = {}): string {
  const end = Math.max(t.readyMs ?? 0, ...t.steps.map((s) => s.startMs + s.durationMs), t.seenMs + 1);
  const span = end - t.seenMs;
  const label = (s: PodStartTimeline['steps'][number]) => (s.detail ? `${s.step} (${s.detail})` : s.step);
  const width = Math.min(48, Math.max(12, ...t.steps.map((s) => label(s).length)));
  const lines: string[] = [];
  const total = t.readyMs !== undefined ? `Ready after ${t.readyMs - t.seenMs} ms` : `not Ready yet (${span} ms so far)`;
  lines.push(`${t.namespace}/${t.name}  seen ${new Date(t.seenMs).toISOString()}  ${total}`);
  lines.push(`  ${'step'.padEnd(width)}  ${'start'.padStart(8)}  ${'took'.padStart(8)}`);
  for (const s of t.steps) {
    const offset = s.startMs - t.seenMs;
    const from = Math.floor((offset / span) * BAR_WIDTH);
    const len = Math.max(1, Math.round((s.durationMs / span) * BAR_WIDTH));
    const bar = ' '.repeat(Math.min(from, BAR_WIDTH - 1)) + (s.error ? 'x' : '█').repeat(Math.min(len, BAR_WIDTH - Math.min(from, BAR_WIDTH - 1)));
    const text = `  ${label(s).slice(0, width).padEnd(width)}  ${`${offset} ms`.padStart(8)}  ${`${s.durationMs} ms`.padStart(8)}  |${bar.padEnd(BAR_WIDTH)}|`;
    lines.push(s.error ? `${text}  failed: ${s.error}` : text);
    if (opts.color && s.error) lines[lines.length - 1] = `\x1b[31m${lines[lines.length - 1]}\x1b[0m`;
  }
  return `${lines.join('\n')}\n`;
}
