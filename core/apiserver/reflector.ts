/**
 * A list-watch of one collection (or one object, through a `metadata.name` field selector)
 * that keeps going for as long as the kubelet runs: the pod source's and the object cache's
 * common loop, as upstream's client-go reflector works.
 *
 * - The first list reads the API server's watch cache (resourceVersion=0) when asked; a
 *   re-list after 410 Gone / Expired reads etcd (resourceVersion="").
 * - Watches start from the list's resourceVersion, ask for bookmarks and end after 5–10
 *   minutes (upstream's random watch timeout; an owner may ask for longer); a watch whose
 *   connection died without a word is given up a minute after its timeout.
 * - A watch that delivered nothing, no event and no bookmark, for `silenceMs` (default
 *   WATCH_SILENCE_MS, 150 s: the API server bookmarks a watch about every minute) is dead: a
 *   half-open connection, a proxy that black-holed it, a stalled HTTP/2 stream. It is ended,
 *   logged once at info, and watched again from the last resourceVersion, as client-go does
 *   when a watch's connection ends: the API server replays every change after that
 *   resourceVersion from its watch cache, or answers 410 Gone (then the reflector re-lists),
 *   so nothing that happened while the watch was dead is lost, and no list is paid for. The
 *   check is one unref'd interval per watch; an event costs a timestamp, not a timer. It is
 *   armed once a watch delivered a bookmark or a change: an API server whose watch cache saw no
 *   change of a resource since it started sends no bookmarks for it, and its quiet watches are
 *   not dead.
 * - Failures are retried with back-off (800 ms doubling to 30 s, upstream's); an unreachable
 *   server keeps the resourceVersion (the watch resumes where it was), any other error re-lists.
 *   When the server answers again after an outage, the back-off ends at once.
 * - A watch closed at once without an event backs off too, so a server (or a proxy) that keeps
 *   closing watches is not asked again in a tight loop.
 * - The server's data may go back in time (etcd wiped, or restored from an older backup): the
 *   resourceVersion held is then above the server's, and a watch from it gets nothing, not
 *   even an error. The reflector re-lists from etcd (resourceVersion="") when the server says
 *   so ("Too large resource version": a 504 or any Status with the cause
 *   ResourceVersionTooLarge, as client-go), when its owner asks (`relist()`: the Node had to be
 *   registered again), and after EMPTY_WATCHES_TO_RELIST watches in a row that each lasted past
 *   the bookmark interval and got nothing, not even a bookmark. (client-go's own rule is
 *   narrower: a watch that ends within a second with no event is an error, and every watch
 *   error re-lists; a watch from the future there waits as long as the server keeps it open.)
 *
 * The owner keeps the objects: `replace` gets each complete list, `event` each watch event.
 */
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient, WatchEvent } from './api-client.ts';
import { isGoneError, isTooLargeResourceVersion, isTooLargeResourceVersionError, isUnavailableError, type ApiError } from './api-errors.ts';
import { InterruptibleSleep } from '../util/interruptible-sleep.ts';

export interface ReflectorHandler {
  /** A complete list (the owner's store becomes exactly these objects). */
  replace(items: unknown[]): void;
  /** One ADDED, MODIFIED or DELETED event (bookmarks and errors are the reflector's). */
  event(type: 'ADDED' | 'MODIFIED' | 'DELETED', object: unknown): void;
  /** A list or watch failed and is retried in `retryInMs` (the owner decides what to log). */
  failed?(what: 'list' | 'watch', err: unknown, retryInMs: number): void;
  /**
   * The watch delivered something (an event or a bookmark): the owner's store is current up to
   * this point. After a failure, this (or the next `replace`) says the watch is back.
   */
  progress?(): void;
  /**
   * The watch went silent (nothing for `silenceMs`) and was ended. By default the reflector
   * watches again from its resourceVersion; an owner that must trust its store again at once
   * (the next bookmark may be a minute away) answers 'relist'.
   */
  silent?(silentMs: number): 'relist' | undefined;
}

export interface ReflectorOptions {
  client: ApiClient;
  /** The collection path, e.g. `/api/v1/pods` or `/api/v1/namespaces/ns/configmaps`. */
  path: string;
  /** List and watch query (fieldSelector, labelSelector). */
  query: Record<string, string>;
  handler: ReflectorHandler;
  logger: Logger;
  /** Read the first list from the API server's watch cache (resourceVersion=0). Default true. */
  firstListFromCache?: boolean;
  /** Seconds a watch may last (the server ends it); default random in [300, 600), as upstream. */
  watchTimeoutSeconds?: () => number;
  /** Back-off after a failed list or watch. Default 800 ms doubling to 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** The server's bookmark interval (tests): a watch longer than this with nothing is empty. Default BOOKMARK_INTERVAL_MS. */
  bookmarkIntervalMs?: number;
  /**
   * How long a watch may deliver nothing (no event, no bookmark) before it is taken for dead,
   * ended and started again from its resourceVersion. Default WATCH_SILENCE_MS; 0 turns it off
   * (an owner that checks the watch itself).
   */
  silenceMs?: number;
  /**
   * Arm the silence check from the first watch, not only once a watch delivered a bookmark or a
   * change: for an owner that knows the server bookmarks this resource (the kubelet writes its
   * own Node, so the server's watch cache has seen a change of it).
   */
  bookmarksExpected?: boolean;
}

/**
 * How often the API server sends a watch a bookmark (kube-apiserver's watch cache: about every
 * minute, and just before the watch's timeout); a watch that lasted longer with nothing may be
 * watching from a resourceVersion the server has not reached.
 */
const BOOKMARK_INTERVAL_MS = 60_000;
/** Watches in a row past the bookmark interval with no event at all before a re-list. */
const EMPTY_WATCHES_TO_RELIST = 2;
/**
 * How long a watch may be silent before it is taken for dead: two and a half bookmark
 * intervals, so one late or skipped bookmark (the server's timer is best effort, and a busy
 * server is late) is no reason, and a dead watch is noticed within 2.5–3 minutes rather than
 * at its timeout (5–60 minutes). A quiet resource on an API server whose watch cache has seen
 * no change of it since it started gets no bookmarks (until etcd's progress notification, every
 * 10 minutes by default, moves the cache on), so the check waits for the reflector's first
 * bookmark or change: until then a quiet watch is not renewed every 150 s for nothing.
 */
export const WATCH_SILENCE_MS = 150_000;
/**
 * A watch timeout of 30–60 minutes rather than client-go's 5–10, for watches a node keeps all
 * its life (its pods, its Node, the services): renewing them is most of what a steady node asks
 * beyond its Lease, and with the silence check a dead watch is caught in minutes, not at its
 * timeout. Random in the range, so that many nodes do not renew together.
 */
export const longWatchTimeoutSeconds = (): number => Math.floor(1800 + Math.random() * 1800);
/** How many times per silence period a watch is checked: a silent watch ends within 1.2× silenceMs. */
const SILENCE_CHECKS = 5;

type WatchEnd = { kind: 'closed'; quick: boolean; empty: boolean } | { kind: 'silent'; silentMs: number } | { kind: 'error'; err: ApiError } | { kind: 'relist'; reason: string } | { kind: 'stopped' };

export class Reflector {
  private resourceVersion = '';
  private listedOnce = false;
  private stopped = false;
  private stopWatch: (() => void) | undefined;
  /** Back-off sleeps, cut short on stop and when the server answers again. */
  private readonly pause = new InterruptibleSleep();
  private offRecovered: (() => void) | undefined;
  private running: Promise<void> | undefined;
  /** Why the owner asked for a re-list (relist()), until the loop does it. */
  private relistAsked: string | undefined;
  /** Ends the watch in progress with a re-list. */
  private endWatch: ((reason: string) => void) | undefined;
  /**
   * A watch of this reflector delivered a bookmark or a change: the API server's watch cache has
   * seen a change of this resource, so it bookmarks every watch of it about once a minute, and a
   * silent watch is a dead one.
   */
  private bookmarking: boolean;

  constructor(private readonly opts: ReflectorOptions) {
    this.bookmarking = opts.bookmarksExpected ?? false;
  }

  /**
   * Re-lists from etcd now, whatever the watch holds: the owner knows the server's data changed
   * under it (the Node had to be registered again: etcd was wiped or restored).
   */
  relist(reason: string): void {
    if (this.stopped) return;
    this.relistAsked = reason;
    this.endWatch?.(reason);
    this.pause.wake();
  }

  /** True once a list succeeded (the owner's store reflects the server). */
  get synced(): boolean {
    return this.listedOnce;
  }

  start(): void {
    if (this.running) return;
    // The server is back: list or watch again now, not at the end of the back-off.
    this.offRecovered = this.opts.client.connectivity.onRecovered(() => this.pause.wake());
    this.running = this.run();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    this.offRecovered?.();
    this.stopWatch?.();
    this.pause.wake();
    await this.running?.catch(() => {});
  }

  private async run(): Promise<void> {
    const initial = this.opts.backoff?.initialMs ?? 800;
    const max = this.opts.backoff?.maxMs ?? 30_000;
    let backoff = initial;
    let relist = true;
    let emptyWatches = 0;
    const pause = async () => {
      if (this.stopped) return;
      await this.pause.sleep(backoff * (1 + Math.random()));
      backoff = Math.min(backoff * 2, max);
    };
    while (!this.stopped) {
      if (this.relistAsked !== undefined) {
        this.opts.logger.info({ path: this.opts.path, reason: this.relistAsked }, 're-listing');
        this.relistAsked = undefined;
        this.resourceVersion = '';
        relist = true;
      }
      if (relist) {
        emptyWatches = 0;
        try {
          await this.list();
          relist = false;
          backoff = initial;
        } catch (err) {
          this.opts.handler.failed?.('list', err, backoff);
          await pause();
          continue;
        }
      }
      const end = await this.watchOnce();
      if (end.kind === 'stopped') return;
      if (end.kind === 'silent') {
        const relistNow = this.opts.handler.silent?.(end.silentMs) === 'relist';
        this.opts.logger.info({ path: this.opts.path, query: this.opts.query, silentMs: end.silentMs, resourceVersion: this.resourceVersion }, relistNow ? 'the watch went silent (no event, no bookmark); re-listing' : 'the watch went silent (no event, no bookmark); watching again from its resourceVersion');
        if (relistNow) {
          this.resourceVersion = '';
          relist = true;
          continue;
        }
      }
      if (end.kind === 'closed' || end.kind === 'silent') {
        // The server ended the watch (its timeout): watch again from the last resourceVersion,
        // unless watches keep ending with nothing past the bookmark interval.
        // A silent watch does not count: the server bookmarked this resource before, so its
        // silence is a dead connection, not a server behind its clients (which the rule is for).
        if (end.kind === 'closed') emptyWatches = end.empty ? emptyWatches + 1 : 0;
        if (emptyWatches >= EMPTY_WATCHES_TO_RELIST) {
          // Info, not a warning: an API server whose watch cache saw no change of this resource
          // since it started sends no bookmarks either, so a quiet resource gets here too.
          this.opts.logger.info({ path: this.opts.path, resourceVersion: this.resourceVersion, watches: emptyWatches }, 'watches keep ending without an event or a bookmark (the server may be behind this resourceVersion: etcd restored?); re-listing');
          this.resourceVersion = '';
          relist = true;
          continue;
        }
        if (end.kind === 'closed' && end.quick) await pause();
        else backoff = initial;
        continue;
      }
      if (end.kind === 'relist') {
        this.opts.logger.debug({ path: this.opts.path, reason: end.reason }, 're-listing');
        relist = true;
        continue;
      }
      // A watch request answered 504 without a body the client could read may be the same
      // refusal (client-go re-lists after any failed watch request but a refused connection or a 429).
      if (isTooLargeResourceVersionError(end.err) || (end.err.failure === 'status' && end.err.statusCode === 504 && end.err.status === undefined)) {
        this.opts.logger.warn({ path: this.opts.path, resourceVersion: this.resourceVersion, err: end.err.message }, 'the server is behind this resourceVersion (etcd restored?); re-listing');
        this.resourceVersion = '';
        relist = true;
        continue;
      }
      if (isGoneError(end.err)) {
        this.opts.logger.debug({ path: this.opts.path, err: end.err.message }, 'the watch resourceVersion expired; re-listing');
        this.resourceVersion = '';
        relist = true;
        continue;
      }
      this.opts.handler.failed?.('watch', end.err, backoff);
      if (!isUnavailableError(end.err)) relist = true;
      await pause();
    }
  }

  private async list(): Promise<void> {
    const rv = this.listedOnce || this.opts.firstListFromCache === false ? '' : '0';
    const list = await this.opts.client.request<{ metadata?: { resourceVersion?: string }; items?: unknown[] }>('GET', this.opts.path, { query: { ...this.opts.query, resourceVersion: rv } });
    if (this.stopped) return;
    this.resourceVersion = list?.metadata?.resourceVersion ?? '';
    this.listedOnce = true;
    this.opts.handler.replace(Array.isArray(list?.items) ? list.items : []);
  }

  /** One watch from the current resourceVersion until it ends. */
  private watchOnce(): Promise<WatchEnd> {
    return new Promise<WatchEnd>((resolve) => {
      if (this.stopped) return resolve({ kind: 'stopped' });
      let settled = false;
      let events = 0;
      const startedAt = Date.now();
      let handle: { stop(): void } | undefined;
      const timeoutSeconds = this.opts.watchTimeoutSeconds?.() ?? Math.floor(300 + Math.random() * 300);
      // When the watch last delivered something (set per event: a timestamp, never a timer).
      let lastHeardAt = startedAt;
      const silenceMs = this.opts.silenceMs ?? WATCH_SILENCE_MS;
      const silenceCheck = silenceMs > 0
        ? setInterval(() => {
          const silentMs = Date.now() - lastHeardAt;
          if (silentMs < silenceMs || !this.bookmarking) return;
          handle?.stop();
          finish({ kind: 'silent', silentMs });
        }, Math.max(10, Math.ceil(silenceMs / SILENCE_CHECKS)))
        : undefined;
      silenceCheck?.unref();
      const finish = (end: WatchEnd) => {
        if (settled) return;
        settled = true;
        clearTimeout(watchdog);
        clearInterval(silenceCheck);
        this.stopWatch = undefined;
        this.endWatch = undefined;
        resolve(this.stopped ? { kind: 'stopped' } : end);
      };
      const watchdog = setTimeout(() => {
        handle?.stop();
        finish({ kind: 'relist', reason: 'the watch outlived its timeout without ending' });
      }, (timeoutSeconds + 60) * 1000);
      watchdog.unref();
      this.stopWatch = () => {
        handle?.stop();
        finish({ kind: 'stopped' });
      };
      this.endWatch = (reason) => {
        handle?.stop();
        finish({ kind: 'relist', reason });
      };
      this.opts.client
        .watch(
          this.opts.path,
          { ...this.opts.query, resourceVersion: this.resourceVersion, allowWatchBookmarks: true, timeoutSeconds },
          (event) => {
            if (settled) return;
            events++;
            lastHeardAt = Date.now();
            if (event.type !== 'ERROR') this.bookmarking = true;
            const relist = this.onEvent(event);
            if (relist) {
              handle?.stop();
              finish({ kind: 'relist', reason: relist });
            }
          },
          (err) => finish(err ? { kind: 'error', err } : { kind: 'closed', quick: events === 0 && Date.now() - startedAt < 1000, empty: events === 0 && Date.now() - startedAt > (this.opts.bookmarkIntervalMs ?? BOOKMARK_INTERVAL_MS) }),
        )
        .then(
          (h) => {
            handle = h;
            if (settled) h.stop();
          },
          (err: unknown) => finish({ kind: 'relist', reason: errorMessage(err) }),
        );
    });
  }

  /** One watch event: handed to the owner, or a reason to re-list. */
  private onEvent(event: WatchEvent): string | undefined {
    const obj = event.object as { metadata?: { resourceVersion?: unknown }; code?: unknown; message?: unknown; reason?: unknown } | undefined;
    if (event.type === 'ERROR') {
      const code = Number(obj?.code);
      if (isTooLargeResourceVersion(obj as Parameters<typeof isTooLargeResourceVersion>[0])) {
        this.resourceVersion = '';
        return 'the server is behind this resourceVersion ("Too large resource version": etcd restored?)';
      }
      if (code === 410 || obj?.reason === 'Expired' || obj?.reason === 'Gone') {
        this.resourceVersion = '';
        return 'the watch resourceVersion expired (410)';
      }
      return `the watch reported an error: ${String(obj?.message ?? obj?.reason ?? code)}`;
    }
    if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') this.opts.handler.event(event.type, obj);
    const rv = obj?.metadata?.resourceVersion;
    if (typeof rv === 'string' && rv) this.resourceVersion = rv;
    this.opts.handler.progress?.();
    return undefined;
  }

}
