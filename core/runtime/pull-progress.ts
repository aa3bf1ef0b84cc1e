/**
 * Image pull progress: bytes done, total and rate of the pulls the kubelet runs, read from
 * the runtime's `pullProgress` (containerd: its content store's active downloads).
 *
 * CRI's PullImage is one call that answers when the image is there, so progress has to come
 * from the side: the runtime lists what it is downloading now, node-wide, blob by blob and
 * named by digest, not by image. This tracker turns that into progress per pull:
 *
 * - It asks only while a pull runs: the first time `POLL_MS` after a pull began (a pull faster
 *   than that costs nothing), then every `POLL_MS`, one call at a time, each bounded by
 *   `TIMEOUT_MS`; when the last pull ends it stops and forgets everything.
 * - Attribution: a download belongs to the pulls that were already running when it started
 *   and that saw it move. With one pull running, that is that pull's own bytes. With several
 *   running when a download started, nothing tells whose it is (blobs carry no image name, and
 *   two images may share a layer): it is counted for each of them, and their progress says it
 *   is shared (node-wide figures), rather than guessing. A download that last moved before a
 *   pull began (an ingest left behind by an aborted pull) is nobody's.
 * - A download that disappears from the list has finished (its bytes stay counted as done);
 *   downloads that finish between two looks are not seen at all: the figures are a lower
 *   bound, exact for the layers that take long, which are the ones worth watching. The total
 *   grows when a later layer begins (containerd downloads three at a time).
 * - The runtime's numbers are hostile input: non-numbers, negatives and absurd values are
 *   clamped, lists are bounded, and a failing or hanging call only means no progress.
 */
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { PullProgress } from './types.ts';
import { withTimeout } from '../util/with-timeout.ts';

/** What the views show of one pull. */
export interface PullSnapshot {
  /** Bytes downloaded so far of the downloads seen for this pull. */
  doneBytes: number;
  /** Their sizes summed; 0 when a size is unknown. */
  totalBytes: number;
  /** Recent rate in bytes per second (over the last few seconds); 0 until it can be told. */
  bytesPerSecond: number;
  /** Some of the bytes may be another pull's that ran at the same time: node-wide figures. */
  shared: boolean;
}

/** One pull being tracked; `end()` when the runtime's pull call returned. */
export interface PullHandle {
  readonly image: string;
  /** When the runtime's pull call began (ms since the epoch). */
  readonly startedMs: number;
  /** The pull's progress, undefined while nothing of it was seen downloading. */
  snapshot(): PullSnapshot | undefined;
  end(): void;
}

/** How often the runtime is asked while a pull runs. */
export const POLL_MS = 1000;
/** How long one call may take before its answer is given up. */
const TIMEOUT_MS = 2000;
/** The rate is measured over about this long. */
const RATE_WINDOW_MS = 5000;
/** Clock slack between the runtime's times and ours (same host; its times are taken later than ours). */
const SLACK_MS = 1000;
/** At most this many downloads are looked at per answer (a node pulls a few at a time). */
const MAX_DOWNLOADS = 1000;
const MAX_REF_LENGTH = 512;

interface Tracked {
  image: string;
  startedMs: number;
  /** (time, doneBytes) of the last few looks, for the rate. */
  samples: Array<{ t: number; done: number }>;
  snapshot: PullSnapshot | undefined;
}

interface Download {
  owners: Set<Tracked>;
  offset: number;
  total: number;
}

/** A byte count from the runtime: a finite, non-negative safe integer, else 0. */
function bytesOf(n: unknown): number {
  const v = typeof n === 'number' ? n : typeof n === 'string' || typeof n === 'bigint' ? Number(n) : Number.NaN;
  if (!Number.isFinite(v) || v <= 0) return 0;
  return Math.min(Math.floor(v), Number.MAX_SAFE_INTEGER);
}

/** A time from the runtime: ms since the epoch, 0 when unknown or absurd. */
function timeOf(n: unknown): number {
  const v = typeof n === 'number' ? n : Number.NaN;
  return Number.isFinite(v) && v > 0 && v < 8.64e15 ? v : 0;
}

export class PullProgressTracker {
  private readonly pulls = new Set<Tracked>();
  private readonly downloads = new Map<string, Download>();
  private timer: NodeJS.Timeout | undefined;
  /** Set when the runtime says it cannot: it is not asked again. */
  private unsupported = false;
  private complained = false;
  private readonly pollMs: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(private readonly deps: { source: () => Promise<PullProgress[]>; logger: Logger; pollMs?: number; timeoutMs?: number; now?: () => number }) {
    this.pollMs = deps.pollMs ?? POLL_MS;
    this.timeoutMs = deps.timeoutMs ?? TIMEOUT_MS;
    this.now = deps.now ?? Date.now;
  }

  /** A pull of `image` begins: it is tracked (and the runtime asked) until `end()`. */
  begin(image: string): PullHandle {
    const t: Tracked = { image, startedMs: this.now(), samples: [], snapshot: undefined };
    this.pulls.add(t);
    this.schedule();
    return {
      image,
      startedMs: t.startedMs,
      snapshot: () => t.snapshot,
      end: () => this.end(t),
    };
  }

  /** Whether the runtime is being asked now (tests). */
  get polling(): boolean {
    return this.timer !== undefined;
  }

  private end(t: Tracked): void {
    if (!this.pulls.delete(t)) return;
    for (const [ref, d] of this.downloads) {
      d.owners.delete(t);
      if (d.owners.size === 0) this.downloads.delete(ref);
    }
    if (this.pulls.size === 0) {
      clearTimeout(this.timer);
      this.timer = undefined;
      this.downloads.clear();
    }
  }

  private schedule(): void {
    if (this.timer || this.unsupported || this.pulls.size === 0) return;
    this.timer = setTimeout(() => void this.poll(), this.pollMs);
    // A pull in flight keeps the process alive, not this timer.
    this.timer.unref();
  }

  private async poll(): Promise<void> {
    let list: PullProgress[] | undefined;
    try {
      list = await this.ask();
    } catch (err) {
      const message = errorMessage(err);
      if (/unimplemented|unknown service/i.test(message)) this.unsupported = true;
      // Once per kubelet at info (a runtime that cannot tell progress is no error); then quietly.
      if (!this.complained) this.deps.logger.info({ err: message }, 'image pull progress unavailable from the runtime');
      else this.deps.logger.debug({ err: message }, 'image pull progress unavailable from the runtime');
      this.complained = true;
    }
    // The pulls may all have ended while the runtime answered: then the timer was cleared.
    if (this.timer === undefined) return;
    this.timer = undefined;
    if (list) this.apply(list, this.now());
    this.schedule();
  }

  private async ask(): Promise<PullProgress[]> {
    const v = await withTimeout(this.deps.source(), this.timeoutMs, { error: () => new Error(`no answer within ${this.timeoutMs} ms`) });
    return Array.isArray(v) ? v : [];
  }

  /** Folds one answer of the runtime into every tracked pull's progress. */
  private apply(list: PullProgress[], now: number): void {
    const present = new Set<string>();
    for (const raw of list.slice(0, MAX_DOWNLOADS)) {
      if (!raw || typeof raw.ref !== 'string' || !raw.ref || raw.ref.length > MAX_REF_LENGTH) continue;
      let total = bytesOf(raw.totalBytes);
      let offset = bytesOf(raw.offsetBytes);
      // More bytes than the blob has: the size is wrong, not the count.
      if (total > 0 && offset > total) total = 0;
      present.add(raw.ref);
      const known = this.downloads.get(raw.ref);
      if (known) {
        known.offset = offset;
        known.total = total;
        continue;
      }
      const owners = this.ownersOf(timeOf(raw.startedAt), timeOf(raw.updatedAt));
      if (owners.size > 0) this.downloads.set(raw.ref, { owners, offset, total });
    }
    // Gone from the runtime's list: finished (a failed pull ends its tracking anyway).
    for (const [ref, d] of this.downloads) if (!present.has(ref) && d.total > 0) d.offset = d.total;

    for (const t of this.pulls) {
      let done = 0;
      let total = 0;
      let sizeUnknown = false;
      let shared = false;
      let any = false;
      for (const d of this.downloads.values()) {
        if (!d.owners.has(t)) continue;
        any = true;
        done += d.offset;
        total += d.total;
        if (d.total === 0) sizeUnknown = true;
        if (d.owners.size > 1) shared = true;
      }
      if (!any) continue;
      done = Math.min(done, Number.MAX_SAFE_INTEGER);
      total = sizeUnknown ? 0 : Math.min(total, Number.MAX_SAFE_INTEGER);
      t.samples.push({ t: now, done });
      while (t.samples.length > 2 && t.samples[1]!.t <= now - RATE_WINDOW_MS) t.samples.shift();
      t.snapshot = { doneBytes: done, totalBytes: total, bytesPerSecond: rateOf(t.samples), shared };
    }
  }

  /**
   * The pulls a download may belong to: those running when it started (allowing for clock
   * slack) that saw it move. A download older than every running pull but moving now (a
   * partial download resumed by a retry) belongs to those that saw it move.
   */
  private ownersOf(startedAt: number, updatedAt: number): Set<Tracked> {
    const moving = [...this.pulls].filter((t) => updatedAt === 0 || updatedAt >= t.startedMs - SLACK_MS);
    const before = moving.filter((t) => startedAt === 0 || t.startedMs <= startedAt + SLACK_MS);
    return new Set(before.length > 0 ? before : moving);
  }
}

/** Bytes per second between the oldest and newest sample, once they are a second apart. */
function rateOf(samples: Array<{ t: number; done: number }>): number {
  const first = samples[0];
  const last = samples[samples.length - 1];
  if (!first || !last || last.t - first.t < 900) return 0;
  return Math.max(0, ((last.done - first.done) / (last.t - first.t)) * 1000);
}
