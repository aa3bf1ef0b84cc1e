import type { Logger } from '../logger.ts';
import { PluginError, errorMessage, isPluginError } from '../errors.ts';
import { HookMap } from 'tapable';
import type { KubeletHooks } from '../hooks.ts';
import { withTimeout } from '../util/with-timeout.ts';
import { childSignal, runWithSignal } from '../util/abort-scope.ts';

/** Reported once per tap invocation; metrics (tap duration histogram) subscribe to it. */
export type TapObserver = (hook: string, plugin: string, durationMs: number, error: unknown, args?: readonly unknown[]) => void;

interface FullTap { name: string; type: 'sync' | 'async' | 'promise'; fn: Function; stage?: number }

export interface TapIsolationOptions {
  timeoutMs: number;
  observe?: TapObserver;
  /**
   * Hooks whose taps are told, not asked (hooks.ts NOTIFICATION_HOOKS): a tap's throw is logged,
   * naming the plugin, and goes no further; the hook's other taps still run.
   */
  notifications?: ReadonlySet<string>;
}
interface Interceptable { intercept(i: { register?: (tap: any) => any }): void }

/**
 * Adds per-tap isolation to every hook of `hooks` (the core's, or an object of tapable hooks a
 * plugin made for other plugins, through `ctx.isolateHooks`), once, with a tapable interceptor (tapable has no
 * per-tap isolation of its own): each tap's function is wrapped so that
 *  - an error leaving it names the hook and the plugin (`PluginError`) and is logged there;
 *  - its duration is reported to the observer;
 *  - a promise or callback tap that outlives `timeoutMs` fails instead of stalling the pod's
 *    worker (a sync tap blocks the event loop and cannot be bounded: keep them short), and its
 *    signal (`currentSignal()` inside the tap, util/abort-scope.ts) aborts then, with that
 *    error as its reason, so the plugin's work stops too;
 *  - on a notification hook, the failure stops there: logged, and the next tap runs.
 * Taps registered before or after this call are both covered (tapable re-registers).
 * A HookMap's hooks are covered too, named `mountVolume[csi]`: those it already made, and,
 * through its `factory` interceptor, every one it makes later.
 */
export function isolateTaps(hooks: KubeletHooks | object, logger: Logger, options: TapIsolationOptions): void {
  const isolate = (name: string, hook: Interceptable) => hook.intercept({ register: (tap: FullTap) => wrapTap(name, tap, logger, options) });
  for (const [hookName, hook] of Object.entries(hooks) as Array<[string, unknown]>) {
    if (hook instanceof HookMap) {
      // tapable keeps a HookMap's hooks in `_map`; hooks made before this call get the interceptor here.
      const existing = (hook as unknown as { _map?: Map<unknown, Interceptable> })._map ?? new Map();
      for (const [key, inner] of existing) isolate(`${hookName}[${String(key)}]`, inner);
      hook.intercept({
        factory: (key: unknown, inner: unknown) => {
          isolate(`${hookName}[${String(key)}]`, inner as Interceptable);
          return inner;
        },
      });
      continue;
    }
    isolate(hookName, hook as Interceptable);
  }
}

function wrapTap(hook: string, tap: FullTap, logger: Logger, options: TapIsolationOptions): FullTap {
  const plugin = tap.name;
  const fn = tap.fn;
  const log = logger.child({ plugin, hook });
  const notification = options.notifications?.has(hook.replace(/\[.*$/, '')) === true;
  const fail = (err: unknown): PluginError => {
    if (isPluginError(err)) return err;
    const wrapped = new PluginError(plugin, errorMessage(err), { hook, cause: err });
    log.warn({ err: errorMessage(err) }, 'plugin tap failed');
    return wrapped;
  };
  /** What a failed tap's caller gets: the error, or nothing at all on a notification hook (logged here). */
  const outcome = (err: unknown): { error: PluginError } | { error?: undefined } => {
    if (!notification) return { error: fail(err) };
    log.warn({ err: errorMessage(err) }, 'plugin tap failed; the hook is a notification, nothing else comes of it');
    return {};
  };
  const observe = (start: number, err: unknown, args: readonly unknown[]) => options.observe?.(hook, plugin, performance.now() - start, err, args);

  if (tap.type === 'promise') {
    return {
      ...tap,
      fn: async (...args: unknown[]) => {
        const start = performance.now();
        const scope = childSignal();
        try {
          const timedOut = () => {
            const err = new Error(`did not finish within ${options.timeoutMs} ms`);
            scope.abort(err);
            return err;
          };
          const result = await withTimeout(() => runWithSignal(scope.signal, () => fn(...args)), options.timeoutMs, { unref: true, error: timedOut });
          observe(start, undefined, args);
          return result;
        } catch (err) {
          observe(start, err, args);
          const { error } = outcome(err);
          if (error) throw error;
          return undefined;
        } finally {
          scope.done();
        }
      },
    };
  }
  if (tap.type === 'async') {
    return {
      ...tap,
      fn: (...args: unknown[]) => {
        const start = performance.now();
        const callback = args.pop() as (err?: unknown, result?: unknown) => void;
        const scope = childSignal();
        // The callback is called once: by the tap, or by the timeout when the tap never calls
        // back (a lost callback would otherwise hold the pod's worker, and shutdown, forever).
        let settled = false;
        const settle = (err: unknown, result?: unknown) => {
          if (settled) return;
          settled = true;
          clearTimeout(timer);
          scope.done();
          observe(start, err, args);
          const error = err ? outcome(err).error : undefined;
          if (error) callback(error);
          else callback(null, err ? undefined : result);
        };
        const timer = setTimeout(() => {
          const err = new Error(`did not call back within ${options.timeoutMs} ms`);
          scope.abort(err);
          settle(err);
        }, options.timeoutMs);
        timer.unref();
        try {
          runWithSignal(scope.signal, () => fn(...args, (err: unknown, result: unknown) => settle(err, result)));
        } catch (err) {
          settle(err);
        }
      },
    };
  }
  return {
    ...tap,
    fn: (...args: unknown[]) => {
      const start = performance.now();
      try {
        const result = fn(...args);
        observe(start, undefined, args);
        return result;
      } catch (err) {
        observe(start, err, args);
        const { error } = outcome(err);
        if (error) throw error;
        return undefined;
      }
    },
  };
}
