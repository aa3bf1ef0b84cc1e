import assert from 'node:assert/strict';
import { WorkQueue } from '../../core/pod/work-queue.ts';

/**
 * A fake clock with fake setTimeout/clearTimeout installed on globalThis for the duration of a
 * test (mocha keeps its own timer references, so its timeouts are unaffected).
 */
class FakeTimers {
  now = 1_000_000;
  private nextId = 1;
  readonly pending = new Map<number, { at: number; fn: () => void }>();
  /** How many timers were ever created. */
  created = 0;
  private saved: { setTimeout: typeof setTimeout; clearTimeout: typeof clearTimeout } | undefined;

  install(): void {
    this.saved = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
    const self = this;
    globalThis.setTimeout = ((fn: () => void, ms = 0) => {
      const id = self.nextId++;
      self.created++;
      self.pending.set(id, { at: self.now + Math.max(0, ms), fn });
      return { id, unref() { return this; }, ref() { return this; }, hasRef: () => false } as unknown as NodeJS.Timeout;
    }) as unknown as typeof setTimeout;
    globalThis.clearTimeout = ((t: { id: number } | undefined) => {
      if (t) self.pending.delete(t.id);
    }) as unknown as typeof clearTimeout;
  }

  uninstall(): void {
    if (this.saved) Object.assign(globalThis, this.saved);
  }

  /** Moves time forward, firing due timers in order (including ones they arm). */
  advance(ms: number): void {
    const end = this.now + ms;
    for (;;) {
      const due = [...this.pending.entries()].filter(([, t]) => t.at <= end).sort((a, b) => a[1].at - b[1].at)[0];
      if (!due) break;
      this.pending.delete(due[0]);
      this.now = Math.max(this.now, due[1].at);
      due[1].fn();
    }
    this.now = end;
  }
}

describe('WorkQueue (one timer for all pods)', () => {
  let timers: FakeTimers;
  let fired: Array<{ uid: string; at: number }>;
  let q: WorkQueue;

  beforeEach(() => {
    timers = new FakeTimers();
    timers.install();
    fired = [];
    q = new WorkQueue((uid) => fired.push({ uid, at: timers.now }), () => timers.now);
  });
  afterEach(() => {
    q.stop();
    timers.uninstall();
  });

  it('fires each pod once at its due time, in due order', () => {
    const t0 = timers.now;
    q.enqueue('b', 300);
    q.enqueue('a', 100);
    q.enqueue('c', 200);
    timers.advance(99);
    assert.deepEqual(fired, []);
    timers.advance(1000);
    assert.deepEqual(fired, [
      { uid: 'a', at: t0 + 100 },
      { uid: 'c', at: t0 + 200 },
      { uid: 'b', at: t0 + 300 },
    ]);
    timers.advance(10_000);
    assert.equal(fired.length, 3, 'nothing fires twice');
  });

  it('keeps at most one timer armed however many pods wait', () => {
    for (let i = 0; i < 1000; i++) q.enqueue(`pod-${i}`, 1000 + i);
    assert.equal(timers.pending.size, 1);
    timers.advance(500);
    assert.equal(timers.pending.size, 1);
    timers.advance(1000);
    assert.equal(fired.length, 501);
    assert.equal(timers.pending.size, 1, 'one timer for the rest');
    timers.advance(1000);
    assert.equal(fired.length, 1000);
    assert.equal(timers.pending.size, 0, 'no timer left when nothing waits');
  });

  it('an earlier schedule of the same pod wins; a later one does not delay it', () => {
    const t0 = timers.now;
    q.enqueue('a', 1000);
    q.enqueue('a', 200); // earlier: wins
    q.enqueue('a', 5000); // later: ignored
    timers.advance(10_000);
    assert.deepEqual(fired, [{ uid: 'a', at: t0 + 200 }]);
  });

  it('re-arms the single timer earlier when an earlier item arrives', () => {
    const t0 = timers.now;
    q.enqueue('late', 1000);
    q.enqueue('early', 10);
    assert.equal(timers.pending.size, 1);
    timers.advance(10);
    assert.deepEqual(fired, [{ uid: 'early', at: t0 + 10 }]);
    timers.advance(990);
    assert.deepEqual(fired.map((f) => f.uid), ['early', 'late']);
  });

  it('a pod can be queued again after it fired', () => {
    q.enqueue('a', 10);
    timers.advance(10);
    q.enqueue('a', 10);
    timers.advance(10);
    assert.deepEqual(fired.map((f) => f.uid), ['a', 'a']);
  });

  it('forget drops a pod; others still fire', () => {
    q.enqueue('a', 100);
    q.enqueue('b', 200);
    q.forget('a');
    timers.advance(1000);
    assert.deepEqual(fired.map((f) => f.uid), ['b']);
  });

  it('stop cancels the timer and ignores later enqueues', () => {
    q.enqueue('a', 100);
    q.stop();
    assert.equal(timers.pending.size, 0);
    q.enqueue('b', 10);
    timers.advance(1000);
    assert.deepEqual(fired, []);
    assert.equal(timers.pending.size, 0);
  });

  it('a negative delay means now', () => {
    q.enqueue('a', -50);
    timers.advance(0);
    assert.deepEqual(fired.map((f) => f.uid), ['a']);
  });

  it('a delay beyond what a timer can time waits for it (not fired at once), then fires once', () => {
    const days40 = 40 * 24 * 3600_000;
    q.enqueue('far', days40);
    timers.advance(1000);
    assert.equal(fired.length, 0);
    timers.advance(2 ** 31);
    assert.equal(fired.length, 0, 'the clamped timer woke early and re-armed');
    timers.advance(days40);
    assert.deepEqual(fired.map((f) => f.uid), ['far']);
  });
});
