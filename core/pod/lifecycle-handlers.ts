import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { KubeletHooks } from '../hooks.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import { clampSeconds, secondsToTimerMs } from '../util/timeouts.ts';
import { podRef, type EventRecorder } from '../events/event-recorder.ts';
import { resolvePort } from './container-ports.ts';

/** Where a handler runs: the container, its pod's IP, and how long it may take. */
export interface HandlerTarget { pod: V1Pod; container: V1Container; containerId: string; podIP: string; timeoutSeconds: number }

/** An HTTP GET to a pod's port; success is 200–399, as upstream's handlers and probes use. */
export function httpGet(url: string, headers: Record<string, string>, timeoutMs: number): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const lib = url.startsWith('https:') ? https : http;
    const req = lib.get(url, { headers: { 'user-agent': 'kube-lifecycle/1.0', ...headers }, timeout: timeoutMs, rejectUnauthorized: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => {
        if (body.length < 10_240) body += d;
      });
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on('timeout', () => req.destroy(new Error(`timeout after ${timeoutMs} ms`)));
    req.on('error', reject);
  });
}

/** Runs one lifecycle handler (exec, httpGet or sleep); throws with upstream-shaped messages. */
export async function runLifecycleHandler(kind: 'PostStart' | 'PreStop', handler: V1LifecycleHandler, target: HandlerTarget, runtime: ContainerRuntime): Promise<void> {
  const { pod, container } = target;
  const podDesc = `${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`;
  if (handler.exec) {
    const cmd = handler.exec.command ?? [];
    const r = await runtime.execSync(target.containerId, cmd, clampSeconds(target.timeoutSeconds));
    if (r.exitCode !== 0) {
      const output = Buffer.concat([r.stdout, r.stderr]).toString('utf8').trim();
      throw new Error(`Exec lifecycle hook (${JSON.stringify(cmd)}) for Container "${container.name}" in Pod "${podDesc}" failed - error: command '${cmd.join(' ')}' exited with ${r.exitCode}: ${output}`);
    }
    return;
  }
  if (handler.httpGet) {
    const g = handler.httpGet;
    const port = resolvePort(g.port as number | string, container);
    const host = g.host || target.podIP;
    const scheme = (g.scheme ?? 'HTTP').toLowerCase();
    const path = g.path ? (g.path.startsWith('/') ? g.path : `/${g.path}`) : '/';
    const url = `${scheme}://${host.includes(':') ? `[${host}]` : host}:${port}${path}`;
    const headers = Object.fromEntries((g.httpHeaders ?? []).map((h) => [h.name, h.value]));
    try {
      const r = await httpGet(url, headers, secondsToTimerMs(target.timeoutSeconds));
      if (r.status < 200 || r.status >= 400) throw new Error(`HTTP lifecycle hook (${path}) for Container "${container.name}" in Pod "${podDesc}" failed - error: ${r.status}, message: "${r.body.trim()}"`);
    } catch (err) {
      if (/lifecycle hook/.test(errorMessage(err))) throw err;
      throw new Error(`HTTP lifecycle hook (${path}) for Container "${container.name}" in Pod "${podDesc}" failed - error: ${errorMessage(err)}`);
    }
    return;
  }
  if (handler.sleep) {
    await new Promise((r) => setTimeout(r, secondsToTimerMs(Number(handler.sleep!.seconds))));
    return;
  }
  if (handler.tcpSocket) throw new Error(`${kind} hook for Container "${container.name}": tcpSocket is deprecated and not supported`);
  throw new Error(`${kind} hook for Container "${container.name}": no handler given`);
}

/**
 * The core's own taps for container lifecycle handlers: postStart on `afterStart` (a failure
 * fails the start: the container is killed and restarted per policy, reason
 * FailedPostStartHook) and preStop on `beforeKill` (bounded by the grace period; the stop
 * that follows gets what is left, at least 2 s, as upstream).
 */
export function tapLifecycleHandlers(hooks: KubeletHooks, deps: { runtime: () => ContainerRuntime; logger: Logger; events?: EventRecorder }): void {
  hooks.afterStart.tapPromise({ name: 'kubelet:postStart' }, async (e) => {
    const handler = e.container.lifecycle?.postStart;
    if (!handler) return;
    // postStart has no timeout of its own upstream; bound exec/http calls by the grace period.
    const timeoutSeconds = clampSeconds(Number(e.pod.spec?.terminationGracePeriodSeconds ?? 30));
    await runLifecycleHandler('PostStart', handler, { pod: e.pod, container: e.container, containerId: e.containerId, podIP: e.podIP, timeoutSeconds }, deps.runtime());
  });
  hooks.beforeKill.tapPromise({ name: 'kubelet:preStop' }, async (e) => {
    const handler = e.container?.lifecycle?.preStop;
    if (!handler || !e.container || e.gracePeriodSeconds <= 0) return;
    const run = runLifecycleHandler('PreStop', handler, { pod: e.pod, container: e.container, containerId: e.containerId, podIP: e.podIP, timeoutSeconds: e.gracePeriodSeconds }, deps.runtime());
    let timer: NodeJS.Timeout | undefined;
    const overrun = new Promise<'overrun'>((r) => {
      timer = setTimeout(() => r('overrun'), secondsToTimerMs(e.gracePeriodSeconds));
    });
    try {
      const result = await Promise.race([run.then(() => 'done' as const), overrun]);
      if (result === 'overrun') deps.logger.warn({ pod: `${e.pod.metadata?.namespace}/${e.pod.metadata?.name}`, container: e.container.name, gracePeriod: e.gracePeriodSeconds }, 'preStop hook did not complete within the grace period');
    } catch (err) {
      deps.logger.warn({ pod: `${e.pod.metadata?.namespace}/${e.pod.metadata?.name}`, container: e.container.name, err: errorMessage(err) }, 'FailedPreStopHook');
      deps.events?.record(podRef(e.pod, e.container.name), 'Warning', 'FailedPreStopHook', errorMessage(err));
    } finally {
      clearTimeout(timer);
      run.catch(() => {});
    }
  });
}
