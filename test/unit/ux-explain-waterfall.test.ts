/**
 * Issue 17: `kubelet-ts explain` for a pod in ImagePullBackOff showed a new `image … 2 ms` row
 * per retry (up to 200) and no row saying the pull failed, and cut labels mid-word.
 */
import assert from 'node:assert/strict';
import type http from 'node:http';
import { PodTimelines } from '../../core/timeline/pod-timeline.ts';
import { renderWaterfall } from '../../core/timeline/waterfall.ts';
import { timelineRouteHandler } from '../../core/timeline/timeline-route.ts';

describe('ux: explain merges repeated steps and shows failed ones', () => {
  it('a pull in back-off is one row with its count, marked failed with the cause', async () => {
    const t = new PodTimelines();
    const base = Date.now() - 1000;
    t.seen('u1', 'default', 'broken', base);
    t.record('u1', { step: 'sandbox', startMs: base + 5, durationMs: 200 });
    const label = 'app: 127.0.0.1:5050/nope:1';
    // What the syncer records now: the ensure() answer ErrImagePull, then ImagePullBackOff each second.
    await t.time('u1', 'image', async () => ({ reason: 'ErrImagePull', message: 'Failed to pull image "127.0.0.1:5050/nope:1": not found' }), label, (r) => `${r.reason}: ${r.message}`);
    for (let i = 0; i < 30; i++) t.record('u1', { step: 'image', startMs: base + 2000 + i * 1000, durationMs: 2, detail: label, error: 'ImagePullBackOff: Back-off pulling image "127.0.0.1:5050/nope:1"' });
    const text = renderWaterfall(t.get('u1')!);
    const imageRows = text.split('\n').filter((l) => l.includes('image ('));
    assert.equal(imageRows.length, 1, text);
    assert.match(imageRows[0]!, /image \(app: 127\.0\.0\.1:5050\/nope:1\) ×31 .*\| *x+ *\| {2}failed all 31 tries: ErrImagePull: Failed to pull image "127\.0\.0\.1:5050\/nope:1": not found \(now ImagePullBackOff: Back-off pulling image/);
    assert.match(text, /not Ready yet/);
  });

  it('keeps a long back-off to a few entries, so the steps after it are still recorded', () => {
    const t = new PodTimelines();
    t.seen('u4', 'default', 'late', 0);
    const backOff = 'ImagePullBackOff: Back-off pulling image "r/app:1"';
    for (let i = 0; i < 500; i++) {
      // A real pull failure now and then (as the back-off doubles), a back-off answer every second between.
      const error = i % 100 === 0 ? 'ErrImagePull: Failed to pull image "r/app:1": not found' : backOff;
      t.record('u4', { step: 'image', startMs: 1000 * (i + 1), durationMs: 2, detail: 'app: r/app:1', error });
    }
    t.record('u4', { step: 'image', startMs: 501_000, durationMs: 300, detail: 'app: r/app:1' });
    t.record('u4', { step: 'start:app', startMs: 501_400, durationMs: 20 });
    t.ready('u4', 501_500);
    const tl = t.get('u4')!;
    assert.ok(tl.steps.length <= 15, `${tl.steps.length} entries`);
    assert.equal(tl.readyMs, 501_500);
    const text = renderWaterfall(tl);
    assert.match(text, /image \(app: r\/app:1\) ×501 .*failed 500 of 501 tries, then succeeded \(last error: ErrImagePull: Failed to pull image "r\/app:1": not found\)/);
    assert.match(text, /\n {2}start:app +501400 ms +20 ms/);
  });

  it('a step that failed and then succeeded says so', () => {
    const t = new PodTimelines();
    t.seen('u2', 'default', 'web', 0);
    t.record('u2', { step: 'volumes', startMs: 1, durationMs: 3, error: 'MountVolume.SetUp failed for volume "cfg": configmap "cfg" not found' });
    t.record('u2', { step: 'volumes', startMs: 1001, durationMs: 2 });
    t.ready('u2', 1500);
    const row = renderWaterfall(t.get('u2')!).split('\n').find((l) => l.includes('volumes'))!;
    assert.match(row, /volumes ×2 .*\|.*█.*\| {2}failed 1 of 2 tries, then succeeded \(last error: MountVolume\.SetUp failed for volume "cfg": configmap "cfg" not found\)/);
  });

  it('never cuts a label: a long one gets a line of its own, the figures below it', () => {
    const t = new PodTimelines();
    t.seen('u3', 'default', 'web', 0);
    const long = 'app: registry.example.com:5000/some/deeply/nested/project/image-name:v1.2.3-with-a-long-tag';
    t.record('u3', { step: 'image', startMs: 10, durationMs: 40, detail: long });
    t.record('u3', { step: 'sandbox', startMs: 60, durationMs: 100 });
    const lines = renderWaterfall(t.get('u3')!).split('\n');
    const at = lines.findIndex((l) => l.includes(long));
    assert.ok(at > 0, lines.join('\n'));
    assert.equal(lines[at], `  image (${long})`);
    assert.match(lines[at + 1]!, /^ +10 ms +40 ms +\|/);
    assert.match(lines.join('\n'), /\n {2}sandbox +60 ms +100 ms +\|/);
  });

  it('the timeline route picks a pod by ?uid= among pods sharing a name', () => {
    const t = new PodTimelines();
    t.seen('old', 'default', 'hello-vm', 0);
    t.seen('new', 'default', 'hello-vm', 10);
    const handler = timelineRouteHandler(t);
    const get = (path: string) => handler({} as http.IncomingMessage, new URL(path, 'http://localhost'), {} as http.ServerResponse) as { uid: string };
    assert.equal(get('/debug/pods/default/hello-vm/timeline?uid=new').uid, 'new');
    assert.equal(get('/debug/pods/default/hello-vm/timeline?uid=old').uid, 'old');
    assert.throws(() => get('/debug/pods/default/other/timeline?uid=new'), /has no start timeline/);
  });
});
