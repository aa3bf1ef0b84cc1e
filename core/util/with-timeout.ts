/**
 * A promise with a deadline: the one way the core stops waiting for something that may hang
 * (a plugin's tap or cleanup, a runtime input, busy pod workers, a source's first list).
 * Waiting stops; the work itself is not cancelled and runs on. Its later rejection is
 * handled here, so work given up on never surfaces as an unhandled rejection (which ends the
 * kubelet: core/cli.ts).
 */

/** What `withTimeout` resolves to when the deadline came first (without an `error`). */
export const TIMED_OUT: unique symbol = Symbol('timed out');
export type TimedOut = typeof TIMED_OUT;

export interface TimeoutOptions {
  /** The timer does not keep the process alive (for work that only matters while something else runs). */
  unref?: boolean;
}

/** `p`'s outcome, or TIMED_OUT once `ms` passed first. */
export function withTimeout<T>(p: PromiseLike<T> | (() => PromiseLike<T> | T), ms: number, options?: TimeoutOptions): Promise<T | TimedOut>;
/** `p`'s outcome, or a rejection with `error()` once `ms` passed first. */
export function withTimeout<T>(p: PromiseLike<T> | (() => PromiseLike<T> | T), ms: number, options: TimeoutOptions & { error: () => unknown }): Promise<T>;
export async function withTimeout<T>(
  p: PromiseLike<T> | (() => PromiseLike<T> | T),
  ms: number,
  options: TimeoutOptions & { error?: () => unknown } = {},
): Promise<T | TimedOut> {
  const work = typeof p === 'function' ? started(p) : Promise.resolve(p);
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<TimedOut>((resolve, reject) => {
    timer = setTimeout(() => (options.error ? reject(options.error()) : resolve(TIMED_OUT)), Math.max(0, ms));
    if (options.unref) timer.unref();
  });
  try {
    // The race subscribes to `work`: a rejection after the deadline is handled, and dropped.
    return await Promise.race([work, deadline]);
  } finally {
    clearTimeout(timer);
  }
}

/** Calls `fn` now; a synchronous throw becomes a rejection, as an async one is. */
function started<T>(fn: () => PromiseLike<T> | T): Promise<T> {
  try {
    return Promise.resolve(fn());
  } catch (err) {
    return Promise.reject(err);
  }
}
