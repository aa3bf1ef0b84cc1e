import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { AppsV1Api, PatchStrategy, setHeaderOptions, StorageV1Api, type V1Pod, type V1PodSecurityContext } from '@kubernetes/client-node';
import { isMountPoint, mountsUnder } from '../../core/volumes/mount-utils.ts';
import { CONTEXT_KEYS } from '../../plugins/csi-grpc/inline-volume.ts';
import { attachmentName, blockPaths, deviceMountPath } from '../../plugins/csi-grpc/persistent-paths.ts';
import type { SuiteNode } from '../support/cluster-suite.ts';
import { csiStorageSuite, HOSTPATH_DRIVER } from '../support/csi-storage-suite.ts';
import type { TestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Persistent volumes through CSI on the real control plane (v1.28.7) with the upstream CSI
 * hostpath driver: a volume made with the driver's CreateVolume (playing the external-provisioner),
 * a pre-bound PV and PVC, and pods on a kubelet-ts node that use the claim. What a StatefulSet
 * relies on: data written by one pod is read by the next pod of the same claim; the volume is
 * staged once at upstream's global mount, published per pod, unpublished and unstaged when
 * the last pod goes; a claim that does not exist keeps the pod Pending with upstream's event.
 */
describe('CSI persistent volumes (PVC → PV → stage/publish) on the real control plane', function () {
  this.timeout(300_000);
  const { suite, storageNode, preBoundVolume, boundClaim } = csiStorageSuite('kts-pv-');
  const DRIVER = HOSTPATH_DRIVER;

  /** The CSIDriver object as the driver's deployment makes it (no attach unless asked: there is no external-attacher here; a test plays it). */
  async function csiDriverObject(more: { fsGroupPolicy?: string; attachRequired?: boolean } = {}): Promise<void> {
    const storage = suite.cp.admin.makeApiClient(StorageV1Api);
    await storage.deleteCSIDriver({ name: DRIVER }).catch(() => {});
    await storage.createCSIDriver({ body: { metadata: { name: DRIVER }, spec: { attachRequired: false, podInfoOnMount: true, volumeLifecycleModes: ['Persistent', 'Ephemeral'], ...more } } });
    suite.onCleanup(() => storage.deleteCSIDriver({ name: DRIVER }));
  }

  /**
   * A busybox pod on `node` running `script` with the claim at /data (a block claim with
   * `device`: as the device /dev/xvda); deleted (and waited for) after the test.
   */
  async function claimPod(node: SuiteNode, ns: string, name: string, claim: string, script: string, securityContext?: V1PodSecurityContext, opts: { device?: boolean } = {}): Promise<void> {
    const use = opts.device ? { volumeDevices: [{ name: 'data', devicePath: '/dev/xvda' }] } : { volumeMounts: [{ name: 'data', mountPath: '/data' }] };
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          nodeName: node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, ...(securityContext ? { securityContext } : {}),
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', script], ...use }],
          volumes: [{ name: 'data', persistentVolumeClaim: { claimName: claim } }],
        },
      },
    });
    suite.onCleanup(() => deletePod(ns, name));
  }

  /** A graceful delete: the kubelet removes the pod from the API only once its volumes are torn down (upstream's PodCouldBeDeleted). */
  async function deletePod(ns: string, name: string): Promise<void> {
    await suite.core.deleteNamespacedPod({ name, namespace: ns }).catch(() => {});
    await waitFor(`pod ${ns}/${name} gone`, async () => (await suite.core.readNamespacedPod({ name, namespace: ns }).then(() => false, () => true)), 60_000, 300);
  }

  const readPod = (ns: string, name: string) => suite.core.readNamespacedPod({ name, namespace: ns });
  const running = (ns: string, name: string) => waitFor(`pod ${ns}/${name} Running`, async () => {
    const p = await readPod(ns, name);
    return p.status?.phase === 'Running' && p.status.containerStatuses?.[0]?.state?.running ? p : undefined;
  }, 90_000, 300);

  async function exec(kubelet: TestKubelet, pod: V1Pod, cmd: string[]): Promise<{ out: string; code: number }> {
    const id = pod.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
    const r = await kubelet.kubelet.runtime.execSync(id, cmd, 10);
    return { out: Buffer.from(r.stdout).toString().trim(), code: r.exitCode };
  }

  it('stages once, publishes per pod, keeps the data from one pod of a claim to the next, and unstages after the last', async function () {
    const { node, kubelet, driver, rootDir } = await storageNode('pv');
    await csiDriverObject();
    const ns = await suite.namespace('pv');
    const { pv, volumeHandle } = await boundClaim(driver, ns, 'data');
    const globalMount = deviceMountPath(rootDir, DRIVER, volumeHandle);

    await claimPod(node, ns, 'writer', 'data', 'exec sleep 3600');
    const writer = await running(ns, 'writer');
    const target = path.join(rootDir, 'pods', writer.metadata!.uid!, 'volumes', 'kubernetes.io~csi', pv, 'mount');
    assert.deepEqual(await exec(kubelet, writer, ['sh', '-c', 'echo kept-by-the-claim > /data/f && cat /data/f']), { out: 'kept-by-the-claim', code: 0 });
    assert.ok(await isMountPoint(target), `the pod's publication ${target} is a mount point`);
    assert.ok((await fs.stat(globalMount)).isDirectory(), `the global mount ${globalMount} exists`);
    assert.deepEqual(JSON.parse(await fs.readFile(path.join(path.dirname(globalMount), 'vol_data.json'), 'utf8')), { driverName: DRIVER, volumeHandle });

    const stages = (await driver.calls('NodeStageVolume')).filter((c) => c.Request.volume_id === volumeHandle);
    assert.equal(stages.length, 1, 'staged once');
    assert.equal(stages[0]!.Error, '');
    assert.equal(stages[0]!.Request.staging_target_path, globalMount);
    assert.deepEqual(stages[0]!.Request.volume_context, { kind: 'test' });
    const publishes = (await driver.calls('NodePublishVolume')).filter((c) => c.Request.volume_id === volumeHandle);
    assert.equal(publishes.length, 1);
    const pub = publishes[0]!.Request;
    assert.equal(pub.target_path, target);
    assert.equal(pub.staging_target_path, globalMount);
    // The CSIDriver says podInfoOnMount: the pod's identity, and ephemeral "false" for a PV.
    assert.deepEqual(pub.volume_context, {
      kind: 'test', [CONTEXT_KEYS.ephemeral]: 'false', [CONTEXT_KEYS.podName]: 'writer', [CONTEXT_KEYS.podNamespace]: ns,
      [CONTEXT_KEYS.podUID]: writer.metadata!.uid!, [CONTEXT_KEYS.serviceAccount]: 'default',
    });
    // ReadWriteOnce on a driver with SINGLE_NODE_MULTI_WRITER: SINGLE_NODE_MULTI_WRITER (7), as upstream maps it.
    assert.equal(pub.volume_capability?.access_mode?.mode, 7);

    // NodeGetVolumeStats in /stats/summary: the pod's volume by its name, with its claim, sized as the driver says.
    const summary = await kubelet.kubelet.stats.summary({ maxAgeMs: 0 });
    const vol = summary.pods.find((p) => p.podRef.uid === writer.metadata!.uid)?.volume?.find((v) => v.name === 'data');
    assert.ok(vol, 'the claim\'s volume is in the pod\'s summary');
    assert.deepEqual(vol.pvcRef, { name: 'data', namespace: ns });
    const statsCall = (await driver.calls('NodeGetVolumeStats')).find((c) => c.Request.volume_id === volumeHandle && c.Request.volume_path === target && c.Error === '');
    assert.ok(statsCall, 'NodeGetVolumeStats on the pod\'s publication');
    // The hostpath driver reports the filesystem its directory is on: the figures are its answer, unit by unit.
    const bytes = statsCall.Response.usage.find((u: { unit: number }) => u.unit === 1);
    assert.deepEqual([vol.capacityBytes, vol.availableBytes, vol.usedBytes], [bytes.total, bytes.available, bytes.used ?? 0]);
    assert.ok(vol.inodes! > 0);
    // The same figures as upstream's kubelet_volume_stats_* gauges on /metrics, by claim.
    const metrics = await kubelet.kubelet.metrics.registry.metrics();
    const series = (name: string) => new RegExp(`^${name}\\{namespace="${ns}",persistentvolumeclaim="data"\\} (\\d+)$`, 'm').exec(metrics)?.[1];
    // The hostpath driver (v1.x) answers its own publication with abnormal "The volume isn't mounted": the gauge says what the driver said.
    const abnormal = statsCall.Response.volume_condition?.abnormal === true ? 1 : 0;
    assert.deepEqual([series('kubelet_volume_stats_capacity_bytes'), series('kubelet_volume_stats_available_bytes'), series('kubelet_volume_stats_health_status_abnormal')].map(Number), [vol.capacityBytes, vol.availableBytes, abnormal]);
    const inUse = `kubernetes.io/csi/${DRIVER}^${volumeHandle}`;
    await waitFor('the Node reports the volume in volumesInUse', async () => (await suite.core.readNode({ name: node.name })).status?.volumesInUse?.includes(inUse), 20_000, 300);

    await deletePod(ns, 'writer');
    assert.equal(await isMountPoint(target), false, 'unpublished: the pod mount is gone');
    await waitFor('volumesInUse cleared', async () => !(await suite.core.readNode({ name: node.name })).status?.volumesInUse?.length, 20_000, 300);
    await assert.rejects(fs.stat(path.dirname(target)), 'the pod volume dir is removed');
    await waitFor('the global mount removed after NodeUnstageVolume', async () => !(await fs.stat(path.dirname(globalMount)).then(() => true, () => false)), 10_000);
    assert.ok((await driver.calls('NodeUnstageVolume')).some((c) => c.Request.volume_id === volumeHandle && c.Request.staging_target_path === globalMount && c.Error === ''));

    await claimPod(node, ns, 'reader', 'data', 'exec sleep 3600');
    const reader = await running(ns, 'reader');
    assert.deepEqual(await exec(kubelet, reader, ['cat', '/data/f']), { out: 'kept-by-the-claim', code: 0 }, 'the next pod of the claim reads what the first wrote');
    assert.equal((await driver.calls('NodeStageVolume')).filter((c) => c.Request.volume_id === volumeHandle).length, 2, 'staged again for the new pod (it had been unstaged)');
    await deletePod(ns, 'reader');
    assert.deepEqual(await mountsUnder(rootDir), [], 'nothing left mounted under the kubelet root dir');
    await waitFor('the global mount removed again', async () => !(await fs.stat(path.dirname(globalMount)).then(() => true, () => false)), 10_000);
  });

  it('a block volume (volumeMode Block): staged and published at upstream\'s volumeDevices paths, a device in the container that keeps its bytes from one pod to the next; nothing left after', async function () {
    const { node, kubelet, driver, rootDir } = await storageNode('pvblock');
    await csiDriverObject();
    const ns = await suite.namespace('pvblock');
    const { pv, volumeHandle } = await boundClaim(driver, ns, 'disk', { block: true });
    const devices = path.join(rootDir, 'plugins', 'kubernetes.io', 'csi', 'volumeDevices');

    await claimPod(node, ns, 'writer', 'disk', 'exec sleep 3600', undefined, { device: true });
    const writer = await running(ns, 'writer');
    const { stagingPath, publishPath } = blockPaths(rootDir, pv, writer.metadata!.uid!);
    // A block device in the container, written raw and read back (no filesystem on it).
    const written = await exec(kubelet, writer, ['sh', '-c', '[ -b /dev/xvda ] && printf raw-bytes-kept | dd of=/dev/xvda conv=fsync 2>/dev/null && head -c 14 /dev/xvda']);
    assert.deepEqual(written, { out: 'raw-bytes-kept', code: 0 });
    const stage = (await driver.calls('NodeStageVolume')).find((c) => c.Request.volume_id === volumeHandle);
    assert.equal(stage?.Request.staging_target_path, stagingPath);
    // The driver logs the capability's oneof as Go marshals it: {"AccessType":{"Block":{}}, ...}.
    const accessType = (call: typeof stage) => Object.keys(call?.Request.volume_capability?.AccessType ?? {});
    assert.deepEqual(accessType(stage), ['Block'], 'staged with a block capability');
    const publish = (await driver.calls('NodePublishVolume')).find((c) => c.Request.volume_id === volumeHandle);
    assert.equal(publish?.Request.target_path, publishPath);
    assert.equal(publish?.Request.staging_target_path, stagingPath);
    assert.deepEqual(accessType(publish), ['Block'], 'published with a block capability');
    assert.ok((await fs.stat(publishPath)).isBlockDevice(), `the publication ${publishPath} is a block device on the node`);

    await deletePod(ns, 'writer');
    await waitFor('unpublished and unstaged after the last pod', async () => !(await fs.stat(path.join(devices, pv)).then(() => true, () => false)), 10_000);
    assert.ok((await driver.calls('NodeUnstageVolume')).some((c) => c.Request.volume_id === volumeHandle && c.Request.staging_target_path === stagingPath && c.Error === ''));
    await assert.rejects(fs.stat(publishPath), 'the publication is removed');

    await claimPod(node, ns, 'reader', 'disk', 'exec sleep 3600', undefined, { device: true });
    const reader = await running(ns, 'reader');
    assert.deepEqual(await exec(kubelet, reader, ['head', '-c', '14', '/dev/xvda']), { out: 'raw-bytes-kept', code: 0 }, 'the next pod of the claim reads the bytes the first wrote');
    await deletePod(ns, 'reader');
    assert.deepEqual(await mountsUnder(rootDir), [], 'nothing left mounted under the kubelet root dir');
    await waitFor('the volume\'s dirs removed', async () => (await fs.readdir(devices).catch(() => [] as string[])).every((d) => d === 'staging' || d === 'publish') && (await fs.readdir(path.join(devices, 'staging')).catch(() => [])).length === 0 && (await fs.readdir(path.join(devices, 'publish')).catch(() => [])).length === 0, 10_000);
  });

  it('attachRequired: the pod waits for the attach/detach controller\'s VolumeAttachment to be attached (the test plays the external-attacher); staged with its attachmentMetadata; detached after the pod goes', async function () {
    const { node, driver } = await storageNode('pvattach');
    await csiDriverObject({ attachRequired: true });
    const ns = await suite.namespace('pvattach');
    const { volumeHandle } = await boundClaim(driver, ns, 'data');
    const storage = suite.cp.admin.makeApiClient(StorageV1Api);
    const vaName = attachmentName(volumeHandle, DRIVER, node.name);
    await claimPod(node, ns, 'attached', 'data', 'exec sleep 3600');
    // The control plane's attach/detach controller asks for the attachment, by upstream's name.
    const va = await waitFor(`VolumeAttachment ${vaName}`, () => storage.readVolumeAttachment({ name: vaName }).catch(() => undefined), 60_000, 300);
    assert.equal(va.spec?.attacher, DRIVER);
    assert.equal(va.spec?.nodeName, node.name);
    // Not attached yet: the kubelet neither stages nor starts the container.
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal((await driver.calls('NodeStageVolume')).filter((c) => c.Request.volume_id === volumeHandle).length, 0, 'not staged before the attachment');
    assert.equal((await readPod(ns, 'attached')).status?.phase, 'Pending');
    // The external-attacher's part: ControllerPublishVolume done, the attachment marked attached with its metadata.
    await storage.patchVolumeAttachmentStatus({ name: vaName, body: { status: { attached: true, attachmentMetadata: { devicePath: 'kts-attached-here' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    await running(ns, 'attached');
    const stage = (await driver.calls('NodeStageVolume')).find((c) => c.Request.volume_id === volumeHandle && c.Error === '');
    assert.deepEqual(stage?.Request.publish_context, { devicePath: 'kts-attached-here' }, 'the attachment metadata is the publish context');
    const publish = (await driver.calls('NodePublishVolume')).find((c) => c.Request.volume_id === volumeHandle && c.Error === '');
    assert.deepEqual(publish?.Request.publish_context, { devicePath: 'kts-attached-here' });
    // The controller reports it in the Node's volumesAttached, the node in volumesInUse.
    const unique = `kubernetes.io/csi/${DRIVER}^${volumeHandle}`;
    await waitFor('volumesAttached and volumesInUse on the Node', async () => {
      const st = (await suite.core.readNode({ name: node.name })).status;
      return st?.volumesAttached?.some((v) => v.name === unique) && st.volumesInUse?.includes(unique);
    }, 30_000, 300);
    // Once the pod is gone and the node no longer reports the volume in use, the controller detaches it.
    await deletePod(ns, 'attached');
    await waitFor('the VolumeAttachment deleted (detached)', async () => storage.readVolumeAttachment({ name: vaName }).then(() => false, () => true), 120_000, 500);
  });

  it('a StatefulSet of 2 replicas with volumeClaimTemplates keeps each replica\'s data when its pods are deleted and recreated', async function () {
    const { node, kubelet, driver } = await storageNode('pvsts');
    await csiDriverObject();
    const ns = await suite.namespace('pvsts');
    const apps = suite.cp.admin.makeApiClient(AppsV1Api);
    // No provisioner: a PV per replica, pre-bound to the claim the StatefulSet controller will make (<template>-<set>-<ordinal>).
    for (const ordinal of [0, 1]) await preBoundVolume(driver, ns, `data-web-${ordinal}`);
    await apps.createNamespacedStatefulSet({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          serviceName: 'web', replicas: 2, selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: {
              nodeSelector: { 'kubernetes.io/hostname': node.name }, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false,
              // Each replica writes its identity once; a recreated pod must find it.
              containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', '[ -f /data/id ] || echo "$(cat /etc/hostname)-$RANDOM$RANDOM" > /data/id; exec sleep 3600'], volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
            },
          },
          volumeClaimTemplates: [{ metadata: { name: 'data' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '16Mi' } } } }],
        },
      },
    });
    suite.onCleanup(async () => {
      await apps.deleteNamespacedStatefulSet({ name: 'web', namespace: ns }).catch(() => {});
      for (const n of ['web-0', 'web-1']) await deletePod(ns, n);
    });
    const ids = async () => {
      const out: string[] = [];
      for (const name of ['web-0', 'web-1']) {
        const p = await running(ns, name);
        const r = await exec(kubelet, p, ['cat', '/data/id']);
        assert.equal(r.code, 0);
        out.push(`${p.metadata!.uid}:${r.out}`);
      }
      return out;
    };
    const first = await ids();
    assert.match(first[0]!, /:web-0-\d+$/);
    assert.match(first[1]!, /:web-1-\d+$/);
    // The controller recreates a deleted replica under the same name: wait for the old one (its UID) to be gone.
    for (const [i, name] of ['web-0', 'web-1'].entries()) {
      const uid = first[i]!.split(':')[0];
      await suite.core.deleteNamespacedPod({ name, namespace: ns });
      await waitFor(`${name} replaced`, async () => (await readPod(ns, name).then((p) => p.metadata?.uid !== uid, () => true)), 60_000, 300);
    }
    const second = await ids();
    for (const i of [0, 1]) {
      const [uidBefore, idBefore] = first[i]!.split(':');
      const [uidAfter, idAfter] = second[i]!.split(':');
      assert.notEqual(uidAfter, uidBefore, 'a new pod');
      assert.equal(idAfter, idBefore, `web-${i} reads back what its first pod wrote`);
    }
  });

  /** A busybox pod on `node` with a generic ephemeral volume `scratch` (16Mi, no class) at /data, running `script`. */
  async function ephemeralPod(node: SuiteNode, ns: string, name: string, script: string): Promise<void> {
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name },
        spec: {
          nodeName: node.name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false,
          containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', script], volumeMounts: [{ name: 'scratch', mountPath: '/data' }] }],
          volumes: [{ name: 'scratch', ephemeral: { volumeClaimTemplate: { spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '16Mi' } } } } } }],
        },
      },
    });
    suite.onCleanup(() => deletePod(ns, name));
  }

  it("a generic ephemeral volume: the control plane's ephemeral volume controller makes the claim <pod>-<volume> owned by the pod, the pod runs on it, and the claim goes with the pod", async function () {
    const { node, kubelet, driver, rootDir } = await storageNode('pveph');
    await csiDriverObject();
    const ns = await suite.namespace('pveph');
    // No provisioner: the PV waits for the claim the controller will make.
    const { pv, volumeHandle } = await preBoundVolume(driver, ns, 'eph-scratch');
    await ephemeralPod(node, ns, 'eph', 'echo made-here > /data/f; exec sleep 3600');
    const pod = await running(ns, 'eph');

    const claim = await suite.core.readNamespacedPersistentVolumeClaim({ name: 'eph-scratch', namespace: ns });
    assert.deepEqual(claim.metadata?.ownerReferences?.map((o) => [o.kind, o.name, o.uid, o.controller]), [['Pod', 'eph', pod.metadata!.uid, true]]);
    assert.equal(claim.spec?.volumeName, pv);
    assert.deepEqual(await exec(kubelet, pod, ['cat', '/data/f']), { out: 'made-here', code: 0 });
    const target = path.join(rootDir, 'pods', pod.metadata!.uid!, 'volumes', 'kubernetes.io~csi', pv, 'mount');
    assert.ok(await isMountPoint(target), `published at upstream's path for the PV: ${target}`);
    assert.ok((await driver.calls('NodePublishVolume')).some((c) => c.Request.volume_id === volumeHandle && c.Request.target_path === target && c.Error === ''));

    await deletePod(ns, 'eph');
    assert.deepEqual(await mountsUnder(rootDir), [], 'unpublished and unstaged: nothing left mounted under the kubelet root dir');
    // The garbage collector removes the claim its owner left (and the Retain PV is Released).
    await waitFor('the claim removed with its pod', async () => suite.core.readNamespacedPersistentVolumeClaim({ name: 'eph-scratch', namespace: ns }).then(() => false, () => true), 60_000, 500);
  });

  it("refuses a generic ephemeral volume's claim that the pod does not own (a claim of that name made by someone else): Pending with upstream's FailedMount, no container", async function () {
    const { node } = await storageNode('pvephown');
    const ns = await suite.namespace('pvephown');
    // Someone else's claim under the name the pod's volume would get: the pod must never mount it.
    await suite.core.createNamespacedPersistentVolumeClaim({
      namespace: ns,
      body: { metadata: { name: 'eph-scratch' }, spec: { accessModes: ['ReadWriteOnce'], storageClassName: '', resources: { requests: { storage: '16Mi' } } } },
    });
    await ephemeralPod(node, ns, 'eph', 'exec sleep 3600');
    const event = await suite.podEvent(ns, 'eph', 'FailedMount', /pod is not owner/);
    assert.equal(event.type, 'Warning');
    assert.equal(event.message, `Unable to attach or mount volumes: unmounted volumes=[scratch], unattached volumes=[], failed to process volumes=[scratch]: PVC ${ns}/eph-scratch was not created for pod ${ns}/eph (pod is not owner)`);
    assert.equal((await readPod(ns, 'eph')).status?.phase, 'Pending');
    assert.deepEqual(await suite.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': ns } }), [], 'no container was created');
  });

  it('a restarted kubelet adopts the staged and published volume: no second stage or publish; deleting the pod then unpublishes and unstages', async function () {
    const { node, kubelet: first, driver, rootDir } = await storageNode('pvrestart');
    await csiDriverObject();
    const ns = await suite.namespace('pvrestart');
    const { volumeHandle } = await boundClaim(driver, ns, 'data');
    const globalMount = deviceMountPath(rootDir, DRIVER, volumeHandle);
    await claimPod(node, ns, 'db', 'data', 'exec sleep 3600');
    const before = await running(ns, 'db');
    assert.equal((await exec(first, before, ['sh', '-c', 'echo before-restart > /data/f'])).code, 0);
    const count = async (method: string) => (await driver.calls(method)).filter((c) => c.Request.volume_id === volumeHandle).length;
    assert.deepEqual([await count('NodeStageVolume'), await count('NodePublishVolume')], [1, 1]);

    // A kubelet that stops without tearing anything down (as after a crash), and a new one on the same root dir.
    await first.stop();
    const second = await suite.kubelet(node, { plugins: [['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 10 }]], config: { syncFrequencyMs: 2000 } });
    await waitFor('the new kubelet runs the pod', () => second.kubelet.pods().some((p) => p.metadata?.name === 'db'), 30_000);
    await new Promise((r) => setTimeout(r, 5000)); // a few syncs (syncFrequency 2 s)
    const after = await readPod(ns, 'db');
    assert.equal(after.status?.containerStatuses?.[0]?.containerID, before.status?.containerStatuses?.[0]?.containerID, 'the same container, adopted');
    assert.deepEqual([await count('NodeStageVolume'), await count('NodePublishVolume')], [1, 1], 'neither staged nor published again');
    assert.deepEqual(await exec(second, after, ['cat', '/data/f']), { out: 'before-restart', code: 0 });

    await deletePod(ns, 'db');
    assert.deepEqual(await mountsUnder(path.join(rootDir, 'pods')), [], 'no pod mount left');
    await waitFor('unstaged by the new kubelet', async () => (await count('NodeUnstageVolume')) === 1 && !(await fs.stat(path.dirname(globalMount)).then(() => true, () => false)), 10_000);
  });

  it('a pod deleted while the kubelet was down: the restarted kubelet stops it, unpublishes and unstages what it left', async function () {
    const { node, kubelet: first, driver, rootDir } = await storageNode('pvgone');
    await csiDriverObject();
    const ns = await suite.namespace('pvgone');
    const { volumeHandle } = await boundClaim(driver, ns, 'data');
    const globalMount = deviceMountPath(rootDir, DRIVER, volumeHandle);
    await claimPod(node, ns, 'gone', 'data', 'exec sleep 3600');
    const pod = await running(ns, 'gone');
    const target = (await mountsUnder(path.join(rootDir, 'pods', pod.metadata!.uid!)))[0];
    assert.ok(target, 'the publication is mounted');
    await first.stop();
    // Removed from the API at once (a force delete), while no kubelet runs the node.
    await suite.core.deleteNamespacedPod({ name: 'gone', namespace: ns, gracePeriodSeconds: 0 });
    await suite.kubelet(node, { plugins: [['csi-grpc', { rescanSeconds: 0.3, callTimeoutSeconds: 10 }]], config: { syncFrequencyMs: 2000 } });
    await waitFor('the orphaned pod\'s volume unpublished and unstaged', async () => {
      const left = await mountsUnder(path.join(rootDir, 'pods'));
      return left.length === 0 && !(await fs.stat(path.dirname(globalMount)).then(() => true, () => false));
    }, 60_000, 500);
    assert.ok((await driver.calls('NodeUnpublishVolume')).some((c) => c.Request.volume_id === volumeHandle && c.Request.target_path === target && c.Error === ''));
    assert.ok((await driver.calls('NodeUnstageVolume')).some((c) => c.Request.volume_id === volumeHandle && c.Error === ''));
    await waitFor('its container stopped and removed', async () => (await suite.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': ns } })).length === 0, 30_000);
  });

  it("fsGroup: with the CSIDriver's fsGroupPolicy File a non-root container writes to the claim as the pod's group; with the default policy and no fsType the volume keeps the driver's group", async function () {
    const { node, kubelet, driver } = await storageNode('fsgroup');
    const ns = await suite.namespace('csi-fsgroup');
    await csiDriverObject({ fsGroupPolicy: 'File' });
    await boundClaim(driver, ns, 'shared');
    const writer = { runAsUser: 1000, runAsGroup: 1000, fsGroup: 2345 };
    await claimPod(node, ns, 'grouped', 'shared', 'echo ok > /data/by-1000 && exec sleep 3600', writer);
    const grouped = await running(ns, 'grouped');
    // The volume's root: the group, group rwx and setgid; what user 1000 wrote inherits the group.
    const st = await exec(kubelet, grouped, ['stat', '-c', '%g %A', '/data', '/data/by-1000']);
    assert.equal(st.code, 0, st.out);
    const [root, file] = st.out.split('\n');
    assert.match(root!, /^2345 drwxrws/);
    assert.match(file!, /^2345 -/);
    await deletePod(ns, 'grouped');

    await csiDriverObject();
    await boundClaim(driver, ns, 'plain');
    await claimPod(node, ns, 'ungrouped', 'plain', 'exec sleep 3600', writer);
    const ungrouped = await running(ns, 'ungrouped');
    const [gid] = (await exec(kubelet, ungrouped, ['stat', '-c', '%g', '/data'])).out.split('\n');
    assert.equal(gid, '0', 'the default policy without an fsType changes nothing (upstream)');
  });

  it("passes the Secrets a PV's nodeStageSecretRef and nodePublishSecretRef name (in their own namespace) to the driver; a missing one keeps the pod Pending with FailedMount naming it", async function () {
    const { node, driver } = await storageNode('pvsecret');
    await csiDriverObject();
    const ns = await suite.namespace('pvsecret');
    // The driver's secrets live apart from the pod's namespace, as a storage admin keeps them.
    const store = await suite.namespace('pvsecret-store');
    await suite.core.createNamespacedSecret({ namespace: store, body: { metadata: { name: 'stage-creds' }, stringData: { 'stage-key': 'stage-value' } } });
    await suite.core.createNamespacedSecret({ namespace: store, body: { metadata: { name: 'publish-creds' }, data: { 'publish-key': Buffer.from('publish-value').toString('base64') } } });
    const { volumeHandle } = await boundClaim(driver, ns, 'data', {
      csi: { nodeStageSecretRef: { name: 'stage-creds', namespace: store }, nodePublishSecretRef: { name: 'publish-creds', namespace: store } },
    });
    await claimPod(node, ns, 'with-secrets', 'data', 'exec sleep 3600');
    await running(ns, 'with-secrets');
    // The driver logs requests with secret values stripped (protosanitizer): the keys say which Secret came.
    const call = async (method: string) => (await driver.calls(method)).find((c) => c.Request.volume_id === volumeHandle && c.Error === '');
    assert.deepEqual(Object.keys((await call('NodeStageVolume'))?.Request.secrets ?? {}), ['stage-key']);
    assert.deepEqual(Object.keys((await call('NodePublishVolume'))?.Request.secrets ?? {}), ['publish-key']);
    await deletePod(ns, 'with-secrets');

    await boundClaim(driver, ns, 'locked', { csi: { nodePublishSecretRef: { name: 'no-such-creds', namespace: store } } });
    await claimPod(node, ns, 'no-secret', 'locked', 'exec sleep 3600');
    await suite.podEvent(ns, 'no-secret', 'FailedMount', new RegExp(`nodePublishSecretRef: secret "${store}/no-such-creds" not found`));
    assert.equal((await readPod(ns, 'no-secret')).status?.phase, 'Pending');
  });

  it('keeps a pod whose claim does not exist Pending, with upstream\'s FailedMount event and no container', async function () {
    const { node } = await storageNode('pvmiss');
    const ns = await suite.namespace('pvmiss');
    await claimPod(node, ns, 'orphan', 'nope', 'exec sleep 3600');
    const event = await suite.podEvent(ns, 'orphan', 'FailedMount', /not found/);
    assert.equal(event.type, 'Warning');
    assert.equal(event.message, `Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ${ns}/nope: failed to fetch PVC from API server: persistentvolumeclaims "nope" not found`);
    // The status is posted on its own schedule: it may reach the API server just after the event.
    const p = await waitFor('the pod\'s status with its container waiting', async () => {
      const pod = await readPod(ns, 'orphan');
      return (pod.status?.containerStatuses?.length ?? 0) > 0 && pod;
    }, 15_000, 250);
    assert.equal(p.status?.phase, 'Pending');
    assert.equal(p.status?.containerStatuses?.[0]?.state?.waiting?.reason, 'ContainerCreating');
    const containers = await suite.runtime.listContainers({ labelSelector: { 'io.kubernetes.pod.namespace': ns } });
    assert.deepEqual(containers, [], 'no container was created');
  });
});
