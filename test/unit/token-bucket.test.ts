import assert from 'node:assert/strict';
import { TokenBucket } from '../../core/apiserver/token-bucket.ts';

describe('TokenBucket (kubeAPIQPS / kubeAPIBurst)', function () {
  it('lets a full burst go at once, then spaces requests 1/qps apart, in order', function () {
    let now = 0;
    const bucket = new TokenBucket(5, 3, () => now);
    assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()], [0, 0, 0]);
    // Empty: the next ones wait 200 ms, 400 ms, 600 ms (each reserves its own token).
    assert.deepEqual([bucket.reserve(), bucket.reserve(), bucket.reserve()].map(Math.round), [200, 400, 600]);
  });

  it('refills at qps up to burst after a quiet period', function () {
    let now = 0;
    const bucket = new TokenBucket(10, 2, () => now);
    bucket.reserve();
    bucket.reserve();
    now = 100; // one token back
    assert.equal(bucket.reserve(), 0);
    assert.equal(Math.round(bucket.reserve()), 100);
    now = 60_000; // a long pause refills to burst, not beyond
    assert.deepEqual([bucket.reserve(), bucket.reserve()], [0, 0]);
    assert.ok(bucket.reserve() > 0);
  });

  it('acquire waits for its token', async function () {
    const bucket = new TokenBucket(20, 1);
    const t0 = performance.now();
    await bucket.acquire();
    await bucket.acquire();
    await bucket.acquire();
    const ms = performance.now() - t0;
    // The upper bound is loose for a busy machine; a bucket waiting a second a token still fails.
    assert.ok(ms >= 90 && ms < 1_000, `two waits of 50 ms (${ms.toFixed(0)} ms)`);
  });

  it('refuses a qps or burst that would never let a request through', function () {
    assert.throws(() => new TokenBucket(0, 1), /qps must be a number > 0/);
    assert.throws(() => new TokenBucket(1, 0), /burst must be an integer >= 1/);
  });
});
