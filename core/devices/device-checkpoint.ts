/**
 * The device manager's checkpoint: which devices each container holds (with its provider's
 * answer) and which resources were registered, so that allocations survive a restart of the
 * kubelet, as upstream's `kubelet_internal_checkpoint` does. kubelet-ts keeps its own format
 * (upstream's checksum is a hash of Go's printing of its structs): JSON with a SHA-256 of its
 * data, written atomically (temporary file, fsync, rename). A file that fails its checks is
 * reported and set aside; the kubelet goes on without it, as upstream does.
 */
import crypto from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { acceptAllocation } from './allocation-policy.ts';
import type { PodDevicesEntry } from './pod-devices.ts';
import { deviceIdProblem, isExtendedResourceName } from './resource-names.ts';

export const CHECKPOINT_KIND = 'kubelet-ts/DeviceManagerCheckpoint';
/** A checkpoint larger than this is not read (a real one is a few KiB per pod). */
const MAX_CHECKPOINT_BYTES = 64 * 1024 * 1024;

export interface CheckpointData {
  podDevices: PodDevicesEntry[];
  /** The resources registered when it was written, with their healthy devices then (upstream RegisteredDevices). */
  registeredDevices: Record<string, string[]>;
}

interface CheckpointFile {
  kind: string;
  version: number;
  data: CheckpointData;
  checksum: string;
}

const checksum = (data: CheckpointData) => `sha256:${crypto.createHash('sha256').update(JSON.stringify(data)).digest('hex')}`;

/** Writes the checkpoint atomically (`file` is never seen half written). */
export async function writeCheckpoint(file: string, data: CheckpointData): Promise<void> {
  await fs.mkdir(path.dirname(file), { recursive: true, mode: 0o700 });
  const body: CheckpointFile = { kind: CHECKPOINT_KIND, version: 1, data, checksum: checksum(data) };
  const tmp = `${file}.${process.pid}.tmp`;
  const fh = await fs.open(tmp, 'w', 0o600);
  try {
    await fh.writeFile(JSON.stringify(body));
    await fh.sync();
  } finally {
    await fh.close();
  }
  await fs.rename(tmp, file);
}

/** The checkpoint's data; undefined when there is none; throws (with the reason) when it is unusable. */
export async function readCheckpoint(file: string, rootDir: string): Promise<CheckpointData | undefined> {
  let text: string;
  try {
    const st = await fs.stat(file);
    if (!st.isFile()) throw new Error('is not a regular file');
    if (st.size > MAX_CHECKPOINT_BYTES) throw new Error(`is ${st.size} bytes (at most ${MAX_CHECKPOINT_BYTES})`);
    text = await fs.readFile(file, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw err;
  }
  const body = JSON.parse(text) as Partial<CheckpointFile>;
  if (body?.kind !== CHECKPOINT_KIND || body.version !== 1 || !body.data) throw new Error(`is not a version 1 ${CHECKPOINT_KIND}`);
  if (body.checksum !== checksum(body.data)) throw new Error('its checksum does not match its data (a corrupt or edited file)');
  const { podDevices, registeredDevices } = body.data;
  if (!Array.isArray(podDevices) || !registeredDevices || typeof registeredDevices !== 'object') throw new Error('has no podDevices list or registeredDevices map');
  for (const [i, e] of podDevices.entries()) {
    const where = `podDevices[${i}]`;
    if (typeof e?.podUID !== 'string' || !e.podUID || typeof e.containerName !== 'string' || !e.containerName) throw new Error(`${where} names no pod or container`);
    if (!isExtendedResourceName(e.resourceName)) throw new Error(`${where}.resourceName is not an extended resource name`);
    if (!Array.isArray(e.deviceIds) || e.deviceIds.some((id) => deviceIdProblem(id) !== undefined)) throw new Error(`${where}.deviceIds has an invalid device ID`);
    e.allocation = acceptAllocation(e.allocation, rootDir);
  }
  for (const [resource, ids] of Object.entries(registeredDevices)) {
    if (!isExtendedResourceName(resource) || !Array.isArray(ids)) throw new Error(`registeredDevices[${JSON.stringify(resource)}] is not a resource with a device list`);
  }
  return { podDevices, registeredDevices };
}
