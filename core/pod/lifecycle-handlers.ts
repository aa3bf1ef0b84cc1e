import type { V1Container, V1LifecycleHandler, V1Pod } from '@kubernetes/client-node';
import http from 'node:http';
import https from 'node:https';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import { clampSeconds, secondsToTimerMs } from '../util/timeouts.ts';
import { TIMED_OUT, withTimeout } from '../util/with-timeout.ts';
import { podRef, type EventRecorder } from '../events/event-recorder.ts';
import { resolvePort } from './container-ports.ts';
import { podFullName } from '../objects/pod-util.ts';

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

/** A container a handler runs for. */
export interface HandlerContainer { pod: V1Pod; container: V1Container; containerId: string; podIP: string }

/**
 * Container lifecycle handlers, run by the pod sync itself (not as hook taps, whose
 * `hookTimeout` would cut a preStop short of the pod's grace period):
 * - postStart right after the container started; a failure is the caller's to act on
 *   (upstream kills the container and restarts it per policy, reason FailedPostStartHook);
 * - preStop before the stop, bounded by the grace period alone; the stop that follows gets
 *   what is left of it (at least 2 s, as upstream). A failure is an event, never a throw.
 */
export class LifecycleHandlers {
  constructor(private readonly deps: { runtime: () => ContainerRuntime; logger: Logger; events?: EventRecorder }) {}

  /** Runs the container's postStart handler, if any; throws with upstream's message when it fails. */
  async postStart(c: HandlerContainer): Promise<void> {
    const handler = c.container.lifecycle?.postStart;
    if (!handler) return;
    // postStart has no timeout of its own upstream; exec and http calls are bounded by the grace period.
    const timeoutSeconds = clampSeconds(Number(c.pod.spec?.terminationGracePeriodSeconds ?? 30));
    await runLifecycleHandler('PostStart', handler, { ...c, timeoutSeconds }, this.deps.runtime());
  }

  /** Runs the container's preStop handler, if any, for at most `gracePeriodSeconds`; never throws. */
  async preStop(c: HandlerContainer, gracePeriodSeconds: number): Promise<void> {
    const handler = c.container.lifecycle?.preStop;
    if (!handler || gracePeriodSeconds <= 0) return;
    const pod = podFullName(c.pod);
    const run = runLifecycleHandler('PreStop', handler, { ...c, timeoutSeconds: gracePeriodSeconds }, this.deps.runtime());
    try {
      const result = await withTimeout(run, secondsToTimerMs(gracePeriodSeconds));
      if (result === TIMED_OUT) this.deps.logger.warn({ pod, container: c.container.name, gracePeriod: gracePeriodSeconds }, 'preStop hook did not complete within the grace period');
    } catch (err) {
      this.deps.logger.warn({ pod, container: c.container.name, err: errorMessage(err) }, 'FailedPreStopHook');
      this.deps.events?.record(podRef(c.pod, c.container.name), 'Warning', 'FailedPreStopHook', errorMessage(err));
    }
  }
}
