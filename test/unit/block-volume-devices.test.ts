import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
import type { VolumeMountResult } from '../../core/hooks.ts';
import { blockVolumeDevices } from '../../core/pod/block-volume-devices.ts';
import { containerMounts } from '../../core/pod/container-mounts.ts';
import { ContainerConfigError } from '../../core/pod/container-config.ts';

describe('block volumes in a container (volumeDevices → CRI devices)', () => {
  const volumes = new Map<string, VolumeMountResult>([
    ['disk', { path: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-1', blockDevice: true }],
    ['ro-disk', { path: '/dev/loop7', blockDevice: true, readOnly: true }],
    ['files', { path: '/var/lib/kubelet/pods/uid-1/volumes/kubernetes.io~empty-dir/files' }],
  ]);
  const container = (more: Partial<V1Container>): V1Container => ({ name: 'main', image: 'busybox', ...more });

  it('hands each volumeDevice to the runtime at its devicePath: mrw, or r for a read-only claim', () => {
    const devices = blockVolumeDevices(container({ volumeDevices: [{ name: 'disk', devicePath: '/dev/xvda' }, { name: 'ro-disk', devicePath: '/dev/xvdb' }] }), volumes);
    assert.deepEqual(devices, [
      { containerPath: '/dev/xvda', hostPath: '/var/lib/kubelet/plugins/kubernetes.io/csi/volumeDevices/publish/pv-1/uid-1', permissions: 'mrw' },
      { containerPath: '/dev/xvdb', hostPath: '/dev/loop7', permissions: 'r' },
    ]);
    assert.deepEqual(blockVolumeDevices(container({}), volumes), []);
  });

  it('refuses a relative devicePath, a missing volume, and a filesystem volume listed as a device, with upstream-like messages', () => {
    const refuse = (more: Partial<V1Container>, message: string) => assert.throws(() => blockVolumeDevices(container(more), volumes), (err: unknown) => err instanceof ContainerConfigError && err.message === message);
    refuse({ volumeDevices: [{ name: 'disk', devicePath: 'dev/xvda' }] }, 'error DevicePath `dev/xvda` must be an absolute path');
    refuse({ volumeDevices: [{ name: 'nope', devicePath: '/dev/xvda' }] }, 'cannot find volume "nope" to pass into container "main"');
    refuse({ volumeDevices: [{ name: 'files', devicePath: '/dev/xvda' }] }, 'volume "files" is not a block volume: container "main" lists it in volumeDevices');
  });

  it('never mounts a block volume as a directory', async () => {
    await assert.rejects(containerMounts({}, container({ volumeMounts: [{ name: 'disk', mountPath: '/data' }] }), [], volumes, async () => '/nowhere'),
      (err: unknown) => err instanceof ContainerConfigError && /volume "disk" is a block volume: container "main" must list it in volumeDevices, not volumeMounts/.test(err.message));
  });
});
