import type { V1Container } from '@kubernetes/client-node';
import type { VolumeMountResult } from '../hooks.ts';
import type { ContainerDevice } from '../runtime/types.ts';
import { ContainerConfigError } from './container-config.ts';

/**
 * The CRI devices of one container from its `volumeDevices` (raw block volumes, upstream's
 * makeBlockVolumes): each names a set-up volume whose provider returned a block device, and
 * lands at its absolute `devicePath` with `mrw`, or `r` for a volume the pod claims read-only.
 * Throws ContainerConfigError (upstream CreateContainerConfigError) for a bad entry.
 */
export function blockVolumeDevices(container: V1Container, volumes: ReadonlyMap<string, VolumeMountResult>): ContainerDevice[] {
  const out: ContainerDevice[] = [];
  for (const d of container.volumeDevices ?? []) {
    if (!d.devicePath?.startsWith('/')) throw new ContainerConfigError(`error DevicePath \`${d.devicePath ?? ''}\` must be an absolute path`);
    const vol = volumes.get(d.name);
    if (!vol) throw new ContainerConfigError(`cannot find volume "${d.name}" to pass into container "${container.name}"`);
    if (!vol.blockDevice) throw new ContainerConfigError(`volume "${d.name}" is not a block volume: container "${container.name}" lists it in volumeDevices`);
    out.push({ containerPath: d.devicePath, hostPath: vol.path, permissions: vol.readOnly ? 'r' : 'mrw' });
  }
  return out;
}
