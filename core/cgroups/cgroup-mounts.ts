import { readFileSync } from 'node:fs';

/**
 * Where this host's cgroups are, read from /proc/self/mountinfo: cgroup v1 hierarchies by
 * controller (`memory`, `cpu`, ..., named ones as `name=systemd`), and the unified (v2)
 * hierarchy. A host is v2 when its memory and cpu controllers are not on v1 hierarchies and
 * a cgroup2 filesystem is mounted: what systemd's default (unified) boot gives. A hybrid host
 * (v1 controllers plus an empty unified tree for systemd) counts as v1, as upstream's does.
 */
export interface CgroupMounts {
  version: 1 | 2;
  /** v1: mount point by controller (and `unified`, a hybrid host's v2 tree). Empty on v2. */
  v1: Map<string, string>;
  /** v2: the unified hierarchy's mount point (`/sys/fs/cgroup`). */
  unified: string | undefined;
}

/** cgroup mount points by controller (v1), named hierarchy (`name=systemd`) or `unified` (v2), from mountinfo. */
export function cgroupV1Mounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of mountinfo.split('\n')) {
    const [pre, post] = line.split(' - ');
    if (!pre || !post) continue;
    const [fstype, , superOpts] = post.split(' ');
    const mountPoint = pre.split(' ')[4]!;
    // The unified (v2) hierarchy of a hybrid host: runc makes pod directories there too.
    if (fstype === 'cgroup2') {
      if (!out.has('unified')) out.set('unified', mountPoint);
      continue;
    }
    if (fstype !== 'cgroup') continue;
    for (const opt of (superOpts ?? '').split(',')) {
      if (['rw', 'ro'].includes(opt) || (opt.includes('=') && !opt.startsWith('name='))) continue;
      if (!out.has(opt)) out.set(opt, mountPoint);
    }
  }
  return out;
}

/** This host's cgroup layout (see {@link CgroupMounts}). */
export function readCgroupMounts(mountinfo = readFileSync('/proc/self/mountinfo', 'utf8')): CgroupMounts {
  const all = cgroupV1Mounts(mountinfo);
  const unified = all.get('unified');
  if (unified !== undefined && !all.has('memory') && !all.has('cpu')) return { version: 2, v1: new Map(), unified };
  return { version: 1, v1: all, unified: undefined };
}
