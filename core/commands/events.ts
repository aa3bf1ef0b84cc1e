import type { Writable } from 'node:stream';
import yaml from 'js-yaml';
import type { KubeletEvent } from '../events/event-recorder.ts';
import { OUTPUT_OPTION, outputFormat, UsageError } from './command-args.ts';
import { startClientCommand } from './client-command.ts';
import { localGet, unreachableMessage } from './local-kubelet.ts';

export const EVENTS_USAGE = `Usage: kubelet-ts events [-n NAMESPACE] [-w] [-o json|yaml] [--root-dir DIR]
The events of the local kubelet (pods and the node), newest last, as \`kubectl get events\`
shows them: pulls, starts, kills, back-offs, failed mounts and probes. -w keeps following.
It asks the local kubelet on its socket (<rootDir>/kubelet-ts.sock, as root).

Flags:
  -n, --namespace NS       events of this namespace only (default: every namespace)
  -w, --watch              after the list, print each new event as it comes (Ctrl-C to stop)
  -o, --output FORMAT      json or yaml: the events as objects (with -w, json is one line per event
                           and yaml one document per event)
      --json               the same as -o json
      --root-dir DIR       the kubelet's root dir, where its socket is (default: the configured rootDir)
  -h, --help               this help
`;

const OUTPUTS = ['json', 'yaml'] as const;

/** `12s`, `5m3s`, `2h`: how long ago, as kubectl prints an age. */
export function shortAge(ms: number): string {
  const s = Math.max(0, Math.floor(ms / 1000));
  if (s < 120) return `${s}s`;
  const m = Math.floor(s / 60);
  if (m < 10) return `${m}m${s % 60 ? `${s % 60}s` : ''}`;
  if (m < 180) return `${m}m`;
  const h = Math.floor(m / 60);
  if (h < 48) return `${h}h`;
  return `${Math.floor(h / 24)}d`;
}

function objectOf(e: KubeletEvent): string {
  return `${e.involvedObject.kind.toLowerCase()}/${e.involvedObject.name}`;
}

/** Column widths for a followed stream, whose rows are printed one at a time (as `kubectl get -w`). */
const WATCH_WIDTHS = [12, 10, 8, 22, 36, 0];

/** Rows as kubectl prints them: columns padded to the widest cell (at least `minWidths`), three spaces apart. */
export function formatEvents(events: KubeletEvent[], now = Date.now(), minWidths: number[] = []): string {
  const head = ['NAMESPACE', 'LAST SEEN', 'TYPE', 'REASON', 'OBJECT', 'MESSAGE'];
  const rows = events.map((e) => [e.namespace, shortAge(now - Date.parse(e.lastTimestamp)) + (e.count > 1 ? ` (x${e.count})` : ''), e.type, e.reason, objectOf(e), e.message.replace(/\s*\n\s*/g, ' ')]);
  const widths = head.map((h, i) => Math.max(h.length, minWidths[i] ?? 0, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]! + 3))).join('').trimEnd();
  return [line(head), ...rows.map(line)].join('\n') + '\n';
}

/** `kubelet-ts events`: lists (or follows) the local kubelet's events over its local socket. */
export async function eventsCommand(argv: string[], opts: { socketPath: string; stdout?: Writable; stderr?: Writable; signal?: AbortSignal }): Promise<number> {
  const start = startClientCommand({
    name: 'events',
    usage: EVENTS_USAGE,
    options: { namespace: { type: 'string', short: 'n' }, watch: { type: 'boolean', short: 'w' }, ...OUTPUT_OPTION, json: { type: 'boolean' } },
    maxPositionals: 0,
    check: ({ values }) => {
      const o = outputFormat(values.output, OUTPUTS);
      if (values.json && o !== undefined && o !== 'json') throw new UsageError(`--json and -o ${o} exclude each other`);
    },
  }, argv, opts);
  if ('exit' in start) return start.exit;
  const { values, socketPath, out, err } = start;
  const output = values.json ? 'json' : outputFormat(values.output, OUTPUTS);
  const ns = values.namespace;
  const keep = (e: KubeletEvent) => !ns || e.namespace === ns;
  const watch = values.watch === true;
  let res;
  try {
    res = await localGet(socketPath, `/debug/events${watch ? '?watch=true' : ''}`, { timeoutMs: 5000, ...(opts.signal ? { signal: opts.signal } : {}) });
  } catch (e) {
    if ((e as Error).name === 'AbortError') return 0;
    err.write(`${unreachableMessage('events', socketPath, e)}\n`);
    return 1;
  }
  const response = res;
  return new Promise<number>((resolve) => {
    const res = response;
    {
      if (res.statusCode !== 200) {
        err.write(`kubelet-ts events: the kubelet answered HTTP ${res.statusCode}\n`);
        res.resume();
        return resolve(1);
      }
      res.setEncoding('utf8');
      if (!watch) {
        let body = '';
        res.on('data', (d: string) => (body += d));
        res.on('end', () => {
          const items = ((JSON.parse(body) as { items: KubeletEvent[] }).items ?? []).filter(keep);
          if (output === 'json') out.write(`${JSON.stringify(items, null, 2)}\n`);
          else if (output === 'yaml') out.write(yaml.dump(items, { noRefs: true }));
          else out.write(items.length ? formatEvents(items) : 'No events found.\n');
          resolve(0);
        });
        return;
      }
      // Follow: each JSON line is one event; print it as a row (the header once).
      let buf = '';
      let headerDone = false;
      res.on('data', (d: string) => {
        buf += d;
        let nl: number;
        while ((nl = buf.indexOf('\n')) >= 0) {
          const lineText = buf.slice(0, nl);
          buf = buf.slice(nl + 1);
          const e = JSON.parse(lineText) as KubeletEvent;
          if (!keep(e)) continue;
          if (output === 'json') out.write(`${lineText}\n`);
          else if (output === 'yaml') out.write(`---\n${yaml.dump(e, { noRefs: true })}`);
          else {
            const table = formatEvents([e], Date.now(), WATCH_WIDTHS).split('\n');
            if (!headerDone) out.write(`${table[0]}\n`);
            headerDone = true;
            out.write(`${table[1]}\n`);
          }
        }
      });
      res.on('end', () => resolve(0));
      // A follow ends when the caller aborts (Ctrl-C) or the kubelet goes away.
      res.on('error', () => resolve(opts.signal?.aborted ? 0 : 1));
      res.on('aborted', () => resolve(opts.signal?.aborted ? 0 : 1));
    }
  });
}
