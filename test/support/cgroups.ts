import fs from 'node:fs/promises';
import path from 'node:path';
import { cgroupV1Mounts } from '../../core/cgroups/cgroup-mounts.ts';

/** A cgroup root of this test run's own, so tests never touch another kubelet's kubepods. */
export function testCgroupRoot(label: string): string {
  return `/kubelet-ts-test-${label}-${process.pid}`;
}

/** Removes a test's cgroup root in every hierarchy, deepest directories first (only empty cgroups go). */
export async function removeCgroupRoot(root: string): Promise<void> {
  for (const mount of new Set(cgroupV1Mounts().values())) {
    await removeTree(path.join(mount, root));
  }
}

async function removeTree(dir: string): Promise<void> {
  let entries;
  try {
    entries = await fs.readdir(dir, { withFileTypes: true });
  } catch {
    return;
  }
  for (const e of entries) if (e.isDirectory()) await removeTree(path.join(dir, e.name));
  await fs.rmdir(dir).catch(() => {});
}
