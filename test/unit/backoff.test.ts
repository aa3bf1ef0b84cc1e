import assert from 'node:assert/strict';
import { Backoff } from '../../core/pod/backoff.ts';

/** A clock the test moves by hand. */
function fakeClock(start = 1_000_000) {
  let t = start;
  return { now: () => t, advance: (ms: number) => (t += ms) };
}

const S = 1000;

describe('Backoff (flowcontrol semantics)', () => {
  it('starts at the initial delay and doubles up to the max (10s → 300s)', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    assert.equal(b.get('k'), 0);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) {
      seen.push(b.next('k', clock.now()) / S);
      clock.advance(S);
    }
    assert.deepEqual(seen, [10, 20, 40, 80, 160, 300, 300, 300]);
    assert.equal(b.get('k'), 300 * S);
  });

  it('keeps keys independent', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    b.next('a', clock.now());
    b.next('a', clock.now());
    b.next('b', clock.now());
    assert.equal(b.get('a'), 20 * S);
    assert.equal(b.get('b'), 10 * S);
  });

  it('starts over at the initial delay after more than 2 × max without an event', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    for (let i = 0; i < 6; i++) b.next('k', clock.now());
    assert.equal(b.get('k'), 300 * S);
    // Exactly 2 × max is not yet "stable": the delay keeps growing (capped).
    clock.advance(600 * S);
    assert.equal(b.next('k', clock.now()), 300 * S);
    // Just over 2 × max since the last update: reset.
    clock.advance(600 * S + 1);
    assert.equal(b.next('k', clock.now()), 10 * S);
    assert.equal(b.next('k', clock.now()), 20 * S);
  });

  it('isInBackOffSince: true while less than the delay has passed since the event (a container exit)', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    const exitedAt = clock.now();
    assert.equal(b.isInBackOffSince('k', exitedAt), false, 'no entry: not in back-off');
    b.next('k', exitedAt); // 10 s
    clock.advance(9_999);
    assert.equal(b.isInBackOffSince('k', exitedAt), true);
    assert.equal(b.remaining('k', exitedAt), 1);
    clock.advance(1);
    assert.equal(b.isInBackOffSince('k', exitedAt), false, 'the delay has fully passed');
    assert.equal(b.remaining('k', exitedAt), 0);
    // Measured from the event, not from the update: an exit long after the update is judged on its own time.
    const laterExit = clock.now() + 5 * S;
    clock.advance(6 * S);
    assert.equal(b.isInBackOffSince('k', laterExit), true, '1 s after that exit, still within 10 s');
  });

  it('isInBackOffSince: an event more than 2 × max after the last update is not in back-off', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    b.next('k', clock.now());
    clock.advance(600 * S + 1);
    const exitedAt = clock.now();
    assert.equal(b.isInBackOffSince('k', exitedAt), false);
  });

  it('isInBackOffSinceUpdate: measures from the last next() (image pulls)', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    assert.equal(b.isInBackOffSinceUpdate('img', clock.now()), false);
    b.next('img', clock.now());
    clock.advance(9 * S);
    assert.equal(b.isInBackOffSinceUpdate('img', clock.now()), true);
    clock.advance(S);
    assert.equal(b.isInBackOffSinceUpdate('img', clock.now()), false);
    b.next('img', clock.now()); // 20 s
    clock.advance(19 * S);
    assert.equal(b.isInBackOffSinceUpdate('img', clock.now()), true);
  });

  it('forgetPrefix drops only the keys of one pod', () => {
    const clock = fakeClock();
    const b = new Backoff(10 * S, 300 * S, clock.now);
    b.next('uid-1/a/h', clock.now());
    b.next('uid-1/b/h', clock.now());
    b.next('uid-10/a/h', clock.now());
    b.forgetPrefix('uid-1/');
    assert.equal(b.get('uid-1/a/h'), 0);
    assert.equal(b.get('uid-1/b/h'), 0);
    assert.equal(b.get('uid-10/a/h'), 10 * S);
    assert.equal(b.isInBackOffSince('uid-1/a/h', clock.now()), false);
  });
});
