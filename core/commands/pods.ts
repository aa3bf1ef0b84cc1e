/**
 * `kubelet-ts pods` (alias `kubelet-ts get pods`): the local kubelet's pods as `kubectl get
 * pods` shows them, read from its local socket (GET /pods), so an operator needs neither an
 * API server nor curl and jq. `-w` follows: the socket has no pod watch, so the list is read
 * again every second and a pod's row is printed each time it changes, as kubectl's watch
 * prints one row per event. While an image pulls, the pod's row is printed again with the pull's
 * progress after it when the pull has moved on (core/commands/pull-progress-throttle.ts): its
 * STATUS stays ContainerCreating as in kubectl, and the progress is the waiting message.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Writable } from 'node:stream';
import { setTimeout as sleep } from 'node:timers/promises';
import yaml from 'js-yaml';
import { OUTPUT_OPTION, outputFormat, UsageError } from './command-args.ts';
import { startClientCommand } from './client-command.ts';
import { localGet, readBody, unreachableMessage } from './local-kubelet.ts';
import { podRow, type PodRow } from './pod-columns.ts';
import { columnWidths, headerLine, podTable, rowLine, type TableShape } from './pod-table.ts';
import { PullProgressThrottle, pullMessagesOf } from './pull-progress-throttle.ts';
import { podFullName } from '../objects/pod-util.ts';

export const PODS_USAGE = `Usage: kubelet-ts pods [NAME...] [-n NAMESPACE | -A] [-o wide|json|yaml|name] [-w] [--root-dir DIR]
       kubelet-ts get pods ...      the same
The local kubelet's pods as kubectl get pods shows them: NAME READY STATUS RESTARTS AGE, with
STATUS computed as kubectl computes it (Init:1/2, CrashLoopBackOff, ImagePullBackOff,
Terminating, Completed, OOMKilled, ...). It asks the kubelet on its local socket
(<rootDir>/kubelet-ts.sock, as root). NAME is a pod's name or a static pod's manifest name.

Flags:
  -n, --namespace NS       pods of this namespace (default: "default")
  -A, --all-namespaces     pods of every namespace, with a NAMESPACE column
  -o, --output FORMAT      wide (adds IP and NODE, and EPHEMERAL: kubectl debug containers and
                           their states, when a pod has them), json, yaml or name
  -w, --watch              after the list, print a pod's row each time it changes (Ctrl-C to stop);
                           while an image pulls, its row again with the progress after it, when
                           it has moved on (every 10 %, at most every 2 s):
                           big-vm   0/1   ContainerCreating   0   9s      Pulling image "r/big:1": 45.1 / 300 MB (15%), 12 MB/s
      --root-dir DIR       the kubelet's root dir, where its socket is (default: the configured rootDir)
  -h, --help               this help
`;

const OUTPUTS = ['wide', 'json', 'yaml', 'name'] as const;
type Output = (typeof OUTPUTS)[number] | 'table';
/** How often a watch reads the pod list again. */
const WATCH_POLL_MS = 1000;
/** Column widths a watch starts with, so rows of pods that come later mostly still line up. */
const WATCH_MIN_WIDTHS = { name: 24, status: 18 };

export interface PodsCommandOptions {
  socketPath: string;
  stdout?: Writable;
  stderr?: Writable;
  /** Ends a watch (Ctrl-C). */
  signal?: AbortSignal;
  /** The clock for ages (tests). */
  now?: () => number;
  /** Watch poll period (tests). */
  pollMs?: number;
}

/** `kubelet-ts pods`: returns the exit code (0 done, 1 the kubelet is unreachable, 2 usage). */
export async function podsCommand(argv: string[], opts: PodsCommandOptions): Promise<number> {
  const now = opts.now ?? Date.now;
  const start = startClientCommand({
    name: 'pods',
    usage: PODS_USAGE,
    options: {
      namespace: { type: 'string', short: 'n' },
      'all-namespaces': { type: 'boolean', short: 'A' },
      ...OUTPUT_OPTION,
      watch: { type: 'boolean', short: 'w' },
    },
    maxPositionals: Infinity,
    check: ({ values }) => {
      outputFormat(values.output, OUTPUTS);
      if (values['all-namespaces'] && values.namespace !== undefined) throw new UsageError('-A and -n exclude each other');
    },
  }, argv, opts);
  if ('exit' in start) return start.exit;
  const { values, socketPath, out, err } = start;
  const output: Output = outputFormat(values.output, OUTPUTS) ?? 'table';
  const allNamespaces = values['all-namespaces'] === true;
  const namespace = values.namespace ?? 'default';
  const names = start.positionals;
  const shape: TableShape = { wide: output === 'wide', allNamespaces };

  const wanted = (p: V1Pod) => {
    if (!allNamespaces && (p.metadata?.namespace ?? 'default') !== namespace) return false;
    if (!names.length) return true;
    const n = p.metadata?.name;
    const node = p.spec?.nodeName?.toLowerCase();
    return names.some((q) => n === q || (node !== undefined && n === `${q}-${node}`));
  };
  const read = async (): Promise<V1Pod[]> => {
    const res = await localGet(socketPath, '/pods', { timeoutMs: 5000, ...(opts.signal ? { signal: opts.signal } : {}) });
    const body = await readBody(res);
    if (res.statusCode !== 200) throw new Error(`GET /pods answered HTTP ${res.statusCode}: ${body.trim()}`);
    return ((JSON.parse(body) as { items?: V1Pod[] }).items ?? []).filter(wanted).sort(byNamespaceAndName);
  };

  let pods: V1Pod[];
  try {
    pods = await read();
  } catch (e) {
    if ((e as Error).name === 'AbortError') return 0;
    err.write(`${unreachableMessage('pods', socketPath, e)}\n`);
    return 1;
  }

  // As kubectl get pods a b: the pods found are listed, each name not found is an error, and
  // the exit code says something was missing.
  const matches = (q: string) => (p: V1Pod) => p.metadata?.name === q || (p.spec?.nodeName !== undefined && p.metadata?.name === `${q}-${p.spec.nodeName.toLowerCase()}`);
  const missing = names.filter((q) => !pods.some(matches(q)));
  if (missing.length) err.write(`Error from server (NotFound): ${missing.map((n) => `pods "${n}" not found`).join(', ')}\n`);
  if (names.length && !pods.length) return 1;
  const rows = pods.map((p) => podRow(p, now()));
  shape.ephemeral = rows.some((r) => r.ephemeral !== '<none>');
  if (output === 'json') out.write(`${JSON.stringify(listOf(pods), null, 4)}\n`);
  else if (output === 'yaml') out.write(yaml.dump(listOf(pods), { noRefs: true }));
  else if (output === 'name') out.write(pods.map((p) => `pod/${p.metadata?.name}\n`).join(''));
  else if (!rows.length && !values.watch) err.write(allNamespaces ? 'No resources found\n' : `No resources found in ${namespace} namespace.\n`);
  else if (!values.watch) out.write(podTable(rows, shape));
  if (!values.watch) return missing.length ? 1 : 0;
  return watch(pods, rows);

  async function watch(initial: V1Pod[], initialRows: PodRow[]): Promise<number> {
    const min = minWidths(shape);
    const widths = columnWidths(initialRows, shape, min);
    const printRow = (pod: V1Pod, row: PodRow) => {
      if (output === 'json') out.write(`${JSON.stringify({ ...pod, apiVersion: 'v1', kind: 'Pod' }, null, 4)}\n`);
      else if (output === 'yaml') out.write(`---\n${yaml.dump({ ...pod, apiVersion: 'v1', kind: 'Pod' }, { noRefs: true })}`);
      else if (output === 'name') out.write(`pod/${row.name}\n`);
      else out.write(`${rowLine(row, shape, widths)}\n`);
    };
    const table = output === 'table' || output === 'wide';
    if (table) {
      out.write(`${headerLine(shape, widths)}\n`);
      for (const r of initialRows) out.write(`${rowLine(r, shape, widths)}\n`);
    }
    // What was last printed of each pod, by UID (two pods may share a name while one replaces
    // the other). AGE is left out: it changes every second but is no change of the pod.
    const lastSeen = new Map(initial.map((p, i) => [p.metadata?.uid ?? '', { pod: p, key: rowKey(initialRows[i]!) }]));
    const pulls = new PullProgressThrottle();
    /** Pull progress after the row, for the table outputs, when it has moved on enough to say so. */
    const progressNote = (uid: string, messages: ReturnType<typeof pullMessagesOf>): string | undefined => {
      const shown = messages.filter((m) => pulls.shouldShow(`${uid}/${m.key}`, m.message, now()));
      if (!table || shown.length === 0) return undefined;
      return shown.map((m) => (messages.length > 1 ? `${m.container}: ${m.message}` : m.message)).join('; ');
    };
    let unreachable = false;
    while (!opts.signal?.aborted) {
      await sleep(opts.pollMs ?? WATCH_POLL_MS, undefined, opts.signal ? { signal: opts.signal } : {}).catch(() => {});
      if (opts.signal?.aborted) break;
      let current: V1Pod[];
      try {
        current = await read();
      } catch (e) {
        if ((e as Error).name === 'AbortError') break;
        // The kubelet restarting is no reason to stop watching: say so once, and go on.
        if (!unreachable) err.write(`${unreachableMessage('pods', socketPath, e)}; still watching\n`);
        unreachable = true;
        continue;
      }
      unreachable = false;
      const present = new Set<string>();
      const pulling = new Set<string>();
      for (const pod of current) {
        const uid = pod.metadata?.uid ?? '';
        present.add(uid);
        const messages = pullMessagesOf(pod);
        for (const m of messages) pulling.add(`${uid}/${m.key}`);
        const row = podRow(pod, now());
        const key = rowKey(row);
        const note = progressNote(uid, messages);
        if (lastSeen.get(uid)?.key === key && !note) continue;
        lastSeen.set(uid, { pod, key });
        // The progress after the last column, padded so that notes line up.
        if (note) out.write(`${rowLine(row, shape, widths).padEnd(widths.reduce((n, w) => n + w + 3, -3))}   ${note}\n`);
        else printRow(pod, row);
      }
      // A pull that ended is shown from its start again the next time.
      pulls.retain(pulling);
      // A pod gone from the kubelet: its last row once more, as kubectl prints a DELETED event.
      for (const [uid, { pod }] of [...lastSeen]) {
        if (present.has(uid)) continue;
        lastSeen.delete(uid);
        printRow(pod, podRow(pod, now()));
      }
    }
    return 0;
  }
}

function minWidths(shape: TableShape): number[] {
  const offset = shape.allNamespaces ? 1 : 0;
  const min: number[] = [];
  min[offset] = WATCH_MIN_WIDTHS.name;
  min[offset + 2] = WATCH_MIN_WIDTHS.status;
  return min;
}

function rowKey(r: PodRow): string {
  return [r.namespace, r.name, r.ready, r.status, r.restarts.replace(/ \(.*\)$/, ''), r.ip].join('\0');
}

function byNamespaceAndName(a: V1Pod, b: V1Pod): number {
  const ka = podFullName(a);
  const kb = podFullName(b);
  return ka < kb ? -1 : ka > kb ? 1 : 0;
}

/** The pods as kubectl prints a list of them: a v1 List. */
function listOf(pods: V1Pod[]): object {
  return { apiVersion: 'v1', items: pods.map((p) => ({ apiVersion: 'v1', kind: 'Pod', ...p })), kind: 'List', metadata: { resourceVersion: '' } };
}
