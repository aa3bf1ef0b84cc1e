import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import { existsSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createHooks } from '../../core/hooks.ts';
import { PluginError } from '../../core/errors.ts';
import { loadConfig, type ConfigFlags } from '../../core/config/load.ts';
import type { KubeletConfig, PluginEntry } from '../../core/config/types.ts';
import { silentLogger, type Logger } from '../../core/logger.ts';
import { captureLogger as captureLines } from '../support/capture-logger.ts';
import { definePlugin, type PluginContext } from '../../core/plugins/plugin-api.ts';
import { PluginHost, builtinPluginNames } from '../../core/plugins/plugin-host.ts';
import { stubRuntimePlugin, unusedRuntime as stubRuntime } from '../support/recorder-plugin.ts';
import { HOST_VERSION } from '../../core/plugins/plugin-host.ts';

const CASES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases');

/** Resolves to the PluginError a promise rejects with (fails the test if it resolves or rejects otherwise). */
async function pluginError(p: Promise<unknown>): Promise<PluginError> {
  const err = await p.then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof PluginError, `expected a PluginError, got ${err === undefined ? 'success' : String(err)}`);
  return err;
}

const captureLogger = () => captureLines();

describe('PluginHost', function () {
  let dir: string;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-host-'));
  });

  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A config loaded from a JSON file in the test's dir (rootDir under it), as an operator writes one. */
  async function tempConfig(fields: object = {}, flags: ConfigFlags = {}): Promise<KubeletConfig> {
    const file = path.join(dir, 'kubelet.config.json');
    await fs.writeFile(file, JSON.stringify({ rootDir: './root', podLogsDir: './logs', ...fields }));
    return loadConfig({ configFile: file, flags });
  }

  function hostFor(config: KubeletConfig, logger: Logger = silentLogger()): PluginHost {
    return new PluginHost({ hooks: createHooks(), config, logger });
  }

  async function load(entries: PluginEntry[], config?: KubeletConfig, logger?: Logger): Promise<PluginHost> {
    const host = hostFor(config ?? (await tempConfig()), logger);
    await host.loadAll(entries);
    return host;
  }

  describe('resolving plugins', function () {
    it("resolves the built-in 'cri-containerd' and reports an absent socket naming the plugin and the endpoint", async function () {
      assert.ok(builtinPluginNames().includes('cri-containerd'));
      const endpoint = `unix://${path.join(dir, 'nonexistent.sock')}`;
      // Applying connects to nothing; the start phase reports the socket.
      const host = await load([['cri-containerd', { endpoint }]]);
      const err = await pluginError(host.startAll());
      assert.equal(err.plugin, 'cri-containerd');
      assert.equal(err.message, `plugin 'cri-containerd': container runtime endpoint ${endpoint}: no socket at ${path.join(dir, 'nonexistent.sock')} (is containerd running? set --container-runtime-endpoint)`);
    });

    it("gives 'cri-containerd' the kubelet's containerRuntimeEndpoint when the plugin has no endpoint option", async function () {
      const endpoint = `unix://${path.join(dir, 'from-flag.sock')}`;
      const config = await tempConfig({}, { containerRuntimeEndpoint: endpoint });
      const err = await pluginError((await load(['cri-containerd'], config)).startAll());
      assert.match(err.message, new RegExp(`endpoint ${endpoint.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: no socket`));
    });

    it('resolves relative paths (file and directory) against the config file of a test case', async function () {
      const config = await loadConfig({ configFile: path.join(CASES, 'relative-plugin', 'kubelet.config.ts'), flags: { rootDir: path.join(dir, 'root') } });
      const host = await load(config.plugins, config);
      assert.deepEqual(
        host.loaded.map((p) => [p.name, p.origin, path.relative(CASES, p.location)]),
        [
          ['case-stub-runtime', 'path', 'relative-plugin/stub-runtime.ts'],
          ['greeter', 'path', 'relative-plugin/greeter.ts'],
          ['dir-plugin', 'path', 'relative-plugin/plugins/dir-plugin/index.ts'],
        ],
      );
      assert.equal(host.slotOwner('runtime'), 'case-stub-runtime');
    });

    it('reports a relative plugin path that does not exist with its absolute path', async function () {
      const err = await pluginError(load(['./missing-plugin.ts']));
      assert.equal(err.message, `plugin './missing-plugin.ts': plugin file not found: ${path.join(dir, 'missing-plugin.ts')}`);
    });

    for (const [label, pkg] of [
      ['main', { main: 'index.js' }],
      ['ESM-only exports (import condition)', { exports: { '.': { import: './index.js' } } }],
    ] as const) {
      it(`resolves an npm module from node_modules next to the config file (${label})`, async function () {
        const pkgDir = path.join(dir, 'node_modules', 'vendor-plugin');
        await fs.mkdir(pkgDir, { recursive: true });
        await fs.writeFile(path.join(pkgDir, 'package.json'), JSON.stringify({ name: 'vendor-plugin', version: '1.0.0', type: 'module', ...pkg }));
        await fs.writeFile(
          path.join(pkgDir, 'index.js'),
          `export default {
  name: 'vendor-plugin',
  kind: 'network',
  optionsSchema: { type: 'object', properties: { mtu: { type: 'integer', default: 1500 } } },
  apply(ctx) { ctx.hooks.afterSandbox.tap('vendor', () => {}); },
};\n`,
        );
        const config = await tempConfig({ plugins: [['vendor-plugin', {}]] });
        const host = await load([...config.plugins, stubRuntimePlugin()], config);
        const vendor = host.loaded[0]!;
        assert.deepEqual([vendor.name, vendor.kind, vendor.origin, vendor.location], ['vendor-plugin', 'network', 'module', path.join(pkgDir, 'index.js')]);
        assert.deepEqual(vendor.options, { mtu: 1500 });
        assert.deepEqual(vendor.taps.map((t) => t.hook), ['afterSandbox']);
      });
    }

    it('accepts an inline plugin object, alone or with options', async function () {
      const seen: unknown[] = [];
      const inline = definePlugin<{ level?: string }>({ name: 'inline', apply: (_ctx, o) => void seen.push(o) });
      const host = await load([stubRuntimePlugin(), [inline, { level: 'high' }]]);
      assert.deepEqual(host.loaded.map((p) => [p.name, p.origin, p.location]), [['stub-runtime', 'inline', 'config'], ['inline', 'inline', 'config']]);
      assert.deepEqual(seen, [{ level: 'high' }]);
    });

    it('rejects an unknown plugin name with a message listing the built-ins', async function () {
      const err = await pluginError(load(['no-such-plugin']));
      assert.equal(err.plugin, 'no-such-plugin');
      assert.match(err.message, /unknown plugin: not a built-in \([^)]*\bcri-containerd[,)]/);
      assert.ok(err.message.includes(`no npm module 'no-such-plugin' is installed where ${dir} can import it`), err.message);
    });

    it('rejects a module that does not export a plugin object', async function () {
      await fs.writeFile(path.join(dir, 'not-a-plugin.mjs'), 'export default { name: "half" };\n');
      const err = await pluginError(load(['./not-a-plugin.mjs']));
      assert.equal(err.message, "plugin 'half': the plugin object has no 'apply(ctx, options)' function");
    });
  });

  describe('options', function () {
    it('validates options with the plugin schema: names plugin, field, bad value and what is allowed', async function () {
      const err = await pluginError(load([['cri-containerd', { connectTimeoutSeconds: -1 }]]));
      assert.equal(err.plugin, 'cri-containerd');
      assert.equal(err.message, "plugin 'cri-containerd': invalid options:\nplugin 'cri-containerd' options: connectTimeoutSeconds is -1; allowed: a number of seconds > 0");
    });

    it('rejects an unknown option, listing the allowed ones', async function () {
      const err = await pluginError(load([['cri-containerd', { endpont: 'unix:///x.sock' }]]));
      assert.match(err.message, /unknown field 'endpont' \(allowed fields: endpoint, connectTimeoutSeconds, pullTimeoutSeconds\)/);
    });

    it('rejects a wrong type and a missing required option of a path plugin', async function () {
      const config = await tempConfig();
      const greeter = path.join(CASES, 'relative-plugin', 'greeter.ts');
      const wrongType = await pluginError(load([[greeter, { greeting: 'hi', times: 'twice' }]], config));
      assert.match(wrongType.message, /plugin 'greeter' options: times is "twice"; allowed: an integer >= 1/);
      const missing = await pluginError(load([[greeter, {}]], config));
      assert.match(missing.message, /plugin 'greeter' options: greeting is required/);
    });

    it("fills defaults from the schema before apply, without changing the caller's object", async function () {
      const seen: unknown[] = [];
      const withDefaults = definePlugin<{ greeting: string; times: number; extra: { on: boolean } }>({
        name: 'with-defaults',
        optionsSchema: {
          type: 'object',
          properties: {
            greeting: { type: 'string' },
            times: { type: 'integer', default: 3 },
            extra: { type: 'object', default: {}, properties: { on: { type: 'boolean', default: true } } },
          },
        },
        apply: (_ctx, o) => void seen.push(o),
      });
      const options = { greeting: 'hi' };
      const host = await load([stubRuntimePlugin(), [withDefaults, options], definePlugin({ ...withDefaults, name: 'no-options' })]);
      assert.deepEqual(seen, [{ greeting: 'hi', times: 3, extra: { on: true } }, { times: 3, extra: { on: true } }]);
      assert.deepEqual(host.loaded[1]!.options, { greeting: 'hi', times: 3, extra: { on: true } });
      assert.deepEqual(options, { greeting: 'hi' });
    });
  });

  describe('checks across plugins', function () {
    it('rejects a plugin listed twice', async function () {
      const p = definePlugin({ name: 'twice', apply() {} });
      const err = await pluginError(load([stubRuntimePlugin(), p, p]));
      assert.equal(err.message, "plugin 'twice': is listed twice in plugins (entries 1 and 2)");
    });

    it('applies a plugin after the providers of what it requires (a slot or a plugin name), whatever the config order', async function () {
      const order: string[] = [];
      const net = definePlugin({ name: 'net', kind: 'network', apply: (ctx) => (order.push('net'), ctx.provide('network' as never, {} as never)) });
      const policy = definePlugin({ name: 'network-policy', requires: ['network'], apply: () => void order.push('network-policy') });
      const audit = definePlugin({ name: 'audit', requires: ['network-policy'], apply: () => void order.push('audit') });
      const other = definePlugin({ name: 'other', apply: () => void order.push('other') });
      const host = await load([stubRuntimePlugin(), audit, policy, other, net]);
      assert.deepEqual(order, ['other', 'net', 'network-policy', 'audit'], 'deterministic: config order unless a requirement comes later');
      assert.deepEqual(host.loaded.map((p) => p.name), ['stub-runtime', 'other', 'net', 'network-policy', 'audit']);
    });

    it('names a requirement no plugin provides, and a cycle', async function () {
      const policy = definePlugin({ name: 'network-policy', requires: ['network'], apply() {} });
      const missing = await pluginError(load([stubRuntimePlugin(), policy]));
      assert.equal(missing.message, "plugin 'network-policy': requires 'network', which no configured plugin provides: add a plugin that provides 'network' to plugins");
      const a = definePlugin({ name: 'a', requires: ['b'], apply() {} });
      const b = definePlugin({ name: 'b', requires: ['c'], apply() {} });
      const c = definePlugin({ name: 'c', requires: ['a'], apply() {} });
      const cycle = await pluginError(load([stubRuntimePlugin(), a, b, c]));
      assert.equal(cycle.message, "plugin 'a': plugins require each other in a cycle: a → b → c → a");
    });

    it("checks kind against slots: only a runtime plugin fills 'runtime', and a plugin fills what it declares", async function () {
      const storage = definePlugin({ name: 'sneaky', kind: 'storage', apply: (ctx) => ctx.provide('runtime', {} as never) });
      assert.equal((await pluginError(load([stubRuntimePlugin(), storage]))).message, "plugin 'sneaky': cannot provide the 'runtime' slot: only a plugin of kind 'runtime' may (its kind is 'storage')");
      const declared = definePlugin({ name: 'declared', kind: 'storage', provides: ['runtime'], apply() {} });
      assert.equal((await pluginError(load([stubRuntimePlugin(), declared]))).message, "plugin 'declared': declares it provides the 'runtime' slot, which only a plugin of kind 'runtime' may fill (its kind is 'storage')");
      const lazy = definePlugin({ name: 'lazy-runtime', kind: 'runtime', provides: ['runtime'], apply() {} });
      assert.equal((await pluginError(load([lazy]))).message, "plugin 'lazy-runtime': declares it provides 'runtime' but did not fill it in apply (ctx.provide)");
    });

    it('checks the host version range a plugin declares', async function () {
      const ok = definePlugin({ name: 'fits', kubeletTs: '^0.x', apply() {} });
      await load([stubRuntimePlugin(), ok]);
      const future = definePlugin({ name: 'future', kubeletTs: '>=2.0.0', apply() {} });
      assert.equal((await pluginError(load([stubRuntimePlugin(), future]))).message, `plugin 'future': works with kubelet-ts >=2.0.0; this is kubelet-ts ${HOST_VERSION}`);
      const garbled = definePlugin({ name: 'garbled', kubeletTs: 'banana', apply() {} });
      assert.match((await pluginError(load([stubRuntimePlugin(), garbled]))).message, /^plugin 'garbled': kubeletTs: "banana" is not a version range/);
    });

    it('lets an optional plugin skip itself with a reason; apply registers, startAll does the side effects', async function () {
      const started: string[] = [];
      const optional = definePlugin({ name: 'gpu', apply: (ctx) => ctx.skip('no /dev/nvidia0 on this node') });
      const worker = definePlugin({ name: 'worker', apply: (ctx) => ctx.onStart(() => void started.push('worker')) });
      const host = await load([stubRuntimePlugin(), optional, worker]);
      assert.deepEqual(host.skipped, [{ name: 'gpu', reason: 'no /dev/nvidia0 on this node' }]);
      assert.deepEqual(host.loaded.map((p) => p.name), ['stub-runtime', 'worker']);
      assert.deepEqual(started, [], 'apply touched nothing');
      await host.startAll();
      assert.deepEqual(started, ['worker']);
      assert.ok((host.loaded[1]!.startMs ?? -1) >= 0);
      const failing = definePlugin({ name: 'broken-start', apply: (ctx) => ctx.onStart(() => { throw new Error('socket in use'); }) });
      const host2 = await load([stubRuntimePlugin(), failing]);
      assert.equal((await pluginError(host2.startAll())).message, "plugin 'broken-start': socket in use");
    });

    it('rejects two plugins providing the runtime, naming both', async function () {
      const err = await pluginError(load([stubRuntimePlugin('runtime-a'), stubRuntimePlugin('runtime-b')]));
      assert.equal(err.plugin, 'runtime-b');
      assert.equal(err.message, "plugin 'runtime-b': cannot provide the 'runtime' slot: plugin 'runtime-a' already provides it (keep one of them in plugins)");
    });

    it('refuses to start without a runtime provider, naming the slot and the config file', async function () {
      const config = await tempConfig();
      const err = await pluginError(load([definePlugin({ name: 'observer', apply() {} })], config));
      assert.equal(err.message, `plugin 'host': no plugin provides the 'runtime' slot: add a runtime plugin (for example 'cri-containerd') to plugins in ${config.configFile}`);
    });

    it('gives the runtime slot to the plugin that provided it', async function () {
      const host = await load([definePlugin({ name: 'observer', apply() {} }), stubRuntimePlugin('my-runtime')]);
      assert.equal(host.slotOwner('runtime'), 'my-runtime');
      await assert.rejects(host.slot('runtime').version(), /stub runtime: version not used/);
    });
  });

  describe('apply and close', function () {
    it('wraps an apply that throws (sync or async) in a PluginError with the plugin name', async function () {
      const syncErr = await pluginError(load([stubRuntimePlugin(), definePlugin({ name: 'broken', apply() { throw new Error('cannot read /etc/cni'); } })]));
      assert.deepEqual([syncErr.plugin, syncErr.message], ['broken', "plugin 'broken': cannot read /etc/cni"]);
      assert.equal((syncErr.cause as Error).message, 'cannot read /etc/cni');
      const asyncErr = await pluginError(load([stubRuntimePlugin(), definePlugin({ name: 'broken-async', async apply() { await Promise.resolve(); throw new Error('dial failed'); } })]));
      assert.equal(asyncErr.message, "plugin 'broken-async': dial failed");
    });

    it('closes plugins in reverse load order; a failing close does not stop the others and is logged', async function () {
      const closed: string[] = [];
      const closing = (name: string, fail = false) =>
        definePlugin({
          name,
          apply(ctx) {
            ctx.onClose(async () => {
              closed.push(name);
              if (fail) throw new Error(`${name} close exploded`);
            });
          },
        });
      const { logger, lines } = captureLogger();
      const host = await load([stubRuntimePlugin(), closing('first'), closing('second', true), closing('third')], undefined, logger);
      await host.close();
      assert.deepEqual(closed, ['third', 'second', 'first']);
      const warn = lines.find((l) => l.msg === 'plugin close failed');
      assert.deepEqual([warn?.plugin, warn?.err], ['second', 'second close exploded']);
      await host.close();
      assert.equal(closed.length, 3, 'close ran the cleanups twice');
    });

    it('gives each plugin its own state directory under the root dir, created before apply', async function () {
      const config = await tempConfig();
      const dirs: Record<string, boolean> = {};
      const probe = (name: string) => definePlugin({ name, apply: (ctx: PluginContext) => void (dirs[ctx.stateDir] = statSync(ctx.stateDir).isDirectory()) });
      await load([stubRuntimePlugin(), probe('alpha'), probe('@vendor/beta')], config);
      const root = path.join(dir, 'root', 'plugin-state');
      assert.deepEqual(dirs, { [path.join(root, 'alpha')]: true, [path.join(root, '_vendor_beta')]: true });
      assert.ok(existsSync(path.join(root, 'stub-runtime')));
    });

    it('gives each plugin a context with its name, the config and a logger bound to it', async function () {
      const config = await tempConfig();
      const { logger, lines } = captureLogger();
      let seen: PluginContext | undefined;
      await load([stubRuntimePlugin(), definePlugin({ name: 'ctx-reader', apply(ctx) { seen = ctx; ctx.logger.info('hello'); } })], config, logger);
      assert.equal(seen?.name, 'ctx-reader');
      assert.equal(seen?.config, config);
      assert.equal(Object.isFrozen(seen), true);
      assert.equal(lines.find((l) => l.msg === 'hello')?.plugin, 'ctx-reader');
      assert.deepEqual(lines.find((l) => l.msg === 'plugin loaded' && l.plugin === 'ctx-reader')?.origin, 'inline');
    });
  });

  /** Issue 24 item 8: what the host bounds, what it runs at close, and the codes its refusals carry. */
  describe("a plugin author's mistakes, named", function () {
    /** A plugin (JavaScript: no types to catch it) whose apply does `tap(ctx.hooks)`. */
    const tapping = (name: string, tap: (hooks: any) => void) => definePlugin({ name, apply: (ctx) => tap(ctx.hooks) });

    it('refuses a tap of a hook that does not exist, naming the plugin, the hook and the nearest one', async function () {
      const err = await pluginError(load([stubRuntimePlugin(), tapping('x', (h) => h.beforeSandbx.tap('x', () => {}))]));
      assert.equal(err.message, "plugin 'x': taps hook 'beforeSandbx', which does not exist (did you mean 'beforeSandbox'?)");
      assert.deepEqual([err.plugin, err.code, err.hostCode], ['x', 'InvalidInput', 'PLUGIN_UNKNOWN_HOOK']);
      const far = await pluginError(load([stubRuntimePlugin(), tapping('y', (h) => h.whenever.tap('y', () => {}))]));
      assert.match(far.message, /^plugin 'y': taps hook 'whenever', which does not exist \(the hooks are: started, shutdown, admitPod, beforeSandbox, .*podRemoved\)$/);
    });

    it('refuses a tap method the hook lacks, and a per-key hook tapped without for(key)', async function () {
      const sync = await pluginError(load([stubRuntimePlugin(), tapping('z', (h) => h.podStatusChanged.tapPromise('z', async () => {}))]));
      assert.equal(sync.message, "plugin 'z': uses 'tapPromise' of hook 'podStatusChanged', which has no such method (a sync hook: its taps use tap)");
      const keyed = await pluginError(load([stubRuntimePlugin(), tapping('v', (h) => h.mountVolume.tapPromise('v', async () => undefined))]));
      assert.equal(keyed.message, "plugin 'v': uses 'tapPromise' of hook 'mountVolume', a hook per key: tap mountVolume.for(key), the key a volume type (mountVolume.for('csi').tapPromise(...))");
      const inKey = await pluginError(load([stubRuntimePlugin(), tapping('w', (h) => h.mountVolume.for('csi').tapPromis('w', async () => undefined))]));
      assert.equal(inKey.message, "plugin 'w': uses 'tapPromis' of hook 'mountVolume[csi]', which has no such method (its taps use tap, tapAsync, tapPromise)");
    });

    it('still reads the hooks as an object: existing hooks, symbols, await and JSON see nothing unusual', async function () {
      let seen: unknown[] = [];
      const host = await load([stubRuntimePlugin(), definePlugin({
        name: 'reader',
        async apply(ctx) {
          const hooks = await Promise.resolve(ctx.hooks); // reads `then`
          seen = [typeof hooks.admitPod.tap, Object.keys(hooks).includes('podRemoved'), String(ctx.hooks), typeof JSON.stringify(ctx.hooks), (ctx.hooks as any)[Symbol.iterator]];
          hooks.admitPod.tap('reader', () => undefined);
        },
      })]);
      assert.deepEqual(seen, ['function', true, '[object Object]', 'string', undefined]);
      assert.deepEqual(host.loaded[1]!.taps.map((t) => t.hook), ['admitPod']);
    });

    it('refuses a kind that is none of the kinds, listing them with the nearest', async function () {
      const err = await pluginError(load([stubRuntimePlugin(), definePlugin({ name: 'my-runtime', kind: 'runtim' as never, apply() {} })]));
      assert.equal(err.message, "plugin 'my-runtime': kind is \"runtim\"; allowed: runtime, network, storage, device, policy, probe, observability, other (did you mean 'runtime'?)");
      assert.deepEqual([err.code, err.hostCode], ['InvalidInput', 'PLUGIN_BAD_KIND']);
      const odd = await pluginError(load([stubRuntimePlugin(), definePlugin({ name: 'odd', kind: 7 as never, apply() {} })]));
      assert.equal(odd.message, "plugin 'odd': kind is 7; allowed: runtime, network, storage, device, policy, probe, observability, other");
    });
  });

  describe('bounds, cleanups and codes', function () {
    it('fails an apply or a start that hangs past hookTimeout, naming the plugin and the phase', async function () {
      const config = await tempConfig({ hookTimeout: '200ms' });
      const hangsInApply = definePlugin({ name: 'hangs-in-apply', apply: () => new Promise<void>(() => {}) });
      const t0 = Date.now();
      const applyErr = await pluginError(load([stubRuntimePlugin(), hangsInApply], config));
      assert.equal(applyErr.message, "plugin 'hangs-in-apply': apply did not finish within 200 ms (hookTimeout)");
      assert.deepEqual([applyErr.code, applyErr.hostCode], ['DeadlineExceeded', 'PLUGIN_TIMEOUT']);
      const hangsInStart = definePlugin({ name: 'hangs-in-start', apply: (ctx) => ctx.onStart(() => new Promise<void>(() => {})) });
      const host = await load([stubRuntimePlugin(), hangsInStart], config);
      const startErr = await pluginError(host.startAll());
      assert.equal(startErr.message, "plugin 'hangs-in-start': start did not finish within 200 ms (hookTimeout)");
      assert.equal(startErr.hostCode, 'PLUGIN_TIMEOUT');
      assert.ok(Date.now() - t0 < 5000, 'both bounded by hookTimeout');
      const throwsInStart = definePlugin({ name: 'throws-in-start', apply: (ctx) => ctx.onStart(() => { throw new Error('socket in use'); }) });
      assert.equal((await pluginError((await load([stubRuntimePlugin(), throwsInStart], config)).startAll())).hostCode, 'PLUGIN_FAILED');
    });

    it('does not run the cleanup of a plugin that skipped itself; runs that of one whose apply failed', async function () {
      const closed: string[] = [];
      const skips = definePlugin({ name: 'gpu', apply(ctx) { ctx.onClose(() => void closed.push('gpu')); ctx.skip('no GPU on this node'); } });
      const host = await load([stubRuntimePlugin(), skips]);
      await host.close();
      assert.equal(closed.join(), '', 'a skipped plugin loaded nothing to clean up');
      const failing = definePlugin({ name: 'half-open', apply(ctx) { ctx.onClose(() => void closed.push('half-open')); throw new Error('second socket failed'); } });
      const host2 = hostFor(await tempConfig());
      await pluginError(host2.loadAll([stubRuntimePlugin(), failing]));
      await host2.close();
      assert.deepEqual(closed, ['half-open'], 'what a failed apply opened is closed at the stop that follows');
    });

    it("closes the runtime slot's provider itself, once, after every plugin's cleanup", async function () {
      const order: string[] = [];
      const runtime = definePlugin({
        name: 'closing-runtime',
        kind: 'runtime',
        apply(ctx) {
          const rt = { ...stubRuntime(), close: async () => void order.push('runtime.close') };
          ctx.provide('runtime', rt);
        },
      });
      const user = definePlugin({ name: 'runtime-user', apply: (ctx) => ctx.onClose(() => void order.push('runtime-user cleanup')) });
      const host = await load([runtime, user]);
      await host.close();
      await host.close();
      assert.deepEqual(order, ['runtime-user cleanup', 'runtime.close']);
    });

    it('cuts cleanups short at the deadline of the stop, naming the plugins left', async function () {
      const { logger, lines } = captureLogger();
      const closed: string[] = [];
      const hangs = definePlugin({ name: 'hangs-in-close', apply: (ctx) => ctx.onClose(() => new Promise<void>(() => {})) });
      const after = definePlugin({ name: 'closes-fine', apply: (ctx) => ctx.onClose(() => void closed.push('closes-fine')) });
      const host = await load([stubRuntimePlugin(), after, hangs], undefined, logger);
      const t0 = Date.now();
      await host.close({ deadline: Date.now() + 300 });
      assert.ok(Date.now() - t0 < 2000, `close ended at its deadline (${Date.now() - t0} ms)`);
      assert.deepEqual(closed, []);
      assert.deepEqual(lines.find((l) => l.msg === 'plugin close failed')?.plugin, 'hangs-in-close');
      assert.deepEqual(lines.find((l) => l.msg === 'stop time is up: plugin cleanups not run')?.plugins, ['closes-fine', 'stub-runtime']);
    });

    it('gives each refusal a host code: cycle, slot taken, bad options, version range, not found, listed twice', async function () {
      const codeOf = async (entries: PluginEntry[]) => {
        const err = await pluginError(load(entries));
        return [err.hostCode, err.code];
      };
      const a = definePlugin({ name: 'a', requires: ['b'], apply() {} });
      const b = definePlugin({ name: 'b', requires: ['a'], apply() {} });
      assert.deepEqual(await codeOf([stubRuntimePlugin(), a, b]), ['PLUGIN_CYCLE', 'InvalidInput']);
      assert.deepEqual(await codeOf([stubRuntimePlugin('rt-a'), stubRuntimePlugin('rt-b')]), ['PLUGIN_SLOT_TAKEN', 'AlreadyExists']);
      const schema = definePlugin({ name: 'strict', optionsSchema: { type: 'object', properties: { n: { type: 'number' } }, additionalProperties: false }, apply() {} });
      assert.deepEqual(await codeOf([stubRuntimePlugin(), [schema, { n: 'x' }] as unknown as PluginEntry]), ['PLUGIN_BAD_OPTIONS', 'InvalidInput']);
      assert.deepEqual(await codeOf([stubRuntimePlugin(), definePlugin({ name: 'future', kubeletTs: '>=9', apply() {} })]), ['PLUGIN_VERSION_MISMATCH', 'InvalidInput']);
      assert.deepEqual(await codeOf([stubRuntimePlugin(), 'no-such-plugin-anywhere']), ['PLUGIN_NOT_FOUND', 'NotFound']);
      const twice = definePlugin({ name: 'twice', apply() {} });
      assert.deepEqual(await codeOf([stubRuntimePlugin(), twice, twice]), ['PLUGIN_DUPLICATE', 'InvalidInput']);
      assert.deepEqual(await codeOf([definePlugin({ name: 'observer', apply() {} })]), ['PLUGIN_SLOT_MISSING', 'NotFound']);
      assert.deepEqual(await codeOf([stubRuntimePlugin(), definePlugin({ name: 'needs-net', requires: ['network'], apply() {} })]), ['PLUGIN_REQUIREMENT_MISSING', 'NotFound']);
    });
  });
});
