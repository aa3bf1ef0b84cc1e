import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { hasDedicatedImageFs } from '../../core/eviction/image-fs.ts';
import type { ContainerRuntime, FilesystemUsage } from '../../core/runtime/types.ts';

/** A runtime that answers ImageFsInfo only (all hasDedicatedImageFs asks). */
const runtimeWith = (imageFsInfo?: () => Promise<FilesystemUsage[]>) => ({ ...(imageFsInfo ? { imageFsInfo } : {}) }) as unknown as ContainerRuntime;

describe('hasDedicatedImageFs: whether images live on a disk of their own', () => {
  let dir: string;
  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-imagefs-'));
    await fs.mkdir(path.join(dir, 'images'));
  });
  after(() => fs.rm(dir, { recursive: true, force: true }));

  it('is false when the image filesystem is on the root dir\'s device', async () => {
    const rt = runtimeWith(async () => [{ timestamp: 0, mountpoint: path.join(dir, 'images') }]);
    assert.equal(await hasDedicatedImageFs(rt, dir), false);
  });

  it('is true when it is another filesystem (/proc beside a temp dir)', async () => {
    const rt = runtimeWith(async () => [{ timestamp: 0, mountpoint: '/proc' }]);
    assert.equal(await hasDedicatedImageFs(rt, dir), true);
  });

  it('counts what it cannot know as dedicated: no ImageFsInfo, a failing one, a missing mountpoint', async () => {
    assert.equal(await hasDedicatedImageFs(runtimeWith(), dir), true);
    assert.equal(await hasDedicatedImageFs(runtimeWith(async () => { throw new Error('Unavailable'); }), dir), true);
    assert.equal(await hasDedicatedImageFs(runtimeWith(async () => [{ timestamp: 0, mountpoint: path.join(dir, 'nope') }]), dir), true);
    assert.equal(await hasDedicatedImageFs(runtimeWith(async () => []), dir), true);
  });
});
