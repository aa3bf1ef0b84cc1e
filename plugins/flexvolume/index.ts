import { mkdir, rmdir, stat } from 'node:fs/promises';
import { definePlugin, isMountPoint, podFsGroup, podFullName, setVolumeOwnership, unmount, type VolumeMountRequest, type VolumeMountResult } from 'kubelet-ts';
import { driverOptions, type FlexSource } from './driver-options.ts';
import { callDriver, driverExecutable, NotSupported, type DriverStatus } from './flex-driver.ts';
import { optionsSchema, type FlexVolumeOptions } from './options-schema.ts';

/** What the plugin keeps with a set-up volume: the driver to unmount with after a restart. */
interface FlexVolumeData { [key: string]: unknown; driver: string; exe: string }

/**
 * flexvolume: upstream's FlexVolume, the exec driver interface, for drivers that mount
 * without attaching (their `init` answers `"capabilities": {"attach": false}`): a pod's
 * `flexVolume` (or a PersistentVolume's) is set up by `<driver> mount <dir> <json options>`
 * and torn down by `<driver> unmount <dir>`, the driver found under the kubelet's
 * `volumePluginDir` as upstream finds it. Attaching drivers need the attach/detach
 * controller's FlexVolume support and `waitforattach`/`mountdevice`; they are refused.
 */
export default definePlugin<FlexVolumeOptions>({
  name: 'flexvolume',
  kind: 'storage',
  optionsSchema,
  apply(ctx, options) {
    const pluginDir = options.pluginDir ?? ctx.config.volumePluginDir;
    const timeoutMs = options.callTimeoutSeconds * 1000;
    /** Each driver's `init` answer, asked again when its program changes (upstream probes the dir). */
    const inits = new Map<string, { mtimeMs: number; status: DriverStatus }>();
    const init = async (exe: string, signal: AbortSignal): Promise<DriverStatus> => {
      const mtimeMs = (await stat(exe).catch(() => undefined))?.mtimeMs ?? -1;
      const known = inits.get(exe);
      if (known && known.mtimeMs === mtimeMs) return known.status;
      const status = await callDriver(exe, 'init', [], { timeoutMs, signal });
      inits.set(exe, { mtimeMs, status });
      return status;
    };

    ctx.hooks.mountVolume.for('flexVolume').tapPromise('flexvolume', async (r, hook): Promise<VolumeMountResult> => {
      const src = flexSource(r);
      const exe = driverExecutable(pluginDir, src.source.driver);
      if (r.previous && (await isMountPoint(r.dir))) return r.previous;
      const capabilities = (await init(exe, hook.signal)).capabilities;
      if (capabilities?.attach !== false) {
        throw new Error(`FlexVolume driver ${src.source.driver} attaches volumes (its init answers ${capabilities ? '"attach": true' : 'no capabilities, which upstream reads as "attach": true'}): kubelet-ts runs drivers whose init answers "capabilities": {"attach": false}`);
      }
      const secret = src.secret ? await r.objects.secret(src.secret.namespace, src.secret.name) : undefined;
      if (src.secret && !secret) throw new Error(`${src.field}.secretRef: Secret ${src.secret.namespace}/${src.secret.name} not found`);
      const opts = driverOptions(r.pod, src, secret);
      await mkdir(r.dir, { recursive: true, mode: 0o750 });
      try {
        await callDriver(exe, 'mount', [r.dir, JSON.stringify(opts)], { timeoutMs, signal: hook.signal });
      } catch (err) {
        await rmdir(r.dir).catch(() => {});
        if (err instanceof NotSupported) throw new Error(`FlexVolume driver ${src.source.driver} answers "Not supported" to mount, and does not attach: nothing could mount the volume`);
        throw err;
      }
      // As upstream: the pod's fsGroup is given the volume unless it is read-only or the driver says it handles it (fsGroup: false); no change policy.
      const own = podFsGroup(r.pod);
      if (own && !src.readOnly && capabilities.fsGroup !== false) {
        await setVolumeOwnership(r.dir, {
          fsGroup: own.fsGroup, readOnly: false,
          onSkip: (why) => ctx.logger.warn({ pod: podFullName(r.pod), volume: r.volume.name, why }, 'fsGroup: part of the volume left unchanged'),
        });
      }
      ctx.logger.info({ pod: podFullName(r.pod), volume: r.volume.name, driver: src.source.driver }, 'flexVolume mounted');
      const data: FlexVolumeData = { driver: src.source.driver, exe };
      // A driver may fill the dir rather than mount on it: only a mount point is checked after a restart.
      const mountPoint = await isMountPoint(r.dir);
      return { path: r.dir, ...(mountPoint ? { mountPoint: true } : {}), ...(src.readOnly ? { readOnly: true } : {}), data };
    });

    ctx.hooks.unmountVolume.for('flexVolume').tapPromise('flexvolume', async (r, hook) => {
      const data = r.mounted.data as FlexVolumeData | undefined;
      if (data?.exe) {
        try {
          await callDriver(data.exe, 'unmount', [r.dir], { timeoutMs, signal: hook.signal });
        } catch (err) {
          // Upstream's default for a driver without unmount: the kubelet unmounts the dir itself.
          if (!(err instanceof NotSupported)) throw err;
        }
      }
      await unmount(r.dir);
      await rmdir(r.dir).catch((err: NodeJS.ErrnoException) => {
        if (err.code !== 'ENOENT') throw new Error(`removing ${r.dir} after the driver's unmount: ${err.message} (the driver left it ${err.code === 'ENOTEMPTY' ? 'not empty' : 'in place'})`);
      });
      return true;
    });
  },
});

/** The source of the request: the pod's inline flexVolume, or the claim's PersistentVolume. */
function flexSource(r: VolumeMountRequest): FlexSource {
  const ns = r.pod.metadata?.namespace ?? 'default';
  const pv = r.persistentVolume;
  if (!pv) {
    const source = r.volume.flexVolume;
    const field = `volume "${r.volume.name}": flexVolume`;
    if (!source?.driver) throw new Error(`${field}.driver is required`);
    return { source, readOnly: source.readOnly === true, pvOrVolumeName: r.volume.name, field, ...(source.secretRef?.name ? { secret: { namespace: ns, name: source.secretRef.name } } : {}) };
  }
  const name = pv.volume.metadata?.name ?? '';
  const source = pv.volume.spec?.flexVolume;
  const field = `PersistentVolume "${name}": spec.flexVolume`;
  if (!source?.driver) throw new Error(`${field}.driver is required`);
  if (pv.volume.spec?.volumeMode === 'Block') throw new Error(`${field}: volumeMode Block is not supported for FlexVolume (upstream has no block FlexVolume either)`);
  const ref = source.secretRef;
  return { source, readOnly: pv.readOnly || source.readOnly === true, pvOrVolumeName: name, field, ...(ref?.name ? { secret: { namespace: ref.namespace || ns, name: ref.name } } : {}) };
}
