/**
 * Disk use of a directory tree (volumes, log directories), as upstream measures it with `du` and
 * `find -xdev`: allocated blocks and inodes, not following symlinks, not crossing into other
 * filesystems. A pod controls what is in its volumes, so a walk is bounded in entries and time
 * (a volume of ten million files gives a partial figure, not a stalled kubelet), yields to the
 * event loop between directories, and its results are cached (upstream: volumeStatsAggPeriod).
 */
import type { Dirent, Stats } from 'node:fs';
import { lstat, opendir } from 'node:fs/promises';
import path from 'node:path';
import { TtlCache } from '../util/ttl-cache.ts';

export interface DiskUsage {
  bytes: number;
  inodes: number;
  /** The walk stopped at its entry or time bound: the figures are a lower bound. */
  partial: boolean;
}

export interface WalkBounds {
  maxEntries: number;
  maxMs: number;
}

const DEFAULT_BOUNDS: WalkBounds = { maxEntries: 200_000, maxMs: 5000 };

/** Walks `root` (undefined when it does not exist). */
export async function diskUsage(root: string, bounds: WalkBounds = DEFAULT_BOUNDS): Promise<DiskUsage | undefined> {
  let top: Stats;
  try {
    top = await lstat(root);
  } catch {
    return undefined;
  }
  const deadline = Date.now() + bounds.maxMs;
  const usage: DiskUsage = { bytes: top.blocks * 512, inodes: 1, partial: false };
  if (!top.isDirectory()) return usage;
  const seenLinks = new Set<string>();
  const stack = [root];
  let entries = 0;
  while (stack.length > 0) {
    if (entries >= bounds.maxEntries || Date.now() > deadline) {
      usage.partial = true;
      break;
    }
    const dir = stack.pop()!;
    let handle;
    try {
      handle = await opendir(dir, { bufferSize: 128 });
    } catch {
      continue; // removed meanwhile, or unreadable
    }
    try {
      for await (const e of handle as AsyncIterable<Dirent>) {
        if (++entries > bounds.maxEntries) {
          usage.partial = true;
          break;
        }
        const p = path.join(dir, e.name);
        let st: Stats;
        try {
          st = await lstat(p);
        } catch {
          continue;
        }
        if (st.dev !== top.dev) continue; // another filesystem mounted inside (-xdev)
        if (st.nlink > 1 && !st.isDirectory()) {
          const key = `${st.dev}:${st.ino}`;
          if (seenLinks.has(key)) continue;
          if (seenLinks.size < 100_000) seenLinks.add(key);
        }
        usage.bytes += st.blocks * 512;
        usage.inodes += 1;
        if (st.isDirectory()) stack.push(p);
      }
    } catch {
      // the directory went away while being read: count what was seen
    }
  }
  return usage;
}

/** diskUsage with answers reused for `ttlMs` per path (concurrent asks share one walk). */
export class DiskUsageCache {
  private readonly cache = new TtlCache<DiskUsage | undefined>(4096);

  constructor(private readonly ttlMs: number, private readonly bounds: WalkBounds = DEFAULT_BOUNDS) {}

  get(root: string): Promise<DiskUsage | undefined> {
    return this.cache.getOrLoad(root, this.ttlMs, async () => ({ value: await diskUsage(root, this.bounds), cache: true }));
  }
}
