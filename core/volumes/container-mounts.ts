import type { V1Container, V1Pod, V1VolumeMount } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { VolumeMountResult } from '../hooks.ts';
import type { KeyValue, Mount } from '../runtime/types.ts';
import { ContainerConfigError } from '../pod/container-config.ts';
import { expandVars } from '../pod/expansion.ts';
import { isWithin } from './mount-utils.ts';

const PROPAGATION: Record<string, NonNullable<Mount['propagation']>> = {
  None: 'PROPAGATION_PRIVATE',
  HostToContainer: 'PROPAGATION_HOST_TO_CONTAINER',
  Bidirectional: 'PROPAGATION_BIDIRECTIONAL',
};

/**
 * Checks a subPath as upstream's validation does: relative, and no `..` element (so it
 * cannot name anything outside the volume by itself; symlinks are checked when resolving).
 */
export function validateSubPath(subPath: string): void {
  if (path.isAbsolute(subPath)) throw new Error(`subPath "${subPath}" must be a relative path`);
  if (subPath.split('/').includes('..')) throw new Error(`subPath "${subPath}" must not contain '..'`);
}

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
 * Resolves `subPath` inside the volume at `root` one element at a time, without ever
 * leaving it: a symlink is followed only if it resolves inside the volume, a missing
 * element is created as a directory (as upstream does) inside the volume only. Returns the
 * real host path to bind.
 */
export async function resolveSubPath(root: string, subPath: string): Promise<string> {
  validateSubPath(subPath);
  const realRoot = await fs.realpath(root);
  let cur = realRoot;
  for (const part of subPath.split('/').filter((p) => p !== '' && p !== '.')) {
    const next = path.join(cur, part);
    const st = await fs.lstat(next).catch((err: NodeJS.ErrnoException) => {
      if (err.code === 'ENOENT') return undefined;
      throw err;
    });
    if (!st) {
      await fs.mkdir(next, { mode: 0o755 });
      cur = next;
      continue;
    }
    if (st.isSymbolicLink()) {
      const real = await fs.realpath(next).catch(() => undefined);
      if (!real || !isWithin(realRoot, real)) throw new Error(`subPath "${subPath}": ${path.relative(realRoot, next)} is a symlink that points outside the volume`);
      cur = real;
      continue;
    }
    cur = next;
  }
  return cur;
}

/**
 * The CRI mounts of one container from its volumeMounts and the pod's set-up volumes:
 * readOnly, subPath / subPathExpr (resolved inside the volume) and mountPropagation.
 * Throws ContainerConfigError (upstream CreateContainerConfigError) on a bad mount.
 */
export async function containerMounts(_pod: V1Pod, container: V1Container, envs: KeyValue[], volumes: ReadonlyMap<string, VolumeMountResult>): Promise<Mount[]> {
  const env = new Map(envs.map((e) => [e.key, e.value]));
  const out: Mount[] = [];
  for (const m of container.volumeMounts ?? []) {
    out.push(await oneMount(container, m, env, volumes));
  }
  return out;
}

async function oneMount(container: V1Container, m: V1VolumeMount, env: Map<string, string>, volumes: ReadonlyMap<string, VolumeMountResult>): Promise<Mount> {
  const vol = volumes.get(m.name);
  if (!vol) throw new ContainerConfigError(`cannot find volume "${m.name}" to mount into container "${container.name}"`);
  let hostPath = vol.path;
  try {
    if (m.subPath && m.subPathExpr) throw new Error('subPath and subPathExpr are mutually exclusive');
    const sub = m.subPathExpr ? expandSubPathExpr(m.subPathExpr, env) : m.subPath;
    if (sub) hostPath = await resolveSubPath(vol.path, sub);
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
