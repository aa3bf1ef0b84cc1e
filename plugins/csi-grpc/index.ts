import path from 'node:path';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { CsiVolumes } from './csi-volumes.ts';
import { optionsSchema, type CsiGrpcOptions } from './options-schema.ts';
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
  async apply(ctx, options) {
    const drivers = new RegistrationWatcher({
      dir: options.registryDir ? path.resolve(options.registryDir) : path.join(ctx.config.rootDir, 'plugins_registry'),
      logger: ctx.logger,
      timeoutMs: options.callTimeoutSeconds * 1000,
      rescanMs: options.rescanSeconds * 1000,
    });
    const volumes = new CsiVolumes({ drivers, stageInlineVolumes: options.stageInlineVolumes, localObjectsDir: ctx.config.localObjectsDir, logger: ctx.logger });
    ctx.hooks.mountVolume.for('csi').tapPromise('csi-grpc', (r) => volumes.mount(r));
    ctx.hooks.unmountVolume.for('csi').tapPromise('csi-grpc', (r) => volumes.unmount(r));
    await drivers.start();
    ctx.onClose(() => drivers.stop());
  },
});
