import fs from 'node:fs/promises';
import path from 'node:path';
import { errorMessage } from '../errors.ts';
import type { CgroupMounts } from './cgroup-mounts.ts';
import { v1Files, v2Files, type CgroupResources } from './cgroup-resources.ts';

/**
 * The cgroup filesystem operations both drivers share: writing a cgroup's resource files
 * (the systemd driver writes them after systemd set its properties, as runc does, so the files
 * hold the exact values where systemd rounds), and finding a cgroup's directories.
 */

/** The directories of a cgroup given by its path below the mount(s): one on v2, one per hierarchy on v1. */
export function cgroupDirs(mounts: CgroupMounts, rel: string): string[] {
  if (mounts.version === 2) return [path.join(mounts.unified!, rel)];
  return [...new Set(mounts.v1.values())].map((m) => path.join(m, rel));
}

/** The cgroup's directory in the hierarchy that holds `controller` (the unified one on v2). */
export function controllerDir(mounts: CgroupMounts, controller: string, rel: string): string | undefined {
  const root = mounts.version === 2 ? mounts.unified : mounts.v1.get(controller);
  return root === undefined ? undefined : path.join(root, rel);
}

/** Writes the resource files of an existing cgroup: v2's one directory, or each v1 controller's. */
export async function writeResourceFiles(mounts: CgroupMounts, rel: string, resources: CgroupResources): Promise<void> {
  if (mounts.version === 2) {
    for (const [file, value] of v2Files(resources)) {
      await writeCgroupFile(path.join(mounts.unified!, rel, file), value, file === 'pids.max');
    }
    return;
  }
  for (const [controller, file, value] of v1Files(resources)) {
    const dir = controllerDir(mounts, controller, rel);
    if (dir) await writeCgroupFile(path.join(dir, file), value, controller === 'pids');
  }
}

/** Whether the cgroup exists (its memory controller's directory; the unified one on v2). */
export async function cgroupExists(mounts: CgroupMounts, rel: string): Promise<boolean> {
  const dir = controllerDir(mounts, 'memory', rel);
  if (!dir) return false;
  return fs.access(dir).then(() => true, () => false);
}

/** Writes a cgroup file; an `optional` one may be absent (a controller this kernel or hierarchy lacks). */
async function writeCgroupFile(file: string, value: string, optional: boolean): Promise<void> {
  try {
    await fs.writeFile(file, value);
  } catch (err) {
    if (optional && (err as NodeJS.ErrnoException).code === 'ENOENT') return;
    throw new Error(`cannot write ${value} to ${file}: ${errorMessage(err)}`);
  }
}
