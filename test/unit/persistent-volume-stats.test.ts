import assert from 'node:assert/strict';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import { PersistentVolumeStats } from '../../core/volumes/persistent-volume-stats.ts';
import type { MountedVolume } from '../../core/volumes/volume-manager.ts';

describe('persistent volume stats for /stats/summary', function () {
  it('asks the provider of each claim\'s volume at most once a minute, names it with its pvcRef, and reports an abnormal condition once per answer', async function () {
    const hooks = createHooks();
    let calls = 0;
    hooks.volumeStats.for('csi').tapPromise('t', async () => {
      calls++;
      return { capacityBytes: 100, usedBytes: 10 * calls, availableBytes: 90, ...(calls === 2 ? { abnormal: 'disk gone' } : {}) };
    });
    const mounted: MountedVolume[] = [
      { name: 'data', type: 'csi', dir: '/d', claim: 'data-web-0', result: { path: '/d/mount' } },
      { name: 'scratch', type: 'emptyDir', dir: '/s', result: { path: '/s' } },
    ];
    let now = 0;
    const abnormal: string[] = [];
    const stats = new PersistentVolumeStats({ hooks, mounted: () => mounted, logger: silentLogger(), now: () => now, onAbnormal: (uid, v, m) => abnormal.push(`${uid} ${v} ${m}`) });
    assert.deepEqual(await stats.forPod('u1', 'ns', 't0'), [{ name: 'data', pvcRef: { name: 'data-web-0', namespace: 'ns' }, time: 't0', capacityBytes: 100, usedBytes: 10, availableBytes: 90 }]);
    now = 59_000;
    assert.equal((await stats.forPod('u1', 'ns', 't1'))[0]!.usedBytes, 10, 'reused within the minute');
    now = 60_000;
    assert.equal((await stats.forPod('u1', 'ns', 't2'))[0]!.usedBytes, 20, 'asked again after it');
    assert.equal(calls, 2);
    assert.deepEqual(abnormal, ['u1 data disk gone']);
    assert.equal('abnormal' in (await stats.forPod('u1', 'ns', 't3'))[0]!, false, 'the condition is an event, not a summary field');
  });
});
