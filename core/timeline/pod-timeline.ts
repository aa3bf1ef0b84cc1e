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
}

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
 * first Ready: later restarts are not part of its start.
 */
export class PodTimelines {
  private readonly pods = new Map<string, PodStartTimeline>();

  /** The pod was seen by a source: its timeline begins. */
  seen(uid: string, namespace: string, name: string, atMs = Date.now()): void {
    if (this.pods.has(uid)) return;
    this.pods.set(uid, { uid, namespace, name, seenMs: atMs, readyMs: undefined, steps: [] });
    this.record(uid, { step: 'source-seen', startMs: atMs, durationMs: 0 });
  }

  /** Records a finished step (ignored once the pod was Ready, or for pods not being timed). */
  record(uid: string, step: TimelineStep): void {
    const t = this.pods.get(uid);
    if (!t || t.readyMs !== undefined) return;
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
  async time<T>(uid: string, step: string, fn: () => Promise<T>, detail?: string, failureOf?: (result: T) => string | undefined): Promise<T> {
    const startMs = Date.now();
    try {
      const result = await fn();
      const error = failureOf?.(result);
      this.record(uid, { step, startMs, durationMs: Date.now() - startMs, ...(detail ? { detail } : {}), ...(error ? { error } : {}) });
      return result;
    } catch (err) {
      this.record(uid, { step, startMs, durationMs: Date.now() - startMs, ...(detail ? { detail } : {}), error: err instanceof Error ? err.message : String(err) });
      throw err;
    }
  }

  /** The pod became Ready for the first time: the last step, and recording ends. */
  ready(uid: string, atMs = Date.now()): void {
    const t = this.pods.get(uid);
    if (!t || t.readyMs !== undefined) return;
    this.record(uid, { step: 'ready', startMs: atMs, durationMs: 0 });
    t.readyMs = atMs;
  }

  /** A pod's timeline with steps in start order. */
  get(uid: string): PodStartTimeline | undefined {
    const t = this.pods.get(uid);
    if (!t) return undefined;
    return { ...t, steps: [...t.steps].sort((a, b) => a.startMs - b.startMs) };
  }

  /** Finds a pod's timeline by namespace and name. */
  find(namespace: string, name: string): PodStartTimeline | undefined {
    for (const t of this.pods.values()) if (t.namespace === namespace && t.name === name) return this.get(t.uid);
    return undefined;
  }

  forget(uid: string): void {
    this.pods.delete(uid);
  }
}
