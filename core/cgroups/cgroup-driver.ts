import type { CgroupDriverName, CgroupName } from './cgroup-name.ts';
import type { CgroupResources } from './cgroup-resources.ts';

/**
 * How the kubelet makes, sets and removes the cgroups it owns, as upstream's `CgroupManager`:
 * `cgroupfs` writes the cgroup filesystem itself, `systemd` asks systemd for slices (systemd
 * owns the cgroup tree on its nodes, and a runtime whose runc uses the systemd driver expects
 * its cgroup parent in systemd's form). Both drive cgroup v1 and v2.
 */
export interface CgroupDriver {
  readonly name: CgroupDriverName;
  /** The cgroup hierarchy version this driver writes. */
  readonly version: 1 | 2;
  /**
   * The cgroup's path below the cgroup mount in this driver's form: what a CRI runtime gets
   * as a sandbox's cgroup parent, and where the cgroup's files are.
   */
  path(name: CgroupName): string;
  /** Creates the cgroup (and its missing ancestors) or updates it, with exactly these resources. */
  ensure(name: CgroupName, resources: CgroupResources): Promise<void>;
  /** Removes the cgroup once it has no processes left; nothing when it is gone. */
  remove(name: CgroupName): Promise<void>;
  /** Whether the cgroup exists. */
  exists(name: CgroupName): Promise<boolean>;
  /** Releases what the driver holds (the systemd connection). */
  close(): Promise<void>;
}
