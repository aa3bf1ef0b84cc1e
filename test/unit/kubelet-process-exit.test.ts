/**
 * The kubelet process as an operator runs it (bin/kubelet-ts.mjs), on the fake CRI (issue 24
 * items 3 and 6): a bug ends it (crash-only), naming the plugin at fault, with exit code 70;
 * and its stop ends within its bound even when plugins hang in their shutdown taps and
 * cleanups. (On real containerd, test/integration/restart-adoption.test.ts shows the kubelet
 * started again after such a crash adopting its pods.)
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';

interface LogLine { level: number; msg: string; plugin?: string; plugins?: string[]; err?: { message?: string }; cutShort?: string[] }

const logLines = async (k: KubeletProcess): Promise<LogLine[]> =>
  (await fs.readFile(k.logFile, 'utf8')).split('\n').flatMap((l) => {
    try {
      return [JSON.parse(l) as LogLine];
    } catch {
      return [];
    }
  });

describe('the kubelet process: crash-only on a bug, and a bounded stop (fake CRI)', function () {
  this.timeout(60_000);
  let dir: string;
  let fake: FakeCriServer;
  let kubelet: KubeletProcess | undefined;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-proc-exit-'));
    fake = await FakeCriServer.start(path.join(dir, 'cri.sock'));
  });
  afterEach(async () => {
    await kubelet?.stop({ signal: 'SIGKILL' });
    kubelet = undefined;
    await fake.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  /** A plugin folder of its own (a path plugin), with `body` as its apply. */
  const pluginFolder = async (name: string, body: string): Promise<string> => {
    const folder = path.join(dir, 'plugins', name);
    await fs.mkdir(folder, { recursive: true });
    await fs.writeFile(path.join(folder, 'index.mjs'), `export default { name: ${JSON.stringify(name)}, apply(ctx) {\n${body}\n} };\n`);
    return folder;
  };
  const start = (plugins: string[], config: Record<string, unknown> = {}) =>
    startKubeletProcess({ containerdEndpoint: fake.endpoint } as NodeEnv, { config: { cgroupsPerQOS: false, ...config }, plugins });

  for (const [what, thrower, message] of [
    ['an exception thrown from a bare timer', "setTimeout(() => { throw new Error('bug in a timer'); }, 1500);", 'uncaught exception'],
    ['a rejection nobody handles', "setTimeout(() => { Promise.reject(new Error('bug in a promise')); }, 1500);", 'unhandled promise rejection'],
  ] as const) {
    it(`exits with code 70 on ${what}, naming the plugin`, async function () {
      const buggy = await pluginFolder('buggy', `ctx.onStart(() => { ${thrower} });`);
      kubelet = await start([buggy]);
      const code = await Promise.race([kubelet.exited, new Promise((r) => setTimeout(() => r('still running'), 20_000))]);
      assert.equal(code, 70);
      const fatal = (await logLines(kubelet)).find((l) => l.level === 60);
      assert.ok(fatal, 'a fatal line');
      assert.equal(fatal.plugin, 'buggy');
      assert.match(fatal.msg, new RegExp(`^${message} in plugin 'buggy' \\(a bug: please report it to the plugin's authors\\); exiting: pods keep running`));
      assert.match(fatal.err?.message ?? '', /^bug in a (timer|promise)$/);
    });
  }

  it('ends its stop within the bound when plugins hang in shutdown and in their cleanups, naming what it cut short', async function () {
    const hanging = await Promise.all([1, 2, 3, 4].map((i) => pluginFolder(`hangs-${i}`, `
      ctx.hooks.shutdown.tapPromise('x', () => new Promise(() => {}));
      ctx.onClose(() => new Promise(() => {}));`)));
    // hookTimeout far beyond the stop's bound: only the stop's own bound can end these.
    kubelet = await start(hanging, { hookTimeout: '10m' });
    const t0 = Date.now();
    process.kill(kubelet.pid, 'SIGTERM');
    const code = await Promise.race([kubelet.exited, new Promise((r) => setTimeout(() => r('still running'), 40_000))]);
    const tookMs = Date.now() - t0;
    assert.equal(code, 0);
    // 20 s bound, plus the process's own exit; without it: 10 s shutdown hook + 4 × 5 s cleanups.
    assert.ok(tookMs < 23_000, `the stop took ${tookMs} ms`);
    const lines = await logLines(kubelet);
    assert.ok(lines.some((l) => l.msg === 'stop: part did not finish in its time; going on without it'), 'the shutdown hook was cut short');
    const timedOut = lines.filter((l) => l.msg === 'plugin close failed').map((l) => l.plugin);
    assert.deepEqual(timedOut.slice(0, 3), ['hangs-4', 'hangs-3', 'hangs-2'], 'cleanups run in reverse order, each bounded');
    const notRun = lines.find((l) => l.msg === 'stop time is up: plugin cleanups not run');
    assert.ok(notRun?.plugins?.length, `what was not run at all is named: ${JSON.stringify(notRun)}`);
    const summary = lines.find((l) => l.msg.startsWith('the stop was cut short'));
    assert.ok(summary?.cutShort?.includes('shutdown hook'), JSON.stringify(summary));
  });
});
