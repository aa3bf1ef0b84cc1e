/**
 * `kubelet-ts config view`: the configuration a start with the same flags would run with, in
 * upstream's KubeletConfiguration shape, the very document the kubelet serves at /configz
 * (core/server/configz.ts), as YAML (kubeadm's form) or JSON. It loads and checks the
 * configuration as the start does, without applying the plugins (`config validate` does).
 */
import type { Writable } from 'node:stream';
import yaml from 'js-yaml';
import { configzBody } from '../server/configz.ts';
import type { KubeletCommandLine } from './kubelet-command-line.ts';
import { loadConfigWithNotices } from './config-notices.ts';

export const CONFIG_VIEW_OUTPUTS = ['yaml', 'json'] as const;
export type ConfigViewOutput = (typeof CONFIG_VIEW_OUTPUTS)[number];

/** Prints the effective configuration; returns 0. Load errors propagate (the config command prints them). */
export async function configView(args: KubeletCommandLine, output: ConfigViewOutput, io: { stdout: Writable; stderr: Writable }): Promise<number> {
  const config = await loadConfigWithNotices(args, io.stderr);
  // Through JSON, so that both formats hold the same fields: unset ones (undefined) are left out of each.
  const doc = JSON.parse(JSON.stringify(configzBody(config).kubeletconfig)) as Record<string, unknown>;
  io.stdout.write(output === 'json' ? `${JSON.stringify(doc, null, 2)}\n` : yaml.dump(doc, { noRefs: true, lineWidth: -1 }));
  return 0;
}
