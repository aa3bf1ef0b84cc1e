/**
 * Cancellation, passed explicitly: every hook tap gets a context (`HookContext`) as its last
 * argument and every runtime call takes options (`CallOptions`), each with an AbortSignal that
 * aborts when the core gives up on the work (hookTimeout, runtimeRequestTimeout, a pod that is
 * to be terminated, the kubelet stopping). A plugin passes the signal on to what it starts
 * (fetch, child processes, gRPC calls, its own loops, the runtime calls it makes).
 *
 * Explicit rather than ambient (AsyncLocalStorage, as kubelet-ts did before 0.1.0), as Go's
 * `context.Context` and fetch's `signal` are: a plugin with its own copy of this package gets
 * the same signal, background work a tap starts does not inherit the tap's signal unless it is
 * handed it, and no await of the process pays for a context that follows it.
 */
import { setMaxListeners } from 'node:events';

/** A signal that never aborts: for work nobody gives up on (the caller passed none). */
export const NEVER_ABORTS: AbortSignal = new AbortController().signal;
// Every call made without a signal of its own listens on this one while it runs (a relist's 110
// status reads at once): no leak, as each removes its listener, and no warning for it.
setMaxListeners(0, NEVER_ABORTS);

/** The options every runtime and device call takes last: how the caller gives up on it. */
export interface CallOptions {
  /** Aborts when the caller gives up on the call: the runtime stops its work and rejects. */
  readonly signal?: AbortSignal;
}

/** The signal of `options`, or one that never aborts. */
export function signalOf(options: CallOptions | undefined): AbortSignal {
  return options?.signal ?? NEVER_ABORTS;
}

/** The error a call refused or stopped by its signal rejects with: the signal's reason when it is one. */
export function abortError(signal: AbortSignal, what: string): Error {
  const reason: unknown = signal.reason;
  if (reason instanceof Error) return reason;
  const err = new Error(`${what}: cancelled${reason === undefined ? '' : `: ${String(reason)}`}`);
  err.name = 'AbortError';
  return err;
}

/** A signal for a piece of work inside another one: it aborts when the parent does, or when told. */
export interface ChildSignal {
  readonly signal: AbortSignal;
  abort(reason: unknown): void;
  /** The work ended: stops following the parent (no listener left behind on a long-lived signal). */
  done(): void;
}

/** A signal for a piece of work inside the one `parent` belongs to: it aborts with the parent, or when told. */
export function childSignal(parent: AbortSignal = NEVER_ABORTS): ChildSignal {
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

/**
 * Marks a hook context, so the tap isolation can hand each tap one of its own. A registered
 * symbol: the same in every copy of this package a plugin may have.
 */
const HOOK_CONTEXT = Symbol.for('kubelet-ts.hook-context');

/**
 * What every asynchronous hook's taps get as their last argument: the signal of the work the
 * hook is part of. Each tap gets a signal of its own, which also aborts when the tap outlives
 * hookTimeout (its reason: the timeout's error).
 */
export interface HookContext {
  readonly signal: AbortSignal;
}

/** A hook context with `signal` (a caller firing a hook passes one; the core hands each tap its own). */
export function hookContext(signal: AbortSignal = NEVER_ABORTS): HookContext {
  return Object.freeze({ signal, [HOOK_CONTEXT]: true });
}

/** `value` is a hook context made by hookContext (by this copy of kubelet-ts or another). */
export function isHookContext(value: unknown): value is HookContext {
  return typeof value === 'object' && value !== null && (value as Record<symbol, unknown>)[HOOK_CONTEXT] === true;
}

/**
 * Waits for `work` until `signal` aborts: then rejects with the signal's reason, while the work
 * itself runs on. For work shared by several callers (one image pull or one credential
 * provider run that many pods wait for), which one caller giving up must not cancel.
 */
export function untilAborted<T>(work: Promise<T>, signal: AbortSignal, what = 'the work'): Promise<T> {
  if (signal.aborted) {
    work.catch(() => {});
    return Promise.reject(abortError(signal, what));
  }
  return new Promise<T>((resolve, reject) => {
    const abort = () => {
      work.catch(() => {});
      reject(abortError(signal, what));
    };
    signal.addEventListener('abort', abort, { once: true });
    work.then(
      (v) => {
        signal.removeEventListener('abort', abort);
        resolve(v);
      },
      (err: unknown) => {
        signal.removeEventListener('abort', abort);
        reject(err);
      },
    );
  });
}
