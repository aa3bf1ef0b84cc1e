import { definePlugin, type KubeletPlugin } from '../../core/plugins/plugin-api.ts';
import type { HookName } from '../../core/hooks.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';

/** One call a recorder saw: `[hook, plugin]`. */
export type RecordedCall = [hook: HookName, plugin: string];

/** Hooks whose taps must hand back their first argument (waterfalls). */
const WATERFALL: ReadonlySet<HookName> = new Set(['beforeSandbox', 'beforeContainerCreate', 'podStatus']);

/**
 * A plugin that taps `hooks` (at `stage`) and appends `[hook, name]` to `calls` each time one
 * fires, so a hook-order test reads as one `deepEqual`. Waterfall taps return their value
 * unchanged; bail taps return undefined (they never claim).
 */
export function recorderPlugin(name: string, calls: RecordedCall[], hooks: HookName[], stage?: number): KubeletPlugin {
  return definePlugin({
    name,
    kind: 'observability',
    apply(ctx) {
      const tapOptions = stage === undefined ? name : { name, stage };
      for (const hook of hooks) {
        const tappable = ctx.hooks[hook] as { tap(o: unknown, fn: (...a: unknown[]) => unknown): void };
        tappable.tap(tapOptions, (...args: unknown[]) => {
          calls.push([hook, name]);
          return WATERFALL.has(hook) ? args[0] : undefined;
        });
      }
    },
  });
}

/** A runtime whose every method throws "not used": for host tests that never reach the runtime. */
export function unusedRuntime(): ContainerRuntime {
  const notUsed = (method: string) => async (): Promise<never> => {
    throw new Error(`stub runtime: ${method} not used in this test`);
  };
  return {
    version: notUsed('version'),
    runPodSandbox: notUsed('runPodSandbox'),
    stopPodSandbox: notUsed('stopPodSandbox'),
    removePodSandbox: notUsed('removePodSandbox'),
    podSandboxStatus: notUsed('podSandboxStatus'),
    listPodSandboxes: notUsed('listPodSandboxes'),
    createContainer: notUsed('createContainer'),
    startContainer: notUsed('startContainer'),
    stopContainer: notUsed('stopContainer'),
    removeContainer: notUsed('removeContainer'),
    listContainers: notUsed('listContainers'),
    containerStatus: notUsed('containerStatus'),
    execSync: notUsed('execSync'),
    imageStatus: notUsed('imageStatus'),
    pullImage: notUsed('pullImage'),
    listImages: notUsed('listImages'),
    status: notUsed('status'),
    // The plugin host closes the runtime slot's provider at stop.
    close: async () => {},
  };
}

/** A plugin that fills the `runtime` slot with `unusedRuntime()`. */
export function stubRuntimePlugin(name = 'stub-runtime'): KubeletPlugin {
  return definePlugin({
    name,
    kind: 'runtime',
    apply(ctx) {
      ctx.provide('runtime', unusedRuntime());
    },
  });
}
