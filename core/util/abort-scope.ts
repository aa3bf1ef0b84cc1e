/**
 * The AbortSignal of the work in progress: how a hook tap and a runtime call learn that the core
 * gave up on them (hookTimeout, runtimeRequestTimeout), so a vendor's work stops instead of
 * running on. The core runs each tap and each runtime call in a scope of its own
 * (AsyncLocalStorage: the scope follows the work across awaits, timers and callbacks it starts),
 * so no hook's or runtime method's arguments change; a plugin reads it with `currentSignal()`
 * and passes it on (fetch, child_process, grpc `call.cancel()`, its own loops).
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { setMaxListeners } from 'node:events';

const scope = new AsyncLocalStorage<AbortSignal>();
/** Outside every scope: a signal that never aborts. */
const NEVER = new AbortController().signal;
// Every call made outside a scope listens on this one signal while it runs (a relist's 110
// status reads at once): no leak, as each removes its listener, and no warning for it.
setMaxListeners(0, NEVER);

/** The signal of the tap or runtime call this code runs in; outside one, a signal that never aborts. */
export function currentSignal(): AbortSignal {
  return scope.getStore() ?? NEVER;
}

/** Runs `fn` with `signal` as its current signal (and of everything it starts). */
export function runWithSignal<T>(signal: AbortSignal, fn: () => T): T {
  return scope.run(signal, fn);
}

/** A scope's signal: aborted by `abort(reason)`, or with the current signal (the work it is part of). */
export interface ChildSignal {
  readonly signal: AbortSignal;
  abort(reason: unknown): void;
  /** The work ended: stops following the parent (no listener left behind on a long-lived signal). */
  done(): void;
}

/** A signal for a piece of work inside the current one: it aborts when the current one does, or when told. */
export function childSignal(parent: AbortSignal = currentSignal()): ChildSignal {
  const controller = new AbortController();
  const follow = () => controller.abort(parent.reason);
  if (parent.aborted) follow();
  else parent.addEventListener('abort', follow, { once: true });
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    done: () => parent.removeEventListener('abort', follow),
  };
}
