import path from 'node:path';
import { definePlugin } from 'kubelet-ts';
import { CsiVolumes } from './csi-volumes.ts';
import { optionsSchema, type CsiGrpcOptions } from './options-schema.ts';
import { PersistentCsiVolumes } from './persistent-volume.ts';
import type { PersistentVolumeData } from './persistent-volume-data.ts';
import { PublicationCleanup } from './publication-cleanup.ts';
import { RegistrationWatcher } from './registration.ts';

/**
 * csi-grpc: serves `csi` volumes through CSI drivers. Drivers register the way
 * node-driver-registrar does it (a `pluginregistration.Registration` socket in
 * `<rootDir>/plugins_registry`); volumes are set up with the driver's CSI Node service.
 */
export default definePlugin<CsiGrpcOptions>({
  name: 'csi-grpc',
  kind: 'storage',
  optionsSchema,
  apply(ctx, options) {
    // A driver that (re)registers can unstage what a dead kubelet left staged with no pod using it.
    let sweepStaged: () => void = () => {};
    const drivers = new RegistrationWatcher({
      dir: options.registryDir ? path.resolve(options.registryDir) : path.join(ctx.config.rootDir, 'plugins_registry'),
      logger: ctx.logger,
      timeoutMs: options.callTimeoutSeconds * 1000,
      rescanMs: options.rescanSeconds * 1000,
      onChange: () => sweepStaged(),
    });
    const cleanup = new PublicationCleanup({ driver: (name) => drivers.driver(name), logger: ctx.logger });
    // Standalone there is no CSIDriver to read: a driver serving inline volumes needs the
    // pod info and the `ephemeral` key (see the README), so it is on unless configured off.
    const podInfoOnMount = (name: string) => options.drivers[name]?.podInfoOnMount ?? true;
    const persistent = new PersistentCsiVolumes({ drivers, cleanup, podInfoOnMount, logger: ctx.logger });
    sweepStaged = () => {
      for (const d of drivers.list()) void persistent.sweepStaged(ctx.config.rootDir, d.name);
    };
    const volumes = new CsiVolumes({ drivers, cleanup, podInfoOnMount, persistent, logger: ctx.logger });
    ctx.hooks.mountVolume.for('csi').tapPromise('csi-grpc', (r, hook) => volumes.mount(r, hook.signal));
    ctx.hooks.unmountVolume.for('csi').tapPromise('csi-grpc', (r) => volumes.unmount(r));
    // Inline volumes are local ephemeral storage upstream measures itself; only PersistentVolumes are asked.
    ctx.hooks.volumeStats.for('csi').tapPromise('csi-grpc', async (r) => {
      const data = r.mounted.data as unknown as PersistentVolumeData | undefined;
      return data?.persistent ? persistent.stats(data) : undefined;
    });
    // A resize the control plane left to the node (inline volumes have no claim to resize).
    ctx.hooks.expandVolume.for('csi').tapPromise('csi-grpc', async (r, hook) => {
      const data = r.mounted.data as unknown as PersistentVolumeData | undefined;
      return data?.persistent ? persistent.expand(r, data, hook.signal) : undefined;
    });
    // A failed set-up may owe an undo the volume manager knows nothing of: settled once the pod is gone.
    ctx.hooks.podRemoved.tapPromise('csi-grpc', async (pod) => {
      if (pod.metadata?.uid) cleanup.podGone(pod.metadata.uid);
    });
    // The start phase watches plugins_registry and dials the drivers; apply touches nothing.
    ctx.onStart(() => drivers.start());
    ctx.onClose(async () => {
      cleanup.stop();
      await drivers.stop();
    });
  },
});
