import type { Logger } from '../logger.ts';
import { PluginError, errorMessage, isPluginError } from '../errors.ts';
import { HookMap } from 'tapable';
import type { KubeletHooks } from '../hooks.ts';
import { withTimeout } from '../util/with-timeout.ts';
import { childSignal, hookContext, isHookContext, type ChildSignal } from '../util/cancellation.ts';

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
 *  - a promise or callback tap gets a context of its own in place of the caller's (the last
 *    argument, when it is a HookContext: util/cancellation.ts), whose signal follows the
 *    caller's; a tap that outlives `timeoutMs` fails instead of stalling the pod's worker (a
 *    sync tap blocks the event loop and cannot be bounded: keep them short), and its signal
 *    aborts then, with that error as its reason, so the plugin's work stops too;
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
      fn: async (...callerArgs: unknown[]) => {
        const start = performance.now();
        const { args, scope } = ownContext(callerArgs);
        try {
          const timedOut = () => {
            const err = new Error(`did not finish within ${options.timeoutMs} ms`);
            scope.abort(err);
            return err;
          };
          const result = await withTimeout(() => fn(...args), options.timeoutMs, { unref: true, error: timedOut });
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
      fn: (...callerArgs: unknown[]) => {
        const start = performance.now();
        const callback = callerArgs.pop() as (err?: unknown, result?: unknown) => void;
        const { args, scope } = ownContext(callerArgs);
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
          fn(...args, (err: unknown, result: unknown) => settle(err, result));
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

/**
 * The tap's own context: a signal that follows the caller's (the hook's last argument, when it
 * is a HookContext) and that the tap's timeout aborts; the arguments with it in the caller's
 * place. A hook without a context (a plugin's own hook whose caller passes none) keeps its
 * arguments, and its tap's signal only serves the timeout.
 */
function ownContext(callerArgs: unknown[]): { args: unknown[]; scope: ChildSignal } {
  const last = callerArgs[callerArgs.length - 1];
  if (!isHookContext(last)) return { args: callerArgs, scope: childSignal() };
  const scope = childSignal(last.signal);
  return { args: [...callerArgs.slice(0, -1), hookContext(scope.signal)], scope };
}
