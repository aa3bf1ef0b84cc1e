import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { PodWorkers } from '../../core/pod/pod-workers.ts';
import { TerminationGrace, effectiveGracePeriod } from '../../core/pod/termination-grace.ts';

const pod = (spec?: number, deletion?: number): V1Pod => ({
  metadata: { name: 'p', namespace: 'default', uid: 'u1', ...(deletion !== undefined ? { deletionGracePeriodSeconds: deletion } : {}) },
  spec: { containers: [], ...(spec !== undefined ? { terminationGracePeriodSeconds: spec } : {}) },
});

describe('termination grace: upstream\'s effective grace period', function () {
  it('the deletion\'s grace first; zero counts as unset (the spec\'s applies); 30 s without either; never below 1 s', function () {
    assert.equal(effectiveGracePeriod(undefined, pod(600, 20)), 20);
    assert.equal(effectiveGracePeriod(undefined, pod(600, 0)), 600, 'a zero deletion grace falls back to the spec');
    assert.equal(effectiveGracePeriod(undefined, pod(600)), 600);
    assert.equal(effectiveGracePeriod(undefined, pod()), 30);
    assert.equal(effectiveGracePeriod(undefined, pod(0)), 1, 'never below 1 s');
    assert.equal(effectiveGracePeriod(undefined, pod(0, 0)), 1);
  });

  it('a terminating pod\'s grace only decreases; an override shortens it too', function () {
    assert.equal(effectiveGracePeriod(600, pod(600, 1)), 1);
    assert.equal(effectiveGracePeriod(5, pod(600, 600)), 5, 'never lengthened');
    assert.equal(effectiveGracePeriod(600, pod(600, 0), 1), 1, 'a pod gone from the API');
    assert.equal(effectiveGracePeriod(600, pod(600, 0)), 600, 'a zero deletion grace alone changes nothing (as upstream)');
  });

  it('clamps what a timer cannot time (an int64-max spec is 24.8 days)', function () {
    assert.equal(effectiveGracePeriod(undefined, pod(Number.MAX_SAFE_INTEGER)), Math.floor((2 ** 31 - 1) / 1000));
  });

  it('TerminationGrace: a shorter grace moves the deadline, tells the listeners and fires expired() early', async function () {
    const g = new TerminationGrace(600);
    assert.equal(g.leftSeconds(), 600);
    let told = 0;
    const off = g.onShorten(() => told++);
    const expired = g.expired();
    let fired = false;
    void expired.promise.then(() => (fired = true));
    assert.equal(g.shorten(700), false, 'not longer');
    assert.equal(g.shorten(0.05), true);
    assert.equal(told, 1);
    assert.equal(g.seconds, 0.05);
    await sleep(120);
    assert.equal(fired, true, 'the deadline came at the new time');
    assert.equal(g.leftSeconds(), 0);
    off();
    expired.cancel();
  });
});

describe('pod workers: a second termination request shortens the grace of the one in progress', function () {
  it('the running terminate sees the shorter grace; a longer one is ignored', async function () {
    let release!: () => void;
    const seen: number[] = [];
    let grace: TerminationGrace | undefined;
    const workers = new PodWorkers({
      sync: async () => ({}),
      terminate: async (_p, g) => {
        grace = g;
        seen.push(g.seconds);
        g.onShorten(() => seen.push(g.seconds));
        await new Promise<void>((r) => (release = r));
      },
      requeue: () => {},
      terminated: () => {},
    }, silentLogger());
    workers.update(pod(600, 600), true);
    for (let i = 0; i < 1000 && !grace; i++) await sleep(5);
    assert.deepEqual(seen, [600]);
    workers.update(pod(600, 900), true);
    assert.deepEqual(seen, [600], 'a longer grace changes nothing');
    workers.update(pod(600, 1), true);
    assert.deepEqual(seen, [600, 1]);
    assert.equal(workers.gracePeriod('u1'), 1);
    workers.update(pod(600, 0), true, 1);
    assert.deepEqual(seen, [600, 1], 'already at 1 s');
    release();
    await workers.drain(1000);
    assert.equal(workers.has('u1'), false);
  });
});
