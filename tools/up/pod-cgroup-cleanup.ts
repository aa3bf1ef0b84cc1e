/**
 * The pod cgroups of the up node's pods, removed at its stop. The kubelet leaves pods running
 * when it stops (a restarted kubelet adopts them), and the node environment then kills their
 * containers through containerd, which removes the containers' cgroups but not the kubelet's
 * `kubepods/.../pod<uid>` cgroups above them. Only the UIDs of this node's pods are touched:
 * other kubelets on the machine share the kubepods hierarchy.
 */
import { readdir } from 'node:fs/promises';
import { join } from 'node:path';
import { PodCgroups } from '../../core/cgroups/pod-cgroups.ts';
import { silentLogger } from '../../core/logger.ts';

/** UIDs the kubelet kept state for under its root dir (`<rootDir>/pods/<uid>`), also of pods the console never saw. */
export async function podUidsUnder(kubeletRootDir: string): Promise<string[]> {
  return (await readdir(join(kubeletRootDir, 'pods')).catch(() => [] as string[])).filter((n) => /^[0-9a-f-]{8,}$/.test(n));
}

/** Removes the pod cgroups of these UIDs under `cgroupRoot` (only empty cgroups can go: call it once the containers are gone). */
export async function removePodCgroups(uids: Iterable<string>, opts: { cgroupRoot?: string; mounts?: Map<string, string> } = {}): Promise<void> {
  const cgroups = new PodCgroups({ root: opts.cgroupRoot ?? '/', logger: silentLogger(), ...(opts.mounts ? { mounts: opts.mounts } : {}) });
  for (const uid of new Set(uids)) await cgroups.removePod(uid);
}
