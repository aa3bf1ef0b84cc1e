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
import { IscsiadmError, iscsiadm } from '../../plugins/iscsi/iscsiadm.ts';
import { parseNodeRecord, sessionAuthMismatch } from '../../plugins/iscsi/session-auth.ts';

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

  describe('a live session is given to a volume only with the CHAP settings it was logged in with', () => {
    const record = (auth: string) => parseNodeRecord(`# BEGIN RECORD 2.1.11
node.name = ${IQN}
node.startup = manual
${auth}
node.session.auth.username_in = <empty>
node.session.auth.password_in = <empty>
node.conn[0].address = 127.0.0.1
# END RECORD
`);
    const chapRecord = record('node.session.auth.authmethod = CHAP\nnode.session.auth.username = node-a\nnode.session.auth.password = right-password-1');
    const disk = (chapSession: boolean) => iscsiDisk({ targetPortal: 'p', iqn: IQN, lun: 0, chapAuthSession: chapSession, ...(chapSession ? { secretRef: { name: 's' } } : {}) }, false, 'ns', 'iscsi');
    const secret = (password: string) => new Map([['node.session.auth.username', 'node-a'], ['node.session.auth.password', password]]);

    it('the same keys are admitted; other keys, or none where the login took CHAP, are refused without naming a value', () => {
      assert.equal(chapRecord.get('node.session.auth.password_in'), '', '<empty> reads as empty');
      assert.equal(sessionAuthMismatch(chapRecord, disk(true), secret('right-password-1')), undefined);
      const wrong = sessionAuthMismatch(chapRecord, disk(true), secret('not-the-password'));
      assert.match(wrong ?? '', /other CHAP credentials than the volume's Secret holds \(node.session.auth.password differ\)/);
      assert.ok(!/right-password-1|not-the-password/.test(wrong!), wrong);
      assert.match(sessionAuthMismatch(chapRecord, disk(false), new Map()) ?? '', /logged in to with CHAP, and this volume has no chapAuthSession/);
      const inbound = new Map([...secret('right-password-1'), ['node.session.auth.username_in', 'target-b']]);
      assert.match(sessionAuthMismatch(chapRecord, disk(true), inbound) ?? '', /username_in differ/, 'mutual CHAP keys count too');
    });

    it('a session logged in without CHAP (the target asks none) is admitted with or without the volume\'s keys', () => {
      const none = record('node.session.auth.authmethod = None\nnode.session.auth.username = <empty>\nnode.session.auth.password = <empty>');
      assert.equal(sessionAuthMismatch(none, disk(false), new Map()), undefined);
      assert.equal(sessionAuthMismatch(none, disk(true), secret('anything-at-all')), undefined);
    });
  });

  describe('iscsiadm calls', function () {
    this.timeout(20_000);
    let dir: string;
    before(async () => { dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-iscsiadm-')); });
    after(async () => { await fs.rm(dir, { recursive: true, force: true }); });

    it('an abort does not kill a call that runs (iscsiadm killed mid-login leaves iscsid a session, or the database lock, behind); the next call is not started', async () => {
      // A fake iscsiadm that takes 600 ms and records that it finished.
      const bin = path.join(dir, 'iscsiadm');
      await fs.writeFile(bin, `#!/bin/sh\nsleep 0.6\necho "$*" >> ${dir}/finished\n`, { mode: 0o755 });
      const ac = new AbortController();
      setTimeout(() => ac.abort(new Error('pod deleted')), 100);
      assert.equal(await iscsiadm(bin, ['-m', 'node', '--login'], { timeoutMs: 10_000, signal: ac.signal }), '', 'the running call finished');
      assert.equal(await fs.readFile(path.join(dir, 'finished'), 'utf8'), '-m node --login\n');
      await assert.rejects(iscsiadm(bin, ['-m', 'node', '-o', 'delete'], { timeoutMs: 10_000, signal: ac.signal }), /iscsiadm -m node -o delete: given up \(Error: pod deleted\)/);
      assert.equal(await fs.readFile(path.join(dir, 'finished'), 'utf8'), '-m node --login\n', 'the aborted one never ran');
    });

    it('a call past its timeout is killed and says so (timedOut); a failing one carries its exit code, its output and no secret', async () => {
      const slow = path.join(dir, 'slow');
      await fs.writeFile(slow, '#!/bin/sh\nexec sleep 30\n', { mode: 0o755 });
      const t0 = performance.now();
      const killed = await iscsiadm(slow, ['--login'], { timeoutMs: 300 }).catch((err: unknown) => err);
      assert.ok(killed instanceof IscsiadmError && killed.timedOut, String(killed));
      assert.ok(performance.now() - t0 < 5_000);
      const failing = path.join(dir, 'failing');
      await fs.writeFile(failing, '#!/bin/sh\necho "iscsiadm: No records found ($6)" >&2\nexit 21\n', { mode: 0o755 });
      const err = await iscsiadm(failing, ['-o', 'update', '-n', 'x', '-v', 'pw-secret'], { timeoutMs: 5_000, secret: 'pw-secret' }).catch((e: unknown) => e);
      assert.ok(err instanceof IscsiadmError && err.exitCode === 21 && !err.timedOut, String(err));
      assert.equal(err.message, 'iscsiadm -o update -n x -v ***: iscsiadm: No records found (***)');
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
