import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { checkVolumeContract, describeVolumeContract, startPluginsForTest } from 'kubelet-ts/testing';
import { mountTmpfs } from 'kubelet-ts';
import ramdisk, { DRIVER } from '../index.ts';
import { hookContext } from 'kubelet-ts';

// The volume-provider contract of kubelet-ts, run against this plugin applied as a kubelet
// applies it (needs root: it mounts tmpfs).
let rootDir: string;
before(async () => {
  rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'ramdisk-contract-'));
});
after(async () => {
  await fs.rm(rootDir, { recursive: true, force: true });
});

const subject = async () => ({
  type: 'flexVolume',
  volume: (name: string) => ({ name, flexVolume: { driver: DRIVER, options: { sizeMiB: '8' } } }),
  rootDir,
  start: () => startPluginsForTest([[ramdisk, { maxSizeMiB: 16 }]], { rootDir }),
});

describeVolumeContract('ramdisk (flexVolume kubelet-ts.example/ramdisk)', subject);

describe('ramdisk', function () {
  it('mounts a tmpfs of the size the pod asks for', async function () {
    const plugins = await startPluginsForTest([[ramdisk, {}]], { rootDir });
    const dir = path.join(rootDir, 'pods', 'p1', 'volumes', 'x~ramdisk', 'scratch');
    const req = { pod: { metadata: { uid: 'p1' } }, volume: { name: 'scratch', flexVolume: { driver: DRIVER, options: { sizeMiB: '3' } } }, type: 'flexVolume', dir, rootDir, previous: undefined, objects: { configMap: async () => undefined, secret: async () => undefined } };
    let mounted;
    try {
      mounted = await plugins.hooks.mountVolume.get('flexVolume')!.promise(req as never, hookContext());
      // /proc/mounts shows the tmpfs's own options (its size), which mountinfo keeps apart.
      const line = (await fs.readFile('/proc/mounts', 'utf8')).split('\n').find((l) => l.split(' ')[1] === mounted!.path);
      assert.match(line ?? '', /^tmpfs \S+ tmpfs \S*size=3072k/);
    } finally {
      if (mounted) await plugins.hooks.unmountVolume.get('flexVolume')!.promise({ podUID: 'p1', volumeName: 'scratch', type: 'flexVolume', dir, rootDir, mounted }, hookContext());
      await plugins.close();
    }
  });

  it('refuses a size over the cap, naming the volume and the field', async function () {
    const plugins = await startPluginsForTest([[ramdisk, { maxSizeMiB: 16 }]], { rootDir });
    const req = { pod: { metadata: { uid: 'p2' } }, volume: { name: 'big', flexVolume: { driver: DRIVER, options: { sizeMiB: '4096' } } }, type: 'flexVolume', dir: path.join(rootDir, 'p2'), rootDir, previous: undefined, objects: {} };
    try {
      await assert.rejects(plugins.hooks.mountVolume.get('flexVolume')!.promise(req as never, hookContext()), (err: Error & { code?: string }) => {
        assert.match(err.message, /volume "big": flexVolume.options.sizeMiB is "4096"; allowed: an integer from 1 to 16/);
        return true;
      });
    } finally {
      await plugins.close();
    }
  });

  it('a ramdisk that mounts twice over itself breaks the contract (the contract catches it)', async function () {
    // A version of this plugin without the isMountPoint check: what the contract exists to catch.
    const careless = { ...ramdisk, apply: (ctx: Parameters<typeof ramdisk.apply>[0], options: Parameters<typeof ramdisk.apply>[1]) => {
      ramdisk.apply(ctx, options);
      ctx.hooks.mountVolume.for('flexVolume').tapPromise({ name: 'careless', stage: -1 }, async (r) => {
        await fs.mkdir(r.dir, { recursive: true });
        await mountTmpfs(r.dir, { sizeBytes: 8 << 20 });
        return { path: r.dir, mountPoint: true, data: { driver: DRIVER } };
      });
    } };
    const failures = await checkVolumeContract({ ...(await subject()), start: () => startPluginsForTest([[careless, {}]], { rootDir }) });
    assert.ok(failures.some((f) => /^set-up again with `previous` is idempotent/.test(f.rule)), JSON.stringify(failures));
  });
});
