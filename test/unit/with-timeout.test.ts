import assert from 'node:assert/strict';
import { TIMED_OUT, withTimeout } from '../../core/util/with-timeout.ts';

describe('withTimeout', function () {
  it("gives the promise's value, or TIMED_OUT once the time passed first", async function () {
    assert.equal(await withTimeout(Promise.resolve(7), 1000), 7);
    assert.equal(await withTimeout(new Promise(() => {}), 20), TIMED_OUT);
  });

  it('rejects with the given error once the time passed first, and passes the promise\'s own rejection', async function () {
    await assert.rejects(withTimeout(new Promise(() => {}), 20, { error: () => new Error('did not finish within 20 ms') }), /did not finish within 20 ms/);
    await assert.rejects(withTimeout(Promise.reject(new Error('boom')), 1000, { error: () => new Error('late') }), /boom/);
  });

  it('calls a function at once, a synchronous throw rejecting as an async one does', async function () {
    let called = false;
    const p = withTimeout(() => {
      called = true;
      return 1;
    }, 1000);
    assert.equal(called, true, 'called synchronously');
    assert.equal(await p, 1);
    await assert.rejects(withTimeout(() => { throw new Error('sync throw'); }, 1000), /sync throw/);
  });

  it('leaves no unhandled rejection behind when the work it gave up on fails later', async function () {
    const unhandled: unknown[] = [];
    const listener = (reason: unknown) => unhandled.push(reason);
    process.on('unhandledRejection', listener);
    try {
      let fail!: (err: Error) => void;
      const work = new Promise((_, reject) => (fail = reject));
      assert.equal(await withTimeout(work, 10), TIMED_OUT);
      fail(new Error('too late'));
      await new Promise((r) => setTimeout(r, 20));
      assert.deepEqual(unhandled, []);
    } finally {
      process.off('unhandledRejection', listener);
    }
  });
});
