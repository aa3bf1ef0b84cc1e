import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerMounts, expandSubPathExpr } from '../../core/pod/container-mounts.ts';
import type { SubPathBinder } from '../../core/volumes/subpath.ts';
import { bindSubPath, openSubPath, validateSubPath } from '../../core/volumes/subpath.ts';
import { isMountPoint, unmount } from '../../core/volumes/mount-utils.ts';
import { ContainerConfigError } from '../../core/pod/container-config.ts';

/** The real path an O_PATH descriptor names (what a bind of it would mount). */
async function pathOf(root: string, sub: string): Promise<string> {
  const opened = await openSubPath(root, sub);
  try {
    return await fs.readlink(`/proc/self/fd/${opened.handle.fd}`);
  } finally {
    await opened.handle.close();
  }
}

describe('subPath: walked by descriptors, bound by the kubelet (CVE-2017-1002101)', function () {
  let dir: string;
  let vol: string;
  let outside: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-subpath-'));
    vol = path.join(dir, 'vol');
    outside = path.join(dir, 'outside');
    await fs.mkdir(vol);
    await fs.mkdir(outside);
    await fs.writeFile(path.join(outside, 'secret'), 'host');
  });
  afterEach(async () => {
    for (const name of ['t', 'u']) if (await isMountPoint(path.join(dir, name))) await unmount(path.join(dir, name));
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('validates: relative, no .. element', function () {
    assert.throws(() => validateSubPath('/abs'), /must be a relative path/);
    assert.throws(() => validateSubPath('../x'), /must not contain '\.\.'/);
    assert.throws(() => validateSubPath('a/../../x'), /must not contain '\.\.'/);
    validateSubPath('a..b/c');
    validateSubPath('a/./b');
  });

  it('creates a missing subPath inside the volume and opens it', async function () {
    assert.equal(await pathOf(vol, 'a/b'), path.join(await fs.realpath(vol), 'a', 'b'));
    assert.equal((await fs.stat(path.join(vol, 'a', 'b'))).isDirectory(), true);
  });

  it('follows a symlink that stays inside the volume', async function () {
    await fs.mkdir(path.join(vol, 'real'));
    await fs.symlink('real', path.join(vol, 'alias'));
    assert.equal(await pathOf(vol, 'alias/x'), path.join(await fs.realpath(vol), 'real', 'x'));
  });

  it('refuses a symlink out of the volume, absolute or relative, and creates nothing outside', async function () {
    await fs.symlink(outside, path.join(vol, 'abs'));
    await fs.symlink('../outside', path.join(vol, 'rel'));
    await fs.mkdir(path.join(vol, 'd'));
    await fs.symlink('../../outside', path.join(vol, 'd', 'up'));
    await assert.rejects(openSubPath(vol, 'abs/new'), /points outside the volume/);
    await assert.rejects(openSubPath(vol, 'rel'), /points outside the volume/);
    await assert.rejects(openSubPath(vol, 'd/up/secret'), /points outside the volume/);
    assert.deepEqual(await fs.readdir(outside), ['secret']);
  });

  it('opens a FIFO without blocking and binds a file onto a file', async function () {
    await fs.writeFile(path.join(vol, 'f'), 'data');
    const target = path.join(dir, 't');
    await bindSubPath(vol, 'f', target);
    assert.equal(await fs.readFile(target, 'utf8'), 'data');
    await unmount(target);
    const fifo = path.join(vol, 'fifo');
    await new Promise<void>((resolve, reject) => spawn('mkfifo', [fifo]).on('exit', (c) => (c === 0 ? resolve() : reject(new Error(`mkfifo ${c}`)))));
    const opened = await openSubPath(vol, 'fifo');
    await opened.handle.close();
  });

  it('binds a directory; a second bind replaces the first', async function () {
    await fs.mkdir(path.join(vol, 'd'));
    await fs.writeFile(path.join(vol, 'd', 'one'), '1');
    const target = path.join(dir, 't');
    await bindSubPath(vol, 'd', target);
    await bindSubPath(vol, 'd', target);
    assert.deepEqual(await fs.readdir(target), ['one']);
    const mounts = (await fs.readFile('/proc/self/mountinfo', 'utf8')).split('\n').filter((l) => l.split(' ')[4] === target);
    assert.equal(mounts.length, 1, 'the earlier bind was unmounted first');
  });

  it('never binds outside the volume while another process flips the path between a directory and a symlink out', async function () {
    this.timeout(30_000);
    // The attack of the issue, against the kubelet's own walk: one process swaps vol/d for a
    // symlink to `outside` and back as fast as it can; every bind that succeeds must be the
    // directory inside the volume.
    // The flipper runs until the loop is done (at most 25 s); the loop, 3.5 s and at least 50
    // binds (on a loaded machine 3.5 s were 17).
    const flipper = spawn('bash', ['-c', `cd ${JSON.stringify(vol)}; end=$((SECONDS+25)); while [ $SECONDS -lt $end ]; do rm -rf d; mkdir d; touch d/inside; rm -rf d; ln -s ${JSON.stringify(outside)} d; done`], { stdio: 'ignore' });
    const exited = new Promise((r) => flipper.on('exit', r));
    const target = path.join(dir, 't');
    let bound = 0;
    let refused = 0;
    const started = Date.now();
    while ((Date.now() - started < 3500 || bound + refused < 50) && Date.now() - started < 20_000) {
      try {
        await bindSubPath(vol, 'd', target);
      } catch {
        refused++;
        continue;
      }
      bound++;
      const seen = await fs.readdir(target).catch(() => [] as string[]);
      assert.ok(!seen.includes('secret'), `a bind reached outside the volume: ${seen.join(', ')}`);
      await unmount(target);
    }
    flipper.kill('SIGKILL');
    await exited;
    assert.ok(bound + refused > 20, `the loop ran (${bound} bound, ${refused} refused)`);
  });

  it('expands subPathExpr from the env; an unset variable is an error', function () {
    const env = new Map([['POD', 'web'], ['EMPTY', '']]);
    assert.equal(expandSubPathExpr('logs/$(POD)', env), 'logs/web');
    assert.throws(() => expandSubPathExpr('$(NOPE)/$(EMPTY)', env), /missing value for EMPTY, NOPE/);
  });

  it('builds readOnly, propagation and subPath mounts through the binder; refuses Bidirectional for unprivileged containers', async function () {
    const pod: V1Pod = { metadata: { name: 'p', uid: 'u' }, spec: { containers: [] } };
    const c: V1Container = {
      name: 'c',
      volumeMounts: [
        { name: 'v', mountPath: '/a', readOnly: true },
        { name: 'v', mountPath: '/b', subPathExpr: '$(X)', mountPropagation: 'HostToContainer' },
        { name: 'ro', mountPath: '/c' },
      ],
    };
    const vols = new Map([['v', { path: vol }], ['ro', { path: outside, readOnly: true }]]);
    const asked: Array<Parameters<SubPathBinder>[0]> = [];
    const binder: SubPathBinder = async (req) => {
      asked.push(req);
      return `/bound/${req.volumeName}/${req.mountIndex}`;
    };
    const mounts = await containerMounts(pod, c, [{ key: 'X', value: 'x' }], vols, binder);
    assert.deepEqual(mounts, [
      { containerPath: '/a', hostPath: vol, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/b', hostPath: '/bound/v/1', readonly: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
      { containerPath: '/c', hostPath: outside, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
    ]);
    assert.deepEqual(asked, [{ volumeName: 'v', volumePath: vol, subPath: 'x', mountIndex: 1 }]);
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', mountPropagation: 'Bidirectional' }] }, [], vols, binder), (e: unknown) => e instanceof ContainerConfigError && /only to privileged/.test((e as Error).message));
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: '../../etc' }] }, [], vols, binder), (e: unknown) => e instanceof ContainerConfigError && /failed to prepare subPath for volumeMount "v" of container "c"/.test((e as Error).message));
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'missing', mountPath: '/x' }] }, [], vols, binder), /cannot find volume "missing"/);
  });
});
