/**
 * `kubelet-ts config validate|view [flags]` (as `kubeadm config`, and the kubelet's /configz
 * without a running kubelet): the configuration `kubelet-ts run` would start with, from the
 * same flags, checked (validate) or printed (view). Reads the subcommand and -o, then hands the
 * kubelet's flags to config-validate.ts or config-view.ts; prints what fails them as a start
 * would have failed, and exits 1 (2 for a command line that cannot be run).
 */
import type { Writable } from 'node:stream';
import { KubeconfigError } from '../apiserver/kubeconfig-error.ts';
import { ConfigError, isPluginError } from '../errors.ts';
import { outputFormat, takeOutputFlag, UsageError } from './command-args.ts';
import { configValidate } from './config-validate.ts';
import { CONFIG_VIEW_OUTPUTS, configView } from './config-view.ts';
import { KUBELET_FLAGS_USAGE } from './kubelet-flags-usage.ts';
import { parseKubeletCommandLine, type KubeletCommandLine } from './kubelet-command-line.ts';

export const CONFIG_USAGE = `Usage: kubelet-ts config validate [flags]
       kubelet-ts config view [-o yaml|json] [flags]
The configuration \`kubelet-ts run\` would start with given the same flags (the file, then the
flags on top), without starting anything.

  validate   loads it as a start would: the file, the flags, the schema, the checks across
             fields, the plugins applied with their options checked (never started), the
             kubeconfig read (unless --bootstrap-kubeconfig will write it); prints the start's
             warnings, then one line saying it is valid (exit 0), or the error a start would
             stop with, naming the file, flag, field or plugin (exit 1)
  view       prints it in upstream's KubeletConfiguration shape, as the kubelet serves it at
             /configz: durations as Go's, paths resolved, defaults filled, plugins by name
  -o, --output yaml|json   view's format (default yaml)

Flags (those of kubelet-ts run):
${KUBELET_FLAGS_USAGE}`;

const SUBCOMMANDS = ['validate', 'view'] as const;

/** Runs `kubelet-ts config ...` (argv after `config`); returns the exit code. */
export async function configCommand(argv: string[], io: { stdout?: Writable; stderr?: Writable } = {}): Promise<number> {
  const out = io.stdout ?? process.stdout;
  const err = io.stderr ?? process.stderr;
  let args: KubeletCommandLine;
  let output: (typeof CONFIG_VIEW_OUTPUTS)[number] | undefined;
  let sub: (typeof SUBCOMMANDS)[number] | undefined;
  try {
    const taken = takeOutputFlag(argv);
    args = parseKubeletCommandLine(taken.rest, 1);
    if (args.help) {
      out.write(CONFIG_USAGE);
      return 0;
    }
    if (args.version !== undefined) throw new UsageError("--version is not a flag of config: 'kubelet-ts --version' prints it");
    const word = args.positionals[0];
    if (word === undefined) throw new UsageError(`a subcommand is required: ${SUBCOMMANDS.join(' or ')}`);
    if (!(SUBCOMMANDS as readonly string[]).includes(word)) throw new UsageError(`unknown subcommand '${word}'; allowed: ${SUBCOMMANDS.join(', ')}`);
    sub = word as (typeof SUBCOMMANDS)[number];
    output = outputFormat(taken.output, CONFIG_VIEW_OUTPUTS);
    if (output !== undefined && sub !== 'view') throw new UsageError('-o, --output goes with view; validate prints one line');
  } catch (e) {
    if (!(e instanceof UsageError || e instanceof ConfigError)) throw e;
    err.write(`kubelet-ts config: ${e.message}\n\n${CONFIG_USAGE}`);
    return 2;
  }
  try {
    return sub === 'view' ? await configView(args, output ?? 'yaml', { stdout: out, stderr: err }) : await configValidate(args, { stdout: out, stderr: err });
  } catch (e) {
    // What a start would have stopped with, in its words (they name the file, flag, field or plugin).
    if (!(e instanceof ConfigError || e instanceof KubeconfigError || isPluginError(e))) throw e;
    err.write(`kubelet-ts config ${sub}: ${e.message}\n`);
    return 1;
  }
}
