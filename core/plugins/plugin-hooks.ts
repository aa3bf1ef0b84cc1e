import { HookMap } from 'tapable';
import type { HookName, KubeletHooks, PluginHooks } from '../hooks.ts';

type TapOptions = string | { name?: string; stage?: number; before?: string };

/** One tap a plugin made, for `kubelet-ts plugins` and the log; a HookMap tap reads `mountVolume[csi]`. */
export interface TapRecord { plugin: string; hook: string; stage: number }

/**
 * Gives one plugin its view of the hooks: tap methods only (no `call`/`promise`), and the
 * tap's name is always the plugin's own name whatever the plugin passes, so every error,
 * log line and metric of a tap is attributed to the plugin that made it. A HookMap shows
 * only `for(key)`, which returns the same kind of tap-only view of that key's hook.
 */
export function pluginHooksView(hooks: KubeletHooks, plugin: string, record: (tap: TapRecord) => void): PluginHooks {
  const view: Record<string, unknown> = {};
  for (const hookName of Object.keys(hooks) as HookName[]) {
    const hook = hooks[hookName] as unknown;
    if (hook instanceof HookMap) {
      const perKey = new Map<string, object>();
      view[hookName] = Object.freeze({
        for: (key: string) => {
          let keyed = perKey.get(key);
          if (!keyed) {
            keyed = tapOnly(hook.for(key), `${hookName}[${key}]`, plugin, record);
            perKey.set(key, keyed);
          }
          return keyed;
        },
      });
      continue;
    }
    view[hookName] = tapOnly(hook as Record<string, Function>, hookName, plugin, record);
  }
  return Object.freeze(view) as PluginHooks;
}

function tapOnly(hook: Record<string, Function>, label: string, plugin: string, record: (tap: TapRecord) => void): object {
  const methods: Record<string, Function> = {};
  for (const method of ['tap', 'tapAsync', 'tapPromise'] as const) {
    if (typeof hook[method] !== 'function') continue;
    methods[method] = (options: TapOptions, fn: Function) => {
      const opts = typeof options === 'string' ? {} : { ...options };
      const tap = { ...opts, name: plugin };
      record({ plugin, hook: label, stage: tap.stage ?? 0 });
      hook[method]!.call(hook, tap, fn);
    };
  }
  return Object.freeze(methods);
}
