import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fsGroupMode, podFsGroup, rootNeedsChange, setVolumeOwnership } from '../../core/volumes/volume-ownership.ts';
import { writeAtomic, type Payload } from '../../core/volumes/atomic-writer.ts';
import { realPartMissing } from '../support/real-part.ts';

const GID = 4242;
const isRoot = typeof process.getuid === 'function' && process.getuid() === 0;

describe('fsGroup volume ownership (upstream SetVolumeOwnership)', () => {
  let dir: string;
  before(function () {
    // chown to another group needs root: CI runs as root, so there a non-root run is a failure.
    if (!isRoot) realPartMissing(this, 'not root', 'fsGroup ownership needs chown to another group');
  });
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-own-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  const mode = async (p: string) => (await fs.lstat(p)).mode & 0o7777;
  const gid = async (p: string) => (await fs.lstat(p)).gid;

  it('the mode masks: rw or r for the group, x and setgid on directories', () => {
    assert.equal(fsGroupMode(0o644, false, false), 0o664);
    assert.equal(fsGroupMode(0o400, false, true), 0o440);
    assert.equal(fsGroupMode(0o777, true, false), 0o2777);
    assert.equal(fsGroupMode(0o755, true, true), 0o2755);
    assert.deepEqual(podFsGroup({ spec: { containers: [], securityContext: { fsGroup: 7, fsGroupChangePolicy: 'OnRootMismatch' } } }), { fsGroup: 7, changePolicy: 'OnRootMismatch' });
    assert.deepEqual(podFsGroup({ spec: { containers: [], securityContext: { fsGroup: 7 } } }), { fsGroup: 7, changePolicy: 'Always' });
    assert.equal(podFsGroup({ spec: { containers: [] } }), undefined);
  });

  it('walks the volume: group and bits on everything, setgid on dirs; a symlink gets the group, its target outside is untouched', async () => {
    const vol = path.join(dir, 'vol');
    const outside = path.join(dir, 'outside');
    await fs.mkdir(path.join(vol, 'sub', 'deeper'), { recursive: true });
    await fs.writeFile(path.join(vol, 'sub', 'deeper', 'f'), 'x', { mode: 0o600 });
    await fs.writeFile(outside, 'host', { mode: 0o600 });
    await fs.symlink(outside, path.join(vol, 'link'));
    await fs.symlink(dir, path.join(vol, 'dirlink'));
    execFileSync('mkfifo', [path.join(vol, 'fifo')]);
    const changed = await setVolumeOwnership(vol, { fsGroup: GID, readOnly: false });
    assert.equal(changed, 7);
    for (const p of ['', 'sub', 'sub/deeper', 'sub/deeper/f', 'link', 'dirlink', 'fifo']) assert.equal(await gid(path.join(vol, p)), GID, p);
    assert.equal(await mode(vol) & 0o2070, 0o2070);
    assert.equal(await mode(path.join(vol, 'sub')) & 0o2070, 0o2070);
    assert.equal(await mode(path.join(vol, 'sub', 'deeper', 'f')), 0o660);
    assert.equal(await gid(outside), 0, 'the symlink target keeps its group');
    assert.equal(await mode(outside), 0o600, 'and its mode');
    assert.equal(await gid(dir), 0, 'a symlinked directory is not walked into');
  });

  it('OnRootMismatch skips the walk when the root already matches; read-only masks', async () => {
    const vol = path.join(dir, 'vol');
    await fs.mkdir(vol);
    await fs.writeFile(path.join(vol, 'f'), 'x', { mode: 0o600 });
    assert.equal(await rootNeedsChange(vol, GID, true), true);
    await setVolumeOwnership(vol, { fsGroup: GID, readOnly: true, changePolicy: 'OnRootMismatch' });
    assert.equal(await mode(path.join(vol, 'f')), 0o640);
    assert.equal(await rootNeedsChange(vol, GID, true), false);
    await fs.writeFile(path.join(vol, 'later'), 'x', { mode: 0o600 });
    await fs.chown(path.join(vol, 'later'), 0, 0);
    assert.equal(await setVolumeOwnership(vol, { fsGroup: GID, readOnly: true, changePolicy: 'OnRootMismatch' }), 0, 'root matches: not walked');
    assert.equal(await gid(path.join(vol, 'later')), 0);
    assert.equal(await setVolumeOwnership(vol, { fsGroup: GID, readOnly: true }), 3, 'Always: walked');
    assert.equal(await gid(path.join(vol, 'later')), GID);
  });

  it('the atomic writer gives what it writes to the fsGroup, read-only bits, and does not rewrite it next time', async () => {
    const vol = path.join(dir, 'cm');
    const payload: Payload = new Map([['a', { data: Buffer.from('1'), mode: 0o400 }], ['d/b', { data: Buffer.from('2'), mode: 0o644 }]]);
    assert.equal(await writeAtomic(vol, payload, { fsGroup: GID }), true);
    const version = await fs.readlink(path.join(vol, '..data'));
    assert.equal(await gid(vol), GID);
    assert.equal(await mode(vol), 0o2755);
    assert.equal(await gid(path.join(vol, version)), GID);
    assert.equal(await mode(path.join(vol, version)), 0o2755);
    assert.equal(await mode(path.join(vol, version, 'a')), 0o440);
    assert.equal(await gid(path.join(vol, version, 'a')), GID);
    assert.equal(await mode(path.join(vol, version, 'd')), 0o2755);
    assert.equal(await mode(path.join(vol, version, 'd', 'b')), 0o644);
    assert.equal(await gid(path.join(vol, '..data')), GID);
    assert.equal(await gid(path.join(vol, 'a')), GID, 'the visible link');
    assert.equal(await writeAtomic(vol, payload, { fsGroup: GID }), false, 'same content, same group: nothing written');
    const plain = path.join(dir, 'plain');
    await writeAtomic(plain, payload);
    assert.equal(await mode(path.join(plain, '..data', 'a')), 0o400, 'without fsGroup the modes are the payload\'s');
  });
});
