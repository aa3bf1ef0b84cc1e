import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1PodStatus } from '@kubernetes/client-node';
import { ApiStatusSync, type PodTarget } from '../../core/apiserver/api-status-sync.ts';
import { silentLogger } from '../../core/logger.ts';
import { waitFor } from '../support/wait-for.ts';

const target: PodTarget = { namespace: 'ns', name: 'web', uid: 'u1' };

function sync(opts: { delayMs?: number; fail?: () => 'retry' | 'drop' | undefined } = {}) {
  const sent: V1PodStatus[] = [];
  const s = new ApiStatusSync({
    api: {
      async patchStatus(_t, status) {
        if (opts.delayMs) await sleep(opts.delayMs);
        const f = opts.fail?.();
        if (f) throw Object.assign(new Error(f), { kind: f });
        sent.push(status);
      },
    },
    logger: silentLogger(),
    classify: (err) => (err as { kind: 'retry' | 'drop' }).kind,
  });
  return { s, sent };
}

describe('ApiStatusSync (pod statuses to the API server)', function () {
  it('sends a status once: the same status again, even while it is being written, is not sent twice', async function () {
    const { s, sent } = sync({ delayMs: 30 });
    s.set('u1', target, { phase: 'Running' });
    s.set('u1', target, { phase: 'Running' });
    await sleep(10);
    s.set('u1', target, { phase: 'Running' });
    await sleep(100);
    s.set('u1', target, { phase: 'Running' });
    await sleep(50);
    assert.equal(sent.length, 1);
    s.stop();
  });

  it('sends only the latest of statuses set while one is in flight, and never goes back from a terminal phase', async function () {
    const { s, sent } = sync({ delayMs: 20 });
    s.set('u1', target, { phase: 'Pending' });
    s.set('u1', target, { phase: 'Running' });
    s.set('u1', target, { phase: 'Succeeded' });
    // Wait for the second write rather than a fixed time: a loaded test lane ran past 100 ms.
    await waitFor('two statuses sent', () => sent.length >= 2, 5000, 10);
    await sleep(50);
    assert.deepEqual(sent.map((x) => x.phase), ['Pending', 'Succeeded']);
    s.set('u1', target, { phase: 'Running' });
    await sleep(50);
    assert.deepEqual(sent.map((x) => x.phase), ['Pending', 'Succeeded']);
    s.stop();
  });

  it('drops a status for an object that is gone or replaced; retries one the server could not take', async function () {
    let calls = 0;
    const { s, sent } = sync({ fail: () => (++calls === 1 ? 'retry' : undefined) });
    s.set('u1', target, { phase: 'Running' });
    await waitFor('the first write tried', () => calls >= 1, 5000, 10);
    await sleep(50);
    assert.equal(sent.length, 0);
    s.flush();
    await waitFor('sent on the flush after the failure', () => sent.length >= 1, 5000, 10);
    assert.equal(sent.length, 1);
    let goneCalls = 0;
    const gone = sync({ fail: () => (++goneCalls, 'drop') });
    gone.s.set('u1', target, { phase: 'Running' });
    await waitFor('the write to a gone object tried', () => goneCalls >= 1, 5000, 10);
    await sleep(10);
    assert.equal(gone.s.backlog, 0);
    s.stop();
    gone.s.stop();
  });
});
