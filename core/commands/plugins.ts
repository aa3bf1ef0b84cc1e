/**
 * `kubelet-ts plugins`: applies the configured plugins as the kubelet would (resolution, host
 * version ranges, options, order, slots, taps) and prints what each provides and taps (avvio's
 * boot tree, for kubelet-ts). It never runs their start phase, so it touches nothing of the
 * node: no runtime connection, no socket, no file a plugin writes when it starts.
 */
import type { Writable } from 'node:stream';
import { loadConfig, type LoadConfigOptions } from '../config/load.ts';
import { withAppliedPlugins } from '../plugins/applied-plugins.ts';
import { KUBELET_FLAGS_USAGE } from './kubelet-flags-usage.ts';

export const PLUGINS_USAGE = `Usage: kubelet-ts plugins [flags]
Loads the configuration as \`kubelet-ts run\` would with the same flags, applies its plugins
(options checked against each plugin's schema, slots, taps) and prints what each provides and
which hooks it taps, with its apply time; a plugin that skipped itself says why. It never runs
the plugins' start phase: nothing of the node is touched (no runtime connection, no socket).

Flags (those of kubelet-ts run):
${KUBELET_FLAGS_USAGE}`;

/** Prints the plugin tree; returns the exit code. Load errors propagate (the CLI names them). */
export async function pluginsCommand(args: LoadConfigOptions, out: Writable = process.stdout): Promise<number> {
  const config = await loadConfig(args);
  await withAppliedPlugins(config, (host) => {
    for (const p of host.loaded) {
      out.write(`${p.name}  (${p.kind}, ${p.origin}: ${p.location})  apply ${p.applyMs.toFixed(1)} ms\n`);
      if (p.slots.length) out.write(`  provides: ${p.slots.join(', ')}\n`);
      for (const t of p.taps) out.write(`  taps: ${t.hook}${t.stage ? ` (stage ${t.stage})` : ''}\n`);
    }
    for (const s of host.skipped) out.write(`${s.name}  skipped: ${s.reason}\n`);
  });
  return 0;
}
