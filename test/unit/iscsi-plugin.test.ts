import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import type { VolumeMountRequest } from '../../core/hooks.ts';
import { startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { hookContext } from '../../core/util/cancellation.ts';
import { byPathDevice, globalMountDir, iscsiDisk } from '../../plugins/iscsi/iscsi-disk.ts';

const IQN = 'iqn.2026-11.io.example:store.lun';

describe('iscsi plugin: what it logs in to, what it refuses', function () {
  describe('iscsiDisk', () => {
    it('portals get upstream\'s default port; the device and per-node dir are named as upstream names them', () => {
      const d = iscsiDisk({ targetPortal: '10.0.0.9', portals: ['10.0.0.10:3261', '[fd00::9]:3260'], iqn: IQN, lun: 3 }, false, 'ns', 'iscsi');
      assert.deepEqual(d.portals, ['10.0.0.9:3260', '10.0.0.10:3261', '[fd00::9]:3260']);
      assert.equal(d.iface, 'default');
      assert.equal(d.fsType, 'ext4');
      assert.equal(byPathDevice(d, d.portals[0]!), `/dev/disk/by-path/ip-10.0.0.9:3260-iscsi-${IQN}-lun-3`);
      assert.equal(globalMountDir('/var/lib/kubelet', d), `/var/lib/kubelet/plugins/kubernetes.io/iscsi/iface-default/10.0.0.9:3260-${IQN}-lun-3`);
    });

    it('read-only from the pod or the source; CHAP needs its Secret, from the pod\'s namespace unless the PV names one', () => {
      assert.equal(iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0 }, true, 'ns', 'iscsi').readOnly, true);
      assert.equal(iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0, readOnly: true }, false, 'ns', 'iscsi').readOnly, true);
      assert.deepEqual(iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0, chapAuthSession: true, secretRef: { name: 'chap' } }, false, 'ns', 'iscsi').secret, { namespace: 'ns', name: 'chap' });
      assert.deepEqual(iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0, chapAuthDiscovery: true, secretRef: { name: 'chap', namespace: 'storage' } }, false, 'ns', 'iscsi').secret, { namespace: 'storage', name: 'chap' });
      assert.throws(() => iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0, chapAuthSession: true }, false, 'ns', 'iscsi'), /iscsi.secretRef is required with chapAuthDiscovery or chapAuthSession/);
    });

    it('refuses what could read as an iscsiadm option or leave the plugin dir, naming the field', () => {
      const bad: Array<[object, RegExp]> = [
        [{ targetPortal: '-p', iqn: IQN, lun: 0 }, /iscsi.targetPortal "-p" is not host\[:port\]/],
        [{ targetPortal: 'p', portals: ['a b'], iqn: IQN, lun: 0 }, /iscsi.portals\[0\] "a b"/],
        [{ targetPortal: 'p/../..', iqn: IQN, lun: 0 }, /iscsi.targetPortal "p\/..\/.." is not host\[:port\]/],
        [{ targetPortal: 'p', iqn: 'iqn.2026-11.x:a/../../b', lun: 0 }, /iscsi.iqn .* is not an iSCSI name/],
        [{ targetPortal: 'p', iqn: '--login', lun: 0 }, /iscsi.iqn "--login" is not an iSCSI name/],
        [{ targetPortal: 'p', iqn: IQN, lun: 256 }, /iscsi.lun 256 must be an integer from 0 to 255/],
        [{ targetPortal: 'p', iqn: IQN, lun: 0, iscsiInterface: '-o delete' }, /iscsi.iscsiInterface "-o delete" is not an interface name/],
        [{ targetPortal: 'p', iqn: IQN, lun: 0, fsType: '../ext4' }, /iscsi.fsType "..\/ext4" is not a file system type name/],
        [{ targetPortal: 'p', iqn: IQN, lun: 0, initiatorName: 'iqn.2026-11.io.example:me' }, /iscsi.initiatorName is not supported by kubelet-ts's iscsi plugin/],
      ];
      for (const [src, re] of bad) assert.throws(() => iscsiDisk(src as never, false, 'ns', 'iscsi'), re, JSON.stringify(src));
      assert.equal(iscsiDisk({ targetPortal: 'p', iqn: 'eui.02004567A425678D', lun: 0 }, false, 'ns', 'iscsi').iqn, 'eui.02004567A425678D');
    });
  });

  describe('the plugin through the hooks', function () {
    this.timeout(20_000);
    let rootDir: string;
    let plugins: PluginsUnderTest;
    before(async () => {
      rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-iscsi-'));
      plugins = await startPluginsForTest([['iscsi', {}]], { rootDir });
    });
    after(async () => {
      await plugins?.close();
      await fs.rm(rootDir, { recursive: true, force: true });
    });
    const request = (name: string, iscsi: object, extra: Partial<VolumeMountRequest> = {}): VolumeMountRequest => {
      const pod: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: `uid-${name}` }, spec: { containers: [{ name: 'c', image: 'i' }], volumes: [{ name, iscsi: iscsi as never }] } };
      return {
        pod, volume: pod.spec!.volumes![0]!, type: 'iscsi', dir: path.join(rootDir, 'pods', `uid-${name}`, 'volumes', 'kubernetes.io~iscsi', name),
        rootDir, previous: undefined, objects: { configMap: async () => undefined, secret: async () => undefined }, nodeName: 'n', ...extra,
      };
    };
    const mount = (r: VolumeMountRequest) => plugins.hooks.mountVolume.for('iscsi').promise(r, hookContext(AbortSignal.timeout(15_000)));

    it('a hostile source fails the volume with the plugin and field named, and runs nothing', async () => {
      const r = request('hostile', { targetPortal: '--interface=x', iqn: IQN, lun: 0 });
      await assert.rejects(mount(r), /plugin 'iscsi' \(hook mountVolume\[iscsi\]\): volume "hostile": iscsi.targetPortal "--interface=x" is not host\[:port\]/);
      assert.equal(existsSync(r.dir), false);
    });

    it('a Block PersistentVolume is refused, naming the PV', async () => {
      const r = request('block', {}, { persistentVolume: { volume: { metadata: { name: 'pv-blk' }, spec: { volumeMode: 'Block', iscsi: { targetPortal: 'p', iqn: IQN, lun: 0 } } }, claim: { metadata: { name: 'c' } }, readOnly: false } });
      await assert.rejects(mount(r), /PersistentVolume "pv-blk": spec.iscsi: volumeMode Block is not supported by kubelet-ts's iscsi plugin/);
    });
  });
});
