import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { CONTEXT_KEYS, ephemeralVolumeHandle, inlinePublishRequest } from '../../plugins/csi-grpc/inline-volume.ts';
import { mayStillRun } from '../../plugins/csi-grpc/publication-cleanup.ts';

/** What csi-grpc sends in NodePublishVolume for an inline volume, against upstream's kubelet (pkg/volume/csi). */
describe('csi-grpc inline volume requests', function () {
  const pod: V1Pod = { metadata: { name: 'web-n1', namespace: 'apps', uid: 'u-1' }, spec: { containers: [] } };
  const base = { pod, volumeId: 'csi-x', targetPath: '/r/pods/u-1/volumes/kubernetes.io~csi/data/mount', secrets: {} };

  it('publishes without a staging path, with the pod info merged over the attributes when podInfoOnMount', function () {
    const req = inlinePublishRequest({ ...base, source: { driver: 'd', volumeAttributes: { size: '1Mi', [CONTEXT_KEYS.podName]: 'spoofed' } }, nodeCapabilities: new Set(['STAGE_UNSTAGE_VOLUME']), podInfoOnMount: true });
    assert.equal(req.stagingTargetPath, '');
    assert.deepEqual(req.publishContext, {});
    assert.deepEqual(req.volumeContext, {
      size: '1Mi',
      [CONTEXT_KEYS.podName]: 'web-n1',
      [CONTEXT_KEYS.podNamespace]: 'apps',
      [CONTEXT_KEYS.podUID]: 'u-1',
      // The spec's value as it is: a static pod naming no service account has none.
      [CONTEXT_KEYS.serviceAccount]: '',
      [CONTEXT_KEYS.ephemeral]: 'true',
    });
    assert.deepEqual(req.volumeCapability, { mount: { fsType: '', mountFlags: [] }, accessMode: { mode: 'SINGLE_NODE_WRITER' } });
    assert.equal(req.readonly, false);
  });

  it('sends only the attributes when the driver is configured without podInfoOnMount', function () {
    const req = inlinePublishRequest({ ...base, source: { driver: 'd', volumeAttributes: { a: 'b' }, readOnly: true, fsType: 'ext4' }, nodeCapabilities: new Set(), podInfoOnMount: false });
    assert.deepEqual(req.volumeContext, { a: 'b' });
    assert.equal(req.readonly, true);
    assert.equal((req.volumeCapability as any).mount.fsType, 'ext4');
  });

  it('maps ReadWriteOnce to SINGLE_NODE_MULTI_WRITER for a driver with that capability', function () {
    const req = inlinePublishRequest({ ...base, source: { driver: 'd' }, nodeCapabilities: new Set(['SINGLE_NODE_MULTI_WRITER']), podInfoOnMount: true });
    assert.equal((req.volumeCapability as any).accessMode.mode, 'SINGLE_NODE_MULTI_WRITER');
  });

  it('derives the handle as upstream: csi- + sha256(pod UID + volume name)', function () {
    assert.equal(ephemeralVolumeHandle('u-1', 'data'), 'csi-7a075fb358279980b660d575168af6c25ee140b5f3a73a8a16e21f8e4f1e9ad8');
    assert.notEqual(ephemeralVolumeHandle('u-1', 'data'), ephemeralVolumeHandle('u-1', 'other'));
  });

  it('tells a final driver error from a call that may still run, as upstream\'s isFinalError', function () {
    for (const code of [1, 4, 8, 10, 14]) assert.equal(mayStillRun({ code }), true, `code ${code}`);
    for (const code of [3, 5, 9, 11, 13]) assert.equal(mayStillRun({ code }), false, `code ${code}`);
    assert.equal(mayStillRun(new Error('no status')), true);
  });
});
