import { definePlugin, errorMessage, isKubeletError, type Logger } from 'kubelet-ts';
import { CriClient } from './cri-client.ts';
import { CriRuntime } from './cri-runtime.ts';
import { optionsSchema, type CriContainerdOptions } from './options-schema.ts';

/**
 * cri-containerd: the container runtime slot, served by any CRI v1 runtime (containerd,
 * CRI-O) over gRPC on a unix socket. Applying it connects to nothing; its start phase calls
 * Version and refuses to go on with a message that says what is wrong.
 */
export default definePlugin<CriContainerdOptions>({
  name: 'cri-containerd',
  kind: 'runtime',
  optionsSchema,
  apply(ctx, options) {
    const endpoint = options.endpoint ?? ctx.config.containerRuntimeEndpoint;
    // gRPC channels connect lazily: making the client touches nothing until the start phase calls it.
    const client = new CriClient(endpoint);
    const runtime = new CriRuntime(client, {
      requestTimeoutMs: ctx.config.runtimeRequestTimeoutMs,
      pullTimeoutMs: options.pullTimeoutSeconds * 1000,
    });
    // The host closes it (ContainerRuntime.close) at stop, after every other plugin's cleanup.
    ctx.provide('runtime', runtime);
    ctx.onStart(() => connect(ctx.logger, client, endpoint, options.connectTimeoutSeconds));
  },
});

/** Checks the runtime answers CRI v1 at `endpoint`, or fails saying what is wrong: no socket, nothing answering, or no CRI v1. */
async function connect(logger: Logger, client: CriClient, endpoint: string, connectTimeoutSeconds: number): Promise<void> {
  if (!client.socketExists()) {
    throw new Error(`container runtime endpoint ${endpoint}: no socket at ${client.socketPath} (is containerd running? set --container-runtime-endpoint)`);
  }
  try {
    const v = await client.callRuntime('Version', { version: 'v1' }, connectTimeoutSeconds * 1000);
    logger.info({ endpoint, runtimeName: v.runtimeName, runtimeVersion: v.runtimeVersion, runtimeApiVersion: v.runtimeApiVersion }, 'connected to CRI runtime');
  } catch (err) {
    const code = isKubeletError(err) ? err.code : 'Internal';
    const hint = /unimplemented|unknown service/i.test(errorMessage(err))
      ? 'it does not serve CRI v1 (runtime.v1.RuntimeService); for containerd, check that the cri plugin is not disabled'
      : code === 'DeadlineExceeded' || code === 'Unavailable'
        ? `nothing answered within ${connectTimeoutSeconds}s`
        : 'the Version call failed';
    throw new Error(`container runtime endpoint ${endpoint}: ${hint}: ${errorMessage(err)}`);
  }
}
