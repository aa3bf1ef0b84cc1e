/**
 * What the kubelet accepts from a device provider's `allocate` answer. Upstream trusts a device
 * plugin entirely (it runs as root on the node, and its answer goes to the runtime as given).
 * kubelet-ts takes the answer as input from another process: it is checked here once, at
 * admission, and a pod whose answer is refused is not admitted (UnexpectedAdmissionError, naming
 * what was refused). Refused is only what is never a device's business:
 *
 * - a path that is not absolute, or not clean (`.`, `..`, `//`), or has a NUL;
 * - a mount of the host's root, or of anything in the kubelet's root dir (other pods' volumes,
 *   secrets and tokens, the kubelet's keys, the plugin sockets), or onto the container's root;
 * - a device node outside `/dev`, or permissions other than some of `r`, `w`, `m`;
 * - an environment variable name with `=` or a control character, a NUL in a value;
 * - more than MAX_ENTRIES entries of a kind, or a value beyond its size bound.
 *
 * Everything else (which host paths under `/`, read-write or not) is the plugin's to decide, as
 * upstream.
 */
import path from 'node:path';
import type { ContainerAllocation, DeviceMount, DeviceNode } from './device-types.ts';

/** The most entries of each kind (envs, mounts, devices, annotations, CDI devices) one answer may carry. */
export const MAX_ENTRIES = 256;
/** The longest value of an env var or annotation, and the longest path. */
const MAX_VALUE_BYTES = 64 * 1024;
const MAX_PATH_LENGTH = 4096;
const MAX_KEY_LENGTH = 512;

/** An allocate answer the kubelet refuses; the message says which entry and why. */
export class AllocationRefused extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'AllocationRefused';
  }
}

const refuse = (message: string): never => {
  throw new AllocationRefused(message);
};

/** `p` if it is an absolute, clean path without NUL; refuses otherwise. */
function cleanAbsolute(p: unknown, field: string): string {
  if (typeof p !== 'string' || p.length === 0) return refuse(`${field} is empty`);
  if (p.length > MAX_PATH_LENGTH) return refuse(`${field} is longer than ${MAX_PATH_LENGTH} characters`);
  if (p.includes('\0')) return refuse(`${field} has a NUL character`);
  if (!p.startsWith('/')) return refuse(`${field} ${JSON.stringify(p)} is not an absolute path`);
  const trimmed = p.length > 1 && p.endsWith('/') ? p.slice(0, -1) : p;
  if (path.posix.normalize(trimmed) !== trimmed) return refuse(`${field} ${JSON.stringify(p)} is not a clean path (no '.', '..' or '//' elements)`);
  return trimmed;
}

const within = (p: string, dir: string) => p === dir || p.startsWith(dir.endsWith('/') ? dir : `${dir}/`);

function list(v: unknown, field: string): unknown[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) return refuse(`${field} is not a list`);
  if (v.length > MAX_ENTRIES) return refuse(`${field} has ${v.length} entries (at most ${MAX_ENTRIES})`);
  return v;
}

function map(v: unknown, field: string): Array<[string, unknown]> {
  if (v === undefined || v === null) return [];
  if (typeof v !== 'object' || Array.isArray(v)) return refuse(`${field} is not a map`);
  const entries = Object.entries(v as Record<string, unknown>);
  if (entries.length > MAX_ENTRIES) return refuse(`${field} has ${entries.length} entries (at most ${MAX_ENTRIES})`);
  return entries;
}

function value(v: unknown, field: string): string {
  if (typeof v !== 'string') return refuse(`${field} is not a string`);
  if (Buffer.byteLength(v) > MAX_VALUE_BYTES) return refuse(`${field} is larger than ${MAX_VALUE_BYTES} bytes`);
  if (v.includes('\0')) return refuse(`${field} has a NUL character`);
  return v;
}

function mount(m: unknown, i: number, rootDir: string): DeviceMount {
  const f = `mounts[${i}]`;
  if (!m || typeof m !== 'object') return refuse(`${f} is not an object`);
  const r = m as Record<string, unknown>;
  const hostPath = cleanAbsolute(r.hostPath, `${f}.hostPath`);
  const containerPath = cleanAbsolute(r.containerPath, `${f}.containerPath`);
  if (hostPath === '/') refuse(`${f}.hostPath "/" is the host's root`);
  if (within(hostPath, rootDir) || within(rootDir, hostPath)) refuse(`${f}.hostPath ${JSON.stringify(hostPath)} is the kubelet's root dir ${rootDir} or holds or lies in it`);
  if (containerPath === '/') refuse(`${f}.containerPath "/" is the container's root`);
  if (r.readOnly !== undefined && typeof r.readOnly !== 'boolean') refuse(`${f}.readOnly is not a boolean`);
  return { hostPath, containerPath, readOnly: r.readOnly === true };
}

function deviceNode(d: unknown, i: number): DeviceNode {
  const f = `devices[${i}]`;
  if (!d || typeof d !== 'object') return refuse(`${f} is not an object`);
  const r = d as Record<string, unknown>;
  const hostPath = cleanAbsolute(r.hostPath, `${f}.hostPath`);
  const containerPath = cleanAbsolute(r.containerPath, `${f}.containerPath`);
  if (!within(hostPath, '/dev') || hostPath === '/dev') refuse(`${f}.hostPath ${JSON.stringify(hostPath)} is not a device node under /dev`);
  if (containerPath === '/') refuse(`${f}.containerPath "/" is the container's root`);
  const permissions = r.permissions;
  if (typeof permissions !== 'string' || !/^(?!.*(.).*\1)[rwm]{1,3}$/.test(permissions)) refuse(`${f}.permissions ${JSON.stringify(permissions)} is not some of r, w, m`);
  return { hostPath, containerPath, permissions: permissions as string };
}

/**
 * Checks a provider's `allocate` answer and returns it complete (every field present, paths
 * clean, `readOnly` a boolean); throws AllocationRefused naming the first entry refused.
 * `rootDir` is the kubelet's root dir, which no mount may reach.
 */
export function acceptAllocation(answer: unknown, rootDir: string): ContainerAllocation {
  if (!answer || typeof answer !== 'object' || Array.isArray(answer)) return refuse('the answer is not an object');
  const a = answer as Record<string, unknown>;
  const envs: Record<string, string> = {};
  for (const [k, v] of map(a.envs, 'envs')) {
    if (k.length === 0 || k.length > MAX_KEY_LENGTH || !/^[\x20-\x3c\x3e-\x7e]+$/.test(k)) refuse(`envs: name ${JSON.stringify(k.slice(0, 80))} is not printable ASCII without '=' (1 to ${MAX_KEY_LENGTH} characters)`);
    envs[k] = value(v, `envs[${JSON.stringify(k)}]`);
  }
  const annotations: Record<string, string> = {};
  for (const [k, v] of map(a.annotations, 'annotations')) {
    if (k.length === 0 || k.length > MAX_KEY_LENGTH || /[\x00-\x1f\x7f]/.test(k)) refuse(`annotations: key ${JSON.stringify(k.slice(0, 80))} is empty, too long or has control characters`);
    annotations[k] = value(v, `annotations[${JSON.stringify(k)}]`);
  }
  const rootClean = path.posix.normalize(rootDir).replace(/(.)\/$/, '$1');
  const mounts = list(a.mounts, 'mounts').map((m, i) => mount(m, i, rootClean));
  const devices = list(a.devices, 'devices').map((d, i) => deviceNode(d, i));
  const cdiDevices = list(a.cdiDevices, 'cdiDevices').map((c, i) => value(c, `cdiDevices[${i}]`));
  return { envs, mounts, devices, annotations, cdiDevices };
}

/**
 * What one container gets from the allocations of all its resources, merged as upstream's
 * deviceRunContainerOptions merges them: per env name, container path and annotation key the
 * first resource (in name order) wins; `conflict` hears of a later different value.
 */
export function mergeAllocations(byResource: Array<[string, ContainerAllocation]>, conflict?: (what: string) => void): ContainerAllocation {
  const out: ContainerAllocation = { envs: {}, mounts: [], devices: [], annotations: {}, cdiDevices: [] };
  const mountAt = new Map<string, string>();
  const deviceAt = new Map<string, string>();
  for (const [resource, a] of [...byResource].sort(([x], [y]) => (x < y ? -1 : x > y ? 1 : 0))) {
    for (const [k, v] of Object.entries(a.envs)) {
      if (Object.hasOwn(out.envs, k)) {
        if (out.envs[k] !== v) conflict?.(`env ${k} of ${resource} conflicts with another resource's; the first is kept`);
        continue;
      }
      out.envs[k] = v;
    }
    for (const m of a.mounts) {
      const had = mountAt.get(m.containerPath);
      if (had !== undefined) {
        if (had !== m.hostPath) conflict?.(`mount at ${m.containerPath} of ${resource} conflicts with another resource's; the first is kept`);
        continue;
      }
      mountAt.set(m.containerPath, m.hostPath);
      out.mounts.push(m);
    }
    for (const d of a.devices) {
      const had = deviceAt.get(d.containerPath);
      if (had !== undefined) {
        if (had !== d.hostPath) conflict?.(`device at ${d.containerPath} of ${resource} conflicts with another resource's; the first is kept`);
        continue;
      }
      deviceAt.set(d.containerPath, d.hostPath);
      out.devices.push(d);
    }
    for (const [k, v] of Object.entries(a.annotations)) {
      if (Object.hasOwn(out.annotations, k)) {
        if (out.annotations[k] !== v) conflict?.(`annotation ${k} of ${resource} conflicts with another resource's; the first is kept`);
        continue;
      }
      out.annotations[k] = v;
    }
    for (const c of a.cdiDevices) if (!out.cdiDevices.includes(c)) out.cdiDevices.push(c);
  }
  return out;
}
