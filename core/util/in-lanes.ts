/**
 * Bounded parallel work over a list: a pod's container starts and stops run a few at a time,
 * so a pod of hundreds neither floods the runtime nor leaves work begun once it should stop.
 */

/** Runs `fn` on each item, `lanes` at a time, in order; none is begun once `stop()` is true. Rejects with the first failure, once every lane ended. */
export async function inLanes<T>(items: T[], lanes: number, stop: () => boolean, fn: (item: T) => Promise<void>): Promise<void> {
  let next = 0;
  const lane = async () => {
    while (next < items.length && !stop()) await fn(items[next++]!);
  };
  const ends = await Promise.allSettled(Array.from({ length: Math.min(lanes, items.length) }, lane));
  const failed = ends.find((e): e is PromiseRejectedResult => e.status === 'rejected');
  if (failed) throw failed.reason;
}
