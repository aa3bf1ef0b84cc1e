import { loadConfig, type ConfigFlags } from './config/load.ts';
import { configSchema } from './config/schema.ts';
import { ConfigError, isPluginError, errorMessage } from './errors.ts';
import { createLogger } from './logger.ts';
import { Kubelet } from './kubelet.ts';
import { logsCommand } from './commands/logs.ts';
import { explainCommand } from './commands/explain.ts';
import { eventsCommand } from './commands/events.ts';
import { podsCommand } from './commands/pods.ts';
import { pluginsCommand } from './commands/plugins.ts';
import { parseCommandArgs } from './commands/command-args.ts';
import { localSocketPath } from './commands/local-kubelet.ts';
import { ServerListenError } from './server/read-only-server.ts';
import { KubeconfigError } from './apiserver/kubeconfig-error.ts';

/** The log levels the config schema accepts, so the help can never list fewer or others. */
const LOG_LEVELS = (configSchema.properties.logging.properties.level.enum as readonly string[]).join('|');

const USAGE = `Usage: kubelet-ts [run] [flags]
       kubelet-ts plugins [flags]     load the plugins and print what each provides and taps
                                      (with the runtime endpoint of the kubelet running with this root dir, if any)
       kubelet-ts pods [NAME...] [-n NAMESPACE | -A] [-o wide|json|yaml|name] [-w] [--root-dir DIR]
                                      the local kubelet's pods, as kubectl get pods shows them (alias: get pods)
       kubelet-ts logs POD [-c CONTAINER] [-n NAMESPACE] [--uid PREFIX] [-f] [--previous] [--tail N] [--timestamps] [--root-dir DIR]
                                      a container's logs, from the local kubelet (its socket <rootDir>/kubelet-ts.sock, as root);
                                      POD is a name or a UID prefix (two pods share a name while an edited pod replaces the old)
       kubelet-ts explain POD [-n NAMESPACE] [--uid PREFIX] [--root-dir DIR] [--json]
                                      where the pod's start spent its time, as a waterfall
       kubelet-ts events [-n NAMESPACE] [-w] [--root-dir DIR] [--json]
                                      the local kubelet's events (pods and node), newest last

Each command takes -h for its own flags. Flags of run and plugins (they mirror the upstream kubelet's and override the config file):
  --config FILE                     config file (kubelet.config.ts|js|json|yaml); default: the package's kubelet.config.ts
  --kubeconfig FILE                 join the cluster of this kubeconfig's API server (kubeconfig); unset: standalone
  --pod-manifest-path DIR           directory of static pod manifests (staticPodPath)
  --manifest-url URL                URL of static pods, a Pod or a PodList (staticPodURL)
  --manifest-url-header 'a:x,b:y'   headers for --manifest-url, repeatable (staticPodURLHeader)
  --container-runtime-endpoint EP   CRI endpoint, unix:///path (containerRuntimeEndpoint)
  --root-dir DIR                    kubelet state directory (rootDir)
  --node-name NAME                  node name (nodeName)
  --node-ip IP                      node IP reported as hostIP (nodeIP)
  --port N                          the main HTTPS port, authenticated (port, default 10250)
  --tls-cert-file FILE              the main port's serving certificate (tlsCertFile)
  --tls-private-key-file FILE       its key (tlsPrivateKeyFile)
  --cert-dir DIR                    where a self-signed pair is made when no certificate is given (certDirectory)
  --image-credential-provider-config FILE
                                    the exec image credential providers' CredentialProviderConfig, a file or
                                    a directory (imageCredentialProviderConfig; needs the credential-provider-exec plugin)
  --image-credential-provider-bin-dir DIR
                                    the directory of their executables (imageCredentialProviderBinDir)
  --read-only-port N                read-only HTTP port, 0 disables (readOnlyPort)
  --log-level LEVEL                 ${LOG_LEVELS} (logging.level, default info)
  -h, --help                        this help
`;

/** `--manifest-url-header 'a:hello,b:again,c:world'` (repeatable), as upstream's mapStringSlice flag. */
function parseHeaderFlag(values: string[] | undefined): Record<string, string[]> | undefined {
  if (!values) return undefined;
  const out: Record<string, string[]> = {};
  for (const value of values) {
    for (const pair of value.split(',')) {
      const colon = pair.indexOf(':');
      if (colon <= 0) throw new ConfigError(`--manifest-url-header: '${pair}' is not name:value; allowed: 'name:value,name:value', repeatable`);
      (out[pair.slice(0, colon).trim()] ??= []).push(pair.slice(colon + 1).trim());
    }
  }
  return out;
}

function parse(argv: string[]) {
  // At most one word: the command. Anything else is a mistake to report, not to ignore.
  const { values, positionals } = parseCommandArgs(argv, {
    config: { type: 'string' },
    kubeconfig: { type: 'string' },
    'pod-manifest-path': { type: 'string' },
    'manifest-url': { type: 'string' },
    'manifest-url-header': { type: 'string', multiple: true },
    'container-runtime-endpoint': { type: 'string' },
    'root-dir': { type: 'string' },
    'node-name': { type: 'string' },
    'node-ip': { type: 'string' },
    'read-only-port': { type: 'string' },
    port: { type: 'string' },
    'tls-cert-file': { type: 'string' },
    'tls-private-key-file': { type: 'string' },
    'cert-dir': { type: 'string' },
    'log-level': { type: 'string' },
    'image-credential-provider-config': { type: 'string' },
    'image-credential-provider-bin-dir': { type: 'string' },
    help: { type: 'boolean', short: 'h' },
  }, 1);
  let readOnlyPort: number | undefined;
  if (values['read-only-port'] !== undefined) {
    readOnlyPort = Number(values['read-only-port']);
    if (!/^\d+$/.test(values['read-only-port'])) throw new ConfigError(`--read-only-port: '${values['read-only-port']}' is not a port number; allowed: an integer 0-65535 (0 disables)`);
  }
  let port: number | undefined;
  if (values.port !== undefined) {
    port = Number(values.port);
    if (!/^\d+$/.test(values.port)) throw new ConfigError(`--port: '${values.port}' is not a port number; allowed: an integer 1-65535`);
  }
  const flags: ConfigFlags = {
    podManifestPath: values['pod-manifest-path'],
    manifestUrl: values['manifest-url'],
    manifestUrlHeader: parseHeaderFlag(values['manifest-url-header']),
    kubeconfig: values.kubeconfig,
    containerRuntimeEndpoint: values['container-runtime-endpoint'],
    rootDir: values['root-dir'],
    nodeName: values['node-name'],
    nodeIP: values['node-ip'],
    readOnlyPort,
    logLevel: values['log-level'],
    port,
    tlsCertFile: values['tls-cert-file'],
    tlsPrivateKeyFile: values['tls-private-key-file'],
    certDirectory: values['cert-dir'],
    imageCredentialProviderConfig: values['image-credential-provider-config'],
    imageCredentialProviderBinDir: values['image-credential-provider-bin-dir'],
  };
  return { command: positionals[0] ?? 'run', configFile: values.config, flags, help: values.help === true };
}

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
  if (argv[0] === 'get') return { run: async () => (process.stderr.write(`kubelet-ts get: only 'get pods' is known here (got '${argv[1] ?? ''}')\n`), 2), argv: [] };
  const name = argv[0] ?? '';
  return Object.hasOwn(CLIENT_COMMANDS, name) ? { run: CLIENT_COMMANDS[name]!, argv: argv.slice(1) } : undefined;
}

async function main(): Promise<number> {
  // The client commands reach the kubelet over its local socket (under the configured rootDir,
  // or their --root-dir).
  const client = clientCommand(process.argv.slice(2));
  if (client) {
    const rootDir = await loadConfig().then((c) => c.rootDir, () => '/var/lib/kubelet');
    return client.run(client.argv, { socketPath: localSocketPath(rootDir) });
  }
  let args;
  try {
    args = parse(process.argv.slice(2));
  } catch (err) {
    process.stderr.write(`kubelet-ts: ${errorMessage(err)}\n\n${USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(USAGE);
    return 0;
  }
  if (args.command !== 'run' && args.command !== 'plugins') {
    process.stderr.write(`kubelet-ts: unknown command '${args.command}'\n\n${USAGE}`);
    return 2;
  }
  if (args.command === 'plugins') return pluginsCommand({ ...(args.configFile ? { configFile: args.configFile } : {}), flags: args.flags });
  const config = await loadConfig({ ...(args.configFile ? { configFile: args.configFile } : {}), flags: args.flags });
  const logger = createLogger({ level: config.logLevel });
  const kubelet = new Kubelet(config, logger);

  // The last line of defence: whatever a pod spec, a plugin or a library manages to throw
  // outside a request, the node keeps its kubelet. Each is a bug to fix where it was thrown;
  // the log line says so.
  process.on('uncaughtException', (err) => logger.error({ err }, 'uncaught exception (a bug: please report it); the kubelet keeps running'));
  process.on('unhandledRejection', (reason) => logger.error({ err: reason }, 'unhandled promise rejection (a bug: please report it); the kubelet keeps running'));

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) {
      // A second signal: the operator does not want to wait for the bounded stop.
      logger.warn({ signal }, 'second signal: exiting now');
      logger.flush();
      process.exit(1);
    }
    stopping = true;
    logger.info({ signal }, 'shutting down (pods keep running)');
    await kubelet.stop();
    logger.flush();
    process.exit(0);
  };
  process.on('SIGTERM', () => void stop('SIGTERM'));
  process.on('SIGINT', () => void stop('SIGINT'));
  try {
    await kubelet.start();
  } catch (err) {
    // Release what started (timers, watchers, sockets) so the exit below is clean.
    await kubelet.stop().catch(() => {});
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
