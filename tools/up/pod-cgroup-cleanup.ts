/**
 * The pod cgroups of the up node's pods, removed at its stop. The kubelet leaves pods running
 * when it stops (a restarted kubelet adopts them), and the node environment then kills their
 * containers through containerd, which removes the containers' cgroups but not the kubelet's
 * `kubepods/.../pod<uid>` cgroups above them. Only the UIDs of this node's pods are touched:
 * other kubelets on the machine share the kubepods hierarchy.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { readCgroupMounts, type CgroupMounts } from '../../core/cgroups/cgroup-mounts.ts';
import { parseCgroupRoot } from '../../core/cgroups/cgroup-name.ts';
import { CgroupfsDriver } from '../../core/cgroups/cgroupfs-driver.ts';
import { podCgroupCandidates } from '../../core/cgroups/pod-cgroups.ts';
import { silentLogger } from '../../core/logger.ts';

/** UIDs the kubelet kept state for under its root dir (`<rootDir>/pods/<uid>`), also of pods the console never saw. */
export async function podUidsUnder(kubeletRootDir: string): Promise<string[]> {
  return (await readdir(join(kubeletRootDir, 'pods')).catch(() => [] as string[])).filter((n) => /^[0-9a-f-]{8,}$/.test(n));
}

/** Removes the pod cgroups of these UIDs under `cgroupRoot` (only empty cgroups can go: call it once the containers are gone). */
export async function removePodCgroups(uids: Iterable<string>, opts: { cgroupRoot?: string; mounts?: CgroupMounts } = {}): Promise<void> {
  // The up node's own containerd runs runc with cgroupfs (tools/node-env), whatever the host's init.
  const driver = new CgroupfsDriver(opts.mounts ?? readCgroupMounts(), silentLogger());
  const root = parseCgroupRoot(opts.cgroupRoot ?? '/', 'cgroupfs');
  for (const uid of new Set(uids)) {
    for (const name of podCgroupCandidates(root, uid)) await driver.remove(name);
  }
}
