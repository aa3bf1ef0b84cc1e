import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import { Limiter } from '../../core/util/limiter.ts';

/** A task that runs until `finish()` and records how many tasks ran at once. */
function gauge() {
  let running = 0;
  const g = { max: 0, started: [] as number[] };
  const task = (id: number, ms: number) => async () => {
    g.started.push(id);
    running++;
    g.max = Math.max(g.max, running);
    await sleep(ms);
    running--;
    return id;
  };
  return { g, task };
}

describe('Limiter', function () {
  it('runs at most `limit` tasks at once, the rest in arrival order', async function () {
    const { g, task } = gauge();
    const limiter = new Limiter(2);
    const results = await Promise.all([1, 2, 3, 4, 5].map((id) => limiter.run(task(id, 20))));
    assert.deepEqual(results, [1, 2, 3, 4, 5]);
    assert.equal(g.max, 2);
    assert.deepEqual(g.started, [1, 2, 3, 4, 5]);
    assert.deepEqual(limiter.load, { active: 0, waiting: 0 });
  });

  it('frees the slot of a failed task', async function () {
    const limiter = new Limiter(1);
    await assert.rejects(limiter.run(async () => { throw new Error('boom'); }), /boom/);
    assert.equal(await limiter.run(async () => 'next'), 'next');
  });

  it('with releaseAfterMs, a task still running gives its slot to the next one and keeps running', async function () {
    const { g, task } = gauge();
    const limiter = new Limiter(1, 30);
    const t0 = performance.now();
    // The hung task runs 2 s, so the bound below tells "after its 30 ms" from "after the hung
    // one" even when the pure lane runs slowly beside the node lanes.
    const hung = limiter.run(task(1, 2_000));
    const quick = await limiter.run(task(2, 1));
    const quickDoneMs = performance.now() - t0;
    assert.equal(quick, 2);
    assert.ok(quickDoneMs < 1_500, `the second task waited ${quickDoneMs} ms: not for the hung one`);
    assert.equal(await hung, 1, 'the slow task still completes');
    assert.equal(g.max, 2);
    assert.deepEqual(limiter.load, { active: 0, waiting: 0 });
  });
});
