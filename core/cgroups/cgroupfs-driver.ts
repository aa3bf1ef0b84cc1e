import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { CgroupDriver } from './cgroup-driver.ts';
import { cgroupDirs, cgroupExists, controllerDir, writeResourceFiles } from './cgroup-files.ts';
import type { CgroupMounts } from './cgroup-mounts.ts';
import { toCgroupfsPath, type CgroupName } from './cgroup-name.ts';
import type { CgroupResources } from './cgroup-resources.ts';

/** v1 controllers whose directories the kubelet makes; runc makes the others' for its containers. */
const V1_MANAGED = ['memory', 'cpu', 'cpuacct', 'pids'] as const;
/** v2 controllers the kubelet hands down its subtree (runc enables what a container needs below). */
const V2_DELEGATED = ['cpuset', 'cpu', 'io', 'memory', 'hugetlb', 'pids'];

/**
 * The cgroupfs driver: the kubelet makes its cgroups as directories of the cgroup filesystem
 * and writes their files. On v1 a cgroup is a directory in each controller's hierarchy; on v2
 * one directory of the unified tree, whose parents must hand the controllers down
 * (`cgroup.subtree_control`) before its files exist.
 */
export class CgroupfsDriver implements CgroupDriver {
  readonly name = 'cgroupfs' as const;
  readonly version: 1 | 2;

  constructor(private readonly mounts: CgroupMounts, private readonly logger: Logger) {
    this.version = mounts.version;
  }

  path(name: CgroupName): string {
    return toCgroupfsPath(name);
  }

  async ensure(name: CgroupName, resources: CgroupResources): Promise<void> {
    if (this.version === 2) {
      const unified = this.mounts.unified!;
      // Each ancestor (from the root) must delegate the controllers to the next level down.
      for (let i = 0; i < name.length; i++) {
        const parent = path.join(unified, toCgroupfsPath(name.slice(0, i)));
        await fs.mkdir(path.join(parent, name[i]!), { recursive: true });
        await enableControllers(parent);
      }
    } else {
      for (const controller of V1_MANAGED) {
        const dir = controllerDir(this.mounts, controller, this.path(name));
        if (dir) await fs.mkdir(dir, { recursive: true });
      }
    }
    await writeResourceFiles(this.mounts, this.path(name), resources);
  }

  async remove(name: CgroupName): Promise<void> {
    for (const dir of cgroupDirs(this.mounts, this.path(name))) {
      try {
        // Empty child cgroups the runtime left (containers removed late) first, then the cgroup.
        for (const child of await fs.readdir(dir, { withFileTypes: true })) {
          if (child.isDirectory()) await fs.rmdir(path.join(dir, child.name)).catch(() => {});
        }
        await fs.rmdir(dir);
      } catch (err) {
        const code = (err as NodeJS.ErrnoException).code;
        if (code !== 'ENOENT') this.logger.warn({ cgroup: dir, err: errorMessage(err) }, 'could not remove cgroup');
      }
    }
  }

  exists(name: CgroupName): Promise<boolean> {
    return cgroupExists(this.mounts, this.path(name));
  }

  async close(): Promise<void> {}
}

/**
 * Hands the controllers this cgroup has down to its children (`+cpu +memory ...` into
 * cgroup.subtree_control), those not enabled yet. A controller the kernel refuses to enable
 * is skipped: its files are then missing below, and writing them names the problem.
 */
async function enableControllers(dir: string): Promise<void> {
  const [available, enabled] = await Promise.all([
    fs.readFile(path.join(dir, 'cgroup.controllers'), 'utf8').catch(() => ''),
    fs.readFile(path.join(dir, 'cgroup.subtree_control'), 'utf8').catch(() => ''),
  ]);
  const have = new Set(enabled.split(/\s+/).filter(Boolean));
  const wanted = available.split(/\s+/).filter((c) => V2_DELEGATED.includes(c) && !have.has(c));
  if (wanted.length === 0) return;
  const file = path.join(dir, 'cgroup.subtree_control');
  try {
    await fs.writeFile(file, wanted.map((c) => `+${c}`).join(' '));
  } catch {
    for (const c of wanted) await fs.writeFile(file, `+${c}`).catch(() => {});
  }
}
