/**
 * `kubelet-ts plugins`: applies the configured plugins as the kubelet would (resolution, host
 * version ranges, options, order, slots, taps) and prints what each provides and taps (avvio's
 * boot tree, for kubelet-ts). It never runs their start phase, so it touches nothing of the
 * node: no runtime connection, no socket, no file a plugin writes when it starts.
 */
import type { Writable } from 'node:stream';
import { loadConfig, type LoadConfigOptions } from '../config/load.ts';
import { createLogger } from '../logger.ts';
import { createPluginHost } from '../plugins/create-plugin-host.ts';

/** Prints the plugin tree; returns the exit code. Load errors propagate (the CLI names them). */
export async function pluginsCommand(args: LoadConfigOptions, out: Writable = process.stdout): Promise<number> {
  const config = await loadConfig(args);
  // The host alone, as the kubelet builds it, without services: plugins are applied, never run.
  const { host } = createPluginHost({ config, logger: createLogger({ level: 'warn' }) });
  try {
    await host.loadAll(config.plugins);
    for (const p of host.loaded) {
      out.write(`${p.name}  (${p.kind}, ${p.origin}: ${p.location})  apply ${p.applyMs.toFixed(1)} ms\n`);
      if (p.slots.length) out.write(`  provides: ${p.slots.join(', ')}\n`);
      for (const t of p.taps) out.write(`  taps: ${t.hook}${t.stage ? ` (stage ${t.stage})` : ''}\n`);
    }
    for (const s of host.skipped) out.write(`${s.name}  skipped: ${s.reason}\n`);
  } finally {
    await host.close();
  }
  return 0;
}
