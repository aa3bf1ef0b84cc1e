import type { Writable } from 'node:stream';
import { parseArgs } from 'node:util';
import type { PodStartTimeline } from '../timeline/pod-timeline.ts';
import { renderWaterfall } from '../timeline/waterfall.ts';
import { localGet, localSocketPath, readBody, unreachableMessage } from './local-kubelet.ts';

export const EXPLAIN_USAGE = `Usage: kubelet-ts explain POD [-n NAMESPACE] [--root-dir DIR] [--json]
Shows where the pod's start spent its time: every step from the kubelet seeing the pod to
its first Ready (admission, volumes, image, sandbox, network, each container, each plugin
hook tap), as a waterfall. POD is the pod's name or, for a static pod, the name in its
manifest (the node name suffix is found). It asks the local kubelet on its socket
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
    parsed = parseArgs({ args: argv, allowPositionals: true, options: { namespace: { type: 'string', short: 'n' }, 'root-dir': { type: 'string' }, json: { type: 'boolean' }, help: { type: 'boolean', short: 'h' } } });
  } catch (e) {
    err.write(`kubelet-ts explain: ${(e as Error).message}\n\n${EXPLAIN_USAGE}`);
    return 2;
  }
  if (parsed.values.help) {
    out.write(EXPLAIN_USAGE);
    return 0;
  }
  const name = parsed.positionals[0];
  if (!name) {
    err.write(`kubelet-ts explain: a pod name is required\n\n${EXPLAIN_USAGE}`);
    return 2;
  }
  const socketPath = parsed.values['root-dir'] !== undefined ? localSocketPath(parsed.values['root-dir']) : opts.socketPath;
  let pods: Array<{ metadata: { name: string; namespace: string } }>;
  try {
    pods = JSON.parse((await getJSON(socketPath, '/pods')).body).items ?? [];
  } catch (e) {
    err.write(`${unreachableMessage('explain', socketPath, e)}\n`);
    return 1;
  }
  const ns = parsed.values.namespace;
  const matches = pods.filter((p) => (p.metadata.name === name || p.metadata.name.startsWith(`${name}-`)) && (!ns || p.metadata.namespace === ns));
  const exact = matches.filter((p) => p.metadata.name === name);
  const pick = exact.length === 1 ? exact[0] : matches.length === 1 ? matches[0] : undefined;
  if (!pick) {
    err.write(matches.length > 1
      ? `kubelet-ts explain: "${name}" matches several pods: ${matches.map((p) => `${p.metadata.namespace}/${p.metadata.name}`).join(', ')}; give the full name or -n\n`
      : `kubelet-ts explain: no pod "${name}"${ns ? ` in namespace "${ns}"` : ''} on this kubelet\n`);
    return 1;
  }
  const r = await getJSON(socketPath, `/debug/pods/${encodeURIComponent(pick.metadata.namespace)}/${encodeURIComponent(pick.metadata.name)}/timeline`);
  if (r.status !== 200) {
    err.write(`kubelet-ts explain: ${r.body.trim()}\n`);
    return 1;
  }
  const timeline = JSON.parse(r.body) as PodStartTimeline;
  out.write(parsed.values.json ? `${JSON.stringify(timeline, null, 2)}\n` : renderWaterfall(timeline, { color: (out as NodeJS.WriteStream).isTTY === true }));
  return 0;
}
