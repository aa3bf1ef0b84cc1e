import assert from 'node:assert/strict';
import { configzBody } from '../../core/server/configz.ts';
import { testConfig } from '../support/test-kubelet.ts';

/** /configz shows the node-pressure settings under upstream's KubeletConfiguration names. */
describe('/configz', function () {
  it('lists the eviction, image GC and log rotation settings with upstream names', function () {
    const c = testConfig('/tmp/kts-configz-unused', {
      eviction: { soft: { 'memory.available': '500Mi' }, softGracePeriodMs: { 'memory.available': 90_000 }, minimumReclaim: {}, pressureTransitionPeriodMs: 300_000, maxPodGracePeriodSeconds: 30, monitoringPeriodMs: 10_000, evictStaticPods: true },
    });
    const k = (configzBody(c) as { kubeletconfig: Record<string, unknown> }).kubeletconfig;
    assert.deepEqual(k.evictionSoft, { 'memory.available': '500Mi' });
    assert.deepEqual(k.evictionSoftGracePeriod, { 'memory.available': '1m30s' });
    assert.equal(k.evictionPressureTransitionPeriod, '5m0s');
    assert.equal(k.evictionMaxPodGracePeriod, 30);
    assert.equal(k.imageGCHighThresholdPercent, 85);
    assert.equal(k.imageGCLowThresholdPercent, 80);
    assert.equal(k.imageMinimumGCAge, '2m0s');
    assert.equal(k.containerLogMaxSize, String(10 * 2 ** 20));
    assert.equal(k.containerLogMaxFiles, 5);
    assert.equal(k.evictStaticPods, true);
  });
});
