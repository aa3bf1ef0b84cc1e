/**
 * The configured plugins applied as the kubelet's start applies them (resolution, host version
 * ranges, options against each plugin's schema, order, slots, taps), without their start
 * phase: nothing of the node is touched (no runtime connection, no socket, no file a plugin
 * writes when it starts). `kubelet-ts plugins` lists what this gives; `kubelet-ts config
 * validate` checks that it succeeds.
 */
import type { KubeletConfig } from '../config/types.ts';
import type { KubeletHooks } from '../hooks.ts';
import { createLogger } from '../logger.ts';
import { createPluginHost } from './create-plugin-host.ts';
import type { PluginHost } from './plugin-host.ts';

/**
 * Applies `config.plugins` on a host without services, hands it to `use`, then closes it (the
 * cleanups an apply registered). A PluginError naming the plugin propagates.
 */
export async function withAppliedPlugins<T>(config: KubeletConfig, use: (host: PluginHost, hooks: KubeletHooks) => T | Promise<T>): Promise<T> {
  // Warnings only: a plugin's 'loaded' info lines are what the caller prints, in its own words.
  const { host, hooks } = createPluginHost({ config, logger: createLogger({ level: 'warn' }) });
  try {
    await host.loadAll(config.plugins);
    return await use(host, hooks);
  } finally {
    await host.close();
  }
}
