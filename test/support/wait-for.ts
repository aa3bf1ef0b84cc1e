import { setTimeout as sleep } from 'node:timers/promises';

/**
 * Polls `check` every `intervalMs` until it answers something truthy, and returns that. A throw
 * counts as "not yet" (the API answers NotFound until the object exists), and the last error
 * is in the timeout message, so a test that never gets there says why. Bounded in time.
 */
export async function waitFor<T>(
  what: string,
  check: () => Promise<T | undefined | false> | T | undefined | false,
  timeoutMs = 60_000,
  intervalMs = 250,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const v = await check();
      if (v) return v;
    } catch (err) {
      last = err;
    }
    if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms${last ? ` (last error: ${(last as Error).message})` : ''}`);
    await sleep(intervalMs);
  }
}
