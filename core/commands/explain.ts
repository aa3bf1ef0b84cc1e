import type { Writable } from 'node:stream';
import type { V1Pod } from '@kubernetes/client-node';
import type { PodStartTimeline } from '../timeline/pod-timeline.ts';
import { renderWaterfall } from '../timeline/waterfall.ts';
import { parseCommandArgs, UsageError } from './command-args.ts';
import { lookupPod } from './pod-lookup.ts';
import { localGet, localSocketPath, readBody, unreachableMessage } from './local-kubelet.ts';

export const EXPLAIN_USAGE = `Usage: kubelet-ts explain POD [-n NAMESPACE] [--uid PREFIX] [--root-dir DIR] [--json]
Shows where the pod's start spent its time: every step from the kubelet seeing the pod to
its first Ready (admission, volumes, image, sandbox, network, each container, each plugin
hook tap), as a waterfall; a step tried again and again (an image pull in back-off) is one
row with its count, and a failed step says why. A step running now shows its time so far; an
image pull its progress (pulling: 45.1 / 300 MB (15%), 12 MB/s), then what it pulled. POD is the pod's name, for a static pod the
name in its manifest (the node name suffix is found), or a prefix of its UID (--uid PREFIX
picks one of two pods of one name). It asks the local kubelet on its socket
(<rootDir>/kubelet-ts.sock, as root); --root-dir names the kubelet's root dir.
`;

async function getJSON(socketPath: string, path: string): Promise<{ status: number; body: string }> {
  const res = await localGet(socketPath, path, { timeoutMs: 5000 });
  return { status: res.statusCode ?? 0, body: await readBody(res) };
}

/** `kubelet-ts explain POD`: fetches the start timeline from the local kubelet and prints a waterfall. */
export async function explainCommand(argv: string[], opts: { socketPath: string; stdout?: Writable; stderr?: Writable }): Promise<number> {
  const out = opts.stdout ?? process.stdout;
  const err = opts.stderr ?? process.stderr;
  let parsed;
  try {
    parsed = parseCommandArgs(argv, { namespace: { type: 'string', short: 'n' }, uid: { type: 'string' }, 'root-dir': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } }, 1);
  } catch (e) {
    if (!(e instanceof UsageError)) throw e;
    err.write(`kubelet-ts explain: ${e.message}\n\n${EXPLAIN_USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    out.write(EXPLAIN_USAGE);
    return 0;
  }
  const name = parsed.positionals[0];
  if (!name) {
    err.write(`kubelet-ts explain: a pod name (or UID prefix) is required\n\n${EXPLAIN_USAGE}`);
    return 2;
  }
  const socketPath = parsed.values['root-dir'] !== undefined ? localSocketPath(parsed.values['root-dir']) : opts.socketPath;
  let pods: V1Pod[];
  try {
    pods = JSON.parse((await getJSON(socketPath, '/pods')).body).items ?? [];
  } catch (e) {
    err.write(`${unreachableMessage('explain', socketPath, e)}\n`);
    return 1;
  }
  const { namespace, uid } = parsed.values;
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
  out.write(parsed.values.json ? `${JSON.stringify(timeline, null, 2)}\n` : renderWaterfall(timeline, { color: (out as NodeJS.WriteStream).isTTY === true }));
  return 0;
}
