import type { Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStartTimeline } from '../timeline/pod-timeline.ts';
import { renderWaterfall } from '../timeline/waterfall.ts';
import { OUTPUT_OPTION, outputFormat } from './command-args.ts';
import { startClientCommand } from './client-command.ts';
import { lookupPod } from './pod-lookup.ts';
import { localGet, readBody, unreachableMessage } from './local-kubelet.ts';

export const EXPLAIN_USAGE = `Usage: kubelet-ts explain POD [-n NAMESPACE] [--uid PREFIX] [--root-dir DIR] [-o json | --json]
Shows where the pod's start spent its time: every step from the kubelet seeing the pod to
its first Ready (admission, volumes, image, sandbox, network, each container, each plugin
hook tap), as a waterfall; a step tried again and again (an image pull in back-off) is one
row with its count, and a failed step says why. A step running now shows its time so far; an
image pull its progress (pulling: 45.1 / 300 MB (15%), 12 MB/s), then what it pulled. POD is the pod's name, for a static pod the
name in its manifest (the node name suffix is found), or a prefix of its UID (--uid PREFIX
picks one of two pods of one name). It asks the local kubelet on its socket
(<rootDir>/kubelet-ts.sock, as root); --root-dir names the kubelet's root dir. -o json (or
--json) prints the timeline itself.
`;

async function getJSON(socketPath: string, path: string): Promise<{ status: number; body: string }> {
  const res = await localGet(socketPath, path, { timeoutMs: 5000 });
  return { status: res.statusCode ?? 0, body: await readBody(res) };
}

/** `kubelet-ts explain POD`: fetches the start timeline from the local kubelet and prints a waterfall. */
export async function explainCommand(argv: string[], opts: { socketPath: string; stdout?: Writable; stderr?: Writable }): Promise<number> {
  const start = startClientCommand({
    name: 'explain',
    usage: EXPLAIN_USAGE,
    options: { namespace: { type: 'string', short: 'n' }, uid: { type: 'string' }, ...OUTPUT_OPTION, json: { type: 'boolean' } },
    check: ({ values }) => void outputFormat(values.output, ['json']),
    maxPositionals: 1,
    required: 'a pod name (or UID prefix)',
  }, argv, opts);
  if ('exit' in start) return start.exit;
  const { values, socketPath, out, err } = start;
  const name = start.positionals[0]!;
  let pods: V1Pod[];
  try {
    pods = JSON.parse((await getJSON(socketPath, '/pods')).body).items ?? [];
  } catch (e) {
    err.write(`${unreachableMessage('explain', socketPath, e)}\n`);
    return 1;
  }
  const { namespace, uid } = values;
  const found = lookupPod(pods, name, { command: 'explain', ...(namespace !== undefined ? { namespace } : {}), ...(uid !== undefined ? { uid } : {}) });
  if (!('pod' in found)) {
    err.write(`kubelet-ts explain: ${'notFound' in found ? found.notFound : found.ambiguous}\n`);
    return 1;
  }
  const pick = found.pod;
  const r = await getJSON(socketPath, `/debug/pods/${encodeURIComponent(pick.metadata?.namespace ?? 'default')}/${encodeURIComponent(pick.metadata?.name ?? '')}/timeline?uid=${encodeURIComponent(pick.metadata?.uid ?? '')}`);
  if (r.status !== 200) {
    err.write(`kubelet-ts explain: ${r.body.trim()}\n`);
    return 1;
  }
  const timeline = JSON.parse(r.body) as PodStartTimeline;
  out.write(values.json || values.output === 'json' ? `${JSON.stringify(timeline, null, 2)}\n` : renderWaterfall(timeline, { color: (out as NodeJS.WriteStream).isTTY === true }));
  return 0;
}
