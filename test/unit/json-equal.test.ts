import assert from 'node:assert/strict';
import { canonicalJSON, jsonEqual } from '../../core/objects/pod-util.ts';
import { Rng } from '../fuzz/prng.ts';

/** A random JSON-like value: nested objects and arrays, some keys undefined, strings, numbers, null, booleans. */
function randomValue(rng: Rng, depth: number): unknown {
  const k = rng.int(0, depth > 3 ? 4 : 6);
  switch (k) {
    case 0: return null;
    case 1: return rng.chance(0.5);
    case 2: return rng.int(-3, 3);
    case 3: return rng.pick(['', 'a', 'b', 'é', '0']);
    case 4: return undefined;
    case 5: return Array.from({ length: rng.int(0, 3) }, () => randomValue(rng, depth + 1));
    default: return Object.fromEntries(Array.from({ length: rng.int(0, 3) }, () => [rng.pick(['a', 'b', 'c']), randomValue(rng, depth + 1)]));
  }
}

/** The same value with every object's keys in reverse order. */
function reordered(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(reordered);
  if (v && typeof v === 'object') return Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reordered(x)]));
  return v;
}

describe('jsonEqual: equality as canonicalJSON sees it, without serialising', function () {
  it('ignores key order and keys set to undefined; sees every other difference', function () {
    assert.ok(jsonEqual({ a: 1, b: [1, { c: 'x' }] }, { b: [1, { c: 'x' }], a: 1 }));
    assert.ok(jsonEqual({ a: 1, u: undefined }, { a: 1 }));
    assert.ok(!jsonEqual({ a: null }, {}), 'a key set to null is not a missing key');
    assert.ok(!jsonEqual({ a: 1 }, { a: 1, b: 2 }));
    assert.ok(!jsonEqual([1, 2], [2, 1]), 'arrays keep their order');
    assert.ok(!jsonEqual([], {}));
    assert.ok(!jsonEqual({ a: '1' }, { a: 1 }));
  });

  it('agrees with comparing canonicalJSON on 5,000 random pairs', function () {
    const rng = new Rng(20261130, 0);
    let equal = 0;
    for (let i = 0; i < 5000; i++) {
      const a = randomValue(rng, 0);
      const b = rng.chance(0.4) ? reordered(a) : randomValue(rng, 0);
      const want = canonicalJSON(a) === canonicalJSON(b);
      if (want) equal++;
      assert.equal(jsonEqual(a, b), want, `${canonicalJSON(a)} vs ${canonicalJSON(b)}`);
    }
    assert.ok(equal > 1000 && equal < 4500, `both answers were tested (${equal} equal)`);
  });
});
