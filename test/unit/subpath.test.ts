import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { containerMounts, expandSubPathExpr, resolveSubPath, validateSubPath } from '../../core/volumes/container-mounts.ts';
import { ContainerConfigError } from '../../core/pod/container-config.ts';

describe('volumeMounts → CRI mounts (subPath, subPathExpr, readOnly, propagation)', function () {
  let dir: string;
  let vol: string;
  let outside: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-subpath-'));
    vol = path.join(dir, 'vol');
    outside = path.join(dir, 'outside');
    await fs.mkdir(vol);
    await fs.mkdir(outside);
  });
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it('validates: relative, no .. element', function () {
    assert.throws(() => validateSubPath('/abs'), /must be a relative path/);
    assert.throws(() => validateSubPath('../x'), /must not contain '\.\.'/);
    assert.throws(() => validateSubPath('a/../../x'), /must not contain '\.\.'/);
    validateSubPath('a..b/c');
    validateSubPath('a/./b');
  });

  it('creates a missing subPath inside the volume and returns its real path', async function () {
    assert.equal(await resolveSubPath(vol, 'a/b'), path.join(await fs.realpath(vol), 'a', 'b'));
    assert.equal((await fs.stat(path.join(vol, 'a', 'b'))).isDirectory(), true);
  });

  it('follows a symlink that stays inside the volume', async function () {
    await fs.mkdir(path.join(vol, 'real'));
    await fs.symlink('real', path.join(vol, 'alias'));
    assert.equal(await resolveSubPath(vol, 'alias/x'), path.join(await fs.realpath(vol), 'real', 'x'));
  });

  it('refuses a symlink out of the volume, absolute or relative, and creates nothing outside', async function () {
    await fs.symlink(outside, path.join(vol, 'abs'));
    await fs.symlink('../outside', path.join(vol, 'rel'));
    await assert.rejects(resolveSubPath(vol, 'abs/new'), /points outside the volume/);
    await assert.rejects(resolveSubPath(vol, 'rel'), /points outside the volume/);
    assert.deepEqual(await fs.readdir(outside), []);
  });

  it('expands subPathExpr from the env; an unset variable is an error', function () {
    const env = new Map([['POD', 'web'], ['EMPTY', '']]);
    assert.equal(expandSubPathExpr('logs/$(POD)', env), 'logs/web');
    assert.throws(() => expandSubPathExpr('$(NOPE)/$(EMPTY)', env), /missing value for EMPTY, NOPE/);
  });

  it('builds readOnly, propagation and subPath mounts; refuses Bidirectional for unprivileged containers', async function () {
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
    const mounts = await containerMounts(pod, c, [{ key: 'X', value: 'x' }], vols);
    assert.deepEqual(mounts, [
      { containerPath: '/a', hostPath: vol, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
      { containerPath: '/b', hostPath: path.join(await fs.realpath(vol), 'x'), readonly: false, propagation: 'PROPAGATION_HOST_TO_CONTAINER' },
      { containerPath: '/c', hostPath: outside, readonly: true, propagation: 'PROPAGATION_PRIVATE' },
    ]);
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', mountPropagation: 'Bidirectional' }] }, [], vols), (e: unknown) => e instanceof ContainerConfigError && /only to privileged/.test((e as Error).message));
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'v', mountPath: '/x', subPath: '../../etc' }] }, [], vols), (e: unknown) => e instanceof ContainerConfigError && /failed to prepare subPath for volumeMount "v" of container "c"/.test((e as Error).message));
    await assert.rejects(containerMounts(pod, { name: 'c', volumeMounts: [{ name: 'missing', mountPath: '/x' }] }, [], vols), /cannot find volume "missing"/);
  });
});
