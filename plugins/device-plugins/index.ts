import path from 'node:path';
import { definePlugin } from 'kubelet-ts';
import { optionsSchema, type DevicePluginsOptions } from './options-schema.ts';
import { RegistrationServer } from './registration-server.ts';

/** The device plugin API v1beta1's DevicePluginPath: where every device plugin looks for kubelet.sock, whatever the kubelet's root dir. */
export const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';

/**
 * device-plugins: upstream's device plugin API v1beta1 over gRPC. Device plugins (NVIDIA's,
 * AMD's, Intel's, SR-IOV, ...) register on `<socketDir>/kubelet.sock` (upstream's fixed
 * /var/lib/kubelet/device-plugins unless `socketDir` moves it); each becomes a device
 * provider of the core's device manager (`ctx.devices()`), which does the rest: capacity,
 * admission, allocation, the container config, the checkpoint.
 */
export default definePlugin<DevicePluginsOptions>({
  name: 'device-plugins',
  kind: 'device',
  optionsSchema,
  apply(ctx, options) {
    const server = new RegistrationServer({
      // Upstream's path is a constant of the device plugin API, not under --root-dir: plugins dial it.
      dir: path.resolve(options.socketDir ?? DEVICE_PLUGIN_DIR),
      maxResources: options.maxResources,
      dialTimeoutMs: options.dialTimeoutSeconds * 1000,
      callTimeoutMs: options.callTimeoutSeconds * 1000,
      maxMessageBytes: options.maxMessageBytes,
      devices: () => ctx.devices(),
      logger: ctx.logger,
    });
    // The socket is made in the start phase: apply touches nothing.
    ctx.onStart(() => server.start());
    ctx.onClose(() => server.stop());
  },
});
