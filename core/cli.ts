import { loadConfig, type ConfigNotice } from './config/load.ts';
import { ConfigError, isPluginError, errorMessage } from './errors.ts';
import { createLogger } from './logger.ts';
import { Kubelet } from './kubelet.ts';
import { logsCommand } from './commands/logs.ts';
import { explainCommand } from './commands/explain.ts';
import { eventsCommand } from './commands/events.ts';
import { podsCommand } from './commands/pods.ts';
import { pluginsCommand, PLUGINS_USAGE } from './commands/plugins.ts';
import { configCommand } from './commands/config-command.ts';
import { writeConfigNotices } from './commands/config-notices.ts';
import { UsageError } from './commands/command-args.ts';
import { loadOptionsOf, parseKubeletCommandLine, type KubeletCommandLine } from './commands/kubelet-command-line.ts';
import { KUBELET_FLAGS_USAGE } from './commands/kubelet-flags-usage.ts';
import { KUBELET_VERSION } from './version.ts';
import { localSocketPath } from './commands/local-kubelet.ts';
import { ServerListenError } from './server/read-only-server.ts';
import { KubeconfigError } from './apiserver/kubeconfig-error.ts';
import { exitOnUncaughtErrors, stopOnSignals, warnOfInspectorSignal } from './process-lifecycle.ts';


const USAGE = `Usage: kubelet-ts [run] [flags]
       kubelet-ts plugins [flags]     load the plugins and print what each provides and taps
                                      (with the runtime endpoint of the kubelet running with this root dir, if any)
       kubelet-ts config validate [flags]
                                      load the configuration as a start with these flags would, touching nothing;
                                      one line if it is valid, else the error a start would stop with
       kubelet-ts config view [-o yaml|json] [flags]
                                      the configuration a start with these flags would run with, as /configz serves it
       kubelet-ts pods [NAME...] [-n NAMESPACE | -A] [-o wide|json|yaml|name] [-w] [--root-dir DIR]
                                      the local kubelet's pods, as kubectl get pods shows them (alias: get pods)
       kubelet-ts logs POD [-c CONTAINER] [-n NAMESPACE] [--uid PREFIX] [-f] [--previous] [--tail N] [--timestamps] [--root-dir DIR]
                                      a container's logs, from the local kubelet (its socket <rootDir>/kubelet-ts.sock, as root);
                                      POD is a name or a UID prefix (two pods share a name while an edited pod replaces the old)
       kubelet-ts explain POD [-n NAMESPACE] [--uid PREFIX] [--root-dir DIR] [-o json]
                                      where the pod's start spent its time, as a waterfall
       kubelet-ts events [-n NAMESPACE] [-w] [-o json|yaml] [--root-dir DIR]
                                      the local kubelet's events (pods and node), newest last
       kubelet-ts hollow --nodes N --kubeconfig FILE --node-name-prefix P [flags]
                                      N hollow nodes in one process on an in-memory runtime, against a real
                                      API server: for testing a control plane, a scheduler or an autoscaler at scale

Each command takes -h for its own flags. Flags of run, plugins and config (they mirror the upstream kubelet's and override the config file):
${KUBELET_FLAGS_USAGE}`;

/** Commands that talk to a running kubelet over its local socket; each parses its own flags. */
const CLIENT_COMMANDS: Record<string, (argv: string[], opts: { socketPath: string }) => Promise<number>> = {
  logs: logsCommand,
  explain: explainCommand,
  events: eventsCommand,
  pods: podsCommand,
};

/** `get pods ...` (kubectl's spelling) is `pods ...`. */
function clientCommand(argv: string[]): { run: (argv: string[], opts: { socketPath: string }) => Promise<number>; argv: string[] } | undefined {
  if (argv[0] === 'get' && ['pods', 'pod', 'po'].includes(argv[1] ?? '')) return { run: podsCommand, argv: argv.slice(2) };
  // `get -h`: pods are all `get` knows, so its help is theirs.
  if (argv[0] === 'get' && ['-h', '--help'].includes(argv[1] ?? '')) return { run: podsCommand, argv: argv.slice(1) };
  if (argv[0] === 'get') return { run: async () => (process.stderr.write(`kubelet-ts get: only 'get pods' is known here (got '${argv[1] ?? ''}')\n`), 2), argv: [] };
  const name = argv[0] ?? '';
  return Object.hasOwn(CLIENT_COMMANDS, name) ? { run: CLIENT_COMMANDS[name]!, argv: argv.slice(1) } : undefined;
}

/**
 * The longest a signalled kubelet takes to exit: the stop itself is bounded at 20 s
 * (kubelet.ts); this backstop ends the process, saying so, before the docs' systemd unit's
 * TimeoutStopSec=30 (docs/operating/node.md) has systemd kill it without a word.
 */
const STOP_DEADLINE_MS = 25_000;

async function main(): Promise<number> {
  // Many hollow nodes in one process (`kubelet-ts hollow`, core/hollow): its own flags, loaded only when asked for.
  if (process.argv[2] === 'hollow') return (await import('./hollow/hollow-command.ts')).hollowCommand(process.argv.slice(3));
  // The client commands reach the kubelet over its local socket (under the configured rootDir,
  // or their --root-dir).
  const client = clientCommand(process.argv.slice(2));
  if (client) {
    const rootDir = await loadConfig().then((c) => c.rootDir, () => '/var/lib/kubelet');
    return client.run(client.argv, { socketPath: localSocketPath(rootDir) });
  }
  // The configuration a start would use, checked or shown: the kubelet's flags, and its own subcommands.
  if (process.argv[2] === 'config') return configCommand(process.argv.slice(3));
  let args: KubeletCommandLine;
  try {
    args = parseKubeletCommandLine(process.argv.slice(2));
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof ConfigError)) throw err;
    process.stderr.write(`kubelet-ts: ${errorMessage(err)}\n\n${process.argv[2] === 'plugins' ? PLUGINS_USAGE : USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(args.command === 'plugins' ? PLUGINS_USAGE : USAGE);
    return 0;
  }
  if (args.version !== undefined && args.version !== 'false') {
    // As upstream's: kubeadm's preflight reads `kubelet --version` as "Kubernetes vX.Y.Z".
    process.stdout.write(`Kubernetes ${KUBELET_VERSION}\n`);
    return 0;
  }
  if (args.command !== 'run' && args.command !== 'plugins') {
    process.stderr.write(`kubelet-ts: unknown command '${args.command}'\n\n${USAGE}`);
    return 2;
  }
  const notices: ConfigNotice[] = [];
  const loadOptions = loadOptionsOf(args, notices);
  if (args.command === 'plugins') {
    try {
      return await pluginsCommand(loadOptions);
    } finally {
      // Said before a failure too: a plugins file leaving out the bundle's runtime fails the load,
      // and the note says what the file replaced.
      writeConfigNotices(notices, process.stderr);
    }
  }
  const config = await loadConfig(loadOptions);
  const logger = createLogger({ level: config.logLevel });
  // What the config reader has to say: one warning naming every setting kubelet-ts ignores, and
  // why flags accepted without effect have none.
  for (const n of notices) logger[n.level](n.ignored ? { config: config.configFile, ignored: n.ignored.map((i) => i.name) } : {}, n.msg);
  // The node's tools find the kubelet by its process name, as they find upstream's: `pidof
  // kubelet`, `pgrep -x kubelet`, upstream's Mount propagation e2e test (it enters the kubelet's
  // mount namespace through `pidof kubelet`). The name must be exactly `kubelet`: Linux keeps 15
  // bytes of it as the process's comm, which is what pidof compares, so the flags cannot follow
  // it; the effective configuration is at /configz and `kubelet-ts config view`.
  process.title = 'kubelet';
  const kubelet = new Kubelet(config, logger);

  exitOnUncaughtErrors({ logger, pluginOfError: (err) => kubelet.plugins.pluginOfError(err), consequence: 'pods keep running, and the kubelet started again takes them over' });
  warnOfInspectorSignal(logger);
  const signals = stopOnSignals({
    logger,
    stoppingMessage: 'shutting down (pods keep running)',
    deadlineMs: STOP_DEADLINE_MS,
    deadlineConsequence: 'a restarted kubelet takes its pods over',
    stop: () => kubelet.stop(),
  });
  try {
    await kubelet.start();
  } catch (err) {
    // A signal during the start (a TLS bootstrap that waits) ends it: the signal's stop exits.
    if (signals.stopping()) return -1;
    // Release what started (timers, watchers, sockets) so the exit below is clean.
    await kubelet.stop().catch((e: unknown) => logger.warn({ err: errorMessage(e) }, 'stop after a failed start failed'));
    throw err;
  }
  return -1;
}

main().then(
  (code) => {
    if (code >= 0) process.exit(code);
  },
  (err) => {
    const known = err instanceof ConfigError || err instanceof ServerListenError || err instanceof KubeconfigError || isPluginError(err);
    process.stderr.write(`kubelet-ts: ${known ? err.message : (err as Error)?.stack ?? String(err)}\n`);
    process.exit(1);
  },
);
