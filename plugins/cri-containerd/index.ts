import { definePlugin, errorMessage, isKubeletError } from 'kubelet-ts';
import { CriClient } from './cri-client.ts';
import { CriRuntime } from './cri-runtime.ts';
import { optionsSchema, type CriContainerdOptions } from './options-schema.ts';

/**
 * cri-containerd: the container runtime slot, served by any CRI v1 runtime (containerd,
 * CRI-O) over gRPC on a unix socket. At start it calls Version and refuses to go on with a
 * message that says what is wrong: no socket, nothing answering, or no CRI v1.
 */
export default definePlugin<CriContainerdOptions>({
  name: 'cri-containerd',
  kind: 'runtime',
  optionsSchema,
  async apply(ctx, options) {
    const endpoint = options.endpoint ?? ctx.config.containerRuntimeEndpoint;
    const client = new CriClient(endpoint);
    if (!client.socketExists()) {
      client.close();
      throw new Error(`container runtime endpoint ${endpoint}: no socket at ${client.socketPath} (is containerd running? set --container-runtime-endpoint)`);
    }
    const runtime = new CriRuntime(client, {
      requestTimeoutMs: ctx.config.runtimeRequestTimeoutMs,
      pullTimeoutMs: options.pullTimeoutSeconds * 1000,
    });
    try {
      const v = await client.callRuntime('Version', { version: 'v1' }, options.connectTimeoutSeconds * 1000);
      ctx.logger.info({ endpoint, runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion, runtimeApiVersion: v.runtimeApiVersion }, 'connected to CRI runtime');
    } catch (err) {
      client.close();
      const code = isKubeletError(err) ? err.code : "Internal";
      const hint = /unimplemented|unknown service/i.test(errorMessage(err))
        ? 'it does not serve CRI v1 (runtime.v1.RuntimeService); for containerd, check that the cri plugin is not disabled'
        : code === 'DeadlineExceeded' || code === 'Unavailable'
          ? `nothing answered within ${options.connectTimeoutSeconds}s`
          : 'the Version call failed';
      throw new Error(`container runtime endpoint ${endpoint}: ${hint}: ${errorMessage(err)}`);
    }
    ctx.provide('runtime', runtime);
    ctx.onClose(() => runtime.close());
  },
});
