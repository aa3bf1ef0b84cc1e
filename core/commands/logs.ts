import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type http from 'node:http';
import type { Writable } from 'node:stream';
import { parseDuration } from '../util/duration.ts';
import { allContainersOf, containerKind, type ContainerKind } from '../objects/pod-util.ts';
import { startClientCommand } from './client-command.ts';
import { lookupPod } from './pod-lookup.ts';
import { KubeletUnreachable, localGet, readBody, unreachableMessage } from './local-kubelet.ts';

export const LOGS_USAGE = `Usage: kubelet-ts logs POD [-c CONTAINER] [-n NAMESPACE] [flags]

Print a container's log from the local kubelet (its local socket, as root), as kubectl logs does.
POD is the pod's name, a static pod's manifest name (the kubelet names it <name>-<node>), or a
prefix of its UID (to pick one of two pods sharing a name while an edited pod replaces the old).

Flags:
  -c, --container NAME     the container (default: the pod's only or default container)
  -n, --namespace NS       the pod's namespace (default: "default", else the only namespace with such a pod)
      --uid PREFIX         the pod whose UID starts with PREFIX, of those named POD
  -f, --follow             keep streaming new lines until the container stops (Ctrl-C to stop)
  -p, --previous           the previous (terminated) instance of the container
      --tail N             only the last N lines (-1: all)
      --timestamps         prefix each line with its RFC3339Nano timestamp
      --limit-bytes N      stop after N bytes
      --since DURATION     only lines newer than this (5s, 2m, 3h)
      --since-time TIME    only lines at or after this RFC3339 time
      --root-dir DIR       the kubelet's root dir, where its socket is (default: the configured rootDir)
  -h, --help               this help
`;

const REASONS: Record<number, string> = { 400: 'BadRequest', 404: 'NotFound', 422: 'Invalid', 500: 'InternalError', 503: 'ServiceUnavailable' };

function allContainers(pod: V1Pod): Array<V1Container & { kind: ContainerKind }> {
  return allContainersOf(pod).map((c) => ({ ...c, kind: containerKind(pod, c.name) }));
}

/**
 * `kubelet-ts logs POD [-c CONTAINER] [-n NAMESPACE] [-f] [--previous] [--tail N] [--timestamps]`:
 * resolves the pod (GET /pods) and the container, then streams
 * GET /containerLogs/{ns}/{pod}/{container} to stdout. Returns the exit code: 0 done, 1 the
 * kubelet is unreachable or refused (unknown pod or container, no previous instance), 2 usage.
 */
export async function logsCommand(
  argv: string[],
  opts: { socketPath: string; stdout?: Writable; stderr?: Writable; signal?: AbortSignal },
): Promise<number> {
  const start = startClientCommand({
    name: 'logs',
    usage: LOGS_USAGE,
    options: {
      container: { type: 'string', short: 'c' },
      namespace: { type: 'string', short: 'n' },
      uid: { type: 'string' },
      follow: { type: 'boolean', short: 'f' },
      previous: { type: 'boolean', short: 'p' },
      tail: { type: 'string' },
      timestamps: { type: 'boolean' },
      'limit-bytes': { type: 'string' },
      since: { type: 'string' },
      'since-time': { type: 'string' },
    },
    maxPositionals: 2,
    required: 'a pod name (or UID prefix)',
  }, argv, opts);
  if ('exit' in start) return start.exit;
  const { values, positionals, socketPath, out: stdout, err: stderr } = start;
  const fail = (msg: string, code = 1) => {
    stderr.write(`${msg}\n`);
    return code;
  };
  const podArg = positionals[0]!.replace(/^pods?\//, '');
  const containerArg = values.container ?? positionals[1];

  const query = new URLSearchParams();
  if (values.follow) query.set('follow', 'true');
  if (values.previous) query.set('previous', 'true');
  if (values.timestamps) query.set('timestamps', 'true');
  if (values.tail !== undefined) {
    if (!/^-?\d+$/.test(values.tail)) return fail(`kubelet-ts logs: --tail: '${values.tail}' is not an integer`, 2);
    if (Number(values.tail) >= 0) query.set('tailLines', String(Number(values.tail)));
  }
  if (values['limit-bytes'] !== undefined) {
    if (!/^\d+$/.test(values['limit-bytes']) || Number(values['limit-bytes']) < 1) return fail(`kubelet-ts logs: --limit-bytes: '${values['limit-bytes']}' is not a positive integer`, 2);
    query.set('limitBytes', values['limit-bytes']);
  }
  if (values.since !== undefined && values['since-time'] !== undefined) return fail('kubelet-ts logs: at most one of --since-time or --since may be used', 2);
  if (values.since !== undefined) {
    let ms: number;
    try {
      ms = parseDuration(values.since);
    } catch (err) {
      return fail(`kubelet-ts logs: --since: ${(err as Error).message}`, 2);
    }
    query.set('sinceSeconds', String(Math.max(1, Math.ceil(ms / 1000))));
  }
  if (values['since-time'] !== undefined) {
    if (Number.isNaN(Date.parse(values['since-time'])) || !/^\d{4}-\d{2}-\d{2}T/.test(values['since-time'])) return fail(`kubelet-ts logs: --since-time: '${values['since-time']}' is not an RFC3339 time`, 2);
    query.set('sinceTime', values['since-time']);
  }

  const unreachable = (err: unknown) => fail(unreachableMessage('logs', socketPath, err));

  // Resolve the pod and the container from the kubelet's pod list.
  let pods: V1Pod[];
  try {
    const res = await localGet(socketPath, '/pods', { ...(opts.signal ? { signal: opts.signal } : {}), timeoutMs: 5000 });
    const body = await readBody(res);
    if (res.statusCode !== 200) return fail(`kubelet-ts logs: GET /pods: ${res.statusCode} ${body.trim()}`);
    pods = (JSON.parse(body) as { items?: V1Pod[] }).items ?? [];
  } catch (err) {
    if (err instanceof KubeletUnreachable) return unreachable(err);
    if ((err as Error).name === 'AbortError') return 0;
    return fail(`kubelet-ts logs: GET /pods: ${(err as Error).message}`);
  }
  const found = lookupPod(pods, podArg, { command: 'logs', ...(values.namespace !== undefined ? { namespace: values.namespace } : {}), ...(values.uid !== undefined ? { uid: values.uid } : {}) });
  if ('notFound' in found) return fail(`Error from server (NotFound): ${found.notFound}`);
  if ('ambiguous' in found) return fail(`kubelet-ts logs: ${found.ambiguous}`);
  const pod = found.pod;
  const podName = pod.metadata!.name!;
  const namespace = pod.metadata?.namespace ?? 'default';
  const containers = allContainers(pod);
  let container = containerArg;
  if (container !== undefined) {
    if (!containers.some((c) => c.name === container)) {
      const names = containers.map((c) => c.name).join(', ');
      return fail(`error: container "${container}" is not valid for pod "${podName}"; choose one of: ${names}`);
    }
  } else {
    const app = containers.filter((c) => c.kind === 'app');
    const annotated = pod.metadata?.annotations?.['kubectl.kubernetes.io/default-container'];
    const chosen = (annotated && containers.find((c) => c.name === annotated)) || app[0] || containers[0];
    if (!chosen) return fail(`error: pod "${podName}" has no containers`);
    container = chosen.name;
    if (app.length > 1 && !annotated) {
      const list = containers.map((c) => (c.kind === 'app' ? c.name : `${c.name} (${c.kind})`)).join(', ');
      stderr.write(`Defaulted container "${container}" out of: ${list}\n`);
    }
  }

  // Stream the log.
  const qs = query.toString();
  const logPath = `/containerLogs/${encodeURIComponent(namespace)}/${encodeURIComponent(podName)}/${encodeURIComponent(container)}${qs ? `?${qs}` : ''}`;
  let res: http.IncomingMessage;
  try {
    res = await localGet(socketPath, logPath, { ...(opts.signal ? { signal: opts.signal } : {}), timeoutMs: 10_000 });
  } catch (err) {
    if (err instanceof KubeletUnreachable) return unreachable(err);
    if ((err as Error).name === 'AbortError') return 0;
    return fail(`kubelet-ts logs: ${(err as Error).message}`);
  }
  if (res.statusCode !== 200) {
    const body = (await readBody(res).catch(() => '')).trim();
    const reason = REASONS[res.statusCode ?? 0] ?? `HTTP ${res.statusCode}`;
    return fail(`Error from server (${reason}): ${body}`);
  }
  try {
    for await (const chunk of res) {
      if (!stdout.write(chunk)) await new Promise<void>((resolve) => {
        const done = () => {
          stdout.off('drain', done);
          stdout.off('close', done);
          resolve();
        };
        stdout.on('drain', done);
        stdout.on('close', done);
      });
      if (stdout.destroyed) break;
    }
  } catch (err) {
    if ((err as Error).name === 'AbortError' || opts.signal?.aborted) return 0;
    return fail(`kubelet-ts logs: the log stream broke: ${(err as Error).message}`);
  }
  return 0;
}
