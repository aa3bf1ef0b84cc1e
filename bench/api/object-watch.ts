import type { H2ApiClient, TimedEvent, WatchHandle } from './h2-client.ts';

/**
 * The objects of one collection (a namespace's pods or configmaps) as a watch reports them,
 * with waiters: `until(name, predicate)` resolves with the arrival time (`performance.now()`)
 * of the first event after which the predicate holds. This is how the benchmarks see a pod
 * become Running "as the API reports it": the server pushes each change, so nothing polls,
 * and what the observation adds is the API server's watch fan-out plus one JSON decode here
 * (the round-trip measurement in round-trip.ts includes the same path).
 *
 * The watch starts from a list's resourceVersion and restarts from the last one seen when
 * the server ends it (bounded: MAX_RESTARTS).
 */

type Obj = Record<string, unknown>;
interface Waiter { predicate: (obj: Obj | undefined) => boolean; resolve: (at: number) => void; reject: (err: Error) => void; timer: NodeJS.Timeout }

const MAX_RESTARTS = 50;

export class ObjectWatch<T extends object = Obj> {
  private readonly objects = new Map<string, Obj>();
  private readonly waiters = new Map<string, Set<Waiter>>();
  private readonly listeners = new Set<(name: string, obj: T | undefined, at: number) => void>();
  private handle: WatchHandle | undefined;
  private resourceVersion = '';
  private restarts = 0;
  private stopped = false;
  private failure: Error | undefined;

  private constructor(private readonly client: H2ApiClient, private readonly path: string) {}

  /** Lists `path` and watches it from the list's resourceVersion. */
  static async start<T extends object = Obj>(client: H2ApiClient, path: string): Promise<ObjectWatch<T>> {
    const w = new ObjectWatch<T>(client, path);
    const list = await client.request<{ metadata?: { resourceVersion?: string }; items?: Obj[] }>('GET', path);
    for (const item of list.body.items ?? []) w.objects.set(nameOf(item), item);
    w.resourceVersion = list.body.metadata?.resourceVersion ?? '';
    w.open();
    return w;
  }

  private open(): void {
    if (this.stopped) return;
    this.handle = this.client.watch(
      this.path,
      { resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds: 3600 },
      (e) => this.onEvent(e),
      (err) => {
        if (this.stopped) return;
        if (err || ++this.restarts > MAX_RESTARTS) {
          this.fail(err ?? new Error(`watch ${this.path}: restarted ${MAX_RESTARTS} times`));
          return;
        }
        this.open();
      },
    );
  }

  private onEvent(e: TimedEvent): void {
    const rv = (e.object.metadata as { resourceVersion?: string } | undefined)?.resourceVersion;
    if (rv) this.resourceVersion = rv;
    if (e.type === 'BOOKMARK') return;
    if (e.type === 'ERROR') {
      this.fail(new Error(`watch ${this.path}: ${JSON.stringify(e.object).slice(0, 300)}`));
      return;
    }
    const name = nameOf(e.object);
    if (e.type === 'DELETED') this.objects.delete(name);
    else this.objects.set(name, e.object);
    const current = this.objects.get(name);
    for (const l of this.listeners) l(name, current as T | undefined, e.at);
    const ws = this.waiters.get(name);
    if (!ws) return;
    for (const w of [...ws]) {
      if (!w.predicate(current)) continue;
      ws.delete(w);
      clearTimeout(w.timer);
      w.resolve(e.at);
    }
    if (!ws.size) this.waiters.delete(name);
  }

  private fail(err: Error): void {
    this.failure = err;
    for (const ws of this.waiters.values()) for (const w of ws) {
      clearTimeout(w.timer);
      w.reject(err);
    }
    this.waiters.clear();
  }

  get(name: string): T | undefined {
    return this.objects.get(name) as T | undefined;
  }

  all(): T[] {
    return [...this.objects.values()] as T[];
  }

  /** Calls `fn` on every change (after the store is updated); returns the unsubscribe. */
  onChange(fn: (name: string, obj: T | undefined, at: number) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  /**
   * Resolves with the arrival time of the event after which `predicate(object)` holds (the
   * object is undefined once deleted), or now if it holds already; rejects after `timeoutMs`.
   */
  until(name: string, predicate: (obj: T | undefined) => boolean, timeoutMs: number, what: string): Promise<number> {
    if (this.failure) return Promise.reject(this.failure);
    if (predicate(this.get(name))) return Promise.resolve(performance.now());
    return new Promise((resolve, reject) => {
      const w: Waiter = {
        predicate: predicate as (obj: Obj | undefined) => boolean,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.waiters.get(name)?.delete(w);
          reject(new Error(`${what}: not seen within ${timeoutMs} ms (last: ${JSON.stringify((this.get(name) as { status?: unknown } | undefined)?.status ?? null).slice(0, 400)})`));
        }, timeoutMs),
      };
      let set = this.waiters.get(name);
      if (!set) this.waiters.set(name, (set = new Set()));
      set.add(w);
    });
  }

  stop(): void {
    this.stopped = true;
    this.handle?.stop();
    for (const ws of this.waiters.values()) for (const w of ws) clearTimeout(w.timer);
    this.waiters.clear();
  }
}

function nameOf(obj: Obj): string {
  return String((obj.metadata as { name?: string } | undefined)?.name ?? '');
}
