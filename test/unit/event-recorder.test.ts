import assert from 'node:assert/strict';
import { silentLogger } from '../../core/logger.ts';
import { EventRecorder, podRef, nodeRef, type KubeletEvent } from '../../core/events/event-recorder.ts';

const pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' } };

function recorder(clock = { t: Date.parse('2026-01-01T00:00:00Z') }) {
  const written: Array<[KubeletEvent, boolean]> = [];
  const r = new EventRecorder({ nodeName: 'n1', logger: silentLogger(), now: () => clock.t });
  r.setSink({ write: (e, isNew) => written.push([{ ...e }, isNew]) });
  return { r, written, clock };
}

describe('EventRecorder (upstream correlation)', function () {
  it('records an event with upstream fields: name, namespace, involvedObject with fieldPath, source', function () {
    const { r, written } = recorder();
    r.record(podRef(pod, 'app'), 'Normal', 'Pulling', 'Pulling image "busybox:1.36"');
    assert.equal(written.length, 1);
    const [e, isNew] = written[0]!;
    assert.equal(isNew, true);
    assert.match(e.name, /^web\.[0-9a-f]+$/);
    assert.equal(e.namespace, 'shop');
    assert.deepEqual(e.involvedObject, { kind: 'Pod', name: 'web', namespace: 'shop', uid: 'u1', apiVersion: 'v1', fieldPath: 'spec.containers{app}' });
    assert.deepEqual(e.source, { component: 'kubelet', host: 'n1' });
    assert.equal(e.count, 1);
    assert.equal(e.firstTimestamp, '2026-01-01T00:00:00.000Z');
  });

  it('node events live in the default namespace', function () {
    const { r, written } = recorder();
    r.record(nodeRef('n1'), 'Normal', 'Starting', 'Starting kubelet.');
    assert.equal(written[0]![0].namespace, 'default');
    assert.equal(written[0]![0].involvedObject.kind, 'Node');
  });

  it('dedups the same event: one object, count and lastTimestamp grow, the sink gets an update', function () {
    const { r, written, clock } = recorder();
    r.record(podRef(pod, 'app'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
    clock.t += 10_000;
    r.record(podRef(pod, 'app'), 'Warning', 'BackOff', 'Back-off restarting failed container app');
    assert.equal(written.length, 2);
    assert.equal(written[1]![1], false, 'an update, not a new event');
    assert.equal(written[1]![0].name, written[0]![0].name);
    assert.equal(written[1]![0].count, 2);
    assert.equal(written[1]![0].lastTimestamp, '2026-01-01T00:00:10.000Z');
    assert.equal(r.list().length, 1, 'the local view holds it once');
  });

  it('aggregates more than 10 different messages of one reason within 10 minutes into a combined event', function () {
    const { r, written } = recorder();
    for (let i = 0; i < 12; i++) r.record(podRef(pod), 'Warning', 'FailedMount', `volume v${i} failed`);
    const combined = written.filter(([e]) => e.message.startsWith('(combined from similar events): '));
    assert.equal(combined.length, 2);
    assert.equal(combined[0]![1], true);
    assert.equal(combined[1]![1], false);
    assert.equal(combined[1]![0].count, 2);
    assert.equal(combined[1]![0].message, '(combined from similar events): volume v11 failed');
  });

  it('lets an object emit 25 events at once, then about one per 5 minutes', function () {
    const { r, written, clock } = recorder();
    for (let i = 0; i < 40; i++) r.record(podRef(pod), 'Normal', `Reason${i}`, 'x');
    assert.equal(written.length, 25);
    assert.equal(r.dropped, 15);
    clock.t += 5 * 60_000;
    r.record(podRef(pod), 'Normal', 'Later', 'x');
    r.record(podRef(pod), 'Normal', 'Later2', 'x');
    assert.equal(written.length, 26);
    // Another object has its own budget.
    r.record(podRef({ metadata: { name: 'other', namespace: 'shop', uid: 'u2' } }), 'Normal', 'Pulled', 'x');
    assert.equal(written.length, 27);
  });

  it('keeps a bounded local view, pages by sequence and notifies subscribers; a throwing sink or subscriber stops nothing', function () {
    const clock = { t: 0 };
    const r = new EventRecorder({ nodeName: 'n1', logger: silentLogger(), now: () => clock.t });
    r.setSink({ write: () => { throw new Error('sink down'); } });
    const seen: string[] = [];
    const off = r.subscribe((e) => seen.push(e.reason));
    r.subscribe(() => { throw new Error('closed watch'); });
    for (let i = 0; i < 1200; i++) {
      clock.t += 6 * 60_000;
      r.record(podRef({ metadata: { name: `p${i}`, namespace: 'x', uid: `u${i}` } }), 'Normal', 'Started', `c${i}`);
    }
    assert.equal(r.list().length, 1000);
    const tail = r.list(r.list().at(-2)!.seq);
    assert.equal(tail.length, 1);
    assert.equal(seen.length, 1200);
    off();
    r.record(nodeRef('n1'), 'Normal', 'Starting', 'Starting kubelet.');
    assert.equal(seen.length, 1200);
  });
});
