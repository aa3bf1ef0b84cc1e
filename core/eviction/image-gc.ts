/**
 * Image garbage collection with upstream's policy (pkg/kubelet/images/image_gc_manager.go):
 *
 * - every round the images on the node are detected: when each was first seen, when a container
 *   (of any state, of any pod the runtime holds) last used it;
 * - when the image filesystem is at least `imageGCHighThresholdPercent` full, unused images are
 *   removed, least recently used first, until it is down to `imageGCLowThresholdPercent`;
 * - an image seen for less than `imageMinimumGCAge` is kept (it may be about to be used);
 * - with `imageMaximumGCAge`, an image unused for that long is removed whatever the disk;
 * - never an image in use, a pinned image, or the runtime's sandbox image.
 *
 * The eviction manager calls `deleteAllUnused()` before evicting pods for imagefs pressure.
 */
import type { ImageGCSettings } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { ContainerRuntime, ImageInfo } from '../runtime/types.ts';

/** How often image GC runs on its own (upstream ImageGCPeriod). */
export const IMAGE_GC_PERIOD_MS = 5 * 60_000;

interface ImageRecord { firstDetected: number; lastUsed: number; size: number }

export interface ImageGCDeps {
  settings: ImageGCSettings;
  runtime: () => ContainerRuntime;
  /** The image filesystem's size and free space (from the stats service), undefined when unknown. */
  imageFs: () => Promise<{ capacity: number; available: number } | undefined>;
  /** A node event (upstream: FreeDiskSpaceFailed when not enough could be freed). */
  nodeEvent: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  logger: Logger;
  now?: () => number;
}

export interface ImageGCResult { removed: string[]; freedBytes: number }

export class ImageGC {
  private readonly records = new Map<string, ImageRecord>();
  private readonly now: () => number;
  private timer: NodeJS.Timeout | undefined;
  private busy: Promise<unknown> | undefined;

  constructor(private readonly deps: ImageGCDeps) {
    this.now = deps.now ?? Date.now;
  }

  /** Runs GC every IMAGE_GC_PERIOD_MS (its first detection now, so ages count from the kubelet's start). */
  start(): void {
    void this.serialized(() => this.detect()).catch((err: unknown) => this.deps.logger.warn({ err: errorMessage(err) }, 'listing images for garbage collection failed; the next round lists them again'));
    this.timer = setInterval(() => void this.serialized(() => this.garbageCollect()).catch((err: unknown) => this.deps.logger.warn({ err: errorMessage(err) }, 'image garbage collection failed')), IMAGE_GC_PERIOD_MS);
    this.timer.unref();
  }

  async stop(): Promise<void> {
    clearInterval(this.timer);
    await this.busy?.catch(() => {});
  }

  /** One GC round: images unused past the maximum age, then down to the low threshold if above the high one. */
  garbageCollect(): Promise<ImageGCResult> {
    return this.serialized(async () => {
      const { high, low } = { high: this.deps.settings.highThresholdPercent, low: this.deps.settings.lowThresholdPercent };
      const result = await this.removeOld();
      const fs = await this.deps.imageFs();
      if (!fs || fs.capacity <= 0) return result;
      const available = fs.available + result.freedBytes;
      const usedPercent = 100 - Math.floor((available * 100) / fs.capacity);
      if (usedPercent < high) return result;
      const toFree = Math.ceil((fs.capacity * (100 - low)) / 100 - available);
      this.deps.logger.info({ usedPercent, highThresholdPercent: high, lowThresholdPercent: low, bytesToFree: toFree }, 'image filesystem above the high threshold: removing unused images');
      const more = await this.freeSpace(toFree);
      if (more.freedBytes < toFree) {
        const message = `Failed to garbage collect required amount of images. Attempted to free ${toFree} bytes, but only found ${more.freedBytes} bytes eligible to free.`;
        this.deps.logger.warn({ bytesToFree: toFree, freed: more.freedBytes }, message);
        this.deps.nodeEvent('Warning', 'FreeDiskSpaceFailed', message);
      }
      return { removed: [...result.removed, ...more.removed], freedBytes: result.freedBytes + more.freedBytes };
    });
  }

  /** Every image no container uses (past its minimum age): the eviction manager's reclaim for imagefs pressure. */
  deleteAllUnused(): Promise<ImageGCResult> {
    return this.serialized(() => this.freeSpace(Infinity));
  }

  /** Runs one GC operation at a time. */
  private serialized<T>(fn: () => Promise<T>): Promise<T> {
    const run = (this.busy ?? Promise.resolve()).catch(() => {}).then(fn);
    this.busy = run;
    return run;
  }

  /** Lists images and containers; records first-seen and last-used times. Returns the images and which must be kept. */
  private async detect(): Promise<{ images: ImageInfo[]; keep: Set<string> }> {
    const rt = this.deps.runtime();
    const now = this.now();
    const [images, containers, sandboxImage] = await Promise.all([
      rt.listImages(),
      rt.listContainers(),
      rt.sandboxImage ? rt.sandboxImage().catch(() => undefined) : Promise.resolve(undefined),
    ]);
    const used = new Set<string>();
    for (const c of containers) {
      if (c.imageRef) used.add(c.imageRef);
      if (c.image) used.add(c.image);
    }
    const keep = new Set<string>();
    for (const img of images) {
      const rec = this.records.get(img.id) ?? { firstDetected: now, lastUsed: 0, size: img.size };
      rec.size = img.size;
      const names = [img.id, ...img.repoTags, ...img.repoDigests];
      const inUse = names.some((n) => used.has(n));
      if (inUse) rec.lastUsed = now;
      if (inUse || img.pinned || (sandboxImage !== undefined && names.some((n) => sameImage(n, sandboxImage)))) keep.add(img.id);
      this.records.set(img.id, rec);
    }
    const present = new Set(images.map((i) => i.id));
    for (const id of [...this.records.keys()]) if (!present.has(id)) this.records.delete(id);
    return { images, keep };
  }

  /** Removes unused images past their minimum age, least recently used first, until `bytes` are freed. */
  private async freeSpace(bytes: number): Promise<ImageGCResult> {
    const { images, keep } = await this.detect();
    const now = this.now();
    const candidates = images
      .filter((img) => !keep.has(img.id) && now - this.records.get(img.id)!.firstDetected >= this.deps.settings.minAgeMs)
      .sort((a, b) => {
        const ra = this.records.get(a.id)!;
        const rb = this.records.get(b.id)!;
        return ra.lastUsed - rb.lastUsed || ra.firstDetected - rb.firstDetected;
      });
    return this.remove(candidates, bytes);
  }

  /** Removes unused images not used for longer than imageMaximumGCAge (when set). */
  private async removeOld(): Promise<ImageGCResult> {
    const maxAge = this.deps.settings.maxAgeMs;
    const { images, keep } = await this.detect();
    if (maxAge <= 0) return { removed: [], freedBytes: 0 };
    const now = this.now();
    const old = images.filter((img) => {
      const rec = this.records.get(img.id)!;
      // Never used since detected: its age counts from its detection.
      return !keep.has(img.id) && now - Math.max(rec.lastUsed, rec.firstDetected) > maxAge && now - rec.firstDetected >= this.deps.settings.minAgeMs;
    });
    return this.remove(old, Infinity);
  }

  private async remove(images: ImageInfo[], bytes: number): Promise<ImageGCResult> {
    const rt = this.deps.runtime();
    const out: ImageGCResult = { removed: [], freedBytes: 0 };
    if (!rt.removeImage) return out;
    for (const img of images) {
      if (out.freedBytes >= bytes) break;
      try {
        await rt.removeImage(img.id);
      } catch (err) {
        this.deps.logger.warn({ image: img.id, tags: img.repoTags, err: errorMessage(err) }, 'could not remove image');
        continue;
      }
      this.records.delete(img.id);
      out.removed.push(img.id);
      out.freedBytes += img.size;
      this.deps.logger.info({ image: img.id, tags: img.repoTags, size: img.size }, 'image removed by garbage collection');
    }
    return out;
  }
}

/** Whether two image references name the same image (a reference without a registry is Docker Hub's, as containerd normalizes it). */
function sameImage(a: string, b: string): boolean {
  const norm = (r: string) => {
    let s = r;
    if (!s.includes('/')) s = `library/${s}`;
    if (!/^[^/]+[.:][^/]*\//.test(s) && !s.startsWith('localhost/')) s = `docker.io/${s}`;
    if (!/[:@][^/]+$/.test(s)) s = `${s}:latest`;
    return s;
  };
  return norm(a) === norm(b);
}
