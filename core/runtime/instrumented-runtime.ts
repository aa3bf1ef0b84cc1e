import type { Logger } from '../logger.ts';
import { KubeletError, errorMessage } from '../errors.ts';
import type { ContainerRuntime } from './types.ts';
import { childSignal, runWithSignal } from '../util/abort-scope.ts';
import { clampTimerMs } from '../util/timeouts.ts';

/** After a call's signal aborted, how long the core still waits for the runtime to answer (with its own error) before it gives up. */
const ABORT_GRACE_MS = 1000;

export interface RuntimeCallOptions {
  /** runtimeRequestTimeout: a call's signal aborts after it (plus the call's own timeout, for stopContainer and execSync). Without it, calls have no deadline of the core's. */
  requestTimeoutMs?: number;
}

/**
 * How long the core gives one call before its signal aborts, as upstream's remote runtime
 * client sets its contexts: runtimeRequestTimeout, plus the call's own timeout for a stop or an
 * exec; none for a pull (the runtime plugin bounds pulls itself) or close.
 */
function callDeadlineMs(op: keyof ContainerRuntime, args: unknown[], requestTimeoutMs: number | undefined): number | undefined {
  if (requestTimeoutMs === undefined || !(requestTimeoutMs > 0) || op === 'pullImage' || op === 'close') return undefined;
  const ownSeconds = op === 'stopContainer' ? args[1] : op === 'execSync' ? args[2] : 0;
  const own = typeof ownSeconds === 'number' && Number.isFinite(ownSeconds) && ownSeconds > 0 ? ownSeconds * 1000 : 0;
  return clampTimerMs(requestTimeoutMs + own);
}

/** Reported for every runtime call; the metrics registry subscribes to it. */
export type RuntimeObserver = (operation: string, durationMs: number, error: unknown) => void;

/**
 * Wraps whichever runtime a plugin provides so every operation is timed and its failures
 * logged in one place, whatever the plugin: the core measures, plugins do not have to. Each
 * call runs with a signal of its own (`currentSignal()` in the runtime, util/abort-scope.ts):
 * it aborts when runtimeRequestTimeout expires (callDeadlineMs) or when the work that made the
 * call is given up on (a tap past hookTimeout); a runtime that does not answer within
 * ABORT_GRACE_MS after that fails with DeadlineExceeded, so a pod worker never waits on it for ever.
 */
export function instrumentRuntime(runtime: ContainerRuntime, logger: Logger, observe?: RuntimeObserver, options: RuntimeCallOptions = {}): ContainerRuntime {
  const log = logger.child({ component: 'runtime' });
  const wrapped: Record<string, unknown> = {};
  for (const key of Object.keys(runtimeMethods) as Array<keyof ContainerRuntime>) {
    const fn = runtime[key] as ((...a: unknown[]) => Promise<unknown>) | undefined;
    // An optional operation the runtime lacks stays absent, so callers can tell.
    if (typeof fn !== 'function') continue;
    wrapped[key] = async (...args: unknown[]) => {
      const start = performance.now();
      const scope = childSignal();
      const deadlineMs = callDeadlineMs(key, args, options.requestTimeoutMs);
      let timer: NodeJS.Timeout | undefined;
      if (deadlineMs !== undefined) {
        timer = setTimeout(() => scope.abort(new KubeletError('DeadlineExceeded', `runtime ${key}: no answer within ${deadlineMs} ms (runtimeRequestTimeout)`)), deadlineMs);
        timer.unref();
      }
      /** The runtime had its signal and ABORT_GRACE_MS more: the core gives up waiting. */
      const givenUp = new Promise<never>((_, reject) => {
        const giveUp = () => {
          const t = setTimeout(() => reject(scope.signal.reason instanceof Error ? scope.signal.reason : new KubeletError('DeadlineExceeded', `runtime ${key}: cancelled`)), ABORT_GRACE_MS);
          t.unref();
        };
        if (scope.signal.aborted) giveUp();
        else scope.signal.addEventListener('abort', giveUp, { once: true });
      });
      givenUp.catch(() => {});
      try {
        const result = await Promise.race([new Promise((resolve) => resolve(runWithSignal(scope.signal, () => fn.apply(runtime, args)))), givenUp]);
        const ms = performance.now() - start;
        observe?.(key, ms, undefined);
        log.trace({ op: key, ms: Math.round(ms) }, 'runtime call');
        return result;
      } catch (err) {
        const ms = performance.now() - start;
        observe?.(key, ms, err);
        log.debug({ op: key, ms: Math.round(ms), err: errorMessage(err) }, 'runtime call failed');
        throw err;
      } finally {
        clearTimeout(timer);
        scope.done();
      }
    };
  }
  return wrapped as unknown as ContainerRuntime;
}

// The operation names, checked against the interface at compile time.
const runtimeMethods: Record<keyof ContainerRuntime, true> = {
  version: true, runPodSandbox: true, stopPodSandbox: true, removePodSandbox: true, podSandboxStatus: true,
  listPodSandboxes: true, createContainer: true, startContainer: true, stopContainer: true, removeContainer: true,
  listContainers: true, containerStatus: true, execSync: true, imageStatus: true, pullImage: true, listImages: true,
  status: true, close: true, exec: true, attach: true, portForward: true, listContainerStats: true, listPodSandboxStats: true,
  imageFsInfo: true, removeImage: true, sandboxImage: true, runtimeConfig: true, runtimeHandlers: true, reopenContainerLog: true, pullProgress: true,
};
