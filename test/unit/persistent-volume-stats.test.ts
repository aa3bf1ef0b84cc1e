import assert from 'node:assert/strict';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import { PersistentVolumeStats } from '../../core/volumes/persistent-volume-stats.ts';
import type { MountedVolume } from '../../core/volumes/volume-manager.ts';
import { Registry } from 'prom-client';
import { registerVolumeStatsMetrics } from '../../core/metrics/volume-stats-metrics.ts';

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

  it('volumeStatsAggPeriod: figures are reused for the period given; 0 asks no provider', async function () {
    const hooks = createHooks();
    let calls = 0;
    hooks.volumeStats.for('csi').tapPromise('t', async () => ({ capacityBytes: 100, usedBytes: 10 * ++calls, availableBytes: 90 }));
    const mounted: MountedVolume[] = [{ name: 'data', type: 'csi', dir: '/d', claim: 'data-web-0', result: { path: '/d/mount' } }];
    let now = 0;
    const every5s = new PersistentVolumeStats({ hooks, mounted: () => mounted, logger: silentLogger(), now: () => now, periodMs: 5000 });
    await every5s.forPod('u1', 'ns', 't0');
    now = 5000;
    assert.equal((await every5s.forPod('u1', 'ns', 't1'))[0]!.usedBytes, 20, 'asked again after 5 s');
    const off = new PersistentVolumeStats({ hooks, mounted: () => mounted, logger: silentLogger(), now: () => now, periodMs: 0 });
    assert.deepEqual(await off.forPod('u1', 'ns', 't2'), []);
    assert.deepEqual(await off.claimsOf('u1', 'ns'), []);
    assert.equal(calls, 2, 'the provider is not asked with 0');
  });
  it('a provider that does not answer (an NFS server gone) holds up no summary, is not asked again meanwhile, and its late answer is used', async function () {
    const hooks = createHooks();
    const asked: AbortSignal[] = [];
    let answer: ((u: { capacityBytes: number }) => void) | undefined;
    hooks.volumeStats.for('nfs').tapPromise('t', (_r, ctx) => {
      asked.push(ctx.signal);
      return new Promise((resolve) => { answer = resolve; });
    });
    const mounted: MountedVolume[] = [{ name: 'data', type: 'nfs', dir: '/d', claim: 'shared', result: { path: '/d/mount' } }];
    const stats = new PersistentVolumeStats({ hooks, mounted: () => mounted, logger: silentLogger(), answerWaitMs: 50 });
    const t0 = performance.now();
    assert.deepEqual(await stats.forPod('u1', 'ns', 't0'), [], 'no figures yet');
    assert.deepEqual(await stats.claimsOf('u1', 'ns'), []);
    assert.ok(performance.now() - t0 < 2000, `the summary waited ${Math.round(performance.now() - t0)} ms`);
    assert.equal(asked.length, 1, 'asked once while the question is out');
    assert.equal(asked[0]!.aborted, false, 'the provider\'s signal aborts only when its figures would be stale');
    answer!({ capacityBytes: 7 });
    await new Promise((r) => setImmediate(r));
    assert.equal((await stats.forPod('u1', 'ns', 't1'))[0]?.capacityBytes, 7, 'the late answer is kept for the next summary');
    assert.equal(asked.length, 1);
  });

  it('an answer that comes after its pod was forgotten is dropped', async function () {
    const hooks = createHooks();
    let answer: ((u: { capacityBytes: number }) => void) | undefined;
    hooks.volumeStats.for('nfs').tapPromise('t', () => new Promise((resolve) => { answer = resolve; }));
    const mounted: MountedVolume[] = [{ name: 'data', type: 'nfs', dir: '/d', claim: 'shared', result: { path: '/d/mount' } }];
    const stats = new PersistentVolumeStats({ hooks, mounted: () => mounted, logger: silentLogger(), answerWaitMs: 10 });
    await stats.forPod('u1', 'ns', 't0');
    stats.forget('u1');
    answer!({ capacityBytes: 7 });
    await new Promise((r) => setImmediate(r));
    assert.equal((stats as unknown as { cache: Map<string, unknown> }).cache.size, 0, 'nothing kept for a pod gone');
  });
});

describe('kubelet_volume_stats_* metrics', function () {
  it("one series per claim (a claim two pods mount once), with upstream's names and labels; the abnormal gauge 1 for a volume its provider found abnormal", async function () {
    const hooks = createHooks();
    hooks.volumeStats.for('csi').tapPromise('t', async ({ volumeName }) => (volumeName === 'bad'
      ? { capacityBytes: 50, abnormal: 'gone' }
      : { capacityBytes: 1024, availableBytes: 1000, usedBytes: 24, inodes: 64, inodesFree: 60, inodesUsed: 4 }));
    const mounted: Record<string, MountedVolume[]> = {
      a: [{ name: 'data', type: 'csi', dir: '/a', claim: 'shared', result: { path: '/a/m' } }],
      b: [{ name: 'data', type: 'csi', dir: '/b', claim: 'shared', result: { path: '/b/m' } }, { name: 'bad', type: 'csi', dir: '/b2', claim: 'broken', result: { path: '/b2/m' } }],
    };
    const stats = new PersistentVolumeStats({ hooks, mounted: (uid) => mounted[uid] ?? [], logger: silentLogger() });
    const registry = new Registry();
    registerVolumeStatsMetrics(registry, async () => [...(await stats.claimsOf('a', 'ns')), ...(await stats.claimsOf('b', 'ns'))]);
    const text = await registry.metrics();
    const lines = text.split('\n').filter((l) => l.startsWith('kubelet_volume_stats_'));
    assert.deepEqual(lines.sort(), [
      'kubelet_volume_stats_available_bytes{namespace="ns",persistentvolumeclaim="shared"} 1000',
      'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="broken"} 50',
      'kubelet_volume_stats_capacity_bytes{namespace="ns",persistentvolumeclaim="shared"} 1024',
      'kubelet_volume_stats_health_status_abnormal{namespace="ns",persistentvolumeclaim="broken"} 1',
      'kubelet_volume_stats_health_status_abnormal{namespace="ns",persistentvolumeclaim="shared"} 0',
      'kubelet_volume_stats_inodes_free{namespace="ns",persistentvolumeclaim="shared"} 60',
      'kubelet_volume_stats_inodes_used{namespace="ns",persistentvolumeclaim="shared"} 4',
      'kubelet_volume_stats_inodes{namespace="ns",persistentvolumeclaim="shared"} 64',
      'kubelet_volume_stats_used_bytes{namespace="ns",persistentvolumeclaim="shared"} 24',
    ]);
    // A claim no longer mounted is gone from the next scrape.
    mounted.b = [];
    assert.equal((await registry.metrics()).includes('persistentvolumeclaim="broken"'), false);
  });
});
