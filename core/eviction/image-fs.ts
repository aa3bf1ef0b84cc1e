import fs from 'node:fs/promises';
import type { ContainerRuntime } from '../runtime/types.ts';

/**
 * Whether the runtime keeps images on a filesystem of its own (upstream: a dedicated imagefs),
 * by comparing the device of the runtime's image filesystem (CRI ImageFsInfo) with that of the
 * kubelet's root dir. When they share one disk, filling the node's filesystem is also filling
 * the image filesystem, so node-level reclaim for nodefs signals removes unused images too, as
 * upstream's does. Unknown (no ImageFsInfo, a mountpoint that cannot be stat'ed) counts as
 * dedicated: images are then removed only for imagefs signals, never on a guess.
 */
export async function hasDedicatedImageFs(runtime: ContainerRuntime, rootDir: string): Promise<boolean> {
  const mountpoint = (await runtime.imageFsInfo?.().catch(() => undefined))?.[0]?.mountpoint;
  if (!mountpoint) return true;
  const [images, root] = await Promise.all([fs.stat(mountpoint).catch(() => undefined), fs.stat(rootDir).catch(() => undefined)]);
  if (!images || !root) return true;
  return images.dev !== root.dev;
}
