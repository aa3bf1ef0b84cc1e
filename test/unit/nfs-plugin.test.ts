import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { VolumeMountRequest } from '../../core/hooks.ts';
import { startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { hookContext } from '../../core/util/cancellation.ts';
import { mountFilesystem } from '../../core/volumes/mount-utils.ts';
import { nfsMountSpec } from '../../plugins/nfs/nfs-source.ts';

describe('nfs plugin: what it mounts, what it refuses', function () {
  describe('nfsMountSpec', () => {
    it('server:path as upstream writes it, an IPv6 server in brackets', () => {
      assert.deepEqual(nfsMountSpec({ server: 'nfs.example', path: '/exports/a' }, false), { source: 'nfs.example:/exports/a', options: [], readOnly: false });
      assert.equal(nfsMountSpec({ server: '10.0.0.5', path: '/' }, false).source, '10.0.0.5:/');
      assert.equal(nfsMountSpec({ server: 'fd00::5', path: '/x' }, false).source, '[fd00::5]:/x');
    });

    it('read-only from the pod or from the source, ro first, then the PersistentVolume\'s mount options', () => {
      assert.deepEqual(nfsMountSpec({ server: 's', path: '/p' }, true, ['nfsvers=4.1', 'hard']).options, ['ro', 'nfsvers=4.1', 'hard']);
      assert.deepEqual(nfsMountSpec({ server: 's', path: '/p', readOnly: true }, false).options, ['ro']);
      assert.equal(nfsMountSpec({ server: 's', path: '/p', readOnly: true }, false).readOnly, true);
    });

    it('refuses a server that could read as an option or a path, and a relative path, naming the field', () => {
      assert.throws(() => nfsMountSpec({ server: '-oexec', path: '/p' }, false, [], 'volume "d": nfs'), /^Error: volume "d": nfs.server "-oexec" is not a host name or address$/);
      assert.throws(() => nfsMountSpec({ server: 'a b', path: '/p' }, false), /nfs.server "a b" is not a host name/);
      assert.throws(() => nfsMountSpec({ server: 'host/x', path: '/p' }, false), /nfs.server "host\/x"/);
      assert.throws(() => nfsMountSpec({ server: '', path: '/p' }, false), /nfs.server is required/);
      assert.throws(() => nfsMountSpec({ server: 's', path: 'exports' }, false), /nfs.path "exports" must be an absolute path/);
      assert.throws(() => nfsMountSpec({ server: 's', path: '/a\nb' }, false), /nfs.path holds a NUL or newline/);
      assert.throws(() => nfsMountSpec(undefined, false, [], 'PersistentVolume "pv1": spec.nfs'), /PersistentVolume "pv1": spec.nfs.server is required/);
    });
  });

  describe('mountFilesystem (SDK)', () => {
    it('refuses a type, source or option that could change what mount runs, before running it', async () => {
      await assert.rejects(mountFilesystem('s:/p', '/nonexistent', 'nfs -o'), /file system type "nfs -o" is not a type name/);
      await assert.rejects(mountFilesystem('--bind', '/nonexistent', 'nfs'), /mount source "--bind" is empty, starts with "-"/);
      await assert.rejects(mountFilesystem('s:/p', '/nonexistent', 'nfs', ['ro', 'x y']), /mount option "x y" is empty or holds white space/);
    });
  });

  describe('the plugin through the hooks', function () {
    this.timeout(20_000);
    let rootDir: string;
    let plugins: PluginsUnderTest;
    before(async () => {
      rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-nfs-'));
      plugins = await startPluginsForTest([['nfs', { mountTimeoutSeconds: 1 }]], { rootDir });
    });
    after(async () => {
      await plugins?.close();
      await fs.rm(rootDir, { recursive: true, force: true });
    });

    const request = (name: string, nfs: object, extra: Partial<VolumeMountRequest> = {}): VolumeMountRequest => {
      const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: `uid-${name}` }, spec: { containers: [{ name: 'c', image: 'i' }], volumes: [{ name, nfs: nfs as never }] } };
      return {
        pod, volume: pod.spec!.volumes![0]!, type: 'nfs', dir: path.join(rootDir, 'pods', `uid-${name}`, 'volumes', 'kubernetes.io~nfs', name),
        rootDir, previous: undefined, objects: { configMap: async () => undefined, secret: async () => undefined }, nodeName: 'n', ...extra,
      };
    };
    const mount = (r: VolumeMountRequest) => plugins.hooks.mountVolume.for('nfs').promise(r, hookContext(AbortSignal.timeout(15_000)));

    it('a hostile server name fails the volume with the field named, and runs nothing', async () => {
      const r = request('hostile', { server: '-oremount', path: '/' });
      await assert.rejects(mount(r), /plugin 'nfs' \(hook mountVolume\[nfs\]\): volume "hostile": nfs.server "-oremount" is not a host name or address/);
      assert.equal(existsSync(r.dir), false, 'no volume dir was made');
    });

    it('a PersistentVolume\'s source and mount options are checked the same way, naming the PV', async () => {
      const r = request('claimed', {}, {
        persistentVolume: { volume: { metadata: { name: 'pv-nfs' }, spec: { nfs: { server: 's', path: 'rel' }, mountOptions: ['hard'] } }, claim: { metadata: { name: 'c' } }, readOnly: false },
      });
      await assert.rejects(mount(r), /PersistentVolume "pv-nfs": spec.nfs.path "rel" must be an absolute path on the server/);
    });

    it('volume stats of a mounted volume are its file system\'s statfs figures, as upstream\'s MetricsStatFS', async () => {
      // Read before and after: the file system is the machine's, written by others meanwhile.
      const before = await fs.statfs(rootDir);
      const usage = await plugins.hooks.volumeStats.for('nfs').promise({ podUID: 'u', volumeName: 'v', type: 'nfs', mounted: { path: rootDir, mountPoint: true } }, hookContext(AbortSignal.timeout(5000)));
      const s = await fs.statfs(rootDir);
      assert.ok(usage && usage.capacityBytes! > 0, JSON.stringify(usage));
      assert.equal(usage.capacityBytes, s.blocks * s.bsize);
      assert.equal(usage.inodes, s.files);
      const used = [before, s].map((x) => (x.blocks - x.bfree) * x.bsize);
      assert.ok(usage.usedBytes! >= Math.min(...used) && usage.usedBytes! <= Math.max(...used), `used ${usage.usedBytes} is (blocks - bfree) × bsize, read between ${used.join(' and ')}`);
      assert.ok(usage.availableBytes! <= usage.capacityBytes!);
    });

    it('a mount that cannot be made (no mount.nfs here, or no server on loopback) fails with the reason and leaves no directory', async () => {
      const r = request('unreachable', { server: '127.0.0.1', path: '/exports/none' });
      const helper = ['/sbin/mount.nfs', '/usr/sbin/mount.nfs'].some((p) => existsSync(p));
      await fs.mkdir(path.dirname(r.dir), { recursive: true });
      await assert.rejects(mount(r), helper ? /mount -t nfs 127.0.0.1:\/exports\/none .*: / : /mount.nfs is not installed on this node \(\/sbin\/mount.nfs or \/usr\/sbin\/mount.nfs; Debian package nfs-common\)/);
      assert.equal(existsSync(r.dir), false, 'the volume dir is removed after the failure');
    });
  });
});
