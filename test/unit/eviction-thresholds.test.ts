import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { loadConfig } from '../../core/config/load.ts';
import { ConfigError } from '../../core/errors.ts';
import { thresholdQuantity, thresholdsOf } from '../../core/eviction/thresholds.ts';
import { parseThresholdValue, resolveEvictionSettings } from '../../core/config/eviction-config.ts';

describe('eviction thresholds', function () {
  describe('parseThresholdValue', function () {
    it('reads quantities and percentages as upstream does; 0 and 0% are no threshold', function () {
      assert.deepEqual(parseThresholdValue('100Mi'), { quantity: 100 * 2 ** 20 });
      assert.deepEqual(parseThresholdValue('1G'), { quantity: 1e9 });
      assert.deepEqual(parseThresholdValue('500'), { quantity: 500 });
      assert.deepEqual(parseThresholdValue('10%'), { percentage: 0.1 });
      assert.deepEqual(parseThresholdValue('7.5%'), { percentage: 0.075 });
      assert.deepEqual(parseThresholdValue('100%'), { percentage: 1 });
      assert.equal(parseThresholdValue('0'), undefined);
      assert.equal(parseThresholdValue('0%'), undefined);
    });

    it('refuses what is not a quantity or a percentage of 0-100 %', function () {
      assert.throws(() => parseThresholdValue('150%'), /must be >= 0% and <= 100%/);
      assert.throws(() => parseThresholdValue('lots'), /not a quantity/);
      assert.throws(() => parseThresholdValue('%'), /<= 100%/);
      assert.throws(() => parseThresholdValue('-1Mi'), /must be positive/);
    });

    it('a percentage is of the signal capacity, rounded down', function () {
      assert.equal(thresholdQuantity({ percentage: 0.1 }, 1001), 100);
      assert.equal(thresholdQuantity({ quantity: 5 }, 1001), 5);
    });
  });

  describe('thresholdsOf', function () {
    it('hard thresholds, then soft ones with their grace period and minimum reclaim, memory first', function () {
      const settings = resolveEvictionSettings({
        evictionSoft: { 'memory.available': '300Mi' },
        evictionSoftGracePeriod: { 'memory.available': '1m30s' },
        evictionMinimumReclaim: { 'nodefs.available': '1Gi' },
      });
      const ts = thresholdsOf({ 'nodefs.available': '10%', 'memory.available': '100Mi', 'imagefs.available': '0%' }, settings);
      assert.deepEqual(ts.map((t) => [t.signal, t.text, t.hard, t.gracePeriodMs]), [
        ['memory.available', '100Mi', true, 0],
        ['memory.available', '300Mi', false, 90_000],
        ['nodefs.available', '10%', true, 0],
      ]);
      assert.deepEqual(ts[2]!.minReclaim, { quantity: 2 ** 30 });
    });

    it('defaults: transition period 5m, monitoring 10s, no max pod grace, static pods not evicted', function () {
      const s = resolveEvictionSettings({});
      assert.equal(s.pressureTransitionPeriodMs, 300_000);
      assert.equal(s.monitoringPeriodMs, 10_000);
      assert.equal(s.maxPodGracePeriodSeconds, 0);
      assert.equal(s.evictStaticPods, false);
    });
  });

  describe('config errors', function () {
    let dir: string;
    before(async function () {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h15-eviction-config-'));
    });
    after(async function () {
      await fs.rm(dir, { recursive: true, force: true });
    });

    async function failure(config: object): Promise<string[]> {
      const file = path.join(dir, `kubelet-${Math.random().toString(36).slice(2)}.json`);
      await fs.writeFile(file, JSON.stringify(config));
      try {
        await loadConfig({ configFile: file });
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        return err.message.split('\n').map((l) => l.replace(`${file}: `, '')).sort();
      }
      assert.fail('the config was accepted');
    }

    it('a threshold that does not parse, a percentage over 100 %, an unknown signal name the field and the value', async function () {
      assert.deepEqual(await failure({ evictionSoft: { 'memory.available': 'lots' }, evictionSoftGracePeriod: { 'memory.available': '1m' }, evictionMinimumReclaim: { 'nodefs.available': '101%' }, evictionHard: { 'memory.free': '1Gi' } }), [
        "evictionMinimumReclaim.nodefs.available is \"101%\"; allowed: a quantity such as '100Mi' or a percentage such as '10%'",
        "evictionSoft.memory.available is \"lots\"; allowed: a quantity such as '100Mi' or a percentage such as '10%'",
        "unknown field 'evictionHard.memory.free' (allowed fields: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available)",
      ]);
    });

    it('a soft threshold without its grace period, and a grace period without a soft threshold', async function () {
      assert.deepEqual(await failure({ evictionSoft: { 'memory.available': '300Mi' }, evictionSoftGracePeriod: { 'nodefs.available': '1m' } }), [
        "evictionSoft.memory.available is \"300Mi\" but evictionSoftGracePeriod.memory.available is not set; allowed: a soft threshold with its grace period, such as evictionSoftGracePeriod: {'memory.available': '1m30s'}",
        'evictionSoftGracePeriod.nodefs.available is "1m" but evictionSoft.nodefs.available is not set; allowed: grace periods only for signals with a soft threshold',
      ]);
    });

    it('bad durations and grace periods name the field', async function () {
      assert.deepEqual(await failure({ evictionPressureTransitionPeriod: 'soon', evictionMaxPodGracePeriod: -1, evictStaticPods: 'yes' }), [
        "evictStaticPods is \"yes\"; allowed: a value of type boolean",
        "evictionMaxPodGracePeriod is -1; allowed: an integer number of seconds >= 0 (0: the pod's own)",
        "evictionPressureTransitionPeriod is \"soon\"; allowed: a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)",
      ]);
    });

    it('image GC thresholds: percentages, the low one below the high one', async function () {
      assert.deepEqual(await failure({ imageGCHighThresholdPercent: 101 }), ['imageGCHighThresholdPercent is 101; allowed: an integer percentage 0-100']);
      assert.deepEqual(await failure({ imageGCHighThresholdPercent: 70 }), ['imageGCLowThresholdPercent is 80 and imageGCHighThresholdPercent is 70; allowed: a low threshold below the high one (upstream defaults 80 and 85)']);
      assert.deepEqual(await failure({ imageMinimumGCAge: 'a while' }), ["imageMinimumGCAge is \"a while\"; allowed: a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)"]);
    });

    it('container log rotation: a size quantity and at least two files', async function () {
      assert.deepEqual(await failure({ containerLogMaxSize: '10 MB', containerLogMaxFiles: 1 }), [
        'containerLogMaxFiles is 1; allowed: an integer >= 2 (the current file and at least one rotated one)',
        "containerLogMaxSize is \"10 MB\"; allowed: a quantity of bytes such as '10Mi'",
      ]);
    });

    it('a monitoring period of 0 is refused (it would spin)', async function () {
      assert.deepEqual(await failure({ evictionMonitoringPeriod: '0s' }), ["evictionMonitoringPeriod is \"0s\"; allowed: a Go duration > 0 such as '10s'"]);
    });

    it('a valid config resolves the eviction settings', async function () {
      const file = path.join(dir, 'ok.json');
      await fs.writeFile(file, JSON.stringify({ evictionSoft: { 'memory.available': '1Gi' }, evictionSoftGracePeriod: { 'memory.available': '30s' }, evictionPressureTransitionPeriod: '30s', evictStaticPods: true }));
      const c = await loadConfig({ configFile: file });
      assert.deepEqual(c.eviction, {
        soft: { 'memory.available': '1Gi' }, softGracePeriodMs: { 'memory.available': 30_000 }, minimumReclaim: {},
        pressureTransitionPeriodMs: 30_000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 10_000, evictStaticPods: true,
      });
      assert.deepEqual(c.imageGC, { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 });
    });
  });
});
