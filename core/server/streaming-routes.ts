/**
 * `/exec`, `/attach`, `/portForward` and `/run` of the kubelet API (upstream
 * pkg/kubelet/server/server.go): the pod and container from the path, the options from the query
 * as the API server sends them (`command`, `input`, `output`, `error`, `tty` for exec and attach;
 * `port` for port-forward), the runtime's Exec / Attach / PortForward, whose streaming URL the
 * main server then proxies. `/run` runs a command to completion (ExecSync) and answers its output.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type http from 'node:http';
import { isKubeletError } from '../errors.ts';
import { LABEL } from '../runtime/labels.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import { httpError, type RouteHandler } from '../util/http-route.ts';
import type { UpgradeResolver } from './routes.ts';

export interface StreamingDeps {
  pods(): V1Pod[];
  runtime(): ContainerRuntime;
  /** The deadline of a `/run` command. */
  runTimeoutMs: number;
}

/** `{ns}/{pod}/{container}` or `{ns}/{pod}/{uid}/{container}` (or without the container for port-forward). */
interface Target { namespace: string; pod: string; uid: string | undefined; container: string | undefined }

function parseTarget(url: URL, prefix: string, withContainer: boolean): Target {
  const parts = url.pathname.slice(prefix.length).split('/').map((p) => {
    try {
      return decodeURIComponent(p);
    } catch {
      throw httpError(400, `invalid path segment ${JSON.stringify(p)}`);
    }
  });
  const want = withContainer ? [3, 4] : [2, 3];
  if (!want.includes(parts.length) || parts.some((p) => p === '')) {
    throw httpError(404, `404 page not found (use ${prefix}{namespace}/{pod}${withContainer ? '/{container}' : ''})`);
  }
  const [namespace, pod] = parts as [string, string];
  if (withContainer) return { namespace, pod, uid: parts.length === 4 ? parts[2] : undefined, container: parts[parts.length - 1] };
  return { namespace, pod, uid: parts[2], container: undefined };
}

function findPod(deps: StreamingDeps, t: Target): V1Pod {
  const pod = deps.pods().find((p) => (p.metadata?.namespace ?? 'default') === t.namespace && p.metadata?.name === t.pod && (!t.uid || p.metadata?.uid === t.uid));
  // Upstream's wording.
  if (!pod) throw httpError(404, 'pod does not exist');
  return pod;
}

/** The id of the container's running instance (the runtime's view: the status may lag a restart). */
async function runningContainerId(deps: StreamingDeps, pod: V1Pod, name: string): Promise<string> {
  const list = await deps.runtime().listContainers({ labelSelector: { [LABEL.podUID]: pod.metadata!.uid!, [LABEL.containerName]: name } });
  const running = list.filter((c) => c.state === 'CONTAINER_RUNNING').sort((a, b) => b.createdAt - a.createdAt)[0];
  if (!running) throw httpError(404, `container not found (${JSON.stringify(name)})`);
  return running.id;
}

/** A query flag as the API server sends it ("1"), also "true"/"false"/"0"; anything else is a 400 naming it. */
function flag(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null || v === '') return false;
  const l = v.toLowerCase();
  if (l === '1' || l === 'true') return true;
  if (l === '0' || l === 'false') return false;
  throw httpError(400, `invalid value of query parameter "${name}": ${JSON.stringify(v)} (want 1 or 0)`);
}

/** The stream options of exec and attach (upstream remotecommand NewOptions). */
export function streamOptions(q: URLSearchParams): { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean } {
  const tty = flag(q, 'tty');
  const stdin = flag(q, 'input');
  const stdout = flag(q, 'output');
  // A terminal merges stderr into stdout.
  const stderr = flag(q, 'error') && !tty;
  if (!stdin && !stdout && !stderr) throw httpError(400, 'you must specify at least 1 of stdin, stdout, stderr');
  return { stdin, stdout, stderr, tty };
}

/** A runtime failure as upstream's streaming.WriteError answers it: NotFound 404, anything else 500. */
function runtimeError(err: unknown): Error {
  if ((err as { statusCode?: number }).statusCode) return err as Error;
  const status = isKubeletError(err) && err.code === 'NotFound' ? 404 : 500;
  return httpError(status, (err as Error).message);
}

function unsupported(what: string): Error {
  return httpError(501, `the container runtime does not support ${what}`);
}

/** `/exec/...` (kind 'exec') or `/attach/...`: the runtime's streaming URL for the session. */
export function execResolver(deps: StreamingDeps, kind: 'exec' | 'attach'): UpgradeResolver {
  const prefix = `/${kind}/`;
  return async (_req, url) => {
    const t = parseTarget(url, prefix, true);
    const opts = streamOptions(url.searchParams);
    const command = url.searchParams.getAll('command');
    if (kind === 'exec' && command.length === 0) throw httpError(400, 'you must specify at least one command for the container');
    const pod = findPod(deps, t);
    const id = await runningContainerId(deps, pod, t.container!);
    const runtime = deps.runtime();
    try {
      if (kind === 'exec') {
        if (!runtime.exec) throw unsupported('exec');
        return new URL(await runtime.exec({ containerId: id, cmd: command, ...opts }));
      }
      if (!runtime.attach) throw unsupported('attach');
      return new URL(await runtime.attach({ containerId: id, ...opts }));
    } catch (err) {
      throw runtimeError(err);
    }
  };
}

/** `/portForward/{ns}/{pod}[/{uid}]`: the runtime's streaming URL for the pod's sandbox. */
export function portForwardResolver(deps: StreamingDeps): UpgradeResolver {
  return async (_req, url) => {
    const t = parseTarget(url, '/portForward/', false);
    const ports = url.searchParams.getAll('port').map((p) => {
      if (!/^\d+$/.test(p) || Number(p) < 1 || Number(p) > 65535) throw httpError(400, `invalid value of query parameter "port": ${JSON.stringify(p)} (want a port 1-65535)`);
      return Number(p);
    });
    const pod = findPod(deps, t);
    const runtime = deps.runtime();
    const sandboxes = await runtime.listPodSandboxes({ labelSelector: { [LABEL.podUID]: pod.metadata!.uid! } });
    const sandbox = sandboxes.filter((s) => s.state === 'SANDBOX_READY').sort((a, b) => b.createdAt - a.createdAt)[0];
    if (!sandbox) throw httpError(404, `pod ${JSON.stringify(t.pod)} has no running sandbox`);
    if (!runtime.portForward) throw unsupported('port-forward');
    try {
      return new URL(await runtime.portForward(sandbox.id, ports));
    } catch (err) {
      throw runtimeError(err);
    }
  };
}

/** A plain request to a streaming path: it must be an upgrade (upstream's UpgradeAwareHandler with upgradeRequired). */
export const upgradeRequired: RouteHandler = () => {
  throw httpError(400, 'Upgrade request required');
};

/**
 * `POST /run/{ns}/{pod}[/{uid}]/{container}?cmd=...`: runs the command (split on spaces, as
 * upstream) to completion and answers stdout then stderr; a non-zero exit is a 500 with upstream's
 * `command '...' exited with N: <stderr>`.
 */
export function runHandler(deps: StreamingDeps): RouteHandler {
  return async (_req: http.IncomingMessage, url: URL, res: http.ServerResponse) => {
    const t = parseTarget(url, '/run/', true);
    const cmdText = url.searchParams.get('cmd') ?? '';
    const cmd = cmdText.split(' ').filter((s) => s !== '');
    if (cmd.length === 0) throw httpError(400, 'missing query parameter "cmd" (the command to run, words separated by spaces)');
    const pod = findPod(deps, t);
    const id = await runningContainerId(deps, pod, t.container!);
    let result;
    try {
      result = await deps.runtime().execSync(id, cmd, Math.max(1, Math.ceil(deps.runTimeoutMs / 1000)));
    } catch (err) {
      throw runtimeError(err);
    }
    if (result.exitCode !== 0) throw httpError(500, `command '${cmd.join(' ')}' exited with ${result.exitCode}: ${result.stderr.toString('utf8')}`);
    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8' }).end(Buffer.concat([result.stdout, result.stderr]));
  };
}
