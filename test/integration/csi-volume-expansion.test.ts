import assert from 'node:assert/strict';
import path from 'node:path';
import { PatchStrategy, setHeaderOptions, StorageV1Api, type V1Pod } from '@kubernetes/client-node';
import { blockPaths, deviceMountPath } from '../../plugins/csi-grpc/persistent-paths.ts';
import type { SuiteNode } from '../support/cluster-suite.ts';
import { CsiController } from '../support/csi-controller.ts';
import type { RealCsiDriver } from '../support/csi-real-driver.ts';
import { csiStorageSuite, HOSTPATH_DRIVER } from '../support/csi-storage-suite.ts';
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
 * the new size, the condition is gone, and the pod has a FileSystemResizeSuccessful event. Also at
 * mount time (a volume resized while no pod used it), and a refusal of the driver as upstream's event.
 */
describe('CSI volume expansion (NodeExpandVolume after a resize) on the real control plane', function () {
  this.timeout(300_000);
  const { suite, storageNode, boundClaim } = csiStorageSuite('kts-hx-expand-');
  const DRIVER = HOSTPATH_DRIVER;

  interface Setup { node: SuiteNode; rootDir: string; driver: RealCsiDriver; controller: CsiController; ns: string; pv: string; volumeHandle: string }

  /** A kubelet-ts node with csi-grpc and the hostpath driver, the driver's objects, and a 16Mi claim `data` bound to a PV of the driver. */
  async function setUp(driverArgs: string[] = [], opts: { block?: boolean } = {}): Promise<Setup> {
    const { node, rootDir, driver } = await storageNode('hx-node', driverArgs);

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
    const { pv, volumeHandle, controller } = await boundClaim(driver, ns, 'data', { ...opts, storageClassName: storageClass });
    return { node, rootDir, driver, controller, ns, pv, volumeHandle };
  }

  /**
   * Plays the external-resizer (RecoverVolumeExpansionFailure off): ControllerExpandVolume, the
   * claim's request grown, FileSystemResizePending set, the PV grown. The PV goes last: the node
   * expands once it sees the PV larger than the claim's status, and a condition set after the
   * node finished (CI, 2026-11-30: the node's patch landed between the PV's and the condition's)
   * would stay for good, with nothing left for the node to do.
   */
  async function resize(s: Setup, bytes: number, size: string): Promise<void> {
    const expanded = await s.controller.expandVolume(s.volumeHandle, bytes);
    assert.equal(expanded.nodeExpansionRequired, true, 'the hostpath driver asks for node expansion');
    await suite.core.patchNamespacedPersistentVolumeClaim({ name: 'data', namespace: s.ns, body: { spec: { resources: { requests: { storage: size } } } } }, mergePatch());
    await suite.core.patchNamespacedPersistentVolumeClaimStatus({
      name: 'data', namespace: s.ns,
      body: { status: { conditions: [{ type: 'FileSystemResizePending', status: 'True', lastTransitionTime: new Date(), message: 'Waiting for user to (re-)start a pod to finish file system resize of volume on node.' }] } },
    }, mergePatch());
    await suite.core.patchPersistentVolume({ name: s.pv, body: { spec: { capacity: { storage: size } } } }, mergePatch());
  }

  /** A busybox pod with the claim at /data (a block claim with `device`: at /dev/xvda), Running; deleted (and waited for) after the test. */
  async function runningPod(s: Setup, name: string, opts: { device?: boolean } = {}): Promise<V1Pod> {
    const use = opts.device ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] };
    await suite.core.createNamespacedPod({
      namespace: s.ns,
      body: {
        metadata: { name },
        spec: {
          nodeName: s.node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false,
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'exec sleep 3600'], ...use }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data' } }],
        },
      },
    });
    suite.onCleanup(async () => {
      await suite.core.deleteNamespacedPod({ name, namespace: s.ns }).catch(() => {});
      await waitFor(`pod ${name} gone`, async () => suite.core.readNamespacedPod({ name, namespace: s.ns }).then(() => false, () => true), 60_000, 300);
    });
    return waitFor(`pod ${name} Running`, async () => {
      const p = await suite.core.readNamespacedPod({ name, namespace: s.ns });
      return p.status?.phase === 'Running' ? p : undefined;
    }, 90_000, 300);
  }

  const readClaim = (s: Setup) => suite.core.readNamespacedPersistentVolumeClaim({ name: 'data', namespace: s.ns });
  const podEvent = (s: Setup, pod: string, reason: string) => suite.podEvent(s.ns, pod, reason);
  const expandCalls = async (s: Setup) => (await s.driver.calls('NodeExpandVolume')).filter((c) => c.Request.volume_id === s.volumeHandle);

  /** The claim's status once the node finished: the new size, and no resize condition left. */
  async function finished(s: Setup, size: string): Promise<void> {
    const claim = await waitFor(`the claim's status.capacity at ${size}`, async () => {
      const c = await readClaim(s);
      return c.status?.capacity?.storage === size ? c : undefined;
    }, 60_000, 300);
    assert.deepEqual((claim.status?.conditions ?? []).map((c) => c.type), [], 'FileSystemResizePending is gone');
  }

  it('expands the volume of a running pod, updates the claim\'s status and records FileSystemResizeSuccessful', async function () {
    const s = await setUp();
    const pod = await runningPod(s, 'hx-grower');
    // Nothing to expand while the sizes agree.
    assert.equal((await expandCalls(s)).length, 0, 'no NodeExpandVolume before a resize');

    await resize(s, 32 * MiB, '32Mi');
    await finished(s, '32Mi');
    const event = await podEvent(s, 'hx-grower', 'FileSystemResizeSuccessful');
    assert.equal(event.type, 'Normal');
    assert.equal(event.message, `MountVolume.NodeExpandVolume succeeded for volume "${s.pv}" ${s.node.name}`);

    // What the driver was asked: the pod's publication, the staging path, the new size.
    const calls = await expandCalls(s);
    assert.ok(calls.length >= 1, 'NodeExpandVolume was called');
    const req = calls[0]!.Request as { volume_path?: string; staging_target_path?: string; capacity_range?: { required_bytes?: number } };
    assert.equal(calls[0]!.Error, '');
    assert.equal(req.volume_path, path.join(s.rootDir, 'pods', pod.metadata!.uid!, 'volumes', 'kubernetes.io~csi', s.pv, 'mount'));
    assert.equal(req.staging_target_path, deviceMountPath(s.rootDir, DRIVER, s.volumeHandle));
    assert.equal(req.capacity_range?.required_bytes, 32 * MiB);
    // Once done, later syncs (every 2 s here) leave it alone.
    await new Promise((r) => setTimeout(r, 5000));
    assert.equal((await expandCalls(s)).length, calls.length, 'not expanded again once the claim has the size');
  });

  it('expands a volume resized while no pod used it when a pod mounts it, before its container starts', async function () {
    const s = await setUp();
    await resize(s, 32 * MiB, '32Mi');
    const pod = await runningPod(s, 'hx-late');
    await finished(s, '32Mi');
    const event = await podEvent(s, 'hx-late', 'FileSystemResizeSuccessful');
    const started = pod.status?.containerStatuses?.[0]?.state?.running?.startedAt;
    assert.ok(started, 'the container runs');
    const expandedAt = event.firstTimestamp ?? event.eventTime;
    assert.ok(expandedAt && new Date(expandedAt).getTime() <= new Date(started).getTime() + 999, `expanded (${String(expandedAt)}) before the container started (${String(started)})`);
    assert.equal((await expandCalls(s))[0]!.Error, '');
  });

  it('expands a block volume in use: NodeExpandVolume with a block capability on the pod\'s device', async function () {
    const s = await setUp([], { block: true });
    const pod = await runningPod(s, 'hx-block', { device: true });
    await resize(s, 32 * MiB, '32Mi');
    await finished(s, '32Mi');
    await podEvent(s, 'hx-block', 'FileSystemResizeSuccessful');
    const call = (await expandCalls(s)).find((c) => c.Error === '');
    assert.ok(call, 'NodeExpandVolume succeeded');
    assert.deepEqual(Object.keys(call.Request.volume_capability?.AccessType ?? {}), ['Block']);
    assert.equal(call.Request.volume_path, blockPaths(s.rootDir, s.pv, pod.metadata!.uid!).publishPath);
  });

  it('a NodeExpandVolume the driver refuses is a VolumeResizeFailed Warning on the pod; the claim keeps its size and condition, the pod runs on', async function () {
    // The node side refuses above 20Mi, the controller side allows it (as a driver whose node cannot grow the file system that far).
    const s = await setUp([`--max-volume-size-node=${20 * MiB}`]);
    await runningPod(s, 'hx-stuck');
    await resize(s, 32 * MiB, '32Mi');
    const event = await podEvent(s, 'hx-stuck', 'VolumeResizeFailed');
    assert.equal(event.type, 'Warning');
    // Upstream's words, with the plugin that failed named by the core.
    assert.match(event.message ?? '', new RegExp(`^NodeExpandVolume\\.NodeExpandVolume failed for volume "${s.pv}" : plugin 'csi-grpc' \\(hook expandVolume\\[csi\\]\\): Expander\\.NodeExpand failed to expand the volume : NodeExpandVolume: rpc error: code = OutOfRange`));
    const claim = await readClaim(s);
    assert.equal(claim.status?.capacity?.storage, '16Mi');
    assert.deepEqual((claim.status?.conditions ?? []).map((c) => c.type), ['FileSystemResizePending']);
    // Retried on later syncs.
    await waitFor('NodeExpandVolume tried again', async () => (await expandCalls(s)).length >= 2, 30_000, 300);
    assert.equal((await suite.core.readNamespacedPod({ name: 'hx-stuck', namespace: s.ns })).status?.phase, 'Running');
  });
});
