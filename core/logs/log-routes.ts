import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import { isNotFound } from '../errors.ts';
import { ANNOTATION, LABEL } from '../runtime/labels.ts';
import type { ContainerRuntime, ContainerSummary } from '../runtime/types.ts';
import { httpError, type RouteHandler } from '../util/http-route.ts';
import { allContainersOf } from '../objects/pod-util.ts';
import { parseLogTime } from './cri-log.ts';
import { readContainerLog, type ReadLogOptions } from './log-follower.ts';

/**
 * GET /containerLogs/{namespace}/{pod}/{container}: a container's log as upstream's kubelet
 * serves it (pkg/kubelet/server/server.go getContainerLogs), with the v1 PodLogOptions query
 * parameters `kubectl logs` sends: tailLines (and the legacy `tail`), limitBytes, timestamps,
 * previous, follow, sinceSeconds, sinceTime.
 */

export interface ContainerLogsDeps {
  pods(): V1Pod[];
  runtime(): ContainerRuntime;
  /** The pod's log directory (`<podLogsDir>/<ns>_<name>_<uid>`). */
  logDir(pod: V1Pod): string;
}

/** The v1 PodLogOptions the kubelet honours. */
export interface PodLogQuery {
  tailLines?: number;
  limitBytes?: number;
  sinceSeconds?: number;
  sinceTime?: string;
  timestamps: boolean;
  previous: boolean;
  follow: boolean;
}

const INT = /^[+-]?\d+$/;

/** A query boolean as the apimachinery parameter codec reads it: absent, "0" or "false" is false. */
function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name);
  if (v === null) return false;
  return !(v === '0' || v.toLowerCase() === 'false');
}

/**
 * Decodes and validates the query: 400 "Unable to decode query" for a value of the wrong
 * type, 422 "Invalid request" for values upstream's ValidatePodLogOptions refuses.
 */
export function parsePodLogQuery(q: URLSearchParams): PodLogQuery {
  const raw = new Map<string, string>();
  for (const name of ['tailLines', 'limitBytes', 'sinceSeconds', 'sinceTime']) {
    const v = q.get(name);
    if (v !== null) raw.set(name, v);
  }
  // Backwards compatibility: `tail` (a number, or "all" for every line) overrides tailLines.
  const tail = q.get('tail');
  if (tail !== null && tail !== '') {
    if (tail === 'all') raw.delete('tailLines');
    else raw.set('tailLines', tail);
  }
  const out: PodLogQuery = { timestamps: queryBool(q, 'timestamps'), previous: queryBool(q, 'previous'), follow: queryBool(q, 'follow') };
  for (const name of ['tailLines', 'limitBytes', 'sinceSeconds'] as const) {
    const v = raw.get(name);
    if (v === undefined) continue;
    if (!INT.test(v) || !Number.isSafeInteger(Number(v))) throw httpError(400, `Unable to decode query: ${name}: ${JSON.stringify(v)} is not an integer`);
    out[name] = Number(v);
  }
  const sinceTime = raw.get('sinceTime');
  if (sinceTime !== undefined) {
    if (!parseLogTime(sinceTime)) throw httpError(400, `Unable to decode query: sinceTime: ${JSON.stringify(sinceTime)} is not an RFC3339 time`);
    out.sinceTime = sinceTime;
  }
  const errs: string[] = [];
  if (out.tailLines !== undefined && out.tailLines < 0) errs.push(`tailLines: Invalid value: ${out.tailLines}: must be greater than or equal to 0`);
  if (out.limitBytes !== undefined && out.limitBytes < 1) errs.push(`limitBytes: Invalid value: ${out.limitBytes}: must be greater than 0`);
  if (out.sinceSeconds !== undefined && out.sinceTime !== undefined) errs.push('Forbidden: at most one of `sinceTime` or `sinceSeconds` may be specified');
  else if (out.sinceSeconds !== undefined && out.sinceSeconds < 1) errs.push(`sinceSeconds: Invalid value: ${out.sinceSeconds}: must be greater than 0`);
  if (errs.length) throw httpError(422, `Invalid request: ${errs.join(', ')}`);
  return out;
}

/** The runtime's containers of one pod container, newest first. */
async function instancesOf(runtime: ContainerRuntime, uid: string, name: string): Promise<ContainerSummary[]> {
  const list = await runtime.listContainers({ labelSelector: { [LABEL.podUID]: uid, [LABEL.containerName]: name } });
  return list.sort((a, b) => b.createdAt - a.createdAt);
}

const idOf = (containerID: string | undefined) => (containerID ? containerID.slice(containerID.indexOf('://') + 3) : '');

function findStatus(pod: V1Pod, name: string): V1ContainerStatus | undefined {
  const s = pod.status;
  return [...(s?.containerStatuses ?? []), ...(s?.initContainerStatuses ?? []), ...(s?.ephemeralContainerStatuses ?? [])].find((c) => c.name === name);
}

/**
 * Which container instance to read, as upstream's validateContainerLogStatus decides from the
 * pod status: `previous` is the last terminated instance; otherwise the running one, else the
 * terminated one, else the last terminated one; a waiting container that never ran has no
 * logs. Without a status for the container (not computed yet), the runtime's instances
 * decide: the newest, or for `previous` the one before it.
 */
async function selectInstance(runtime: ContainerRuntime, pod: V1Pod, name: string, previous: boolean): Promise<{ id: string; restartCount: number | undefined }> {
  const podName = pod.metadata!.name!;
  const cs = findStatus(pod, name);
  if (cs) {
    const last = cs.lastState?.terminated;
    const { waiting, running, terminated } = cs.state ?? {};
    const restart = cs.restartCount;
    if (previous) {
      if (!last?.containerID) throw httpError(400, `previous terminated container "${name}" in pod "${podName}" not found`);
      return { id: idOf(last.containerID), restartCount: waiting ? restart : restart - 1 };
    }
    if (running) return { id: idOf(cs.containerID), restartCount: restart };
    if (terminated) {
      if (terminated.containerID) return { id: idOf(terminated.containerID), restartCount: restart };
      if (last?.containerID) return { id: idOf(last.containerID), restartCount: restart - 1 };
      throw httpError(400, `container "${name}" in pod "${podName}" is terminated`);
    }
    if (last) {
      if (!last.containerID) throw httpError(400, `container "${name}" in pod "${podName}" is terminated`);
      return { id: idOf(last.containerID), restartCount: restart };
    }
    if (waiting) {
      const reason = waiting.reason ?? '';
      if (reason === 'ErrImagePull') throw httpError(400, `container "${name}" in pod "${podName}" is waiting to start: image can't be pulled`);
      if (reason === 'ImagePullBackOff') throw httpError(400, `container "${name}" in pod "${podName}" is waiting to start: trying and failing to pull image`);
      throw httpError(400, `container "${name}" in pod "${podName}" is waiting to start: ${reason}`);
    }
    throw httpError(400, `container "${name}" in pod "${podName}" is in an unrecognized state`);
  }
  const instances = await instancesOf(runtime, pod.metadata!.uid!, name);
  const pick = previous ? instances[1] : instances[0];
  if (!pick) {
    if (previous) throw httpError(400, `previous terminated container "${name}" in pod "${podName}" not found`);
    throw httpError(400, `container "${name}" in pod "${podName}" is not available`);
  }
  return { id: pick.id, restartCount: undefined };
}

/** The instance's log file: the runtime's logPath, else `<podLogDir>/<container>/<restartCount>.log`. */
async function logFileOf(deps: ContainerLogsDeps, pod: V1Pod, name: string, inst: { id: string; restartCount: number | undefined }): Promise<string> {
  try {
    const st = await deps.runtime().containerStatus(inst.id);
    if (st.logPath) return path.isAbsolute(st.logPath) ? st.logPath : path.join(deps.logDir(pod), st.logPath);
    const count = st.annotations?.[ANNOTATION.containerRestartCount] ?? String(inst.restartCount ?? 0);
    return path.join(deps.logDir(pod), name, `${count}.log`);
  } catch (err) {
    // The runtime no longer has the container (garbage collected): its file may still be there.
    if (!isNotFound(err) || inst.restartCount === undefined) throw httpError(400, `failed to get container status "${inst.id}": ${(err as Error).message}`);
    return path.join(deps.logDir(pod), name, `${Math.max(0, inst.restartCount)}.log`);
  }
}

/** The route handler for the prefix `/containerLogs/`. */
export function containerLogsHandler(deps: ContainerLogsDeps): RouteHandler {
  return async (req, url, res) => {
    const parts = url.pathname.slice('/containerLogs/'.length).split('/').map((p) => {
      try {
        return decodeURIComponent(p);
      } catch {
        return p;
      }
    });
    const [namespace = '', podID = '', containerName = ''] = parts;
    if (parts.length > 3) throw httpError(404, '404 page not found');
    if (!podID) throw httpError(400, '{"message": "Missing podID."}');
    if (!containerName) throw httpError(400, '{"message": "Missing container name."}');
    if (!namespace) throw httpError(400, '{"message": "Missing podNamespace."}');
    const query = parsePodLogQuery(url.searchParams);

    const pod = deps.pods().find((p) => (p.metadata?.namespace ?? 'default') === namespace && p.metadata?.name === podID);
    if (!pod) throw httpError(404, `pod "${podID}" does not exist`);
    const known = allContainersOf(pod).some((c) => c.name === containerName);
    if (!known) throw httpError(404, `container "${containerName}" not found in pod "${podID}"`);

    const runtime = deps.runtime();
    const inst = await selectInstance(runtime, pod, containerName, query.previous);
    const file = await logFileOf(deps, pod, containerName, inst);
    try {
      await fs.access(file);
    } catch (err) {
      throw httpError(400, `failed to open log file "${file}": ${(err as Error).message}`);
    }

    res.writeHead(200, { 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-cache', 'x-content-type-options': 'nosniff' });
    if (req.method === 'HEAD') {
      res.end();
      return;
    }
    res.flushHeaders();
    // A follow may stay quiet for as long as the container is: exempt it from the server's idle timeout.
    if (query.follow) req.socket.setTimeout(0);
    const ac = new AbortController();
    res.on('close', () => ac.abort());
    const opts: ReadLogOptions = {
      timestamps: query.timestamps,
      follow: query.follow,
      signal: ac.signal,
      ...(query.tailLines !== undefined ? { tailLines: query.tailLines } : {}),
      ...(query.limitBytes !== undefined ? { limitBytes: query.limitBytes } : {}),
      ...(query.sinceTime !== undefined ? { sinceTime: query.sinceTime } : {}),
      ...(query.sinceSeconds !== undefined ? { sinceTime: new Date(Date.now() - query.sinceSeconds * 1000) } : {}),
      ...(query.follow
        ? {
            isRunning: async () => {
              try {
                return (await runtime.containerStatus(inst.id)).state === 'CONTAINER_RUNNING';
              } catch {
                return false;
              }
            },
          }
        : {}),
    };
    try {
      await readContainerLog(file, opts, res);
    } catch (err) {
      // Headers are out: say what went wrong in the body, as upstream does.
      if (!res.destroyed && !res.writableEnded) res.write(`\nfailed to read log file "${file}": ${(err as Error).message}\n`);
    } finally {
      if (!res.writableEnded) res.end();
    }
  };
}
