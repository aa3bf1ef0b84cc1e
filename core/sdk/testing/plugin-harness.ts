import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { loadConfig } from '../../config/load.ts';
import type { KubeletConfig, KubeletConfigInput, PluginEntry } from '../../config/types.ts';
import type { KubeletHooks } from '../../hooks.ts';
import { silentLogger, type Logger } from '../../logger.ts';
import { definePlugin, type Capabilities, type PluginEvent } from '../../plugins/plugin-api.ts';
import { createPluginHost } from '../../plugins/create-plugin-host.ts';
import { MemoryRuntime } from '../../runtime/memory-runtime.ts';
import { DeviceManager } from '../../devices/device-manager.ts';
import type { DeviceManagerView, DeviceProvider } from '../../devices/device-types.ts';

/** A device provider's registration as a plugin made it, for the device provider contract. */
export interface RecordedDeviceProvider {
  plugin: string;
  resourceName: string;
  /** The provider the core got. */
  provider: DeviceProvider;
  /** Why the core refused it, if it did. */
  refused?: string;
  /** Each device list it sent, as sent. */
  updates: unknown[];
  /** It closed its registration (or a newer one replaced it). */
  closed(): boolean;
}

/** The device manager's view, recording what each plugin registers and sends. */
function recordingView(view: DeviceManagerView, plugin: string, records: RecordedDeviceProvider[]): DeviceManagerView {
  return {
    ...view,
    register(provider) {
      const rec: RecordedDeviceProvider = { plugin, resourceName: String(provider?.resourceName), provider, updates: [], closed: () => true };
      records.push(rec);
      let registration;
      try {
        registration = view.register(provider);
      } catch (err) {
        rec.refused = (err as Error)?.message ?? String(err);
        throw err;
      }
      const real = registration;
      rec.closed = () => real.closed;
      return {
        update(devices) {
          let copy: unknown = devices;
          try {
            copy = structuredClone(devices);
          } catch {
            // Not data (a provider passing functions): kept as given.
          }
          rec.updates.push(copy);
          real.update(devices);
        },
        close: () => real.close(),
        get closed() {
          return real.closed;
        },
      };
    },
  };
}

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
  /**
   * The device manager the plugins registered their device providers with (`ctx.devices()`), as
   * a kubelet's: its checkpoint under rootDir, every pod of `pods` active.
   */
  devices: DeviceManager;
  /** Every device provider registration the plugins made, in order, with what each sent. */
  deviceProviders: RecordedDeviceProvider[];
  /** Runs the plugins' cleanups (onClose), in reverse order, as a kubelet's stop does. */
  close(): Promise<void>;
}

/** How `startPluginsForTest` sets up the kubelet the plugins see. */
export interface PluginTestOptions {
  /** The kubelet's root dir (plugin state, volumes, the device checkpoint); a temporary directory of the test. */
  rootDir: string;
  /**
   * Where plugin paths (`'./index.ts'`) and npm package names (`'my-plugin'`) are resolved
   * from, as a kubelet resolves them from its config file's directory. Default:
   * `process.cwd()`, the project mocha (or npm test) runs in.
   */
  projectDir?: string;
  /** Config fields, as in a config file (`rootDir` and `plugins` come from here). */
  config?: Omit<KubeletConfigInput, 'plugins' | 'rootDir'>;
  logger?: Logger;
  /** The pods the "kubelet" runs (`ctx.pods()`, the device manager's active pods). */
  pods?: () => V1Pod[];
  /** false: no in-memory runtime first (to test a runtime plugin, which then must provide it). */
  memoryRuntime?: boolean;
}

/**
 * Loads and applies plugin entries (a built-in name, a path, an npm package name, or a plugin
 * object, with options, exactly as in `plugins` of a config) with a config of `config`'s
 * fields under `rootDir`. Paths and package names are resolved from `projectDir` (default: the
 * working directory), so a package's own test names it as an operator would:
 *
 *     // in the package my-plugin (its package.json "name"), run by mocha from its directory
 *     const plugins = await startPluginsForTest([['my-plugin', { size: 1 }]], { rootDir });
 *     const plugins = await startPluginsForTest([['./index.ts', { size: 1 }]], { rootDir });
 *
 * An in-memory runtime fills the runtime slot first, unless `memoryRuntime: false` (to test a
 * runtime plugin, which then must provide it). Call again with the same rootDir to see what a
 * plugin does after a kubelet restart.
 */
export async function startPluginsForTest(entries: PluginEntry[], options: PluginTestOptions): Promise<PluginsUnderTest> {
  await fs.mkdir(options.rootDir, { recursive: true });
  const file = path.join(options.rootDir, 'kubelet-ts-test.config.json');
  await fs.writeFile(file, JSON.stringify({ nodeName: 'plugin-test-node', ...options.config, rootDir: options.rootDir, plugins: [] }));
  const config = await loadConfig({ configFile: file });
  const logger = options.logger ?? silentLogger();
  const events: PluginEvent[] = [];
  const pods = () => options.pods?.() ?? [];
  const devices = new DeviceManager({
    rootDir: config.rootDir,
    logger,
    activePods: pods,
    sourcesReady: () => true,
    podRunning: () => false,
  });
  await devices.start();
  const deviceProviders: RecordedDeviceProvider[] = [];
  const { hooks, host } = createPluginHost({
    config,
    logger,
    resolveFrom: path.resolve(options.projectDir ?? process.cwd()),
    services: {
      runtime: () => host.slot('runtime'),
      pods,
      reportProbe: async () => {},
      observeProbeRun: () => {},
      recordEvent: (e) => events.push(e),
      devices: (plugin) => recordingView(devices.view(plugin), plugin, deviceProviders),
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
  return {
    hooks,
    slot: (s) => host.slot(s),
    config,
    events,
    devices,
    deviceProviders,
    close: async () => {
      await host.close();
      await devices.stop();
    },
  };
}
