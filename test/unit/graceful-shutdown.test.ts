import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { loadConfig } from '../../core/config/load.ts';
import { ConfigError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import { readyCondition } from '../../core/node/node-object.ts';
import {
  GracefulNodeShutdown,
  groupByPriority,
  shutdownGraceOf,
  NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE,
  NODE_SHUTDOWN_NOT_ADMITTED_REASON,
} from '../../core/node/graceful-shutdown.ts';
import type { InhibitorLock, Logind } from '../../core/systemd/logind.ts';

const pod = (name: string, priority?: number, terminationGracePeriodSeconds?: number): V1Pod => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}` },
  spec: { containers: [], ...(priority !== undefined ? { priority } : {}), ...(terminationGracePeriodSeconds !== undefined ? { terminationGracePeriodSeconds } : {}) },
});

/** logind as the manager sees it: a delay that a reload raises to what the drop-in says, locks it counts, signals the test sends. */
class FakeLogind implements Logind {
  delayMs = 1000;
  reloads = 0;
  held = 0;
  taken = 0;
  dropIn: string | undefined;
  private listener: ((active: boolean) => void) | undefined;
  async inhibitDelayMaxMs() {
    return this.delayMs;
  }
  async reloadConfig() {
    this.reloads++;
    const text = this.dropIn ? await fs.readFile(this.dropIn, 'utf8').catch(() => '') : '';
    const m = /InhibitDelayMaxSec=(\d+)/.exec(text);
    if (m) this.delayMs = Number(m[1]) * 1000;
  }
  async delayShutdown(): Promise<InhibitorLock> {
    this.held++;
    this.taken++;
    let released = false;
    return {
      pid: 4242,
      release: async () => {
        if (!released) this.held--;
        released = true;
      },
    };
  }
  onPrepareForShutdown(l: (active: boolean) => void) {
    this.listener = l;
  }
  emit(active: boolean) {
    this.listener?.(active);
  }
  async close() {}
}

describe('graceful node shutdown', function () {
  describe('groups and grace', function () {
    it('puts each pod in the group of the highest priority not above its own; lower than all: the lowest group', () => {
      const groups = groupByPriority(
        [{ priority: 2_000_000_000, gracePeriodSeconds: 10 }, { priority: 0, gracePeriodSeconds: 20 }, { priority: 1000, gracePeriodSeconds: 5 }],
        [pod('none'), pod('neg', -5), pod('mid', 1000), pod('mid2', 1999), pod('crit', 2_000_001_000)],
      );
      assert.deepEqual(groups.map((g) => [g.priority, g.pods.map((p) => p.metadata!.name)]), [
        [0, ['none', 'neg']],
        [1000, ['mid', 'mid2']],
        [2_000_000_000, ['crit']],
      ]);
    });

    it("gives a pod its group's period, or its own terminationGracePeriodSeconds when shorter", () => {
      assert.equal(shutdownGraceOf(pod('a', 0, 3), 20), 3);
      assert.equal(shutdownGraceOf(pod('b', 0, 60), 20), 20);
      assert.equal(shutdownGraceOf(pod('c'), 20), 20);
      assert.equal(shutdownGraceOf(pod('d', 0, 0), 20), 0);
    });

    it('a node shutting down is not Ready, with upstream\'s message', () => {
      const c = readyCondition({ runtime: { conditions: [{ type: 'RuntimeReady', status: true, reason: '', message: '' }, { type: 'NetworkReady', status: true, reason: '', message: '' }] }, plegHealthy: true, plegLastRelistMs: Date.now(), capacity: ['cpu', 'memory', 'pods', 'ephemeral-storage'], shuttingDown: true, now: Date.now() });
      assert.deepEqual([c.status, c.reason, c.message], ['False', 'KubeletNotReady', 'node is shutting down']);
    });
  });

  describe('the configuration', function () {
    let dir: string;
    beforeEach(async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-shutdown-config-'));
    });
    afterEach(async () => {
      await fs.rm(dir, { recursive: true, force: true });
    });
    const upstream = async (fields: object) => {
      const file = path.join(dir, 'config.yaml');
      await fs.writeFile(file, JSON.stringify({ apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields }));
      return file;
    };
    const failure = async (file: string) => {
      const err = await loadConfig({ configFile: file }).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
      return err.message;
    };

    it('shutdownGracePeriod and shutdownGracePeriodCriticalPods make upstream\'s two groups; 0s (kubeadm\'s value) is off', async () => {
      assert.deepEqual((await loadConfig({ configFile: await upstream({ shutdownGracePeriod: '30s', shutdownGracePeriodCriticalPods: '10s' }) })).shutdownGroups, [
        { priority: 0, gracePeriodSeconds: 20 },
        { priority: 2_000_000_000, gracePeriodSeconds: 10 },
      ]);
      assert.deepEqual((await loadConfig({ configFile: await upstream({ shutdownGracePeriod: '0s', shutdownGracePeriodCriticalPods: '0s' }) })).shutdownGroups, []);
    });

    it('shutdownGracePeriodByPodPriority is taken as given, lowest priority first', async () => {
      const c = await loadConfig({ configFile: await upstream({ shutdownGracePeriodByPodPriority: [{ priority: 100000, shutdownGracePeriodSeconds: 15 }, { priority: 0, shutdownGracePeriodSeconds: 30 }] }) });
      assert.deepEqual(c.shutdownGroups, [{ priority: 0, gracePeriodSeconds: 30 }, { priority: 100000, gracePeriodSeconds: 15 }]);
    });

    it('refuses what upstream refuses, naming the file and the fields', async () => {
      let file = await upstream({ shutdownGracePeriod: '10s', shutdownGracePeriodCriticalPods: '20s' });
      assert.match(await failure(file), new RegExp(`^${file}: shutdownGracePeriodCriticalPods is "20s" and shutdownGracePeriod "10s"`));
      file = await upstream({ shutdownGracePeriod: '10s', shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: 5 }] });
      assert.match(await failure(file), /shutdownGracePeriodByPodPriority is set with shutdownGracePeriod/);
      file = await upstream({ shutdownGracePeriodByPodPriority: [{ priority: 0, shutdownGracePeriodSeconds: -1 }] });
      assert.match(await failure(file), /shutdownGracePeriodByPodPriority\.0\.shutdownGracePeriodSeconds|shutdownGracePeriodByPodPriority\[0\]\.shutdownGracePeriodSeconds/);
    });
  });

  describe('the manager', function () {
    let dir: string;
    beforeEach(async () => {
      dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-shutdown-'));
    });
    afterEach(async () => {
      await fs.rm(dir, { recursive: true, force: true });
    });

    function manager(logind: FakeLogind, pods: V1Pod[], opts: { stopAfterMs?: (name: string) => number } = {}) {
      const log: string[] = [];
      const stoppedAt = new Map<string, number>();
      const states: boolean[] = [];
      let posted = true;
      const m: GracefulNodeShutdown = new GracefulNodeShutdown({
        periods: [{ priority: 0, gracePeriodSeconds: 2 }, { priority: 2_000_000_000, gracePeriodSeconds: 1 }],
        logind: async () => logind,
        logindDropIn: (logind.dropIn = path.join(dir, 'logind.conf.d', '99-kubelet.conf')),
        activePods: () => pods.filter((p) => !stoppedAt.has(p.metadata!.uid!)),
        terminate: (p, grace) => {
          log.push(`terminate ${p.metadata!.name} ${grace}`);
          posted = false;
          setTimeout(() => {
            stoppedAt.set(p.metadata!.uid!, Date.now());
            log.push(`stopped ${p.metadata!.name}`);
            setTimeout(() => (posted = true), 20);
          }, opts.stopAfterMs?.(p.metadata!.name!) ?? 50);
          return true;
        },
        podStopped: (uid) => stoppedAt.has(uid),
        statusesPosted: () => posted,
        onStateChange: () => states.push(m.isShuttingDown()),
        nodeEvent: (_t, reason) => log.push(`event ${reason}`),
        logger: silentLogger(),
        pollMs: 10,
      });
      return { m, log, states };
    }

    it("raises logind's InhibitDelayMaxSec with a drop-in when it is shorter than the groups' sum, then holds the lock", async () => {
      const logind = new FakeLogind();
      const { m } = manager(logind, []);
      await m.start();
      assert.equal(await fs.readFile(logind.dropIn!, 'utf8').then((t) => /^InhibitDelayMaxSec=3$/m.test(t)), true);
      assert.equal(logind.reloads, 1);
      assert.equal(logind.delayMs, 3000);
      assert.equal(logind.held, 1);
      await m.stop();
      assert.equal(logind.held, 0, 'a stopped kubelet holds no lock');
    });

    it('leaves logind alone when its delay is long enough', async () => {
      const logind = new FakeLogind();
      logind.delayMs = 60_000;
      const { m } = manager(logind, []);
      await m.start();
      assert.equal(logind.reloads, 0);
      await assert.rejects(fs.access(logind.dropIn!));
      await m.stop();
    });

    it('fails its start, naming the file, when logind keeps a shorter delay after the reload', async () => {
      const logind = new FakeLogind();
      logind.reloadConfig = async () => {
        logind.reloads++;
      };
      const { m } = manager(logind, []);
      await assert.rejects(m.start(), /InhibitDelayMaxSec is 1s after writing .*99-kubelet\.conf, less than the 3s/);
      assert.equal(logind.held, 0);
    });

    it('on PrepareForShutdown: not Ready, new pods refused, the lowest priority group first with its grace, then the critical pods, then the lock released', async () => {
      const logind = new FakeLogind();
      logind.delayMs = 60_000;
      const pods = [pod('web', 0, 30), pod('batch', 100, 1), pod('dns', 2_000_000_000), pod('proxy', 2_000_001_000, 30)];
      const { m, log, states } = manager(logind, pods, { stopAfterMs: (n) => (n === 'web' ? 300 : 50) });
      await m.start();
      assert.equal(m.admission(), undefined);
      logind.emit(true);
      assert.deepEqual(m.admission(), { reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON, message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE });
      assert.deepEqual(states, [true]);
      logind.emit(true); // logind says it again: one handling
      await m.settled();
      assert.equal(logind.held, 0, 'the lock is released once the pods are done');
      const critStart = log.indexOf('terminate dns 1');
      assert.deepEqual(log.slice(0, 3), ['event Shutdown', 'terminate web 2', 'terminate batch 1']);
      assert.ok(critStart > log.indexOf('stopped web'), `critical pods after the first group stopped: ${log.join(', ')}`);
      assert.ok(log.includes('terminate proxy 1'));
    });

    it('a group whose pods outlive its period: the next group goes on at the end of the period', async () => {
      const logind = new FakeLogind();
      logind.delayMs = 60_000;
      const { m, log } = manager(logind, [pod('slow', 0), pod('crit', 2_000_000_000)], { stopAfterMs: (n) => (n === 'slow' ? 5000 : 10) });
      await m.start();
      const t0 = Date.now();
      logind.emit(true);
      await m.settled();
      const took = Date.now() - t0;
      assert.ok(took >= 1900 && took < 4500, `the first group's 2 s, then the critical pods: ${took} ms`);
      assert.ok(log.indexOf('terminate crit 1') < log.indexOf('stopped slow') || !log.includes('stopped slow'));
      await m.stop();
    });

    it('a cancelled shutdown: Ready again, pods admitted, the lock taken anew', async () => {
      const logind = new FakeLogind();
      logind.delayMs = 60_000;
      const { m, states } = manager(logind, [pod('a', 0)]);
      await m.start();
      logind.emit(true);
      await m.settled();
      logind.emit(false);
      assert.equal(m.admission(), undefined);
      assert.deepEqual(states, [true, false]);
      for (let i = 0; i < 50 && logind.held === 0; i++) await new Promise((r) => setTimeout(r, 10));
      assert.equal(logind.held, 1);
      assert.equal(logind.taken, 2);
      await m.stop();
    });
  });
});
