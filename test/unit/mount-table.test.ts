import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fsp from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { isLikelyMountPoint, isMountPoint, mountCount, mountFilesystem, mountTmpfs, mountsUnder, readMounts, removeOneFilesystem, unmount } from '../../core/volumes/mount-utils.ts';

import { realPartMissing } from '../support/real-part.ts';

const run = promisify(execFile);

/**
 * The mount table reads behind every volume's set-up and teardown: on a node with thousands of
 * mounts each read renders megabytes, so concurrent readers share a read that started after
 * they asked, a teardown reads the table once for all it unmounts, and a tmpfs volume's set-up
 * reads none.
 */
describe('mount table: shared reads, one read per teardown', function () {
  describe('readMounts', function () {
    const realReadFile = fsp.readFile;
    afterEach(() => {
      fsp.readFile = realReadFile;
    });

    /** Replaces mountinfo by a table naming the generation current when each read started; reads end when released. */
    function fakeMountinfo() {
      const state = { generation: 1, reads: 0, release: [] as Array<() => void> };
      fsp.readFile = (async (file: unknown, ...rest: unknown[]) => {
        if (file !== '/proc/self/mountinfo') return (realReadFile as (...a: unknown[]) => Promise<unknown>)(file, ...rest);
        state.reads++;
        const generation = state.generation;
        await new Promise<void>((resolve) => state.release.push(resolve));
        return `1 0 0:1 / /gen-${generation} rw - tmpfs tmpfs rw\n`;
      }) as typeof fsp.readFile;
      const releaseAll = async () => {
        for (let i = 0; i < 20 && state.release.length === 0; i++) await new Promise((r) => setImmediate(r));
        state.release.splice(0).forEach((r) => r());
      };
      return { state, releaseAll };
    }

    it('callers that ask during a read share one read that starts after it, and see what changed before they asked', async function () {
      const { state, releaseAll } = fakeMountinfo();
      const first = readMounts();
      // A mount is made after the first read started: everyone who asks from now on must see it.
      state.generation = 2;
      const later = Array.from({ length: 50 }, () => readMounts());
      await releaseAll();
      assert.equal((await first)[0]!.mountPoint, '/gen-1');
      await releaseAll();
      const seen = await Promise.all(later);
      assert.ok(seen.every((m) => m[0]!.mountPoint === '/gen-2'), `every later caller sees the mount made before it asked: ${[...new Set(seen.map((m) => m[0]!.mountPoint))].join(', ')}`);
      assert.equal(state.reads, 2, '51 callers, 2 reads of the table');
    });

    it('a failed read fails its callers only: the next call reads again', async function () {
      let fail = true;
      fsp.readFile = (async (file: unknown, ...rest: unknown[]) => {
        if (file === '/proc/self/mountinfo' && fail) {
          fail = false;
          throw Object.assign(new Error('EMFILE: too many open files'), { code: 'EMFILE' });
        }
        return (realReadFile as (...a: unknown[]) => Promise<unknown>)(file, ...rest);
      }) as typeof fsp.readFile;
      await assert.rejects(readMounts(), /EMFILE/);
      const mounts = await readMounts();
      assert.ok(mounts.some((m) => m.mountPoint === '/'), 'the root mount, from a read after the failure');
    });
  });

  describe('on real tmpfs mounts', function () {
    let dir: string;
    before(function () {
      if (process.getuid?.() !== 0 || process.platform !== 'linux') realPartMissing(this, 'real tmpfs mounts', 'mounting needs root on Linux');
    });
    beforeEach(async () => {
      dir = await fsp.mkdtemp(path.join(os.tmpdir(), 'kts-mount-table-'));
    });
    afterEach(async () => {
      for (const mp of await mountsUnder(dir)) await run('umount', ['-l', mp]).catch(() => {});
      await fsp.rm(dir, { recursive: true, force: true });
    });

    it('isLikelyMountPoint tells a tmpfs from a plain directory without reading the table', async function () {
      const plain = path.join(dir, 'plain');
      const mem = path.join(dir, 'mem');
      await fsp.mkdir(plain);
      await fsp.mkdir(mem);
      await mountTmpfs(mem);
      assert.equal(await isLikelyMountPoint(plain), false);
      assert.equal(await isLikelyMountPoint(mem), true);
      await assert.rejects(isLikelyMountPoint(path.join(dir, 'missing')), /ENOENT/);
    });

    it('unmount with the table read once removes stacked and nested mounts, deepest first, and nothing else', async function () {
      const vol = path.join(dir, 'vol');
      const other = path.join(dir, 'other');
      await fsp.mkdir(vol);
      await fsp.mkdir(other);
      await mountTmpfs(vol);
      await mountTmpfs(vol); // stacked: two mounts on one point
      await fsp.mkdir(path.join(vol, 'nested'));
      await mountTmpfs(path.join(vol, 'nested'));
      await mountTmpfs(other);
      const table = await readMounts();
      assert.equal(await mountCount(vol, table), 2);
      const under = await mountsUnder(vol, table);
      assert.deepEqual(under, [path.join(vol, 'nested'), vol], 'deepest first, each point once');
      for (const mp of under) await unmount(mp, table);
      const after = await readMounts();
      assert.equal(await isMountPoint(vol, after), false, 'both stacked mounts gone');
      assert.deepEqual(await mountsUnder(vol, after), []);
      assert.equal(await isMountPoint(other, after), true, 'a mount outside the volume stays');
    });

    it('a mount point the table names is never looked at itself (a dead NFS server\'s would hang the call); a symlinked parent, or a symlink to a mount point, still resolves', async function () {
      const real = path.join(dir, 'real');
      const vol = path.join(real, 'vol');
      await fsp.mkdir(vol, { recursive: true });
      await mountTmpfs(vol);
      await fsp.symlink(real, path.join(dir, 'via-link'));
      await fsp.symlink(vol, path.join(dir, 'link-to-vol'));
      const realpath = fsp.realpath;
      const looked: string[] = [];
      fsp.realpath = (async (p: string, ...rest: unknown[]) => {
        looked.push(path.resolve(p));
        return (realpath as (...a: unknown[]) => Promise<string>)(p, ...rest);
      }) as typeof fsp.realpath;
      try {
        const table = await readMounts();
        assert.equal(await isMountPoint(vol, table), true);
        assert.equal(await isMountPoint(path.join(dir, 'via-link', 'vol'), table), true, 'through a symlinked parent');
        assert.equal(await mountCount(vol, table), 1);
        assert.deepEqual(await mountsUnder(real, table), [vol]);
        assert.deepEqual(looked.filter((p) => p === vol || p === path.join(dir, 'via-link', 'vol')), [], `no realpath of the mount point itself: ${looked.join(', ')}`);
        assert.equal(await isMountPoint(path.join(dir, 'link-to-vol'), table), true, 'a symlink to a mount point, resolved when the table has no such name');
        assert.equal(await isMountPoint(real, table), false);
      } finally {
        fsp.realpath = realpath;
      }
    });

    it('unmount with forceAfterMs: a umount that does not return is killed and umount -f follows, without waiting for a helper that holds its pipes', async function () {
      const vol = path.join(dir, 'vol');
      await fsp.mkdir(vol);
      await mountTmpfs(vol);
      await mountTmpfs(vol); // stacked: each is taken off
      // A umount that waits for ever, as one on a dead NFS server does, with a helper it forked
      // (umount.nfs) holding stdout and stderr; `umount -f` is the real one.
      const realUmount = (await run('sh', ['-c', 'command -v umount'])).stdout.trim();
      const bin = path.join(dir, 'bin');
      await fsp.mkdir(bin);
      const calls = path.join(dir, 'calls');
      await fsp.writeFile(path.join(bin, 'umount'), `#!/bin/sh\necho "$*" >> ${calls}\ncase " $* " in *" -f "*) exec ${realUmount} "$@";; esac\nsleep 60 &\necho $! >> ${dir}/helper.pid\nexec sleep 60\n`, { mode: 0o755 });
      const savedPath = process.env.PATH;
      process.env.PATH = `${bin}:${savedPath}`;
      const t0 = performance.now();
      try {
        await unmount(vol, await readMounts(), { forceAfterMs: 300 });
      } finally {
        process.env.PATH = savedPath;
        for (const pid of (await fsp.readFile(`${dir}/helper.pid`, 'utf8').catch(() => '')).split('\n').filter(Boolean)) {
          try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
        }
      }
      const took = performance.now() - t0;
      assert.equal(await isMountPoint(vol), false, 'both stacked mounts are off');
      assert.deepEqual((await fsp.readFile(calls, 'utf8')).trim().split('\n'), [`-c ${vol}`, `-c -f ${vol}`, `-c ${vol}`, `-c -f ${vol}`], 'plain, then forced, for each mount, the path as the table names it');
      assert.ok(took < 10_000, `forced off in ${Math.round(took)} ms (two plain umounts of 300 ms and two forced ones)`);
    });

    it('mountFilesystem with timeoutMs: a mount that does not return is killed at the timeout, without waiting for a helper that holds its pipes; an abort gives up at once', async function () {
      // A mount that waits for ever, as one of a dead NFS server does, with a helper it forked
      // (mount.nfs) holding stdout and stderr.
      const bin = path.join(dir, 'bin');
      await fsp.mkdir(bin);
      await fsp.writeFile(path.join(bin, 'mount'), `#!/bin/sh\nsleep 60 &\necho $! >> ${dir}/helper.pid\nexec sleep 60\n`, { mode: 0o755 });
      const savedPath = process.env.PATH;
      process.env.PATH = `${bin}:${savedPath}`;
      const vol = path.join(dir, 'vol');
      const t0 = performance.now();
      try {
        await assert.rejects(mountFilesystem('server:/export', vol, 'nfs', ['hard'], { timeoutMs: 300 }), /^Error: mount -t nfs -o hard server:\/export .*: no answer within 300 ms, killed$/);
        const aborted = new AbortController();
        setTimeout(() => aborted.abort(new Error('pod deleted')), 200);
        await assert.rejects(mountFilesystem('server:/export', vol, 'nfs', [], { timeoutMs: 60_000, signal: aborted.signal }), /: given up \(Error: pod deleted\)$/);
      } finally {
        process.env.PATH = savedPath;
        for (const pid of (await fsp.readFile(`${dir}/helper.pid`, 'utf8').catch(() => '')).split('\n').filter(Boolean)) {
          try { process.kill(Number(pid), 'SIGKILL'); } catch { /* gone */ }
        }
      }
      const took = performance.now() - t0;
      assert.ok(took < 5_000, `both gave up in ${Math.round(took)} ms (300 ms and 200 ms; the helper sleeps 60 s)`);
    });

    it('removeOneFilesystem removes a tree, and stops at a file system mounted below without touching what is in it', async function () {
      const vol = path.join(dir, 'vol');
      await fsp.mkdir(path.join(vol, 'a', 'b'), { recursive: true });
      await fsp.writeFile(path.join(vol, 'a', 'b', 'f'), 'x');
      await fsp.mkdir(path.join(dir, 'outside'));
      await fsp.writeFile(path.join(dir, 'outside', 'keep'), 'host data');
      await fsp.symlink(path.join(dir, 'outside'), path.join(vol, 'a', 'link-out'));
      await removeOneFilesystem(vol);
      await assert.rejects(fsp.stat(vol), /ENOENT/, 'removed');
      assert.equal(await fsp.readFile(path.join(dir, 'outside', 'keep'), 'utf8'), 'host data', 'a link is removed, never followed');
      await removeOneFilesystem(vol); // gone already: nothing to do

      // A file system mounted below after the caller's table was read (what the check is for).
      await fsp.mkdir(path.join(vol, 'inner'), { recursive: true });
      await mountTmpfs(path.join(vol, 'inner'));
      await fsp.writeFile(path.join(vol, 'inner', 'keep'), 'not ours');
      await assert.rejects(removeOneFilesystem(vol), /inner is another file system/);
      assert.equal(await fsp.readFile(path.join(vol, 'inner', 'keep'), 'utf8'), 'not ours', 'nothing below the mount was removed');
    });
  });
});
