import assert from 'node:assert/strict';
import { PodTimelines } from '../../core/timeline/pod-timeline.ts';
import { renderWaterfall } from '../../core/timeline/waterfall.ts';

describe('pod start timelines', () => {
  it('records steps from seen to first Ready, in start order, and stops at Ready', async () => {
    const t = new PodTimelines();
    t.seen('u1', 'default', 'web', 1000);
    t.record('u1', { step: 'sandbox', startMs: 1010, durationMs: 250 });
    t.record('u1', { step: 'admitted', startMs: 1001, durationMs: 0 });
    t.record('u1', { step: 'start:main', startMs: 1300, durationMs: 20, detail: 'main' });
    t.ready('u1', 1400);
    t.record('u1', { step: 'start:main', startMs: 9000, durationMs: 20, detail: 'a restart is not part of the start' });
    const got = t.get('u1')!;
    assert.deepEqual(got.steps.map((s) => s.step), ['source-seen', 'admitted', 'sandbox', 'start:main', 'ready']);
    assert.equal(got.readyMs, 1400);
    assert.ok(got.steps.every((s) => s.durationMs >= 0));
    assert.equal(t.find('default', 'web')!.uid, 'u1');
  });

  it('after Ready, takes only the steps of ephemeral containers (kubectl debug), running ones included', async () => {
    const t = new PodTimelines();
    t.seen('u4', 'default', 'web', 1000);
    t.ready('u4', 1400);
    await t.time('u4', 'start', async () => undefined, 'main');
    let release!: () => void;
    const pulling = t.time('u4', 'image', () => new Promise<void>((r) => (release = r)), 'ephemeral debugger', undefined, { afterReady: true });
    assert.deepEqual(t.get('u4')!.steps.map((s) => [s.step, s.detail, s.running === true]), [['source-seen', undefined, false], ['ready', undefined, false], ['image', 'ephemeral debugger', true]]);
    release();
    await pulling;
    await t.time('u4', 'start', async () => undefined, 'ephemeral debugger', undefined, { afterReady: true });
    assert.deepEqual(t.get('u4')!.steps.slice(2).map((s) => [s.step, s.detail, s.running === true]), [['image', 'ephemeral debugger', false], ['start', 'ephemeral debugger', false]]);
  });

  it('times a step and records a failure with its message before rethrowing', async () => {
    const t = new PodTimelines();
    t.seen('u2', 'ns', 'p');
    assert.equal(await t.time('u2', 'image', async () => 'ref', 'busybox'), 'ref');
    await assert.rejects(t.time('u2', 'sandbox', async () => {
      throw new Error('CNI failed');
    }), /CNI failed/);
    const steps = t.get('u2')!.steps;
    assert.equal(steps[1]!.detail, 'busybox');
    assert.equal(steps[2]!.error, 'CNI failed');
  });

  it('renders a waterfall with offsets, durations and failures', () => {
    const t = new PodTimelines();
    t.seen('u3', 'default', 'web', 0);
    t.record('u3', { step: 'sandbox', startMs: 10, durationMs: 300 });
    t.record('u3', { step: 'hook:beforeSandbox', startMs: 5, durationMs: 2, detail: 'cni-exec' });
    t.record('u3', { step: 'image', startMs: 320, durationMs: 50, detail: 'busybox', error: 'not found' });
    t.ready('u3', 400);
    const text = renderWaterfall(t.get('u3')!);
    assert.match(text, /default\/web .* Ready after 400 ms/);
    assert.match(text, /hook:beforeSandbox \(cni-exec\)\s+5 ms\s+2 ms/);
    assert.match(text, /sandbox\s+10 ms\s+300 ms\s+\| █{30} +\|/);
    assert.match(text, /failed: not found/);
  });
});
