import type { Logger } from '../logger.ts';
import type { KubeletConfig } from '../config/types.ts';
import { NOTIFICATION_HOOKS, createHooks, type KubeletHooks } from '../hooks.ts';
import type { HostServices } from './plugin-api.ts';
import { PluginHost } from './plugin-host.ts';
import { isolateTaps } from './tap-isolation.ts';

export interface PluginHostSetup {
  config: KubeletConfig;
  logger: Logger;
  /**
   * What the host lends plugins (the runtime, pods, probe reports, events) and who sees every
   * tap's run; without them the plugins can be applied and listed, not run.
   */
  services?: HostServices;
  /** Where plugin paths and npm names are resolved from (PluginHostDeps.resolveFrom); default: the plugins file's directory. */
  resolveFrom?: string;
}

/**
 * The hooks of one kubelet and the plugin host over them, built the one way the kubelet,
 * `kubelet-ts plugins` and the plugin test harness (`kubelet-ts/testing`) all use: every tap
 * isolated (named for its plugin, bounded by hookTimeout, observed), the notification hooks
 * told rather than asked (hooks.ts), then the host that resolves, applies, starts and closes
 * the plugins.
 */
export function createPluginHost(setup: PluginHostSetup): { hooks: KubeletHooks; host: PluginHost } {
  const { config, logger, services, resolveFrom } = setup;
  const hooks = createHooks();
  isolateTaps(hooks, logger, {
    timeoutMs: config.hookTimeoutMs,
    notifications: NOTIFICATION_HOOKS,
    ...(services?.observeTap ? { observe: services.observeTap } : {}),
  });
  const host = new PluginHost({ hooks, config, logger, ...(services ? { services } : {}), ...(resolveFrom !== undefined ? { resolveFrom } : {}) });
  return { hooks, host };
}
