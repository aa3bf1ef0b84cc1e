import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { podManifest, isRunning } from '../support/test-kubelet.ts';
import { KUBELET_BIN, startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { shebangNodeFlags } from '../support/shebang-flags.ts';
import { sourceStamp } from '../../bin/source-stamp.mjs';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const CASES = path.join(REPO, 'test', 'cases');
const run = promisify(execFile);

/**
 * The compiled build (`npm run build`, what a node runs): built into a directory of the test's
 * own, it runs without a TypeScript loader, finds its bundled plugins, default config and the
 * plugins' protos, loads a TypeScript config and TypeScript plugins by path on demand, and runs
 * a pod on real containerd.
 */
describe('compiled build', function () {
  this.timeout(120_000);
  let out: string;
  let cli: string;

  before(async function () {
    // tsc with declarations: ~25 s on an idle 2-core machine, 90 s and more while it is busy.
    this.timeout(300_000);
    out = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-build-'));
    await run(process.execPath, [path.join(REPO, 'scripts', 'build.mjs'), '--out-dir', out], { timeout: 280_000 });
    cli = path.join(out, 'core', 'cli.js');
  });

  after(async function () {
    if (out) await fs.rm(out, { recursive: true, force: true });
  });

  it('holds JavaScript and its declarations only, with the assets the plugins read and a package of its own', async function () {
    const pkg = JSON.parse(await fs.readFile(path.join(out, 'package.json'), 'utf8'));
    assert.equal(pkg.name, 'kubelet-ts');
    // `default` is the same ES module, for require() (require(esm), Node 22.12+).
    assert.deepEqual(pkg.exports['.'], { types: './core/sdk/index.d.ts', import: './core/sdk/index.js', default: './core/sdk/index.js' });
    assert.ok(pkg.kubeletTsBuild?.builtAt, 'build time recorded');
    assert.equal(pkg.kubeletTsBuild?.sourceStamp, sourceStamp(REPO), 'the stamp of the sources it was built from');
    for (const f of ['kubelet.config.js', 'plugins/cri-containerd/proto/api.proto', 'plugins/csi-grpc/proto/csi.proto', 'plugins/probes/proto/health.proto', 'plugins/cni-exec/shim/cni-exec-shim.pl']) {
      await fs.access(path.join(out, f));
    }
    const files = await fs.readdir(out, { recursive: true });
    assert.deepEqual(files.filter((f) => f.endsWith('.ts') && !f.endsWith('.d.ts') && !f.startsWith('node_modules')), []);
    // Each module with its declarations (the types an installed package gives TypeScript plugins).
    assert.deepEqual(files.filter((f) => f.endsWith('.js') && !f.startsWith('node_modules') && !files.includes(f.replace(/\.js$/, '.d.ts'))), []);
  });

  it('loads the default bundle from its compiled config and plugins', async function () {
    const env = await nodeEnvOrSkip(this);
    const { stdout } = await run(process.execPath, [cli, 'plugins', '--container-runtime-endpoint', env.containerdEndpoint], { timeout: 20_000 });
    for (const name of ['cri-containerd', 'probes', 'csi-grpc']) {
      assert.match(stdout, new RegExp(`^${name}  \\(\\w+, builtin: ${out.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}/plugins/${name}/index\\.js\\)`, 'm'));
    }
  });

  it('loads a TypeScript config and TypeScript plugins given by path', async function () {
    const root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-build-root-'));
    try {
      const { stdout } = await run(process.execPath, [cli, 'plugins', '--config', path.join(CASES, 'relative-plugin', 'kubelet.config.ts'), '--root-dir', root], { timeout: 20_000 });
      assert.match(stdout, /^case-stub-runtime {2}\(.*relative-plugin\/stub-runtime\.ts\)/m);
      assert.match(stdout, /^greeter {2}\(.*relative-plugin\/greeter\.ts\)/m);
      assert.match(stdout, /^dir-plugin {2}\(.*relative-plugin\/plugins\/dir-plugin\/index\.ts\)/m);
    } finally {
      await fs.rm(root, { recursive: true, force: true });
    }
  });

  describe('on containerd', function () {
    let env: NodeEnv;
    let kp: KubeletProcess | undefined;

    before(async function () {
      env = await nodeEnvOrSkip(this);
    });

    after(async function () {
      await kp?.stop();
    });

    it('runs a static pod to Running and removes it', async function () {
      // With the executable's node flags, as bin/kubelet-ts runs the build (--disable-sigusr1).
      kp = await startKubeletProcess(env, { command: [process.execPath, ...shebangNodeFlags(KUBELET_BIN), cli] });
      assert.equal(kp.code, 'compiled');
      const manifest = podManifest(
        'compiled-web',
        [{ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'] }],
        { terminationGracePeriodSeconds: 2 },
        { namespace: 'compiled-build-test' },
      );
      await kp.writeManifest('web.json', manifest as V1Pod);
      const deadline = Date.now() + 60_000;
      let pod;
      while (!isRunning((pod = (await kp.pods())?.find((p) => p.metadata?.name?.startsWith('compiled-web'))))) {
        assert.ok(Date.now() < deadline, `pod not Running within 60 s: ${JSON.stringify(pod?.status)}`);
        await sleep(200);
      }
      assert.equal(pod?.metadata?.namespace, 'compiled-build-test');
      assert.doesNotMatch(await fs.readFile(kp.logFile, 'utf8'), /opens its inspector on SIGUSR1/, 'the build runs with the executable\'s --disable-sigusr1');
      await kp.removeManifest('web.json');
      while (((await kp.pods()) ?? []).length > 0) {
        assert.ok(Date.now() < deadline + 30_000, 'pod not removed within 30 s');
        await sleep(200);
      }
    });
  });
});
