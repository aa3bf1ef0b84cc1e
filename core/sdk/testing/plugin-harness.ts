import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { loadConfig } from '../../config/load.ts';
import type { KubeletConfig, KubeletConfigInput, PluginEntry } from '../../config/types.ts';
import type { KubeletHooks } from '../../hooks.ts';
import { silentLogger, type Logger } from '../../logger.ts';
import { definePlugin, type Capabilities, type PluginEvent } from '../../plugins/plugin-api.ts';
import { createPluginHost } from '../../plugins/create-plugin-host.ts';
import { MemoryRuntime } from './memory-runtime.ts';

/** Plugins applied as a kubelet applies them, without a kubelet: for a plugin's own tests. */
export interface PluginsUnderTest {
  /** The hooks, as the core fires them (every tap isolated and attributed, as in a kubelet). */
  hooks: KubeletHooks;
  /** The provider of a slot (the `runtime`: a MemoryRuntime, unless `memoryRuntime: false`). */
  slot<K extends keyof Capabilities>(slot: K): Capabilities[K];
  /** The resolved config the plugins got. */
  config: KubeletConfig;
  /** Events the plugins recorded. */
  events: PluginEvent[];
  /** Runs the plugins' cleanups (onClose), in reverse order, as a kubelet's stop does. */
  close(): Promise<void>;
}

/**
 * Loads and applies plugin entries (a built-in name, a path, an npm package name, or a plugin
 * object, with options, exactly as in `plugins` of a config) with a config of `config`'s
 * fields under `rootDir`. An in-memory runtime fills the runtime slot first, unless
 * `memoryRuntime: false` (to test a runtime plugin, which then must provide it). Call again
 * with the same rootDir to see what a plugin does after a kubelet restart.
 */
export async function startPluginsForTest(
  entries: PluginEntry[],
  options: { rootDir: string; config?: Omit<KubeletConfigInput, 'plugins' | 'rootDir'>; logger?: Logger; pods?: () => V1Pod[]; memoryRuntime?: boolean },
): Promise<PluginsUnderTest> {
  await fs.mkdir(options.rootDir, { recursive: true });
  const file = path.join(options.rootDir, 'kubelet-ts-test.config.json');
  await fs.writeFile(file, JSON.stringify({ nodeName: 'plugin-test-node', ...options.config, rootDir: options.rootDir, plugins: [] }));
  const config = await loadConfig({ configFile: file });
  const logger = options.logger ?? silentLogger();
  const events: PluginEvent[] = [];
  const { hooks, host } = createPluginHost({
    config,
    logger,
    services: {
      runtime: () => host.slot('runtime'),
      pods: () => options.pods?.() ?? [],
      reportProbe: async () => {},
      observeProbeRun: () => {},
      recordEvent: (e) => events.push(e),
    },
  });
  const memory = definePlugin({
    name: 'memory-runtime',
    kind: 'runtime',
    apply(ctx) {
      const runtime = new MemoryRuntime();
      ctx.provide('runtime', runtime);
    },
  });
  await host.loadAll(options.memoryRuntime === false ? entries : [memory, ...entries]);
  await host.startAll();
  return { hooks, slot: (s) => host.slot(s), config, events, close: () => host.close() };
}
