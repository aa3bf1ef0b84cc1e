import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { PatchStrategy, setHeaderOptions, StorageV1Api } from '@kubernetes/client-node';
import { deviceMountPath } from '../../plugins/csi-grpc/persistent-paths.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { CsiController } from '../support/csi-controller.ts';
import { RealCsiDriver, realCsiDriverOrSkip, unpackCsiBinaries } from '../support/csi-real-driver.ts';
import { waitFor } from '../support/wait-for.ts';

const MiB = 1024 * 1024;
const mergePatch = () => setHeaderOptions('Content-Type', PatchStrategy.MergePatch);

/**
 * Volume expansion, node side, on the real control plane (v1.28.7) with the upstream CSI
 * hostpath driver. No external-resizer ships here, so the test plays it as it works with
 * RecoverVolumeExpansionFailure off: ControllerExpandVolume over the driver's socket, the PV's
 * spec.capacity grown, the claim's request grown, and the claim's status condition
 * FileSystemResizePending set. The kubelet-ts node must then call NodeExpandVolume on the running
 * pod's volume and finish the resize as upstream's kubelet does: the claim's status.capacity is
 * the new size, the condition is gone, and the pod has a FileSystemResizeSuccessful event.
 */
describe('CSI volume expansion (NodeExpandVolume after a resize) on the real control plane', function () {
  this.timeout(300_000);
  const suite = clusterSuite('kts-hx-expand-');
  const DRIVER = 'hostpath.csi.k8s.io';
  let bin: string;

  before(async function () {
    realCsiDriverOrSkip(this);
    if (!suite.dir) return;
    bin = path.join(suite.dir, 'bin');
    await unpackCsiBinaries(bin);
  });

  it('expands the volume of a running pod, updates the claim\'s status and records FileSystemResizeSuccessful', async function () {
    const node = suite.node('hx-node');
    const rootDir = path.join(node.dir, 'root');
    const driver = new RealCsiDriver({ binDir: bin, dir: `${node.dir}-csi`, registryDir: path.join(rootDir, 'plugins_registry'), nodeId: node.name });
    suite.onCleanup(async () => {
      await driver.stop();
      await fs.rm(`${node.dir}-csi`, { recursive: true, force: true });
    });
    await driver.start();
    await suite.kubelet(node, { plugins: [['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 10 }]], config: { syncFrequencyMs: 2000 } });
    await suite.nodeReady(node.name);

    // The driver's deployment objects: no attach (no external-attacher here), a class that allows expansion.
    const storage = suite.cp.admin.makeApiClient(StorageV1Api);
    await storage.deleteCSIDriver({ name: DRIVER }).catch(() => {});
    await storage.createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent'] } } });
    suite.onCleanup(() => storage.deleteCSIDriver({ name: DRIVER }));
    const storageClass = suite.uniqueName('hx-sc');
    await storage.createStorageClass({ body: { metadata: { name: storageClass }, provisioner: DRIVER, allowVolumeExpansion: true, reclaimPolicy: 'Retain' } });
    suite.onCleanup(() => storage.deleteStorageClass({ name: storageClass }));

    // A 16Mi volume made in the driver (playing the external-provisioner), its PV pre-bound to the claim.
    const ns = await suite.namespace('hx-ns');
    const controller = new CsiController(driver.csiSocket);
    const pv = suite.uniqueName('hx-pv');
    const volumeHandle = await controller.createVolume(pv, 16 * MiB);
    suite.onCleanup(async () => {
      await controller.deleteVolume(volumeHandle).catch(() => {});
      controller.close();
    });
    await suite.core.createPersistentVolume({
      body: {
        metadata: { name: pv },
        spec: {
          capacity: { storage: '16Mi' }, accessModes: ['ReadWriteOnce'], persistentVolumeReclaimPolicy: 'Retain', storageClassName: storageClass,
          claimRef: { namespace: ns, name: 'data' }, csi: { driver: DRIVER, volumeHandle },
        },
      },
    });
    suite.onCleanup(() => suite.core.deletePersistentVolume({ name: pv }));
    await suite.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], resources: { requests: { storage: '16Mi' } }, volumeName: pv, storageClassName: storageClass } },
    });
    const readClaim = () => suite.core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns });
    await waitFor(`PVC ${ns}/data Bound with 16Mi`, async () => {
      const c = await readClaim();
      return c.status?.phase === 'Bound' && c.status.capacity?.storage === '16Mi';
    }, 60_000, 300);

    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'hx-grower' },
        spec: {
          nodeName: node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false,
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'exec sleep 3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      },
    });
    suite.onCleanup(async () => {
      await suite.core.deleteNamespacedPod({ name: 'hx-grower', namespace: ns }).catch(() => {});
      await waitFor('pod hx-grower gone', async () => suite.core.readNamespacedPod({ name: 'hx-grower', namespace: ns }).then(() => false, () => true), 60_000, 300);
    });
    const pod = await waitFor('pod hx-grower Running', async () => {
      const p = await suite.core.readNamespacedPod({ name: 'hx-grower', namespace: ns });
      return p.status?.phase === 'Running' ? p : undefined;
    }, 90_000, 300);
    // Nothing to expand while the sizes agree.
    assert.equal((await driver.calls('NodeExpandVolume')).length, 0, 'no NodeExpandVolume before a resize');

    // Playing the external-resizer: the controller side, then the PV and the claim as it leaves them.
    const expanded = await controller.expandVolume(volumeHandle, 32 * MiB);
    assert.equal(expanded.nodeExpansionRequired, true, 'the hostpath driver asks for node expansion');
    await suite.core.patchPersistentVolume({ name: pv, body: { spec: { capacity: { storage: '32Mi' } } } }, mergePatch());
    await suite.core.patchNamespacedPersistentVolumeClaim({ name: 'data', namespace: ns, body: { spec: { resources: { requests: { storage: '32Mi' } } } } }, mergePatch());
    await suite.core.patchNamespacedPersistentVolumeClaimStatus({
      name: 'data', namespace: ns,
      body: { status: { conditions: [{ type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date(), message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.' }] } },
    }, mergePatch());

    // The node finishes it: the claim's status has the new size and no pending condition.
    const claim = await waitFor('the claim\'s status.capacity at 32Mi', async () => {
      const c = await readClaim();
      return c.status?.capacity?.storage === '32Mi' ? c : undefined;
    }, 60_000, 300);
    assert.deepEqual((claim.status?.conditions ?? []).map((c) => c.type), [], 'FileSystemResizePending is gone');

    const event = await waitFor('a FileSystemResizeSuccessful event on the pod', async () => (await suite.core.listNamespacedEvent({ namespace: ns })).items
      .find((e) => e.involvedObject?.kind === 'Pod' && e.involvedObject.name === 'hx-grower' && e.reason === 'FileSystemResizeSuccessful'), 30_000, 300);
    assert.equal(event.type, 'Normal');
    assert.equal(event.message, `MountVolume.NodeExpandVolume succeeded for volume "${pv}" ${node.name}`);

    // What the driver was asked: the pod's publication, the staging path, the new size.
    const calls = (await driver.calls('NodeExpandVolume')).filter((c) => c.Request.volume_id === volumeHandle);
    assert.ok(calls.length >= 1, 'NodeExpandVolume was called');
    const req = calls[0]!.Request as { volume_path?: string; staging_target_path?: string; capacity_range?: { required_bytes?: number } };
    assert.equal(calls[0]!.Error, '');
    assert.equal(req.volume_path, path.join(rootDir, 'pods', pod.metadata!.uid!, 'volumes', 'kubernetes.io~csi', pv, 'mount'));
    assert.equal(req.staging_target_path, deviceMountPath(rootDir, DRIVER, volumeHandle));
    assert.equal(req.capacity_range?.required_bytes, 32 * MiB);
    // Once done, later syncs leave it alone.
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal((await driver.calls('NodeExpandVolume')).filter((c) => c.Request.volume_id === volumeHandle).length, calls.length, 'not expanded again once the claim has the size');
  });
});
