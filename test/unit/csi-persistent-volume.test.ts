import assert from 'node:assert/strict';
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1CSIDriver, V1PersistentVolume, V1Pod, V1VolumeAttachment } from '@kubernetes/client-node';
import type { VolumeMountRequest } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import type { StorageObjectSource } from '../../core/objects/storage-objects.ts';
import { attachmentName, blockPaths, deviceMountPath } from '../../plugins/csi-grpc/persistent-paths.ts';
import { persistentAccessMode } from '../../plugins/csi-grpc/access-mode.ts';
import { PersistentCsiVolumes } from '../../plugins/csi-grpc/persistent-volume.ts';
import type { PersistentVolumeData } from '../../plugins/csi-grpc/persistent-volume-data.ts';
import { PublicationCleanup } from '../../plugins/csi-grpc/publication-cleanup.ts';
import type { CsiDriver } from '../../plugins/csi-grpc/registration.ts';

/** A CSI node service in memory that records calls (publish makes the target dir, as a driver does). */
function fakeDriver(capabilities: string[]) {
  const calls: Array<[string, any]> = [];
  const client = {
    nodeCapabilities: async () => new Set(capabilities),
    nodeStageVolume: async (r: object) => void calls.push(['stage', r]),
    nodeUnstageVolume: async (r: object) => void calls.push(['unstage', r]),
    nodePublishVolume: async (r: { targetPath: string }) => {
      calls.push(['publish', r]);
      await fs.mkdir(r.targetPath, { recursive: true });
    },
    nodeUnpublishVolume: async (r: { targetPath: string }) => {
      calls.push(['unpublish', r]);
      await fs.rm(r.targetPath, { recursive: true, force: true });
    },
  };
  const driver = { name: 'd.example.com', endpoint: '', nodeId: 'n1', versions: ['1.0.0'], socket: '', client } as unknown as CsiDriver;
  return { calls, driver, ops: () => calls.map(([op]) => op) };
}

/** The API's CSIDriver and VolumeAttachments, in memory. */
function fakeStorage(csiDriver: V1CSIDriver | undefined, attachments: Map<string, V1VolumeAttachment>): StorageObjectSource {
  return {
    persistentVolumeClaim: async () => { throw new Error('unused'); },
    persistentVolume: async () => { throw new Error('unused'); },
    csiDriver: async () => csiDriver,
    volumeAttachment: async (name) => attachments.get(name),
  };
}

describe('csi-grpc persistent volumes (attach wait, stage once, unstage after the last pod)', function () {
  let root: string;
  beforeEach(async () => (root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-csi-pv-'))));
  afterEach(() => fs.rm(root, { recursive: true, force: true }));

  const pv: V1PersistentVolume = { metadata: { name: 'pv1' }, spec: { accessModes: ['ReadWriteOnce'], mountOptions: ['noatime'], csi: { driver: 'd.example.com', volumeHandle: 'vol-1', volumeAttributes: { a: 'b' } } } };
  const pod = (uid: string): V1Pod => ({ metadata: { name: `p-${uid}`, namespace: 'ns', uid }, spec: { containers: [], serviceAccountName: 'sa' } });
  const request = (uid: string, storage: StorageObjectSource | undefined): VolumeMountRequest => ({
    pod: pod(uid), volume: { name: 'data', persistentVolumeClaim: { claimName: 'c' } }, type: 'csi', rootDir: root, previous: undefined,
    dir: path.join(root, 'pods', uid, 'volumes', 'kubernetes.io~csi', 'pv1'), nodeName: 'n1',
    objects: { configMap: async () => undefined, secret: async () => undefined },
    persistentVolume: { volume: pv, claim: { metadata: { name: 'c' } }, readOnly: false },
    ...(storage ? { storage } : {}),
  });
  const setUp = (d: ReturnType<typeof fakeDriver>) => {
    const drivers = { driver: (n: string) => (n === d.driver.name ? d.driver : undefined) };
    const cleanup = new PublicationCleanup({ driver: drivers.driver, logger: silentLogger() });
    return new PersistentCsiVolumes({ drivers, cleanup, podInfoOnMount: () => false, logger: silentLogger() });
  };

  it('uses upstream\'s paths and names: sha256 of the handle for the global mount, csi-sha256(handle+driver+node) for the attachment', function () {
    const sha = crypto.createHash('sha256').update('vol-1').digest('hex');
    assert.equal(deviceMountPath('/var/lib/kubelet', 'd.example.com', 'vol-1'), `/var/lib/kubelet/plugins/kubernetes.io/csi/d.example.com/${sha}/globalmount`);
    assert.equal(attachmentName('vol-1', 'd.example.com', 'n1'), `csi-${crypto.createHash('sha256').update('vol-1d.example.comn1').digest('hex')}`);
    assert.equal(persistentAccessMode({ spec: { accessModes: ['ReadWriteOncePod'] } }, new Set()), 'SINGLE_NODE_WRITER');
    assert.equal(persistentAccessMode({ spec: { accessModes: ['ReadWriteOncePod'] } }, new Set(['SINGLE_NODE_MULTI_WRITER'])), 'SINGLE_NODE_SINGLE_WRITER');
    assert.equal(persistentAccessMode({ spec: { accessModes: ['ReadOnlyMany'] } }, new Set()), 'MULTI_NODE_READER_ONLY');
    assert.equal(persistentAccessMode({ spec: { accessModes: ['ReadWriteMany'] } }, new Set()), 'MULTI_NODE_MULTI_WRITER');
  });

  it('waits for the VolumeAttachment when attach is required (no CSIDriver object, or attachRequired true), and passes its metadata as publish context', async function () {
    const d = fakeDriver(['STAGE_UNSTAGE_VOLUME']);
    const vols = setUp(d);
    const attachments = new Map<string, V1VolumeAttachment>();
    const va = attachmentName('vol-1', 'd.example.com', 'n1');
    await assert.rejects(vols.mount(request('u1', fakeStorage(undefined, attachments))), { message: `volume vol-1 is not attached to node n1 yet: VolumeAttachment ${va} does not exist (there is no CSIDriver object for d.example.com, so attach is required; the attach/detach controller creates it)` });
    const required: V1CSIDriver = { metadata: { name: 'd.example.com' }, spec: { attachRequired: true } };
    attachments.set(va, { metadata: { name: va }, spec: { attacher: 'd.example.com', nodeName: 'n1', source: { persistentVolumeName: 'pv1' } }, status: { attached: false } });
    await assert.rejects(vols.mount(request('u1', fakeStorage(required, attachments))), /VolumeAttachment csi-[0-9a-f]{64} is not attached \(CSIDriver d.example.com has attachRequired: true; the driver's external-attacher attaches it\)/);
    attachments.get(va)!.status = { attached: false, attachError: { message: 'disk busy' } };
    await assert.rejects(vols.mount(request('u1', fakeStorage(required, attachments))), /attacher.WaitForAttach failed for volume vol-1 .*: disk busy/);
    assert.deepEqual(d.ops(), [], 'nothing staged or published before the volume is attached');

    attachments.get(va)!.status = { attached: true, attachmentMetadata: { devicePath: '/dev/x' } };
    const r = await vols.mount(request('u1', fakeStorage(required, attachments)));
    assert.deepEqual(d.ops(), ['stage', 'publish']);
    assert.deepEqual(d.calls[0]![1].publishContext, { devicePath: '/dev/x' });
    assert.deepEqual(d.calls[1]![1].publishContext, { devicePath: '/dev/x' });
    assert.deepEqual(d.calls[1]![1].volumeCapability, { mount: { fsType: '', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } });
    assert.deepEqual(d.calls[1]![1].volumeContext, { a: 'b' }, 'no CSIDriver podInfoOnMount: the attributes only');
    const volData = JSON.parse(await fs.readFile(path.join(path.dirname(r.path), 'vol_data.json'), 'utf8'));
    assert.equal(volData.attachmentID, va);
  });

  it('stages once for two pods, unstages only after the last one; a driver without STAGE_UNSTAGE_VOLUME is only published', async function () {
    const d = fakeDriver(['STAGE_UNSTAGE_VOLUME']);
    const vols = setUp(d);
    const noAttach = fakeStorage({ metadata: { name: 'd.example.com' }, spec: { attachRequired: false, podInfoOnMount: true } }, new Map());
    const [a, b] = await Promise.all([vols.mount(request('u1', noAttach)), vols.mount(request('u2', noAttach))]);
    assert.deepEqual(d.ops(), ['stage', 'publish', 'publish'], 'staged once, even for two pods set up at once');
    assert.equal(d.calls[1]![1].volumeContext['csi.storage.k8s.io/ephemeral'], 'false');
    const unmount = (uid: string, mounted: typeof a) => vols.unmount({ podUID: uid, volumeName: 'data', type: 'csi', dir: path.dirname(mounted.path), rootDir: root, mounted }, mounted.data as unknown as PersistentVolumeData);
    await unmount('u1', a);
    assert.deepEqual(d.ops().slice(3), ['unpublish'], 'the other pod still uses it: not unstaged');
    await unmount('u2', b);
    assert.deepEqual(d.ops().slice(4), ['unpublish', 'unstage']);
    await assert.rejects(fs.stat(path.dirname(deviceMountPath(root, 'd.example.com', 'vol-1'))), 'the device dir is removed');

    const plain = fakeDriver([]);
    await setUp(plain).mount(request('u3', noAttach));
    assert.deepEqual(plain.ops(), ['publish']);
    assert.equal(plain.calls[0]![1].stagingTargetPath, '');
  });

  it('a sweep unstages a staged volume no pod uses any more (a kubelet that died before its unstage), and leaves one in use', async function () {
    const d = fakeDriver(['STAGE_UNSTAGE_VOLUME']);
    const vols = setUp(d);
    const noAttach = fakeStorage({ metadata: { name: 'd.example.com' }, spec: { attachRequired: false } }, new Map());
    const a = await vols.mount(request('u1', noAttach));
    await vols.sweepStaged(root, 'd.example.com');
    assert.deepEqual(d.ops(), ['stage', 'publish'], 'in use: left staged');
    // What a kubelet that died after the unpublish leaves: the device dir and no pod volume dir.
    await fs.rm(path.dirname(a.path), { recursive: true });
    await vols.sweepStaged(root, 'd.example.com');
    assert.deepEqual(d.ops(), ['stage', 'publish', 'unstage']);
    await assert.rejects(fs.stat(path.dirname(deviceMountPath(root, 'd.example.com', 'vol-1'))));
  });

  it('a block volume: staged and published at upstream\'s volumeDevices paths with a block capability, a device for the containers; torn down and swept with its dirs', async function () {
    const d = fakeDriver(['STAGE_UNSTAGE_VOLUME']);
    const vols = setUp(d);
    const noAttach = fakeStorage({ metadata: { name: 'd.example.com' }, spec: { attachRequired: false } }, new Map());
    const block: V1PersistentVolume = { ...pv, spec: { ...pv.spec, volumeMode: 'Block' } };
    const blockRequest = (uid: string): VolumeMountRequest => ({ ...request(uid, noAttach), persistentVolume: { volume: block, claim: { metadata: { name: 'c' } }, readOnly: false } });
    const paths = blockPaths(root, 'pv1', 'u1');
    const a = await vols.mount(blockRequest('u1'));
    assert.deepEqual([a.path, a.blockDevice, a.mountPoint], [paths.publishPath, true, undefined]);
    assert.deepEqual(d.calls.map(([op, r]) => [op, r.stagingTargetPath, r.targetPath, r.volumeCapability?.block ? 'block' : 'mount']), [
      ['stage', paths.stagingPath, undefined, 'block'],
      ['publish', paths.stagingPath, paths.publishPath, 'block'],
    ]);
    assert.deepEqual(JSON.parse(await fs.readFile(path.join(paths.dataDir, 'vol_data.json'), 'utf8')), { driverName: 'd.example.com', volumeHandle: 'vol-1' });
    await vols.unmount({ podUID: 'u1', volumeName: 'data', type: 'csi', dir: blockRequest('u1').dir, rootDir: root, mounted: a }, a.data as unknown as PersistentVolumeData);
    assert.deepEqual(d.ops().slice(2), ['unpublish', 'unstage']);
    const devices = path.join(root, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices');
    assert.deepEqual((await fs.readdir(devices)).sort(), ['publish', 'staging'], 'volumeDevices/pv1 is gone');
    assert.deepEqual([await fs.readdir(path.join(devices, 'publish')), await fs.readdir(path.join(devices, 'staging'))], [[], []]);
    await assert.rejects(fs.stat(blockRequest('u1').dir), 'the pod volume dir is gone');

    // A kubelet that died after the unpublish: the sweep unstages it.
    await vols.mount(blockRequest('u2'));
    await fs.rm(blockRequest('u2').dir, { recursive: true });
    await vols.sweepStaged(root, 'd.example.com');
    assert.deepEqual(d.ops().slice(4), ['stage', 'publish', 'unstage']);
    await assert.rejects(fs.stat(path.join(devices, 'pv1')));
  });
});
