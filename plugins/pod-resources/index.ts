import path from 'node:path';
import { definePlugin } from 'kubelet-ts';
import { optionsSchema, type PodResourcesOptions } from './options-schema.ts';
import { PodResourcesServer } from './server.ts';

/**
 * pod-resources: upstream's podresources API v1 (List, GetAllocatableResources, Get) on
 * `<socketDir>/kubelet.sock`, what monitoring agents (NVIDIA's DCGM exporter, node feature
 * discovery, ...) read to tie devices to pods. It reads the device manager through the SDK.
 */
export default definePlugin<PodResourcesOptions>({
  name: 'pod-resources',
  kind: 'observability',
  optionsSchema,
  apply(ctx, options) {
    const server = new PodResourcesServer({
      dir: options.socketDir ? path.resolve(options.socketDir) : path.join(ctx.config.rootDir, 'pod-resources'),
      qps: options.qps,
      burst: options.burst,
      pods: () => ctx.pods(),
      devices: () => ctx.devices(),
      logger: ctx.logger,
    });
    ctx.onStart(() => server.start());
    ctx.onClose(() => server.stop());
  },
});
