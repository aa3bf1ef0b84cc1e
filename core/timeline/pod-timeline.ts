import type { PullSnapshot } from '../runtime/pull-progress.ts';

/** One step of a pod's start: what happened, when it began and how long it took. */
export interface TimelineStep {
  /** What the step is: 'source-seen', 'admitted', 'volumes', 'image', 'sandbox-slot' (waited for one), 'sandbox', 'network', 'init:<name>', 'create:<name>', 'start:<name>', 'hook:<hook>', 'ready'. */
  step: string;
  /** Milliseconds since the epoch. */
  startMs: number;
  durationMs: number;
  /** Who or what: the container, the plugin of a hook tap, the image. */
  detail?: string;
  /** The step failed (the pod retries it); the message. */
  error?: string;
  /**
   * How many times it failed so in a row (absent: once). A step retried every second (a pull
   * in back-off) is one entry, its durationMs summed over the attempts, `lastEndMs` when the
   * last attempt ended: the timeline stays bounded and its later steps are still recorded.
   */
  attempts?: number;
  lastEndMs?: number;
  /** The step has not ended yet: `durationMs` is how long so far. Only in what is served while it runs. */
  running?: boolean;
  /** A running image pull's progress, when the runtime tells it. */
  progress?: PullSnapshot;
  /** What a finished step is worth knowing by (an image pull: `pulled 48 MB in 6.9s, 7 MB/s`). */
  note?: string;
}

/** What a step that runs can tell about itself while it runs (read when the timeline is served). */
export type LiveStep = () => { progress?: PullSnapshot } | undefined;

/** Extras of a timed step: what it tells while it runs, a note on its result, and whether it belongs to the timeline after the pod's first Ready. */
export interface TimedExtras<T> {
  live?: LiveStep;
  note?: (result: T) => string | undefined;
  /** Recorded also after the first Ready: an ephemeral container (kubectl debug) starts in a pod long Ready, and `explain` shows its steps. */
  afterReady?: boolean;
}

interface Ongoing { step: string; startMs: number; detail: string | undefined; live: LiveStep | undefined }

/** A step's end, recorded (`afterReady`: also once the pod was Ready). */
type RecordOptions = { afterReady?: boolean };

/** A pod's start, as served on /debug/pods/{ns}/{name}/timeline. */
export interface PodStartTimeline {
  uid: string;
  namespace: string;
  name: string;
  /** When the kubelet first saw the pod. */
  seenMs: number;
  /** When the pod was first Ready (undefined while it is not yet). */
  readyMs: number | undefined;
  steps: TimelineStep[];
}

/** Steps kept per pod: a start that retries for a long time must not grow without bound. */
const MAX_STEPS = 200;

/**
 * Records every step of each pod's start, from the source seeing it to its first Ready, so
 * an operator can see where a slow start spent its time. Recording for a pod stops at its
 * first Ready: later restarts are not part of its start; the start of an ephemeral container
 * (kubectl debug) is, as steps after the `ready` row.
 */
export class PodTimelines {
  private readonly pods = new Map<string, PodStartTimeline>();
  /** Steps running now, by pod: served with the timeline (a pull of minutes shows while it lasts). */
  private readonly ongoing = new Map<string, Set<Ongoing>>();

  /** The pod was seen by a source: its timeline begins. */
  seen(uid: string, namespace: string, name: string, atMs = Date.now()): void {
    if (this.pods.has(uid)) return;
    this.pods.set(uid, { uid, namespace, name, seenMs: atMs, readyMs: undefined, steps: [] });
    this.record(uid, { step: 'source-seen', startMs: atMs, durationMs: 0 });
  }

  /** Records a finished step (ignored once the pod was Ready unless `afterReady`, or for pods not being timed). */
  record(uid: string, step: TimelineStep, opts: RecordOptions = {}): void {
    const t = this.pods.get(uid);
    if (!t || (t.readyMs !== undefined && !opts.afterReady)) return;
    const durationMs = Math.max(0, Math.round(step.durationMs));
    const last = t.steps[t.steps.length - 1];
    if (last && step.error !== undefined && last.error === step.error && last.step === step.step && last.detail === step.detail) {
      last.attempts = (last.attempts ?? 1) + 1;
      last.durationMs += durationMs;
      last.lastEndMs = Math.round(step.startMs) + durationMs;
      return;
    }
    if (t.steps.length >= MAX_STEPS) return;
    t.steps.push({ ...step, startMs: Math.round(step.startMs), durationMs });
  }

  /**
   * Times `fn` as a step of the pod's start; a throw is recorded with its message and rethrown.
   * `failureOf` tells a result that is a failure (a pull answered with ErrImagePull) by its message.
   */
  async time<T>(uid: string, step: string, fn: () => Promise<T>, detail?: string, failureOf?: (result: T) => string | undefined, extras: TimedExtras<T> = {}): Promise<T> {
    const startMs = Date.now();
    const t = this.pods.get(uid);
    let running: Ongoing | undefined;
    const opts = { afterReady: extras.afterReady === true };
    if (t && (t.readyMs === undefined || opts.afterReady)) {
      running = { step, startMs, detail, live: extras.live };
      let set = this.ongoing.get(uid);
      if (!set) this.ongoing.set(uid, (set = new Set()));
      set.add(running);
    }
    try {
      const result = await fn();
      const error = failureOf?.(result);
      const note = error ? undefined : extras.note?.(result);
      this.record(uid, { step, startMs, durationMs: Date.now() - startMs, ...(detail ? { detail } : {}), ...(error ? { error } : {}), ...(note ? { note } : {}) }, opts);
      return result;
    } catch (err) {
      this.record(uid, { step, startMs, durationMs: Date.now() - startMs, ...(detail ? { detail } : {}), error: err instanceof Error ? err.message : String(err) }, opts);
      throw err;
    } finally {
      if (running) {
        const set = this.ongoing.get(uid);
        set?.delete(running);
        if (set?.size === 0) this.ongoing.delete(uid);
      }
    }
  }

  /** The pod became Ready for the first time: the last step, and recording ends. */
  ready(uid: string, atMs = Date.now()): void {
    const t = this.pods.get(uid);
    if (!t || t.readyMs !== undefined) return;
    this.record(uid, { step: 'ready', startMs: atMs, durationMs: 0 });
    t.readyMs = atMs;
  }

  /** A pod's timeline with steps in start order, those still running included (`running`, their time so far). */
  get(uid: string, nowMs = Date.now()): PodStartTimeline | undefined {
    const t = this.pods.get(uid);
    if (!t) return undefined;
    const running: TimelineStep[] = [];
    // Only steps the timeline takes are ongoing (those of the start, and ephemeral containers' after it).
    for (const o of this.ongoing.get(uid) ?? []) {
      let live: ReturnType<LiveStep>;
      try {
        live = o.live?.();
      } catch {
        live = undefined;
      }
      running.push({ step: o.step, startMs: o.startMs, durationMs: Math.max(0, nowMs - o.startMs), ...(o.detail ? { detail: o.detail } : {}), running: true, ...(live?.progress ? { progress: live.progress } : {}) });
    }
    return { ...t, steps: [...t.steps, ...running].sort((a, b) => a.startMs - b.startMs) };
  }

  /** Finds a pod's timeline by namespace and name. */
  find(namespace: string, name: string): PodStartTimeline | undefined {
    for (const t of this.pods.values()) if (t.namespace === namespace && t.name === name) return this.get(t.uid);
    return undefined;
  }

  forget(uid: string): void {
    this.pods.delete(uid);
    this.ongoing.delete(uid);
  }
}
