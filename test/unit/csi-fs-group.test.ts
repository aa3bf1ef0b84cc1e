import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1PersistentVolume, V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { applyFsGroup, fsGroupApplies, fsGroupPlan, fsGroupPolicyOf } from '../../plugins/csi-grpc/fs-group.ts';
import { hostRequirementMissing } from '../support/host-requirement.ts';

const pv = (accessModes: string[]): V1PersistentVolume => ({ spec: { accessModes } });
const pod = (fsGroup?: number, changePolicy?: string): V1Pod => ({ metadata: { name: 'p', namespace: 'ns' }, spec: { containers: [], ...(fsGroup !== undefined ? { securityContext: { fsGroup, ...(changePolicy ? { fsGroupChangePolicy: changePolicy } : {}) } } : {}) } });

describe('csi-grpc: a pod\'s fsGroup on CSI volumes (upstream\'s fsGroupPolicy)', function () {
  it("the CSIDriver's policy, ReadWriteOnceWithFSType when it says none or there is no CSIDriver", () => {
    assert.equal(fsGroupPolicyOf(undefined), 'ReadWriteOnceWithFSType');
    assert.equal(fsGroupPolicyOf({ spec: {} }), 'ReadWriteOnceWithFSType');
    assert.equal(fsGroupPolicyOf({ spec: { fsGroupPolicy: 'File' } }), 'File');
    assert.equal(fsGroupPolicyOf({ spec: { fsGroupPolicy: 'None' } }), 'None');
  });

  it('applies as upstream\'s supportsFSGroup: File always, None never, read-only never, else an fsType and ReadWriteOnce', () => {
    const cases: Array<[Parameters<typeof fsGroupApplies>[0], boolean]> = [
      [{ policy: 'File', fsType: '', readOnly: false, persistentVolume: pv(['ReadWriteMany']) }, true],
      [{ policy: 'None', fsType: 'ext4', readOnly: false, persistentVolume: pv(['ReadWriteOnce']) }, false],
      [{ policy: 'File', fsType: 'ext4', readOnly: true, persistentVolume: pv(['ReadWriteOnce']) }, false],
      [{ policy: 'ReadWriteOnceWithFSType', fsType: '', readOnly: false, persistentVolume: pv(['ReadWriteOnce']) }, false],
      [{ policy: 'ReadWriteOnceWithFSType', fsType: 'ext4', readOnly: false, persistentVolume: pv(['ReadWriteMany']) }, false],
      [{ policy: 'ReadWriteOnceWithFSType', fsType: 'ext4', readOnly: false, persistentVolume: pv(['ReadOnlyMany', 'ReadWriteOnce']) }, true],
      [{ policy: 'ReadWriteOnceWithFSType', fsType: 'ext4', readOnly: false }, true], // inline: mounted ReadWriteOnce
    ];
    for (const [args, want] of cases) assert.equal(fsGroupApplies(args), want, JSON.stringify(args));
  });

  it('a driver with VOLUME_MOUNT_GROUP gets the group to mount with; without an fsGroup nothing happens', () => {
    const caps = new Set(['STAGE_UNSTAGE_VOLUME', 'VOLUME_MOUNT_GROUP']);
    assert.deepEqual(fsGroupPlan({ pod: pod(2345), nodeCapabilities: caps, policy: 'File', fsType: '', readOnly: false }), { kind: 'driver', volumeMountGroup: '2345' });
    assert.deepEqual(fsGroupPlan({ pod: pod(), nodeCapabilities: caps, policy: 'File', fsType: '', readOnly: false }), { kind: 'none' });
    assert.deepEqual(fsGroupPlan({ pod: pod(7, 'OnRootMismatch'), nodeCapabilities: new Set(), policy: 'File', fsType: '', readOnly: false }), { kind: 'kubelet', fsGroup: 7, changePolicy: 'OnRootMismatch' });
  });

  it("the kubelet's part: the published volume's files get the group, group rw, setgid directories; nothing when not the kubelet's", async function () {
    if (process.getuid?.() !== 0) hostRequirementMissing(this, 'root', 'giving files another group (chown) needs root');
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-csi-fsgroup-'));
    try {
      await fs.mkdir(path.join(dir, 'sub'));
      await fs.writeFile(path.join(dir, 'sub', 'f'), 'x', { mode: 0o600 });
      await applyFsGroup({ kind: 'none' }, dir, { readOnly: false, logger: silentLogger(), pod: 'ns/p', volume: 'v' });
      assert.equal((await fs.stat(path.join(dir, 'sub', 'f'))).gid, 0);
      await applyFsGroup({ kind: 'kubelet', fsGroup: 2345, changePolicy: 'Always' }, dir, { readOnly: false, logger: silentLogger(), pod: 'ns/p', volume: 'v' });
      const f = await fs.stat(path.join(dir, 'sub', 'f'));
      const d = await fs.stat(path.join(dir, 'sub'));
      assert.deepEqual([f.gid, f.mode & 0o777, d.gid, (d.mode & 0o2000) !== 0], [2345, 0o660, 2345, true]);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
