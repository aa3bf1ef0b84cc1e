import type { Logger } from '../logger.ts';
import { KubeletError, errorMessage } from '../errors.ts';
import type { ContainerRuntime } from './types.ts';
import { childSignal, signalOf, type CallOptions } from '../util/cancellation.ts';
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
 * exec; none for a pull (the runtime plugin bounds pulls itself), close, or the event stream
 * (it lasts as long as the kubelet).
 */
function callDeadlineMs(op: keyof ContainerRuntime, args: readonly unknown[], requestTimeoutMs: number | undefined): number | undefined {
  if (requestTimeoutMs === undefined || !(requestTimeoutMs > 0) || op === 'pullImage' || op === 'close' || op === 'containerEvents') return undefined;
  const ownSeconds = op === 'stopContainer' ? args[1] : op === 'execSync' ? args[2] : 0;
  const own = typeof ownSeconds === 'number' && Number.isFinite(ownSeconds) && ownSeconds > 0 ? ownSeconds * 1000 : 0;
  return clampTimerMs(requestTimeoutMs + own);
}

/** Reported for every runtime call; the metrics registry subscribes to it. */
export type RuntimeObserver = (operation: string, durationMs: number, error: unknown) => void;

/**
 * Wraps whichever runtime a plugin provides so every operation is timed and its failures
 * logged in one place, whatever the plugin: the core measures, plugins do not have to. Each
 * call gets a signal of its own in its options (the last argument, at the method's
 * OPTIONS_INDEX): it aborts when runtimeRequestTimeout expires (callDeadlineMs) or when the
 * caller's signal does (a pod that is to be terminated, a tap past hookTimeout); a runtime that
 * does not answer within ABORT_GRACE_MS after that fails with DeadlineExceeded, so a pod worker
 * never waits on it for ever.
 */
export function instrumentRuntime(runtime: ContainerRuntime, logger: Logger, observe?: RuntimeObserver, options: RuntimeCallOptions = {}): ContainerRuntime {
  const log = logger.child({ component: 'runtime' });
  const wrapped: Record<string, unknown> = {};
  for (const key of Object.keys(OPTIONS_INDEX) as Array<keyof ContainerRuntime>) {
    const fn = runtime[key] as ((...a: unknown[]) => Promise<unknown>) | undefined;
    // An optional operation the runtime lacks stays absent, so callers can tell.
    if (typeof fn !== 'function') continue;
    const at = OPTIONS_INDEX[key];
    wrapped[key] = async (...callerArgs: unknown[]) => {
      const start = performance.now();
      // The caller's arguments up to the options (absent optional ones stay undefined), then options of the call's own.
      const args = callerArgs.slice(0, at);
      const scope = childSignal(signalOf(callerArgs[at] as CallOptions | undefined));
      args[at] = { ...(callerArgs[at] as CallOptions | undefined), signal: scope.signal } satisfies CallOptions;
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
        const result = await Promise.race([new Promise((resolve) => resolve(fn.apply(runtime, args))), givenUp]);
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

/**
 * Where a method's options go: the number of its parameters before them, read off its type
 * (types.ts declares `options?: CallOptions` last on every method). A wrong number would drop
 * a caller's argument or its options, so the compiler checks each entry below against it.
 */
type OptionsIndexOf<K extends keyof ContainerRuntime> = Required<Parameters<NonNullable<ContainerRuntime[K]>>> extends [...infer Before, CallOptions] ? Before['length'] : never;

/** Each operation, with where its options go (checked against the interface at compile time). */
const OPTIONS_INDEX: { readonly [K in keyof ContainerRuntime]-?: OptionsIndexOf<K> } = {
  version: 0, runPodSandbox: 2, stopPodSandbox: 1, removePodSandbox: 1, podSandboxStatus: 1,
  listPodSandboxes: 1, createContainer: 3, startContainer: 1, stopContainer: 2, removeContainer: 1,
  listContainers: 1, containerStatus: 1, execSync: 3, imageStatus: 1, pullImage: 3, listImages: 0,
  status: 0, close: 0, exec: 1, attach: 1, portForward: 2, listContainerStats: 1, listPodSandboxStats: 1,
  imageFsInfo: 0, removeImage: 1, sandboxImage: 0, runtimeConfig: 0, runtimeHandlers: 0, reopenContainerLog: 1, pullProgress: 0,
  containerEvents: 1,
};
