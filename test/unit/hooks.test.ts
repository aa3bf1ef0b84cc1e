import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import { createHooks, STAGE, type ContainerStartedEvent, type HookName, type PluginHooks, type VolumeMountRequest } from '../../core/hooks.ts';
import { PluginError } from '../../core/errors.ts';
import { loadConfig } from '../../core/config/load.ts';
import type { KubeletConfig } from '../../core/config/types.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { captureLogger as captureLines } from '../support/capture-logger.ts';
import { definePlugin, type KubeletPlugin } from '../../core/plugins/plugin-api.ts';
import { PluginHost } from '../../core/plugins/plugin-host.ts';
import { isolateTaps } from '../../core/plugins/tap-isolation.ts';
import type { PodSandboxConfig } from '../../core/runtime/types.ts';
import { recorderPlugin, stubRuntimePlugin, type RecordedCall } from '../support/recorder-plugin.ts';
import { hookContext } from '../../core/util/cancellation.ts';

const pod: V1Pod = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1' }, spec: { containers: [{ name: 'main', image: 'busybox' }] } };
const started: ContainerStartedEvent = { pod, container: { name: 'main' }, containerId: 'c1', sandboxId: 's1', podIP: '10.0.0.2' };

interface LogLine { level: number; msg: string; plugin?: string; hook?: string; err?: string }

const captureLogger = () => captureLines<LogLine>();

/** A plugin whose `apply` runs `fn` with the plugin's hook view. */
function tapping(name: string, fn: (hooks: PluginHooks) => void): KubeletPlugin {
  return definePlugin({ name, apply: (ctx) => fn(ctx.hooks) });
}

describe('hooks', function () {
  let dir: string;
  let config: KubeletConfig;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-hooks-'));
    const file = path.join(dir, 'kubelet.config.json');
    await fs.writeFile(file, JSON.stringify({ rootDir: './root', podLogsDir: './logs' }));
    config = await loadConfig({ configFile: file });
  });

  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** Boots a plugin host over fresh hooks (isolated first unless `isolate` is false). */
  async function boot(plugins: KubeletPlugin[], opts: { logger?: Logger; timeoutMs?: number; observe?: Parameters<typeof isolateTaps>[2]['observe']; isolate?: boolean } = {}) {
    const hooks = createHooks();
    const logger = opts.logger ?? silentLogger();
    if (opts.isolate !== false) isolateTaps(hooks, logger, { timeoutMs: opts.timeoutMs ?? 5000, ...(opts.observe ? { observe: opts.observe } : {}) });
    const host = new PluginHost({ hooks, config, logger });
    await host.loadAll([stubRuntimePlugin(), ...plugins]);
    return { hooks, host };
  }

  describe('the hooks object', function () {
    it('is frozen: a hook cannot be replaced or added', function () {
      const hooks = createHooks();
      assert.equal(Object.isFrozen(hooks), true);
      assert.throws(() => {
        (hooks as unknown as Record<string, unknown>).afterStart = null;
      }, TypeError);
      assert.throws(() => {
        (hooks as unknown as Record<string, unknown>).myHook = {};
      }, TypeError);
      assert.notEqual(hooks.afterStart, null);
    });

    it('has the four hooks of the design card and the lifecycle hooks, each tappable', function () {
      const hooks = createHooks();
      const required: HookName[] = [
        'beforeSandbox', 'afterStart', 'onProbe', 'onPressure',
        'afterSandbox', 'beforeContainerCreate', 'beforeKill', 'podStatus', 'podRemoved', 'admitPod', 'started', 'shutdown',
      ];
      for (const name of required) {
        assert.ok(name in hooks, `missing hook ${name}`);
        assert.equal(typeof (hooks[name] as { tap?: unknown }).tap, 'function', `${name} has no tap`);
      }
    });

    it('beforeSandbox is a waterfall: a tap changes the sandbox config the next tap and the host see', async function () {
      const { hooks } = await boot([
        tapping('set-label', (h) => h.beforeSandbox.tap('x', (cfg) => ({ ...cfg, labels: { ...cfg.labels, team: 'a' } }))),
        tapping('read-label', (h) => h.beforeSandbox.tap('x', (cfg) => ({ ...cfg, annotations: { seen: cfg.labels.team ?? 'none' } }))),
      ]);
      const initial = { metadata: { name: 'web', namespace: 'default', uid: 'uid-1', attempt: 0 }, labels: {}, annotations: {} } as unknown as PodSandboxConfig;
      const out = await hooks.beforeSandbox.promise(initial, pod, hookContext());
      assert.equal(out.labels.team, 'a');
      assert.deepEqual(out.annotations, { seen: 'a' });
    });

    it('onPressure is a bail hook: the first tap returning a decision wins, later taps do not run', async function () {
      const calls: RecordedCall[] = [];
      const { hooks } = await boot([
        recorderPlugin('observer-before', calls, ['onPressure'], STAGE.POLICY),
        tapping('policy', (h) => h.onPressure.tap('x', (e) => ({ evict: e.pods.map((p) => ({ pod: p, reason: 'Evicted', message: 'memory' })) }))),
        recorderPlugin('never', calls, ['onPressure'], STAGE.OBSERVE),
      ]);
      const decision = await hooks.onPressure.promise({ signal: 'memory.available', threshold: '100Mi', thresholdQuantity: '104857600', observed: '52428800', resource: 'memory', hard: true, pods: [pod], usage: {} }, hookContext());
      assert.equal(decision?.evict[0]?.pod, pod);
      assert.deepEqual(calls, [['onPressure', 'observer-before']]);
    });
  });

  describe("a plugin's view of the hooks", function () {
    it('can tap but not fire: no call, callAsync or promise on any hook, and the view is frozen', async function () {
      let view: PluginHooks | undefined;
      await boot([tapping('peek', (h) => (view = h))]);
      assert.ok(view);
      assert.equal(Object.isFrozen(view), true);
      for (const name of Object.keys(createHooks()) as HookName[]) {
        let hook = view[name] as unknown as Record<string, unknown>;
        assert.ok(hook, `view lacks ${name}`);
        if ('for' in hook) {
          // A HookMap: only `for(key)`, whose hook is tap-only in turn.
          assert.deepEqual(Object.keys(hook), ['for']);
          hook = (hook.for as (k: string) => Record<string, unknown>)('someType');
          assert.equal(Object.isFrozen(hook), true);
        }
        assert.equal(typeof hook.tap, 'function', `${name}.tap`);
        for (const fire of ['call', 'callAsync', 'promise', 'intercept', 'taps']) {
          assert.equal(fire in hook, false, `${name}.${fire} is visible to plugins`);
        }
      }
    });

    it('names every tap for the plugin, whatever name the plugin passes', async function () {
      const { hooks, host } = await boot([
        tapping('honest', (h) => h.afterStart.tapPromise('some-other-name', async () => {})),
        tapping('impostor', (h) => h.afterStart.tap({ name: 'honest', stage: STAGE.OBSERVE }, () => {})),
      ]);
      const taps = (hooks.afterStart as unknown as { taps: Array<{ name: string; stage?: number }> }).taps;
      assert.deepEqual(taps.map((t) => [t.name, t.stage ?? 0]), [['honest', 0], ['impostor', STAGE.OBSERVE]]);
      assert.deepEqual(host.loaded.find((p) => p.name === 'impostor')?.taps, [{ plugin: 'impostor', hook: 'afterStart', stage: STAGE.OBSERVE }]);
    });
  });

  describe('STAGE', function () {
    it('orders POLICY before DEFAULT before OBSERVE whatever the registration order', async function () {
      const calls: RecordedCall[] = [];
      const { hooks } = await boot([
        recorderPlugin('observer', calls, ['afterStart', 'podStatusChanged'], STAGE.OBSERVE),
        recorderPlugin('plain', calls, ['afterStart', 'podStatusChanged']),
        recorderPlugin('policy', calls, ['afterStart', 'podStatusChanged'], STAGE.POLICY),
        recorderPlugin('plain-2', calls, ['afterStart'], STAGE.DEFAULT),
      ]);
      await hooks.afterStart.promise(started, hookContext());
      hooks.podStatusChanged.call(pod, { phase: 'Running' });
      assert.deepEqual(calls, [
        ['afterStart', 'policy'],
        ['afterStart', 'plain'],
        ['afterStart', 'plain-2'],
        ['afterStart', 'observer'],
        ['podStatusChanged', 'policy'],
        ['podStatusChanged', 'plain'],
        ['podStatusChanged', 'observer'],
      ]);
      assert.ok(STAGE.POLICY < STAGE.DEFAULT && STAGE.DEFAULT < STAGE.OBSERVE);
    });
  });

  describe('a throwing tap', function () {
    it('(sync) surfaces as a PluginError naming the hook and the plugin, and is logged there', async function () {
      const { logger, lines } = captureLogger();
      const { hooks } = await boot([tapping('thrower', (h) => h.afterStart.tap('x', () => { throw new Error('postStart exploded'); }))], { logger });
      const err = await hooks.afterStart.promise(started, hookContext()).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof PluginError, `got ${String(err)}`);
      assert.equal(err.plugin, 'thrower');
      assert.equal(err.hook, 'afterStart');
      assert.equal(err.message, "plugin 'thrower' (hook afterStart): postStart exploded");
      const warn = lines.find((l) => l.msg === 'plugin tap failed');
      assert.deepEqual([warn?.plugin, warn?.hook, warn?.err], ['thrower', 'afterStart', 'postStart exploded']);
    });

    it('(promise) surfaces as a PluginError naming the hook and the plugin', async function () {
      const { hooks } = await boot([tapping('rejecter', (h) => h.onProbe.tapPromise('x', async () => { throw new Error('probe handler crashed'); }))]);
      await assert.rejects(
        hooks.onProbe.promise({ pod, containerName: 'main', containerId: 'c1', probe: 'readiness', result: 'failure', output: '' }, hookContext()),
        (err: unknown) => err instanceof PluginError && err.plugin === 'rejecter' && err.hook === 'onProbe' && /probe handler crashed/.test(err.message),
      );
    });

    it('(sync hook) throws a PluginError from call()', async function () {
      const { hooks } = await boot([tapping('sync-thrower', (h) => h.podStatusChanged.tap('x', () => { throw new TypeError('bad status'); }))]);
      assert.throws(() => hooks.podStatusChanged.call(pod, {}), { name: 'PluginError', message: "plugin 'sync-thrower' (hook podStatusChanged): bad status" });
    });

    it('is attributed even when the plugin tapped before isolation was installed', async function () {
      const { hooks } = await boot([tapping('early', (h) => h.beforeKill.tapPromise('x', async () => { throw new Error('preStop failed'); }))], { isolate: false });
      isolateTaps(hooks, silentLogger(), { timeoutMs: 5000 });
      await assert.rejects(
        hooks.beforeKill.promise({ pod, container: undefined, containerId: 'c1', podIP: '', gracePeriodSeconds: 30, reason: 'test' }, hookContext()),
        { name: 'PluginError', message: "plugin 'early' (hook beforeKill): preStop failed" },
      );
    });

    it('without isolation would not be attributed (so the test above can fail)', async function () {
      const { hooks } = await boot([tapping('early', (h) => h.beforeKill.tapPromise('x', async () => { throw new Error('preStop failed'); }))], { isolate: false });
      await assert.rejects(hooks.beforeKill.promise({ pod, container: undefined, containerId: 'c1', podIP: '', gracePeriodSeconds: 30, reason: 'test' }, hookContext()), { message: 'preStop failed' });
    });
  });

  describe('tap timeout', function () {
    it('fails a promise tap that outlives the deadline with a message naming plugin, hook and deadline', async function () {
      const { hooks } = await boot([tapping('stuck', (h) => h.afterStart.tapPromise('x', () => new Promise<void>(() => {})))], { timeoutMs: 50 });
      const t0 = Date.now();
      await assert.rejects(hooks.afterStart.promise(started, hookContext()), (err: unknown) => {
        assert.ok(err instanceof PluginError);
        assert.equal(err.message, "plugin 'stuck' (hook afterStart): did not finish within 50 ms");
        return true;
      });
      assert.ok(Date.now() - t0 < 2000, 'the timeout did not fire promptly');
    });

    it('fails a callback tap whose callback never comes, and ignores a callback after the deadline', async function () {
      let late: (() => void) | undefined;
      const { hooks } = await boot([tapping('lost', (h) => h.beforeKill.tapAsync('x', (_e, _ctx, cb) => { late = () => cb(); }))], { timeoutMs: 50 });
      const t0 = Date.now();
      await assert.rejects(hooks.beforeKill.promise({ pod, container: undefined, containerId: 'c', podIP: '', gracePeriodSeconds: 1, reason: 'test' }, hookContext()), (err: unknown) => {
        assert.ok(err instanceof PluginError);
        assert.equal(err.message, "plugin 'lost' (hook beforeKill): did not call back within 50 ms");
        return true;
      });
      assert.ok(Date.now() - t0 < 2000, 'the timeout did not fire promptly');
      late!();
    });

    it('lets a tap that finishes in time return its value', async function () {
      const { hooks } = await boot([tapping('quick', (h) => h.admitPod.tapPromise('x', async () => { await sleep(5); return 'node is full'; }))], { timeoutMs: 1000 });
      assert.equal(await hooks.admitPod.promise(pod, hookContext()), 'node is full');
    });
  });

  describe('tap observer', function () {
    it('receives (hook, plugin, duration, error) for each tap invocation', async function () {
      const seen: Array<[string, string, number, unknown]> = [];
      const { hooks } = await boot(
        [
          tapping('slow', (h) => h.afterStart.tapPromise('x', () => sleep(30))),
          tapping('failing', (h) => h.podRemoved.tap('x', () => { throw new Error('cleanup failed'); })),
        ],
        { observe: (hook, plugin, ms, err) => seen.push([hook, plugin, ms, err]) },
      );
      await hooks.afterStart.promise(started, hookContext());
      await hooks.podRemoved.promise(pod, hookContext()).catch(() => {});
      assert.equal(seen.length, 2);
      const [hook, plugin, ms, err] = seen[0]!;
      assert.deepEqual([hook, plugin, err], ['afterStart', 'slow', undefined]);
      assert.ok(ms >= 25 && ms < 2000, `duration ${ms}`);
      assert.deepEqual(seen[1]!.slice(0, 2), ['podRemoved', 'failing']);
      assert.match((seen[1]![3] as Error).message, /cleanup failed/);
    });
  });
  describe('per-type hooks (HookMap): mountVolume / unmountVolume', function () {
    const request = (type: string): VolumeMountRequest => ({ pod, volume: { name: 'v', [type]: {} } as V1Volume, type, dir: '/nonexistent', rootDir: '/nonexistent', previous: undefined, objects: { configMap: async () => undefined, secret: async () => undefined }, nodeName: 'n' });

    it('a plugin taps for(type); the host gets that type\'s hook; other types are untouched', async function () {
      const { hooks, host } = await boot([tapping('nfs-driver', (h) => h.mountVolume.for('nfs').tapPromise('any-name', async (r) => ({ path: `/mnt/${r.volume.name}` })))]);
      assert.deepEqual(await hooks.mountVolume.get('nfs')!.promise(request('nfs'), hookContext()), { path: '/mnt/v' });
      assert.equal(hooks.mountVolume.get('iscsi'), undefined);
      const taps = (hooks.mountVolume.get('nfs') as unknown as { taps: Array<{ name: string }> }).taps;
      assert.deepEqual(taps.map((t) => t.name), ['nfs-driver']);
      assert.deepEqual(host.loaded.find((p) => p.name === 'nfs-driver')?.taps, [{ plugin: 'nfs-driver', hook: 'mountVolume[nfs]', stage: 0 }]);
    });

    it('a throwing per-type tap is a PluginError naming the plugin and mountVolume[type]', async function () {
      const { hooks } = await boot([tapping('bad-driver', (h) => h.mountVolume.for('nfs').tapPromise('x', async () => { throw new Error('server unreachable'); }))]);
      await assert.rejects(hooks.mountVolume.get('nfs')!.promise(request('nfs'), hookContext()), { name: 'PluginError', message: "plugin 'bad-driver' (hook mountVolume[nfs]): server unreachable" });
    });

    it('isolation covers per-type hooks made before it was installed, and their timeout', async function () {
      const { hooks } = await boot([tapping('early', (h) => h.unmountVolume.for('nfs').tapPromise('x', () => new Promise<true>(() => {})))], { isolate: false });
      isolateTaps(hooks, silentLogger(), { timeoutMs: 50 });
      await assert.rejects(
        hooks.unmountVolume.get('nfs')!.promise({ podUID: 'u', volumeName: 'v', type: 'nfs', dir: '/x', rootDir: '/x', mounted: { path: '/x' } }, hookContext()),
        { name: 'PluginError', message: "plugin 'early' (hook unmountVolume[nfs]): did not finish within 50 ms" },
      );
    });

    it('a plugin cannot reach get, intercept or promise through its view', async function () {
      let view: PluginHooks | undefined;
      await boot([tapping('peek', (h) => (view = h))]);
      const map = view!.mountVolume as unknown as Record<string, unknown>;
      for (const k of ['get', 'intercept', 'promise', 'tap']) assert.equal(k in map, false, `mountVolume.${k} is visible`);
      const keyed = view!.mountVolume.for('csi') as unknown as Record<string, unknown>;
      for (const k of ['call', 'promise', 'intercept', 'taps']) assert.equal(k in keyed, false, `mountVolume.for('csi').${k} is visible`);
      assert.equal(typeof keyed.tapPromise, 'function');
    });
  });
});

