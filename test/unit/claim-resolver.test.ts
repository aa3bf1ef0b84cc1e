import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1PersistentVolume, V1PersistentVolumeClaim, V1Pod, V1Volume } from '@kubernetes/client-node';
import { createHooks, type VolumeMountRequest } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import type { StorageObjectSource } from '../../core/objects/storage-objects.ts';
import { persistentVolumeType, resolveClaim } from '../../core/volumes/claim-resolver.ts';
import { VolumeManager, VolumeSetupError } from '../../core/volumes/volume-manager.ts';

/** An API of claims and volumes in memory; a missing one fails as the API server's 404 reads. */
function fakeStorage(claims: V1PersistentVolumeClaim[], volumes: V1PersistentVolume[]): StorageObjectSource {
  return {
    async persistentVolumeClaim(ns, name) {
      const c = claims.find((x) => x.metadata?.namespace === ns && x.metadata?.name === name);
      if (!c) throw new Error(`persistentvolumeclaims "${name}" not found`);
      return c;
    },
    async persistentVolume(name) {
      const v = volumes.find((x) => x.metadata?.name === name);
      if (!v) throw new Error(`persistentvolumes "${name}" not found`);
      return v;
    },
    csiDriver: async () => undefined,
    volumeAttachment: async () => undefined,
  };
}

const claim = (name: string, extra: { phase?: string; volumeName?: string; deleting?: boolean; owner?: string } = {}): V1PersistentVolumeClaim => ({
  metadata: { name, namespace: 'ns', uid: `uid-${name}`, ...(extra.deleting ? { deletionTimestamp: new Date() } : {}), ...(extra.owner ? { ownerReferences: [{ apiVersion: 'v1', kind: 'Pod', name: 'p', uid: extra.owner, controller: true }] } : {}) },
  spec: { ...(extra.volumeName !== undefined ? { volumeName: extra.volumeName } : {}) },
  status: { phase: extra.phase ?? 'Bound' },
});
const pv = (name: string, claimUid?: string, spec: object = {}): V1PersistentVolume => ({
  metadata: { name },
  spec: { csi: { driver: 'd', volumeHandle: `h-${name}` }, ...(claimUid ? { claimRef: { namespace: 'ns', name: 'c', uid: claimUid } } : {}), ...spec },
});
const pod = (volumes: V1Volume[], mounts: object[] = [{ name: 'data', mountPath: '/d' }]): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'pod-uid' },
  spec: { containers: [{ name: 'c', image: 'i', volumeMounts: mounts as never }], volumes },
});
const pvc = (claimName: string, readOnly = false): V1Volume => ({ name: 'data', persistentVolumeClaim: { claimName, readOnly } });

describe('claims resolved to PersistentVolumes (upstream desired-state populator checks)', function () {
  it('resolves a Bound claim to its PV, the PV source type, and the pod\'s readOnly', async function () {
    const s = fakeStorage([claim('c', { volumeName: 'v' })], [pv('v', 'uid-c')]);
    const r = await resolveClaim(s, pod([pvc('c', true)]), pvc('c', true));
    assert.equal(r.volume.metadata!.name, 'v');
    assert.equal(r.type, 'csi');
    assert.equal(r.readOnly, true);
    assert.equal(persistentVolumeType({ capacity: { storage: '1Gi' }, accessModes: ['ReadWriteOnce'], hostPath: { path: '/x' } }), 'hostPath');
  });

  it('refuses with upstream\'s messages: missing, being deleted, not bound, no volume name, PV missing, PV not bound to this claim', async function () {
    const cases: Array<[V1PersistentVolumeClaim[], V1PersistentVolume[], string]> = [
      [[], [], 'error processing PVC ns/c: failed to fetch PVC from API server: persistentvolumeclaims "c" not found'],
      [[claim('c', { volumeName: 'v', deleting: true })], [], 'error processing PVC ns/c: PVC is being deleted'],
      [[claim('c', { phase: 'Pending' })], [], 'error processing PVC ns/c: PVC is not bound'],
      [[claim('c', { volumeName: '' })], [], 'error processing PVC ns/c: PVC has empty pvc.Spec.VolumeName'],
      [[claim('c', { volumeName: 'v' })], [], 'error processing PVC ns/c: failed to fetch PV v from API server: persistentvolumes "v" not found'],
      [[claim('c', { volumeName: 'v' })], [pv('v')], 'error processing PVC ns/c: found PV object v but it has a nil pv.Spec.ClaimRef indicating it is not yet bound to the claim'],
      [[claim('c', { volumeName: 'v' })], [pv('v', 'other')], 'error processing PVC ns/c: found PV object v but its pv.Spec.ClaimRef.UID other does not point to claim.UID uid-c'],
    ];
    for (const [claims, volumes, message] of cases) {
      await assert.rejects(resolveClaim(fakeStorage(claims, volumes), pod([pvc('c')]), pvc('c')), (err: Error) => err.name === 'VolumeProcessError' && err.message === message, message);
    }
    await assert.rejects(resolveClaim(undefined, pod([pvc('c')]), pvc('c')), /this pod does not come from the API server/);
  });

  it('checks the volume mode against volumeMounts and volumeDevices', async function () {
    const s = fakeStorage([claim('c', { volumeName: 'v' })], [pv('v', 'uid-c', { volumeMode: 'Block' })]);
    await assert.rejects(resolveClaim(s, pod([pvc('c')]), pvc('c')), { message: 'volume data has volumeMode Block, but is specified in volumeMounts' });
  });

  it('uses a generic ephemeral volume\'s claim <pod>-<volume> only when the pod owns it', async function () {
    const eph: V1Volume = { name: 'data', ephemeral: { volumeClaimTemplate: { spec: {} } } };
    await assert.rejects(resolveClaim(fakeStorage([claim('p-data', { volumeName: 'v' })], [pv('v', 'uid-p-data')]), pod([eph]), eph), { message: 'PVC ns/p-data was not created for pod ns/p (pod is not owner)' });
    const r = await resolveClaim(fakeStorage([claim('p-data', { volumeName: 'v', owner: 'pod-uid' })], [pv('v', 'uid-p-data')]), pod([eph]), eph);
    assert.equal(r.claimName, 'p-data');
  });

  describe('in the volume manager', function () {
    let root: string;
    beforeEach(async () => (root = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-claims-'))));
    afterEach(() => fs.rm(root, { recursive: true, force: true }));

    it('hands the PV to the provider of its source type, in a dir named after the PV; a refused claim gives upstream\'s FailedMount text and mounts nothing', async function () {
      const hooks = createHooks();
      const requests: VolumeMountRequest[] = [];
      hooks.mountVolume.for('csi').tapPromise('t', async (r) => {
        requests.push(r);
        return { path: path.join(r.dir, 'mount') };
      });
      const storage = fakeStorage([claim('c', { volumeName: 'v' })], [pv('v', 'uid-c')]);
      const vm = new VolumeManager({ hooks, rootDir: root, logger: silentLogger(), objects: () => ({ configMap: async () => undefined, secret: async () => undefined }), storage: () => storage, nodeName: 'n1' });
      await vm.start();
      await vm.setUpPod(pod([pvc('c')]));
      assert.equal(requests.length, 1);
      assert.equal(requests[0]!.type, 'csi');
      assert.equal(requests[0]!.nodeName, 'n1');
      assert.equal(requests[0]!.persistentVolume!.volume.metadata!.name, 'v');
      assert.equal(requests[0]!.dir, path.join(root, 'pods', 'pod-uid', 'volumes', 'kubernetes.io~csi', 'v'));
      await vm.setUpPod(pod([pvc('c')]));
      assert.equal(requests.length, 1, 'resolved and set up once');

      const missing = { ...pod([pvc('nope'), { name: 'scratch', csi: { driver: 'd' } }], [{ name: 'data', mountPath: '/d' }, { name: 'scratch', mountPath: '/s' }]), metadata: { name: 'q', namespace: 'ns', uid: 'q-uid' } };
      const err = await vm.setUpPod(missing).then(() => undefined, (e: unknown) => e);
      assert.ok(err instanceof VolumeSetupError);
      assert.deepEqual(err.eventMessages(), ['Unable to attach or mount volumes: unmounted volumes=[data], unattached volumes=[], failed to process volumes=[data]: error processing PVC ns/nope: failed to fetch PVC from API server: persistentvolumeclaims "nope" not found']);
      assert.deepEqual([...vm.mounted('q-uid').keys()], ['scratch'], 'the other volume is set up; the refused claim is not');
    });
  });
});
