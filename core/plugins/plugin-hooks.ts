import type { HookName, KubeletHooks, PluginHooks } from '../hooks.ts';

type TapOptions = string | { name?: string; stage?: number; before?: string };

/** One tap a plugin made, for `kubelet-ts plugins` and the log. */
export interface TapRecord { plugin: string; hook: HookName; stage: number }

/**
 * Gives one plugin its view of the hooks: tap methods only (no `call`/`promise`), and the
 * tap's name is always the plugin's own name whatever the plugin passes, so every error,
 * log line and metric of a tap is attributed to the plugin that made it.
 */
export function pluginHooksView(hooks: KubeletHooks, plugin: string, record: (tap: TapRecord) => void): PluginHooks {
  const view: Record<string, unknown> = {};
  for (const hookName of Object.keys(hooks) as HookName[]) {
    const hook = hooks[hookName] as unknown as Record<string, Function>;
    const methods: Record<string, Function> = {};
    for (const method of ['tap', 'tapAsync', 'tapPromise'] as const) {
      if (typeof hook[method] !== 'function') continue;
      methods[method] = (options: TapOptions, fn: Function) => {
        const opts = typeof options === 'string' ? {} : { ...options };
        const tap = { ...opts, name: plugin };
        record({ plugin, hook: hookName, stage: tap.stage ?? 0 });
        hook[method]!.call(hook, tap, fn);
      };
    }
    view[hookName] = Object.freeze(methods);
  }
  return Object.freeze(view) as PluginHooks;
}
