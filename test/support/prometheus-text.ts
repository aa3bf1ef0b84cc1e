/**
 * A strict reader of Prometheus's text exposition format (0.0.4), for tests that scrape the
 * kubelet's metric pages: every line is a `# HELP`, a `# TYPE` or a sample of a family whose
 * TYPE came first; label values unescaped; anything else throws, naming the line.
 */
export interface PromSample { labels: Record<string, string>; value: number; timestampMs?: number }
export interface PromFamily { name: string; type: string; help: string; samples: PromSample[] }

const NAME = '[a-zA-Z_:][a-zA-Z0-9_:]*';
const SAMPLE = new RegExp(`^(${NAME})(?:\\{(.*)\\})? (\\S+)(?: (-?\\d+))?$`);
const LABEL = /\s*([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*(,|$)/y;

export function parsePrometheusText(text: string): Map<string, PromFamily> {
  const families = new Map<string, PromFamily>();
  const lines = text.split('\n');
  if (lines.pop() !== '') throw new Error('the text does not end with a newline');
  for (const [i, line] of lines.entries()) {
    const where = `line ${i + 1} (${JSON.stringify(line.slice(0, 120))})`;
    const meta = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
    if (meta) {
      const [, kind, name, rest] = meta as unknown as [string, string, string, string];
      const f = families.get(name) ?? { name, type: '', help: '', samples: [] };
      if (kind === 'TYPE') {
        if (!['counter', 'gauge', 'histogram', 'summary', 'untyped'].includes(rest)) throw new Error(`${where}: unknown type`);
        f.type = rest;
      } else f.help = rest;
      families.set(name, f);
      continue;
    }
    if (line === '' || line.startsWith('#')) continue;
    const m = SAMPLE.exec(line);
    if (!m) throw new Error(`${where}: not a sample`);
    const [, name, labelText, value, ts] = m as unknown as [string, string, string | undefined, string, string | undefined];
    const base = name.replace(/_(bucket|sum|count)$/, '');
    const family = families.get(name) ?? families.get(base);
    if (!family?.type) throw new Error(`${where}: a sample of ${name} before its # TYPE`);
    const labels: Record<string, string> = {};
    if (labelText) {
      LABEL.lastIndex = 0;
      while (LABEL.lastIndex < labelText.length) {
        const lm = LABEL.exec(labelText);
        if (!lm) throw new Error(`${where}: bad labels`);
        labels[lm[1]!] = lm[2]!.replace(/\\(["\\n])/g, (_s, c: string) => (c === 'n' ? '\n' : c));
      }
    }
    const v = Number(value === '+Inf' ? Infinity : value === '-Inf' ? -Infinity : value);
    if (Number.isNaN(v) && value !== 'NaN') throw new Error(`${where}: bad value`);
    family.samples.push({ labels, value: v, ...(ts ? { timestampMs: Number(ts) } : {}) });
  }
  return families;
}
