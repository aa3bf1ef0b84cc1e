/**
 * Issue 17, item 3: image pull progress. The arithmetic (bytes, totals, rate), how it reads,
 * the polling lifecycle (asked only while a pull runs, never after), the attribution of a
 * node's downloads to the pulls that run, hostile numbers from a runtime, and what the views
 * get (the waiting message, the explain row).
 */
import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { Backoff } from '../../core/pod/backoff.ts';
import { ImagePuller } from '../../core/pod/image-puller.ts';
import { PullProgressTracker, type PullSnapshot } from '../../core/runtime/pull-progress.ts';
import { formatBytes, formatPullProgress, pulledNote, pullingMessage, pullProgressOfMessage } from '../../core/runtime/pull-progress-format.ts';
import { withPullProgress } from '../../core/pod/pull-progress-status.ts';
import { podStatusColumns } from '../../core/commands/pod-columns.ts';
import { EventRecorder } from '../../core/events/event-recorder.ts';
import { MemoryRuntime } from '../../core/runtime/memory-runtime.ts';
import type { PodSandboxConfig, PullProgress } from '../../core/runtime/types.ts';
import { PodTimelines } from '../../core/timeline/pod-timeline.ts';
import { renderWaterfall } from '../../core/timeline/waterfall.ts';
import { waitFor } from '../support/wait-for.ts';

const MB = 1_000_000;
const snap = (o: Partial<PullSnapshot>): PullSnapshot => ({ doneBytes: 0, totalBytes: 0, bytesPerSecond: 0, shared: false, ...o });

/** A runtime's answer the test sets; counts the calls. */
function fakeSource() {
  const s = { calls: 0, list: [] as PullProgress[] | unknown, fail: undefined as Error | undefined, hang: false };
  const source = async (): Promise<PullProgress[]> => {
    s.calls++;
    if (s.hang) return new Promise(() => {});
    if (s.fail) throw s.fail;
    return s.list as PullProgress[];
  };
  return { s, source };
}

const download = (ref: string, offset: number, total: number, startedAt: number, updatedAt = startedAt): PullProgress => ({ ref, offsetBytes: offset, totalBytes: total, startedAt, updatedAt });

describe('image pull progress', () => {
  describe('how it reads', () => {
    it('writes sizes in decimal units as docker pull does, one decimal below 100', () => {
      assert.equal(formatBytes(0), '0 B');
      assert.equal(formatBytes(999), '999 B');
      assert.equal(formatBytes(1500), '1.5 kB');
      assert.equal(formatBytes(45_123_456), '45.1 MB');
      assert.equal(formatBytes(300 * MB), '300 MB');
      assert.equal(formatBytes(2.5e9), '2.5 GB');
      assert.equal(formatBytes(Number.NaN), '0 B');
      assert.equal(formatBytes(-5), '0 B');
      assert.equal(formatBytes(1e30), '1000000000000000 PB');
    });

    it('shows done / total in the total unit with a percentage, the rate once known, and shared figures as node-wide', () => {
      assert.equal(formatPullProgress(snap({ doneBytes: 45_100_000, totalBytes: 300 * MB, bytesPerSecond: 12 * MB })), '45.1 / 300 MB (15%), 12 MB/s');
      assert.equal(formatPullProgress(snap({ doneBytes: 500_000, totalBytes: 300 * MB })), '0.5 / 300 MB (0%)');
      assert.equal(formatPullProgress(snap({ doneBytes: 45_100_000 })), '45.1 MB');
      assert.equal(formatPullProgress(snap({ doneBytes: 10 * MB, totalBytes: 20 * MB, shared: true })), '10 / 20 MB (50%), node-wide');
      // More done than the total (a runtime's numbers): never above 100 %.
      assert.equal(formatPullProgress(snap({ doneBytes: 30 * MB, totalBytes: 20 * MB })), '20 / 20 MB (100%)');
    });

    it('makes the waiting message, and views read back how far along it is', () => {
      const m = pullingMessage('127.0.0.1:5050/big:1', snap({ doneBytes: 45_100_000, totalBytes: 300 * MB, bytesPerSecond: 12 * MB }));
      assert.equal(m, 'Pulling image "127.0.0.1:5050/big:1": 45.1 / 300 MB (15%), 12 MB/s');
      assert.deepEqual(pullProgressOfMessage(m), { percent: 15 });
      assert.deepEqual(pullProgressOfMessage(pullingMessage('x', undefined)), { percent: undefined });
      assert.deepEqual(pullProgressOfMessage(pullingMessage('x', snap({ doneBytes: 5 }))), { percent: undefined });
      assert.equal(pullProgressOfMessage('Back-off pulling image "x"'), undefined);
      assert.equal(pullProgressOfMessage(undefined), undefined);
    });

    it('notes a finished pull with its size, time and average rate', () => {
      assert.equal(pulledNote({ sizeBytes: 48 * MB, pullMs: 6900 }), 'pulled 48 MB in 6.9s, 7 MB/s');
      assert.equal(pulledNote({ pullMs: 120 }), 'pulled in 0.1s');
      assert.equal(pulledNote({ sizeBytes: 2 * MB, pullMs: 0 }), 'pulled 2 MB in 0.0s');
    });
  });

  describe('the tracker', () => {
    it('does not ask the runtime for a pull that ends before the first look', async () => {
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 30 });
      const h = tracker.begin('a');
      h.end();
      await sleep(80);
      assert.equal(s.calls, 0);
      assert.equal(tracker.polling, false);
    });

    it('asks about once per period while a pull runs, one call at a time, and stops when the last pull ends', async () => {
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 20 });
      const a = tracker.begin('a');
      const b = tracker.begin('b');
      await waitFor('three looks', () => s.calls >= 3, 2000, 5);
      a.end();
      assert.equal(tracker.polling, true, 'b still runs');
      b.end();
      assert.equal(tracker.polling, false);
      const calls = s.calls;
      await sleep(100);
      assert.equal(s.calls, calls, 'no call after the last pull ended');
    });

    it('gives a single pull its downloads: bytes done growing, the total, and the rate', async () => {
      let now = 10_000;
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 5, now: () => now });
      const h = tracker.begin('big');
      assert.equal(h.snapshot(), undefined, 'nothing seen yet');
      const seen: PullSnapshot[] = [];
      for (const [t, offset] of [[10_500, 0], [11_500, 10 * MB], [12_500, 20 * MB], [13_500, 30 * MB]] as const) {
        now = t;
        s.list = [download('layer-sha256:aa', offset, 100 * MB, 10_400, t), download('config-sha256:cc', 1000, 1000, 10_300, t)];
        const calls = s.calls;
        await waitFor('a look', () => s.calls > calls + 1, 2000, 2);
        seen.push(h.snapshot()!);
      }
      assert.deepEqual(seen.map((x) => x.doneBytes), [1000, 10 * MB + 1000, 20 * MB + 1000, 30 * MB + 1000]);
      assert.ok(seen.every((x) => x.totalBytes === 100 * MB + 1000 && !x.shared));
      assert.equal(seen[0]!.bytesPerSecond, 0, 'no rate from one look');
      assert.equal(Math.round(seen[3]!.bytesPerSecond), 10 * MB);
      // The layer finished: gone from the runtime's list, its bytes stay done.
      now = 14_000;
      s.list = [];
      const calls = s.calls;
      await waitFor('a look', () => s.calls > calls + 1, 2000, 2);
      assert.equal(h.snapshot()!.doneBytes, 100 * MB + 1000);
      h.end();
    });

    it('attributes a download to the pulls running when it started: one pull alone gets it, several share it as node-wide', async () => {
      let now = 1_000_000;
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 5, now: () => now });
      const a = tracker.begin('a');
      now += 10_000;
      const b = tracker.begin('b');
      now += 1000;
      s.list = [
        // Started while only a ran: a's.
        download('layer-sha256:a1', 5 * MB, 10 * MB, 1_003_000, now),
        // Started once both ran: either's; counted for both.
        download('layer-sha256:x1', 1 * MB, 4 * MB, now - 500, now),
        // Left behind by an aborted pull long ago, not moving: nobody's.
        download('layer-sha256:old', 7 * MB, 50 * MB, 100_000, 200_000),
      ];
      const calls = s.calls;
      await waitFor('a look', () => s.calls > calls + 1, 2000, 2);
      assert.deepEqual(a.snapshot(), { doneBytes: 6 * MB, totalBytes: 14 * MB, bytesPerSecond: 0, shared: true });
      assert.deepEqual(b.snapshot(), { doneBytes: 1 * MB, totalBytes: 4 * MB, bytesPerSecond: 0, shared: true });
      a.end();
      b.end();
      // A pull alone again starts clean.
      s.list = [];
      const c = tracker.begin('c');
      now += 1000;
      s.list = [download('layer-sha256:c1', 2 * MB, 8 * MB, now - 100, now)];
      const calls2 = s.calls;
      await waitFor('a look', () => s.calls > calls2 + 1, 2000, 2);
      assert.deepEqual(c.snapshot(), { doneBytes: 2 * MB, totalBytes: 8 * MB, bytesPerSecond: 0, shared: false });
      c.end();
    });

    it('takes hostile numbers without crashing: NaN, negative, absurd, more done than the total, junk entries, a huge list', async () => {
      const now = 5_000_000;
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 5, now: () => now });
      const h = tracker.begin('x');
      const junk: unknown[] = [
        null, 42, { ref: 7 }, { ref: '' }, { ref: 'r'.repeat(10_000), offsetBytes: 1, totalBytes: 1 },
        { ref: 'nan', offsetBytes: Number.NaN, totalBytes: Number.POSITIVE_INFINITY, startedAt: Number.NaN, updatedAt: -1 },
        { ref: 'neg', offsetBytes: -100, totalBytes: -1, startedAt: now, updatedAt: now },
        { ref: 'huge', offsetBytes: 1e300, totalBytes: 1e300, startedAt: 1e300, updatedAt: 1e300 },
        { ref: 'over', offsetBytes: 50, totalBytes: 10, startedAt: now, updatedAt: now },
        { ref: 'text', offsetBytes: '12', totalBytes: '24', startedAt: now, updatedAt: now },
        ...Array.from({ length: 5000 }, (_, i) => ({ ref: `many-${i}`, offsetBytes: 1, totalBytes: 2, startedAt: now, updatedAt: now })),
      ];
      s.list = junk;
      const calls = s.calls;
      await waitFor('a look', () => s.calls > calls + 1, 2000, 2);
      const got = h.snapshot()!;
      assert.ok(Number.isSafeInteger(got.doneBytes) && got.doneBytes >= 0, `done ${got.doneBytes}`);
      assert.ok(Number.isSafeInteger(got.totalBytes) && got.totalBytes >= 0, `total ${got.totalBytes}`);
      assert.ok(Number.isFinite(got.bytesPerSecond));
      // A size smaller than what was downloaded, or none, makes the total unknown rather than wrong.
      assert.equal(got.totalBytes, 0);
      assert.doesNotThrow(() => formatPullProgress(got));
      // Not an array at all: no progress, no crash.
      s.list = { statuses: 'nope' };
      const calls2 = s.calls;
      await waitFor('a look', () => s.calls > calls2 + 1, 2000, 2);
      h.end();
    });

    it('gives up an answer that does not come in time and keeps asking; stops asking a runtime that cannot tell', async () => {
      const { s, source } = fakeSource();
      const tracker = new PullProgressTracker({ source, logger: silentLogger(), pollMs: 5, timeoutMs: 20 });
      const h = tracker.begin('x');
      s.hang = true;
      await waitFor('a second call after a hung one', () => s.calls >= 2, 2000, 5);
      s.hang = false;
      s.fail = new Error('CRI pullProgress: unknown service containerd.services.content.v1.Content');
      const calls = s.calls;
      await waitFor('the failing call', () => s.calls > calls, 2000, 5);
      await sleep(60);
      assert.equal(s.calls, calls + 1, 'not asked again');
      assert.equal(tracker.polling, false);
      assert.equal(h.snapshot(), undefined);
      h.end();
    });
  });

  describe('the image puller, on MemoryRuntime', () => {
    const pod = (uid: string): V1Pod => ({ metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [{ name: 'app', image: 'big:1' }] } });

    it('shows the pulling container with growing progress while it pulls, then nothing, and the Pulled event with the size', async () => {
      const runtime = new MemoryRuntime({ pulls: { bytes: 3 * MB, bytesPerSecond: 5 * MB } });
      const events = new EventRecorder({ nodeName: 'vm', logger: silentLogger() });
      const puller = new ImagePuller({ runtime, backoff: new Backoff(10_000, 300_000), logger: silentLogger(), events, progressPollMs: 50 });
      const p = pod('u1');
      const done = puller.ensure(p, p.spec!.containers[0]!, {} as PodSandboxConfig);
      const first = await waitFor('progress', () => puller.activePull('u1', 'app')?.progress, 2000, 10);
      const later = await waitFor('more progress', () => {
        const got = puller.activePull('u1', 'app')?.progress;
        return got && got.doneBytes > first.doneBytes ? got : undefined;
      }, 2000, 10);
      assert.equal(later.totalBytes, 3 * MB);
      assert.equal(puller.activePull('u1', 'app')?.image, 'big:1');
      const r = await done;
      assert.ok('imageRef' in r && r.pulled?.sizeBytes === 3 * MB);
      assert.deepEqual(puller.activePulls('u1'), []);
      const pulled = events.list(0).find((e) => e.reason === 'Pulled')!;
      assert.match(pulled.message, /^Successfully pulled image "big:1" in \d+ms \(\d+ms including waiting\)\. Image size: 3000000 bytes\.$/);
    });

    it('without the runtime method: no progress, the pull works as before', async () => {
      const runtime = new MemoryRuntime();
      const bare = Object.assign(Object.create(Object.getPrototypeOf(runtime)), runtime);
      bare.pullProgress = undefined;
      const puller = new ImagePuller({ runtime: bare, backoff: new Backoff(10_000, 300_000), logger: silentLogger() });
      const p = pod('u2');
      const r = await puller.ensure(p, p.spec!.containers[0]!, {} as PodSandboxConfig);
      assert.ok('imageRef' in r);
    });
  });

  describe('what the views get', () => {
    const pod: V1Pod = { metadata: { name: 'big', namespace: 'default', uid: 'u1' }, spec: { containers: [{ name: 'app', image: 'big:1' }, { name: 'side', image: 'small:1' }] } };
    const progress = snap({ doneBytes: 45_100_000, totalBytes: 300 * MB, bytesPerSecond: 12 * MB });

    it('a pod with no status yet: its containers wait in ContainerCreating, the pulling one with the progress; STATUS stays kubectl\'s', () => {
      const served = withPullProgress(pod, [{ container: 'app', init: false, image: 'big:1', progress }]);
      const [app, side] = served.status!.containerStatuses!;
      assert.deepEqual(app!.state, { waiting: { reason: 'ContainerCreating', message: 'Pulling image "big:1": 45.1 / 300 MB (15%), 12 MB/s' } });
      assert.deepEqual(side!.state, { waiting: { reason: 'ContainerCreating' } });
      assert.equal(served.status!.phase, 'Pending');
      assert.equal(podStatusColumns(served).status, 'ContainerCreating');
      assert.equal(pod.status, undefined, 'the pod given is not changed');
    });

    it('keeps a waiting reason (a retry after ErrImagePull) and leaves running containers alone', () => {
      const withStatus: V1Pod = {
        ...pod,
        status: {
          phase: 'Pending',
          containerStatuses: [
            { name: 'app', image: 'big:1', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ErrImagePull', message: 'Failed to pull image "big:1": timeout' } } },
            { name: 'side', image: 'small:1', imageID: 'x', ready: true, restartCount: 0, state: { running: { startedAt: new Date() } } },
          ],
        },
      };
      const served = withPullProgress(withStatus, [{ container: 'app', init: false, image: 'big:1', progress: undefined }, { container: 'side', init: false, image: 'small:1', progress }]);
      assert.deepEqual(served.status!.containerStatuses![0]!.state, { waiting: { reason: 'ErrImagePull', message: 'Pulling image "big:1"' } });
      assert.ok(served.status!.containerStatuses![1]!.state!.running);
      assert.equal(withStatus.status!.containerStatuses![0]!.state!.waiting!.message, 'Failed to pull image "big:1": timeout');
      assert.equal(podStatusColumns(served).status, 'ErrImagePull');
    });

    it('an init container pulling: PodInitializing, as upstream', () => {
      const init: V1Pod = { ...pod, spec: { initContainers: [{ name: 'prep', image: 'big:1' }], containers: [{ name: 'app', image: 'small:1' }] } };
      const served = withPullProgress(init, [{ container: 'prep', init: true, image: 'big:1', progress }]);
      assert.equal(served.status!.initContainerStatuses![0]!.state!.waiting!.reason, 'PodInitializing');
      assert.match(served.status!.initContainerStatuses![0]!.state!.waiting!.message!, /^Pulling image "big:1": 45\.1 \/ 300 MB/);
      assert.equal(podStatusColumns(served).status, 'Init:0/1');
    });

    it('explain: a pull running now is a row with its progress, and becomes the pulled row', async () => {
      const t = new PodTimelines();
      t.seen('u1', 'default', 'big', Date.now());
      let current: PullSnapshot | undefined = progress;
      let finish!: (v: { imageRef: string }) => void;
      const pulling = t.time('u1', 'image', () => new Promise<{ imageRef: string }>((r) => (finish = r)), 'app: big:1', undefined, {
        live: () => (current ? { progress: current } : undefined),
        note: () => 'pulled 300 MB in 25s, 12 MB/s',
      });
      const during = t.get('u1')!;
      const row = during.steps.find((s) => s.step === 'image')!;
      assert.equal(row.running, true);
      assert.deepEqual(row.progress, progress);
      assert.match(renderWaterfall(during), /image \(app: big:1\).*\|  pulling: 45\.1 \/ 300 MB \(15%\), 12 MB\/s$/m);
      current = undefined;
      assert.match(renderWaterfall(t.get('u1')!), /image \(app: big:1\).*\|  pulling$/m);
      finish({ imageRef: 'sha256:b' });
      await pulling;
      const after = t.get('u1')!;
      assert.equal(after.steps.filter((s) => s.step === 'image').length, 1);
      assert.equal(after.steps.find((s) => s.step === 'image')!.running, undefined);
      assert.match(renderWaterfall(after), /image \(app: big:1\).*\|  pulled 300 MB in 25s, 12 MB\/s$/m);
    });

    it('explain: a pull retried after failures shows the tries before the one running now', () => {
      const t = new PodTimelines();
      t.seen('u2', 'default', 'big', 0);
      t.record('u2', { step: 'image', startMs: 10, durationMs: 100, detail: 'app: big:1', error: 'ErrImagePull: Failed to pull image "big:1": EOF' });
      t.record('u2', { step: 'image', startMs: 200, durationMs: 1, detail: 'app: big:1', error: 'ImagePullBackOff: Back-off pulling image "big:1"' });
      void t.time('u2', 'image', () => new Promise(() => {}), 'app: big:1', undefined, { live: () => ({ progress }) });
      const text = renderWaterfall(t.get('u2')!);
      assert.match(text, /image \(app: big:1\) ×3 .*\|  pulling: 45\.1 \/ 300 MB \(15%\), 12 MB\/s \(after 2 failed tries: ErrImagePull: Failed to pull image "big:1": EOF\)$/m);
      t.forget('u2');
    });
  });
});
