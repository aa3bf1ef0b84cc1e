import fs from 'node:fs/promises';
import { definePlugin, invalidInput, isMountPoint, mountTmpfs, removeUnmounted, unmount, type VolumeMountRequest, type VolumeMountResult } from 'kubelet-ts';

/**
 * A ramdisk volume: a tmpfs of the size a pod asks for, so a pod gets scratch space in memory
 * with a hard size (an emptyDir with `medium: Memory` is bounded only by its `sizeLimit`, which
 * the pod may leave out). Out-of-tree volume types reach a kubelet the way upstream made for
 * them, as a FlexVolume driver, so pods from the API server can use it too:
 *
 *     volumes: [{ name: scratch, flexVolume: { driver: kubelet-ts.example/ramdisk, options: { sizeMiB: "64" } } }]
 *
 * Everything here comes from 'kubelet-ts', the plugin SDK: the plugin definition, the hook
 * types, coded errors and the mount helpers.
 */

/** The FlexVolume driver name this plugin serves; other drivers' volumes are left to other plugins. */
export const DRIVER = 'kubelet-ts.example/ramdisk';

export interface RamdiskOptions {
  /** The largest ramdisk a pod may ask for, MiB. */
  maxSizeMiB: number;
  /** The size of a ramdisk that names none, MiB. */
  defaultSizeMiB: number;
}

/** What the plugin keeps with each volume (handed back on the next set-up and on tear-down, across restarts). */
interface RamdiskData { driver: typeof DRIVER; sizeMiB: number }

export default definePlugin<RamdiskOptions>({
  name: 'ramdisk-volume',
  kind: 'storage',
  // Validated (and defaulted) by the host before apply; a bad value is a config error naming the field.
  optionsSchema: {
    type: 'object',
    additionalProperties: false,
    properties: {
      maxSizeMiB: { type: 'integer', minimum: 1, default: 1024 },
      defaultSizeMiB: { type: 'integer', minimum: 1, default: 64 },
    },
  },
  apply(ctx, options) {
    // Bail hooks: a tap answers for its own volumes and returns undefined for others, which go to the next tap.
    ctx.hooks.mountVolume.for('flexVolume').tapPromise('ramdisk-volume', async (r, hook) => {
      if (r.volume.flexVolume?.driver !== DRIVER) return undefined;
      // Given up on (the pod is to be terminated, or hookTimeout): mount nothing nobody would tear down.
      hook.signal.throwIfAborted();
      return setUp(r, options);
    });
    ctx.hooks.unmountVolume.for('flexVolume').tapPromise('ramdisk-volume', async (r) => {
      if ((r.mounted.data as Partial<RamdiskData> | undefined)?.driver !== DRIVER) return undefined;
      // Idempotent: a volume already torn down (a retry, a second call) is done.
      if (await isMountPoint(r.dir)) await unmount(r.dir);
      await removeUnmounted(r.dir);
      ctx.logger.debug({ pod: r.podUID, volume: r.volumeName }, 'ramdisk removed');
      return true;
    });
  },
});

/** The size a volume asks for, checked: a pod spec is hostile input. */
function sizeOf(r: VolumeMountRequest, options: RamdiskOptions): number {
  // FlexVolume options are strings.
  const given = r.volume.flexVolume?.options?.sizeMiB;
  const size = given === undefined ? options.defaultSizeMiB : /^[0-9]{1,9}$/.test(given) ? Number(given) : NaN;
  if (!Number.isInteger(size) || size < 1 || size > options.maxSizeMiB) {
    throw invalidInput(`volume "${r.volume.name}": flexVolume.options.sizeMiB is ${JSON.stringify(given)}; allowed: an integer from 1 to ${options.maxSizeMiB}`);
  }
  return size;
}

async function setUp(r: VolumeMountRequest, options: RamdiskOptions): Promise<VolumeMountResult> {
  const sizeMiB = sizeOf(r, options);
  const data: RamdiskData = { driver: DRIVER, sizeMiB };
  // Set up again on every sync and after a kubelet restart: a tmpfs already there is the
  // volume (with the pod's data in it), never mounted a second time over it.
  if (!(await isMountPoint(r.dir))) {
    await fs.mkdir(r.dir, { recursive: true, mode: 0o750 });
    await mountTmpfs(r.dir, { sizeBytes: sizeMiB * 1024 * 1024, mode: 0o777 });
  }
  return { path: r.dir, mountPoint: true, data: { ...data } };
}
