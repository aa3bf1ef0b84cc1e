import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ContainerRuntime } from './types.ts';

/** Reported for every runtime call; the metrics registry subscribes to it. */
export type RuntimeObserver = (operation: string, durationMs: number, error: unknown) => void;

/**
 * Wraps whichever runtime a plugin provides so every operation is timed and its failures
 * logged in one place, whatever the plugin: the core measures, plugins do not have to.
 */
export function instrumentRuntime(runtime: ContainerRuntime, logger: Logger, observe?: RuntimeObserver): ContainerRuntime {
  const log = logger.child({ component: 'runtime' });
  const wrapped: Record<string, unknown> = {};
  for (const key of Object.keys(runtimeMethods) as Array<keyof ContainerRuntime>) {
    const fn = runtime[key] as ((...a: unknown[]) => Promise<unknown>) | undefined;
    // An optional operation the runtime lacks stays absent, so callers can tell.
    if (typeof fn !== 'function') continue;
    wrapped[key] = async (...args: unknown[]) => {
      const start = performance.now();
      try {
        const result = await fn.apply(runtime, args);
        const ms = performance.now() - start;
        observe?.(key, ms, undefined);
        log.trace({ op: key, ms: Math.round(ms) }, 'runtime call');
        return result;
      } catch (err) {
        const ms = performance.now() - start;
        observe?.(key, ms, err);
        log.debug({ op: key, ms: Math.round(ms), err: errorMessage(err) }, 'runtime call failed');
        throw err;
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
  imageFsInfo: true, removeImage: true, sandboxImage: true, reopenContainerLog: true, pullProgress: true,
};
