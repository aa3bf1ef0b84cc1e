import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { PluginError, errorCode, invalidInput, unavailable } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import { PodWorkers } from '../../core/pod/pod-workers.ts';
import { captureLogger } from '../support/capture-logger.ts';

const pod = (uid: string): V1Pod => ({ metadata: { name: uid, namespace: 'default', uid }, spec: { containers: [] } });

/** The runtime error contract as the pod workers act on it: the code decides the retry, not the text. */
describe('pod workers and coded errors', function () {
  async function failOnce(err: unknown, op: 'sync' | 'terminate' = 'sync'): Promise<number[]> {
    const requeued: number[] = [];
    const workers = new PodWorkers({
      sync: async () => { throw err; },
      terminate: async () => { throw err; },
      requeue: (_uid, ms) => void requeued.push(ms),
      terminated: () => {},
    }, silentLogger());
    workers.update(pod('p1'), op === 'terminate');
    for (let i = 0; i < 50 && workers.isBusy('p1'); i++) await sleep(5);
    return requeued;
  }

  it('retries a sync that failed Unavailable (or uncoded) on the error back-off', async function () {
    assert.equal((await failOnce(unavailable('runtime away'))).length, 1);
    assert.equal((await failOnce(new Error('anything'))).length, 1);
  });

  it('does not retry a sync refused as InvalidInput, from the runtime or a plugin, until the pod changes', async function () {
    assert.deepEqual(await failOnce(invalidInput('bad spec')), []);
    assert.deepEqual(await failOnce(new PluginError('policy', 'refused', { cause: invalidInput('bad spec') })), []);
  });

  it('always retries a termination, whatever the code', async function () {
    assert.equal((await failOnce(invalidInput('bad spec'), 'terminate')).length, 1);
  });

  it('a PluginError carries its cause\'s code, else Internal', function () {
    assert.equal(new PluginError('p', 'x', { cause: unavailable('u') }).code, 'Unavailable');
    assert.equal(new PluginError('p', 'x', { cause: new Error('plain') }).code, 'Internal');
    assert.equal(errorCode(new PluginError('p', 'x', { cause: invalidInput('i') })), 'InvalidInput');
    assert.equal(errorCode('a string'), 'Internal');
  });
});

/** A pod whose metadata has no namespace is in `default`, in the workers' names and their logs alike. */
describe('pod workers name pods as podFullName does', function () {
  it('finds a terminating pod without a namespace under default/NAME, and logs it so', async function () {
    const { logger, lines } = captureLogger();
    let release!: () => void;
    const workers = new PodWorkers({
      sync: async () => ({}),
      terminate: () => new Promise<void>((r) => (release = r)),
      requeue: () => {},
      terminated: () => {},
    }, logger);
    workers.update({ metadata: { name: 'web', uid: 'u1' }, spec: { containers: [] } }, true);
    assert.deepEqual(workers.terminatingWithName('default/web'), ['u1']);
    release();
    const failing = new PodWorkers({ sync: async () => { throw new Error('boom'); }, terminate: async () => {}, requeue: () => {}, terminated: () => {} }, logger);
    failing.update({ metadata: { name: 'db', uid: 'u2' }, spec: { containers: [] } });
    await failing.drain(1000);
    assert.equal(lines.find((l) => l.msg === 'pod worker operation failed')?.pod, 'default/db');
  });
});
