import { HookMap } from 'tapable';
import { PluginError } from '../errors.ts';
import type { HookName, KubeletHooks, PluginHooks } from '../hooks.ts';
import { nearestName } from '../util/nearest-name.ts';

type TapOptions = string | { name?: string; stage?: number; before?: string };

/** One tap a plugin made, for `kubelet-ts plugins` and the log; a HookMap tap reads `mountVolume[csi]`. */
export interface TapRecord { plugin: string; hook: string; stage: number }

/**
 * Gives one plugin its view of the hooks: tap methods only (no `call`/`promise`), and the
 * tap's name is always the plugin's own name whatever the plugin passes, so every error,
 * log line and metric of a tap is attributed to the plugin that made it. A HookMap shows
 * only `for(key)`, which returns the same kind of tap-only view of that key's hook.
 *
 * A hook or tap method that does not exist (`ctx.hooks.beforeSandbx`, `tapPromise` on a sync
 * hook) is a PluginError naming the plugin, what it asked for and the nearest name, instead of
 * JavaScript's `Cannot read properties of undefined (reading 'tap')`. The check is a Proxy
 * over the plugin's view, which only taps go through (at load); the core fires the hooks
 * themselves, so calls pay nothing for it.
 */
export function pluginHooksView(hooks: KubeletHooks, plugin: string, record: (tap: TapRecord) => void): PluginHooks {
  const view: Record<string, unknown> = {};
  for (const hookName of Object.keys(hooks) as HookName[]) {
    const hook = hooks[hookName] as unknown;
    if (hook instanceof HookMap) {
      const perKey = new Map<string, object>();
      const byKey = Object.freeze({
        for: (key: string) => {
          let keyed = perKey.get(key);
          if (!keyed) {
            keyed = tapOnly(hook.for(key), `${hookName}[${key}]`, plugin, record);
            perKey.set(key, keyed);
          }
          return keyed;
        },
      });
      view[hookName] = checkedNames(byKey, (asked) => new PluginError(plugin, `uses '${asked}' of hook '${hookName}', a hook per key: tap ${hookName}.for(key), the key a volume type (${hookName}.for('csi').tapPromise(...))`, { code: 'InvalidInput', hostCode: 'PLUGIN_UNKNOWN_HOOK' }));
      continue;
    }
    view[hookName] = tapOnly(hook as Record<string, Function>, hookName, plugin, record);
  }
  return checkedNames(Object.freeze(view), (asked, known) => {
    const near = nearestName(asked, known);
    const hint = near !== undefined ? `did you mean '${near}'?` : `the hooks are: ${known.join(', ')}`;
    return new PluginError(plugin, `taps hook '${asked}', which does not exist (${hint})`, { code: 'InvalidInput', hostCode: 'PLUGIN_UNKNOWN_HOOK' });
  }) as PluginHooks;
}

/**
 * Names a program may probe on any object without meaning a hook: `await` looks for `then`,
 * JSON.stringify for `toJSON`, and Node's inspect and test libraries for these.
 */
const PROBED_NAMES: ReadonlySet<string> = new Set(['then', 'toJSON', 'inspect', 'asymmetricMatch', 'nodeType', '$$typeof']);

/**
 * `target` behind a Proxy whose reads of a missing string property throw `unknown(name, known
 * names)`; symbols, Object.prototype's members and PROBED_NAMES read as usual.
 */
function checkedNames<T extends object>(target: T, unknown: (asked: string, known: string[]) => Error): T {
  return new Proxy(target, {
    get(t, key, receiver) {
      if (typeof key === 'string' && !(key in t) && !PROBED_NAMES.has(key)) throw unknown(key, Object.keys(t));
      return Reflect.get(t, key, receiver);
    },
  });
}

function tapOnly(hook: Record<string, Function>, label: string, plugin: string, record: (tap: TapRecord) => void): object {
  const methods: Record<string, Function> = {};
  // tapable gives its sync hooks tapAsync and tapPromise that only throw, naming no hook: a
  // plugin's view leaves them out, as the TapOnly type does, so the check below names it.
  const sync = /^Sync/.test((hook.constructor as Function | undefined)?.name ?? '');
  for (const method of sync ? (['tap'] as const) : (['tap', 'tapAsync', 'tapPromise'] as const)) {
    if (typeof hook[method] !== 'function') continue;
    methods[method] = (options: TapOptions, fn: Function) => {
      const opts = typeof options === 'string' ? {} : { ...options };
      const tap = { ...opts, name: plugin };
      record({ plugin, hook: label, stage: tap.stage ?? 0 });
      hook[method]!.call(hook, tap, fn);
    };
  }
  return checkedNames(Object.freeze(methods), (asked, known) => {
    // A sync hook has `tap` only; an async one has all three.
    const hint = known.length === 1 ? `a sync hook: its taps use ${known[0]}` : `its taps use ${known.join(', ')}`;
    return new PluginError(plugin, `uses '${asked}' of hook '${label}', which has no such method (${hint})`, { code: 'InvalidInput', hostCode: 'PLUGIN_UNKNOWN_HOOK' });
  });
}
