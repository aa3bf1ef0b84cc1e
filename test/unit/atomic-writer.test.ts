import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { validatePayloadPath, writeAtomic, type Payload } from '../../core/volumes/atomic-writer.ts';

const payload = (files: Record<string, string | [string, number]>): Payload =>
  new Map(Object.entries(files).map(([p, v]) => [p, typeof v === 'string' ? { data: Buffer.from(v), mode: 0o644 } : { data: Buffer.from(v[0]), mode: v[1] }]));

describe('atomic writer (configMap, secret, downwardAPI, projected)', function () {
  let dir: string;
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-atomic-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const versions = async () => (await fs.readdir(dir)).filter((n) => /^\.\.\d{4}_/.test(n));

  it('writes files into a timestamped version, `..data` → that version, and top-level symlinks through ..data', async function () {
    assert.equal(await writeAtomic(dir, payload({ 'a.conf': 'A', 'sub/b': ['B', 0o600] })), true);
    const version = await fs.readlink(path.join(dir, '..data'));
    assert.match(version, /^\.\.\d{4}_\d\d_\d\d_\d\d_\d\d_\d\d\.\w+$/);
    assert.deepEqual(await versions(), [version]);
    assert.equal(await fs.readlink(path.join(dir, 'a.conf')), '..data/a.conf');
    assert.equal(await fs.readlink(path.join(dir, 'sub')), '..data/sub');
    assert.equal(await fs.readFile(path.join(dir, 'sub', 'b'), 'utf8'), 'B');
    assert.equal((await fs.stat(path.join(dir, 'sub', 'b'))).mode & 0o777, 0o600);
    assert.equal((await fs.stat(path.join(dir, 'a.conf'))).mode & 0o777, 0o644);
  });

  it('writes nothing when the content and modes are unchanged', async function () {
    await writeAtomic(dir, payload({ a: 'A' }));
    const v = await fs.readlink(path.join(dir, '..data'));
    assert.equal(await writeAtomic(dir, payload({ a: 'A' })), false);
    assert.equal(await fs.readlink(path.join(dir, '..data')), v);
    assert.equal(await writeAtomic(dir, payload({ a: ['A', 0o400] })), true, 'a mode change is a change');
  });

  it('swaps to a new version on change, removes the old one and names no longer in the payload', async function () {
    await writeAtomic(dir, payload({ a: 'A', gone: 'G' }));
    const v1 = await fs.readlink(path.join(dir, '..data'));
    await writeAtomic(dir, payload({ a: 'A2', added: 'N' }));
    const v2 = await fs.readlink(path.join(dir, '..data'));
    assert.notEqual(v2, v1);
    assert.deepEqual(await versions(), [v2]);
    assert.deepEqual((await fs.readdir(dir)).filter((n) => !n.startsWith('..')).sort(), ['a', 'added']);
    assert.equal(await fs.readFile(path.join(dir, 'a'), 'utf8'), 'A2');
  });

  it('an open reader of the old version keeps reading it (the swap is a rename)', async function () {
    await writeAtomic(dir, payload({ a: 'old' }));
    const fh = await fs.open(path.join(dir, 'a'));
    await writeAtomic(dir, payload({ a: 'new' }));
    assert.equal((await fh.readFile()).toString(), 'old');
    await fh.close();
    assert.equal(await fs.readFile(path.join(dir, 'a'), 'utf8'), 'new');
  });

  it('removes versions left by a writer that died half-way', async function () {
    await fs.mkdir(path.join(dir, '..2020_01_01_00_00_00.abc'));
    await writeAtomic(dir, payload({ a: 'A' }));
    assert.equal((await versions()).length, 1);
  });

  it('refuses absolute paths, .. elements and the writer\'s own .. prefix', async function () {
    for (const bad of ['/etc/passwd', '../x', 'a/../../x', '..data', '..x', '']) {
      assert.throws(() => validatePayloadPath(bad), /invalid path/, bad);
      await assert.rejects(writeAtomic(dir, payload({ [bad]: 'x' })), /invalid path/);
    }
    assert.deepEqual(await fs.readdir(dir), [], 'nothing written');
    validatePayloadPath('a..b/c');
  });

  describe('a container playing games with the volume (CVE-2017-1002102)', function () {
    let outside: string;
    beforeEach(async () => {
      outside = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-atomic-host-'));
      await fs.writeFile(path.join(outside, 'canary'), 'host');
    });
    afterEach(() => fs.rm(outside, { recursive: true, force: true }));
    const canaryIntact = async () => assert.equal(await fs.readFile(path.join(outside, 'canary'), 'utf8'), 'host', 'the host directory was touched');

    it('a `..data` symlink climbing out of the volume is replaced, never followed or removed through', async function () {
      await writeAtomic(dir, payload({ a: 'A' }));
      await fs.unlink(path.join(dir, '..data'));
      await fs.symlink(outside, path.join(dir, '..data'));
      assert.equal(await writeAtomic(dir, payload({ a: 'A2' })), true);
      await canaryIntact();
      assert.match(await fs.readlink(path.join(dir, '..data')), /^\.\.\d{4}_/);
      assert.equal(await fs.readFile(path.join(dir, 'a'), 'utf8'), 'A2');
      // A relative climb, of the same shape as a version name's prefix.
      await fs.unlink(path.join(dir, '..data'));
      await fs.symlink(path.relative(dir, outside), path.join(dir, '..data'));
      await writeAtomic(dir, payload({ a: 'A3' }));
      await canaryIntact();
    });

    it('a version-named symlink out of the volume is unlinked, not followed', async function () {
      await writeAtomic(dir, payload({ a: 'A' }));
      await fs.symlink(outside, path.join(dir, '..2020_01_01_00_00_00.evil'));
      await writeAtomic(dir, payload({ a: 'A2' }));
      await canaryIntact();
      assert.equal((await fs.readdir(dir)).includes('..2020_01_01_00_00_00.evil'), false);
    });

    it('a `..data` directory put in place of the link is replaced', async function () {
      await writeAtomic(dir, payload({ a: 'A' }));
      await fs.unlink(path.join(dir, '..data'));
      await fs.mkdir(path.join(dir, '..data'));
      await fs.symlink(outside, path.join(dir, '..data', 'a'));
      await writeAtomic(dir, payload({ a: 'A' }));
      await canaryIntact();
      assert.equal(await fs.readFile(path.join(dir, 'a'), 'utf8'), 'A');
    });

    it('a FIFO or a symlink planted in the current version is not read: the content is written anew', async function () {
      this.timeout(5000);
      await writeAtomic(dir, payload({ a: 'A', b: 'B' }));
      const version = path.join(dir, await fs.readlink(path.join(dir, '..data')));
      await fs.unlink(path.join(version, 'a'));
      await fs.symlink(path.join(outside, 'canary'), path.join(version, 'a'));
      await fs.unlink(path.join(version, 'b'));
      const { spawnSync } = await import('node:child_process');
      assert.equal(spawnSync('mkfifo', [path.join(version, 'b')]).status, 0);
      assert.equal(await writeAtomic(dir, payload({ a: 'A', b: 'B' })), true);
      await canaryIntact();
      assert.equal(await fs.readFile(path.join(dir, 'b'), 'utf8'), 'B');
    });
  });
});
