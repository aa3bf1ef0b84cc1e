import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * The out-of-tree example plugin (examples/ramdisk-volume) used as a vendor's package is: in a
 * directory of its own outside the repository with kubelet-ts installed as a dependency
 * (node_modules/kubelet-ts), its contract tests run with mocha there, and a kubelet loads it by
 * its npm name from a config file outside the repository and runs a pod with its volume type
 * on real containerd.
 */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const EXAMPLE = path.join(REPO, 'examples', 'ramdisk-volume');
const requireHere = createRequire(import.meta.url);

describe('the example plugin package (examples/ramdisk-volume), as a vendor uses it', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let ws: string;
  let pkg: string;
  let t: TestKubelet | undefined;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    ws = await fs.mkdtemp('/tmp/kts-vendor-');
    // The vendor's repository: the example's files, kubelet-ts installed next to them.
    pkg = path.join(ws, 'kts-ramdisk-volume');
    await fs.cp(EXAMPLE, pkg, { recursive: true, filter: (src) => !src.includes(`${path.sep}node_modules`) });
    await fs.mkdir(path.join(pkg, 'node_modules'));
    await fs.symlink(REPO, path.join(pkg, 'node_modules', 'kubelet-ts'), 'dir');
  });

  after(async function () {
    if (t) await t.dispose();
    if (!ws) return;
    for (const mp of (await mountsUnder(ws)).reverse()) await unmount(mp).catch(() => {});
    const left = await mountsUnder(ws);
    await fs.rm(ws, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left');
  });

  it('passes its contract tests, run with mocha in its own directory', async function () {
    const mocha = requireHere.resolve('mocha/bin/mocha.js');
    const tsx = pathToFileURL(requireHere.resolve('tsx')).href;
    // node_modules/kubelet-ts is the repository: its sources, under their export condition.
    const child = spawn(process.execPath, ['--import', tsx, '--conditions=kubelet-ts-source', '--no-experimental-require-module', mocha, '--no-config', '--timeout', '60000', 'test/contract.test.ts'], { cwd: pkg, stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout!.on('data', (d) => (out += d));
    child.stderr!.on('data', (d) => (out += d));
    const [code] = await once(child, 'exit');
    assert.equal(code, 0, `mocha in the example package failed:\n${out}`);
    assert.match(out, /volume-provider contract: ramdisk/);
    assert.match(out, /after a kubelet restart, set-up with `previous` adopts the volume/);
    assert.match(out, /(\d+) passing/);
    assert.doesNotMatch(out, /failing/);
  });

  it('is loaded by its npm name from a config file outside the repository, and serves a pod its volume', async function () {
    const node = path.join(ws, 'node');
    await fs.mkdir(path.join(node, 'node_modules'), { recursive: true });
    await fs.symlink(pkg, path.join(node, 'node_modules', 'kts-ramdisk-volume'), 'dir');
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ['kts-ramdisk-volume', { maxSizeMiB: 32 }]],
      config: { configFile: path.join(node, 'kubelet.config.mjs'), nodeName: 'vendor-node' },
      dir: path.join(ws, 'kubelet'),
    });
    const loaded = t.kubelet.plugins.loaded.find((p) => p.name === 'ramdisk-volume');
    assert.equal(loaded?.origin, 'module', 'found as an npm module');
    assert.equal(await fs.realpath(path.dirname(loaded!.location)), await fs.realpath(pkg));
    await t.writeManifest('scratch.json', podManifest('scratch', [{ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'echo hi > /scratch/f && exec sleep 3600'], volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }] }], {
      volumes: [{ name: 'scratch', flexVolume: { driver: 'kubelet-ts.example/ramdisk', options: { sizeMiB: '5' } } }], hostNetwork: true, terminationGracePeriodSeconds: 0,
    }));
    const pod = await t.waitForPod('scratch', isRunning, 60_000, 'Running');
    const cid = pod!.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
    const r = await t.kubelet.runtime.execSync(cid, ['sh', '-c', 'cat /scratch/f; grep " /scratch " /proc/mounts'], 10);
    const text = Buffer.from(r.stdout).toString();
    assert.match(text, /^hi\n/);
    assert.match(text, /tmpfs \/scratch tmpfs \S*size=5120k/);
  });
});
