/**
 * A cgroup named independently of the driver, as upstream's `CgroupName`: the components from
 * the root of the hierarchy, `['kubepods', 'burstable', 'pod<uid>']`. The cgroupfs driver joins
 * them as a path (`/kubepods/burstable/pod<uid>`); the systemd driver makes each prefix a slice
 * (`/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice`), because a
 * systemd slice's name spells its whole ancestry with dashes.
 */
export type CgroupName = readonly string[];

export type CgroupDriverName = 'cgroupfs' | 'systemd';

const SLICE = '.slice';

/** The cgroupfs form: `/a/b/c` (`/` for the root). */
export function toCgroupfsPath(name: CgroupName): string {
  return `/${name.join('/')}`;
}

/**
 * A component in a systemd unit name: a dash separates ancestry in slice names, so upstream
 * turns the pod UID's dashes into underscores (`pod1234_5678...`).
 */
function escapeSystemdComponent(part: string): string {
  return part.replaceAll('-', '_');
}

/** The systemd slice unit of a cgroup: `kubepods-burstable-pod<uid>.slice` (`-.slice` for the root). */
export function toSystemdSlice(name: CgroupName): string {
  if (name.length === 0) return `-${SLICE}`;
  return `${name.map(escapeSystemdComponent).join('-')}${SLICE}`;
}

/**
 * The systemd form as a path below the cgroup mount, each ancestor slice a directory:
 * `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod<uid>.slice`. This is the
 * cgroup parent a CRI runtime gets (containerd keeps the last element as the slice and puts the
 * container in `cri-containerd-<id>.scope` under it) and where the cgroup's files are.
 */
export function toSystemdPath(name: CgroupName): string {
  if (name.length === 0) return '/';
  const parts: string[] = [];
  for (let i = 1; i <= name.length; i++) parts.push(toSystemdSlice(name.slice(0, i)));
  return `/${parts.join('/')}`;
}

/** The parent slice unit of a slice (`-.slice` at the top), for its `Wants=`. */
export function parentSlice(name: CgroupName): string {
  return toSystemdSlice(name.slice(0, -1));
}

/**
 * The cgroup name of a configured `cgroupRoot`. With cgroupfs it is a path (`/a/b` → a, b).
 * With systemd it is a path of slices whose last element says it all (`/a.slice/a-b.slice` →
 * a, b), or `/`; anything else cannot be made into slices and is refused with the reason.
 */
export function parseCgroupRoot(root: string, driver: CgroupDriverName): CgroupName {
  const parts = root.split('/').filter(Boolean);
  if (driver === 'cgroupfs') return parts;
  if (parts.length === 0) return [];
  const last = parts[parts.length - 1]!;
  if (!last.endsWith(SLICE) || last === `-${SLICE}`) {
    throw new Error(`cgroupRoot '${root}' is not a systemd slice path (e.g. '/' or '/custom.slice'), which the systemd cgroup driver needs`);
  }
  const components = last.slice(0, -SLICE.length).split('-');
  if (components.some((c) => c === '')) throw new Error(`cgroupRoot '${root}': '${last}' is not a valid slice name`);
  if (toSystemdPath(components) !== `/${parts.join('/')}`) {
    throw new Error(`cgroupRoot '${root}': a slice's parents must be the slices its name spells (${toSystemdPath(components)})`);
  }
  return components;
}
