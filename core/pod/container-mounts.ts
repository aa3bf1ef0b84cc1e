import type { V1Container, V1Pod, V1VolumeMount } from '@kubernetes/client-node';
import type { VolumeMountResult } from '../hooks.ts';
import type { KeyValue, Mount } from '../runtime/types.ts';
import { ContainerConfigError } from './container-config.ts';
import { expandVars } from './expansion.ts';
import { validateSubPath, type SubPathBinder } from '../volumes/subpath.ts';

const PROPAGATION: Record<string, NonNullable<Mount['propagation']>> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

/** `subPathExpr`: `$(VAR)` from the container's environment; an unset or empty variable is an error, as upstream. */
export function expandSubPathExpr(expr: string, env: ReadonlyMap<string, string>): string {
  const missing = new Set<string>();
  const out = expandVars(expr, (name) => {
    const v = env.get(name);
    if (!v) missing.add(name);
    return v ?? '';
  });
  if (missing.size > 0) throw new Error(`subPathExpr "${expr}": missing value for ${[...missing].sort().join(', ')}`);
  return out;
}

/**
 * Whether a mount is made recursively read-only, as upstream's resolveRecursiveReadOnly
 * (v1.30+; the field is newer than v1.28, whose kubelet drops it): Enabled needs a runtime
 * handler that reports recursive read-only mounts, else the container is not created rather
 * than run with writable submounts; IfPossible is recursive only where the handler can.
 */
export function recursiveReadOnly(m: V1VolumeMount, runtimeSupportsRRO: boolean): boolean {
  const mode = (m as V1VolumeMount & { recursiveReadOnly?: string }).recursiveReadOnly;
  if (mode === undefined || mode === null || mode === 'Disabled') return false;
  const what = `volumeMount "${m.name}": recursiveReadOnly ${mode}`;
  if (m.readOnly !== true) throw new ContainerConfigError(`${what}: requested recursive read-only mode, but the mount is not read-only`);
  if ((m.mountPropagation ?? 'None') !== 'None') throw new ContainerConfigError(`${what}: requested recursive read-only mode, but it is not compatible with propagation "${m.mountPropagation}"`);
  if (mode === 'IfPossible') return runtimeSupportsRRO;
  if (mode !== 'Enabled') throw new ContainerConfigError(`${what}: unknown recursive read-only mode (allowed: Disabled, IfPossible, Enabled)`);
  if (!runtimeSupportsRRO) throw new ContainerConfigError(`${what}: requested recursive read-only mode, but it is not supported by the runtime (its RuntimeClass handler reports no recursive read-only mounts: containerd 2.0 or later on Linux 5.12 or later)`);
  return true;
}

/**
 * The CRI mounts of one container from its volumeMounts and the pod's set-up volumes:
 * readOnly, recursiveReadOnly (`runtimeSupportsRRO`: the pod's runtime handler can make them),
 * subPath / subPathExpr (bound through `bindSubPath`) and mountPropagation.
 * Throws ContainerConfigError (upstream CreateContainerConfigError) on a bad mount.
 */
export async function containerMounts(_pod: V1Pod, container: V1Container, envs: KeyValue[], volumes: ReadonlyMap<string, VolumeMountResult>, bindSubPath: SubPathBinder, runtimeSupportsRRO = false): Promise<Mount[]> {
  const env = new Map(envs.map((e) => [e.key, e.value]));
  const out: Mount[] = [];
  for (const [i, m] of (container.volumeMounts ?? []).entries()) {
    // Decided before a subPath is bound: a refused mount leaves no bind behind.
    const rro = recursiveReadOnly(m, runtimeSupportsRRO);
    const mount = await oneMount(container, m, i, env, volumes, bindSubPath);
    out.push(rro ? { ...mount, recursiveReadOnly: true } : mount);
  }
  return out;
}

async function oneMount(container: V1Container, m: V1VolumeMount, mountIndex: number, env: Map<string, string>, volumes: ReadonlyMap<string, VolumeMountResult>, bindSubPath: SubPathBinder): Promise<Mount> {
  const vol = volumes.get(m.name);
  if (!vol) throw new ContainerConfigError(`cannot find volume "${m.name}" to mount into container "${container.name}"`);
  if (vol.blockDevice) throw new ContainerConfigError(`volume "${m.name}" is a block volume: container "${container.name}" must list it in volumeDevices, not volumeMounts`);
  let hostPath = vol.path;
  try {
    if (m.subPath && m.subPathExpr) throw new Error('subPath and subPathExpr are mutually exclusive');
    const sub = m.subPathExpr ? expandSubPathExpr(m.subPathExpr, env) : m.subPath;
    if (sub) {
      validateSubPath(sub);
      hostPath = await bindSubPath({ volumeName: m.name, volumePath: vol.path, subPath: sub, mountIndex });
    }
  } catch (err) {
    throw new ContainerConfigError(`failed to prepare subPath for volumeMount "${m.name}" of container "${container.name}": ${(err as Error).message}`);
  }
  const mode = m.mountPropagation ?? 'None';
  const propagation = PROPAGATION[mode];
  if (!propagation) throw new ContainerConfigError(`volumeMount "${m.name}": unknown mountPropagation "${mode}" (allowed: None, HostToContainer, Bidirectional)`);
  if (mode === 'Bidirectional' && container.securityContext?.privileged !== true) {
    throw new ContainerConfigError(`volumeMount "${m.name}": Bidirectional mount propagation is available only to privileged containers`);
  }
  return { containerPath: m.mountPath, hostPath, readonly: m.readOnly === true || vol.readOnly === true, propagation };
}
