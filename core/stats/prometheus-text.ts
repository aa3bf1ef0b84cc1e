/**
 * Prometheus text exposition (format 0.0.4) for the kubelet's hand-made metric pages
 * (`/metrics/resource`, `/metrics/cadvisor`): families written in the order they were declared,
 * each with HELP and TYPE, samples optionally stamped with the time they were measured (so
 * rates come out right whatever the scrape time).
 */

export const PROM_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

type Labels = Record<string, string>;

const escape = (v: string) => v.replace(/\\/g, '\\\\').replace(/"/g, '\\"').replace(/\n/g, '\\n');
const labelText = (l: Labels) => {
  const parts = Object.entries(l).map(([k, v]) => `${k}="${escape(v)}"`);
  return parts.length ? `{${parts.join(',')}}` : '';
};

export class PrometheusText {
  private readonly families: Array<{ name: string; help: string; type: 'counter' | 'gauge'; samples: string[] }> = [];

  /** Declares a family; the returned function adds a sample (`time`: an RFC 3339 time, left out when it does not parse). */
  family(name: string, help: string, type: 'counter' | 'gauge'): (labels: Labels, value: number, time?: string) => void {
    const f = { name, help, type, samples: [] as string[] };
    this.families.push(f);
    return (labels, value, time) => {
      const ms = time !== undefined ? Date.parse(time) : NaN;
      f.samples.push(`${name}${labelText(labels)} ${value}${Number.isFinite(ms) ? ` ${ms}` : ''}`);
    };
  }

  text(): string {
    return this.families.map((f) => [`# HELP ${f.name} ${f.help}`, `# TYPE ${f.name} ${f.type}`, ...f.samples].join('\n')).join('\n') + '\n';
  }
}
