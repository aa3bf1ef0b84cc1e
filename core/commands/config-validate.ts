/**
 * `kubelet-ts config validate`: loads the configuration exactly as `kubelet-ts run` with the
 * same flags would (the file, the flags on top, the schema, the semantic checks, the checks the
 * start makes, the plugins applied with their options checked, the kubeconfig read), touching
 * nothing of the node, and says in one line that it is valid, or fails with the error a start
 * would have failed with (which names the file, flag, field or plugin).
 */
import type { Writable } from 'node:stream';
import { checkAppliedPlugins, securityAdmissionOf } from '../start-checks.ts';
import { withAppliedPlugins } from '../plugins/applied-plugins.ts';
import type { KubeletCommandLine } from './kubelet-command-line.ts';
import { loadConfigWithNotices } from './config-notices.ts';

/** Validates; returns 0 with the one-line verdict on `out`. Load errors propagate (the config command prints them). */
export async function configValidate(args: KubeletCommandLine, io: { stdout: Writable; stderr: Writable }): Promise<number> {
  const config = await loadConfigWithNotices(args, io.stderr);
  securityAdmissionOf(config);
  // A kubeconfig the TLS bootstrap writes at start may not exist yet: only one given as is is read now.
  if (config.kubeconfig !== undefined && config.bootstrapKubeconfig === undefined) {
    (await import('../node/api-node.ts')).checkKubeconfig(config.kubeconfig, config.nodeName);
  }
  const plugins = await withAppliedPlugins(config, (host, hooks) => {
    checkAppliedPlugins(config, hooks);
    return { applied: host.loaded.length, skipped: host.skipped.map((s) => s.name) };
  });
  const from = config.pluginsConfigFile !== undefined && config.pluginsConfigFile !== config.configFile ? ` of ${config.pluginsConfigFile}` : '';
  const skipped = plugins.skipped.length ? `, ${plugins.skipped.length} skipped ${plugins.skipped.length > 1 ? 'themselves' : 'itself'} (${plugins.skipped.join(', ')})` : '';
  const flags = args.settings.length ? ` with ${args.settings.map((s) => s.spelling).join(', ')}` : '';
  io.stdout.write(`${config.configFile}${flags}: valid; plugins${from}: ${plugins.applied} applied${skipped}\n`);
  return 0;
}
