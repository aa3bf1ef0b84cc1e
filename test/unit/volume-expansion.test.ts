import assert from 'node:assert/strict';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod } from '@kubernetes/client-node';
import { createHooks, type VolumeExpandOutcome, type VolumeExpandRequest } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ObjectSource } from '../../core/objects/object-source.ts';
import type { StorageObjectSource } from '../../core/objects/storage-objects.ts';
import { nodeExpansionNeeded, VolumeExpansion } from '../../core/volumes/volume-expansion.ts';
import { expandPersistentVolume } from '../../plugins/csi-grpc/persistent-expansion.ts';
import type { CsiDriverClient } from '../../plugins/csi-grpc/driver-client.ts';

const MiB = 1024 * 1024;

function claimOf(statusSize: string, more: Partial<V1PersistentVolumeClaim['status']> = {}): V1PersistentVolumeClaim {
  return {
    metadata: { name: 'data', namespace: 'ns', uid: 'claim-uid', resourceVersion: '7' },
    spec: { volumeName: 'pv-1', resources: { requests: { storage: '32Mi' } } },
    status: { phase: 'Bound', capacity: { storage: statusSize }, conditions: [{ type: 'FileSystemResizePending', status: 'True' }], ...more },
  };
}

function pvOf(size: string): V1PersistentVolume {
  return {
    metadata: { name: 'pv-1' },
    spec: { capacity: { storage: size }, accessModes: ['ReadWriteOnce'], claimRef: { namespace: 'ns', name: 'data', uid: 'claim-uid' }, csi: { driver: 'd', volumeHandle: 'h', fsType: 'ext4' }, mountOptions: ['noatime'] },
  };
}

function podOf(readOnly = false): V1Pod {
  return {
    metadata: { name: 'web-0', namespace: 'ns', uid: 'pod-uid' },
    spec: {
      nodeName: 'node-a',
      containers: [{ name: 'main', volumeMounts: [{ name: 'data', mountPath: '/data' }] }],
      volumes: [{ name: 'data', persistentVolumeClaim: { claimName: 'data', readOnly } }],
    },
  };
}

/** The storage API as the volume manager hands it over: the claim and PV as they are now, reads counted. */
function storageOf(objects: { claim: V1PersistentVolumeClaim; pv: V1PersistentVolume }): StorageObjectSource & { reads: number } {
  return {
    reads: 0,
    async persistentVolumeClaim() {
      this.reads++;
      return objects.claim;
    },
    async persistentVolume() {
      return objects.pv;
    },
    async csiDriver() {
      return undefined;
    },
    async volumeAttachment() {
      return undefined;
    },
  };
}

/** A VolumeExpansion whose provider answers `answer` (or throws it), with the claim writes and events it made. */
function harness(answer: (r: VolumeExpandRequest) => Promise<VolumeExpandOutcome>, opts: { tap?: boolean; failWrite?: boolean } = {}) {
  const hooks = createHooks();
  const asked: VolumeExpandRequest[] = [];
  if (opts.tap !== false) hooks.expandVolume.for('csi').tapPromise('fake-csi', async (r) => {
    asked.push(r);
    return answer(r);
  });
  const writes: Array<{ claim: string; size: string }> = [];
  const events: string[] = [];
  const expansion = new VolumeExpansion({
    hooks,
    claimStatus: {
      async markResizeFinished(claim, size) {
        if (opts.failWrite) throw new Error('conflict');
        writes.push({ claim: claim.metadata!.name!, size });
      },
    },
    event: (object, type, reason, message) => events.push(`${object.kind} ${type} ${reason}: ${message}`),
    podEventRef: (pod) => ({ kind: 'Pod', name: pod.metadata!.name! }),
    logger: silentLogger(),
  });
  return { expansion, asked, writes, events };
}

const mounted = { name: 'data', type: 'csi', result: { path: '/pods/u/volumes/kubernetes.io~csi/pv-1/mount', data: { persistent: true } } };
const objects = {} as ObjectSource;

describe('volume expansion, node side: when to expand', function () {
  it('expands when the PV grew above the claim\'s status capacity, not when they agree or the PV is smaller', function () {
    assert.deepEqual(nodeExpansionNeeded(claimOf('16Mi'), pvOf('32Mi')), { expand: true, newSize: '32Mi', newSizeBytes: 32 * MiB, oldSizeBytes: 16 * MiB });
    assert.deepEqual(nodeExpansionNeeded(claimOf('32Mi'), pvOf('32Mi')), { expand: false });
    assert.deepEqual(nodeExpansionNeeded(claimOf('1Gi'), pvOf('1024Mi')), { expand: false }, 'the same size written another way');
    assert.deepEqual(nodeExpansionNeeded(claimOf('32Mi'), pvOf('16Mi')), { expand: false });
    assert.deepEqual(nodeExpansionNeeded(claimOf('16Mi'), { spec: {} }), { expand: false }, 'a PV without a capacity');
  });
});

describe('volume expansion, node side: what the node does', function () {
  it('asks the provider for the PV\'s size, then writes it into the claim\'s status and records FileSystemResizeSuccessful on the pod and the claim', async function () {
    const h = harness(async () => 'expanded');
    const storage = storageOf({ claim: claimOf('16Mi'), pv: pvOf('32Mi') });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.equal(h.asked.length, 1);
    assert.equal(h.asked[0]!.newSizeBytes, 32 * MiB);
    assert.equal(h.asked[0]!.volumeName, 'data');
    assert.equal(h.asked[0]!.persistentVolume.volume.metadata!.name, 'pv-1');
    assert.deepEqual(h.writes, [{ claim: 'data', size: '32Mi' }]);
    assert.deepEqual(h.events, [
      'Pod Normal FileSystemResizeSuccessful: MountVolume.NodeExpandVolume succeeded for volume "pv-1" node-a',
      'PersistentVolumeClaim Normal FileSystemResizeSuccessful: MountVolume.NodeExpandVolume succeeded for volume "pv-1" node-a',
    ]);
  });

  it('does nothing while the sizes agree', async function () {
    const h = harness(async () => 'expanded');
    await h.expansion.sync(podOf(), mounted, { storage: storageOf({ claim: claimOf('32Mi'), pv: pvOf('32Mi') }), objects });
    assert.deepEqual([h.asked.length, h.writes, h.events], [0, [], []]);
  });

  it('a failure is a VolumeResizeFailed Warning on the pod, the claim untouched, and the next sync tries again', async function () {
    const h = harness(async () => {
      throw new Error('Expander.NodeExpand failed to expand the volume : NodeExpandVolume: rpc error: code = Internal desc = disk full');
    });
    const storage = storageOf({ claim: claimOf('16Mi'), pv: pvOf('32Mi') });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.equal(h.asked.length, 2, 'retried on the next sync');
    assert.deepEqual(h.writes, []);
    assert.deepEqual(h.events[0], 'Pod Warning VolumeResizeFailed: NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : Expander.NodeExpand failed to expand the volume : NodeExpandVolume: rpc error: code = Internal desc = disk full');
  });

  it('a claim status that cannot be written is a VolumeResizeFailed Warning, retried', async function () {
    const h = harness(async () => 'expanded', { failWrite: true });
    const storage = storageOf({ claim: claimOf('16Mi'), pv: pvOf('32Mi') });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.equal(h.asked.length, 2);
    assert.ok(h.events.includes('Pod Warning VolumeResizeFailed: NodeExpandVolume.NodeExpandVolume failed for volume "pv-1" : mountVolume.NodeExpandVolume update PVC status failed : conflict'), h.events.join('\n'));
  });

  it('a provider that needs nothing from the node leaves the claim as it is and is not asked again for that size', async function () {
    const h = harness(async () => 'not-supported');
    const objs = { claim: claimOf('16Mi'), pv: pvOf('32Mi') };
    const storage = storageOf(objs);
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.equal(h.asked.length, 1);
    assert.deepEqual([h.writes, h.events], [[], []]);
    objs.pv = pvOf('64Mi');
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.equal(h.asked.length, 2, 'a larger size is asked for');
  });

  it('a read-only claim gets FileSystemResizeFailed once, on the pod and the claim, and the provider is not asked', async function () {
    const h = harness(async () => 'expanded');
    const storage = storageOf({ claim: claimOf('16Mi'), pv: pvOf('32Mi') });
    await h.expansion.sync(podOf(true), mounted, { storage, objects });
    await h.expansion.sync(podOf(true), mounted, { storage, objects });
    assert.equal(h.asked.length, 0);
    assert.deepEqual(h.events, [
      'Pod Warning FileSystemResizeFailed: MountVolume.NodeExpandVolume failed for volume "pv-1" requested read-only file system',
      'PersistentVolumeClaim Warning FileSystemResizeFailed: MountVolume.NodeExpandVolume failed for volume "pv-1" requested read-only file system',
    ]);
  });

  it('a volume type no provider expands does not even read the claim', async function () {
    const h = harness(async () => 'expanded', { tap: false });
    const storage = storageOf({ claim: claimOf('16Mi'), pv: pvOf('32Mi') });
    await h.expansion.sync(podOf(), mounted, { storage, objects });
    assert.deepEqual([storage.reads, h.events], [0, []]);
  });
});

describe('csi-grpc: NodeExpandVolume for a PersistentVolume', function () {
  function fakeClient(capabilities: string[], fail?: Error) {
    const requests: object[] = [];
    const client = {
      nodeCapabilities: async () => new Set(capabilities),
      nodeExpandVolume: async (req: object) => {
        requests.push(req);
        if (fail) throw fail;
        return { capacityBytes: '0' };
      },
    } as unknown as CsiDriverClient;
    return { client, requests };
  }
  const data = { persistent: true as const, driver: 'd', volumeHandle: 'h', targetPath: '/pods/u/volumes/kubernetes.io~csi/pv-1/mount', deviceMountPath: '/plugins/kubernetes.io/csi/d/sha/globalmount' };

  it('calls it with the publication, the staging path, the new size, the capability and the secrets', async function () {
    const { client, requests } = fakeClient(['STAGE_UNSTAGE_VOLUME', 'EXPAND_VOLUME']);
    assert.equal(await expandPersistentVolume({ client, pv: pvOf('32Mi'), data, newSizeBytes: 32 * MiB, secrets: { k: 'v' } }), 'expanded');
    assert.deepEqual(requests, [{
      volumeId: 'h', volumePath: data.targetPath, stagingTargetPath: data.deviceMountPath,
      capacityRange: { requiredBytes: String(32 * MiB), limitBytes: '0' },
      volumeCapability: { mount: { fsType: 'ext4', mountFlags: ['noatime'] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } },
      secrets: { k: 'v' },
    }]);
  });

  it('is not supported by a driver without the node EXPAND_VOLUME capability (nothing is called)', async function () {
    const { client, requests } = fakeClient(['STAGE_UNSTAGE_VOLUME']);
    assert.equal(await expandPersistentVolume({ client, pv: pvOf('32Mi'), data, newSizeBytes: 32 * MiB, secrets: {} }), 'not-supported');
    assert.deepEqual(requests, []);
  });

  it('words a failure as upstream\'s expander', async function () {
    const { client } = fakeClient(['EXPAND_VOLUME'], new Error('NodeExpandVolume: rpc error: code = OutOfRange desc = too big'));
    await assert.rejects(expandPersistentVolume({ client, pv: pvOf('32Mi'), data, newSizeBytes: 32 * MiB, secrets: {} }), { message: 'Expander.NodeExpand failed to expand the volume : NodeExpandVolume: rpc error: code = OutOfRange desc = too big' });
  });
});
