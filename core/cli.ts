import { parseArgs } from 'node:util';
import { loadConfig, type ConfigFlags } from './config/load.ts';
import { ConfigError, isPluginError, errorMessage } from './errors.ts';
import { createLogger } from './logger.ts';
import { Kubelet } from './kubelet.ts';
import { logsCommand } from './commands/logs.ts';
import { explainCommand } from './commands/explain.ts';
import { eventsCommand } from './commands/events.ts';
import { ServerListenError } from './server.ts';
import { KubeconfigError } from './api/kubeconfig.ts';

const USAGE = `Usage: kubelet-ts [run] [flags]
       kubelet-ts plugins [flags]     load the plugins and print what each provides and taps
       kubelet-ts logs POD [-c CONTAINER] [-n NAMESPACE] [-f] [--previous] [--tail N] [--timestamps] [--port N]
                                      a container's logs, from the local kubelet's read-only port
       kubelet-ts explain POD [-n NAMESPACE] [--port N] [--json]
                                      where the pod's start spent its time, as a waterfall
       kubelet-ts events [-n NAMESPACE] [-w] [--port N] [--json]
                                      the local kubelet's events (pods and node), newest last

Flags (they mirror the upstream kubelet's and override the config file):
  --config FILE                     config file (kubelet.config.ts|js|json|yaml); default: the package's kubelet.config.ts
  --kubeconfig FILE                 join the cluster of this kubeconfig's API server (kubeconfig); unset: standalone
  --pod-manifest-path DIR           directory of static pod manifests (staticPodPath)
  --container-runtime-endpoint EP   CRI endpoint, unix:///path (containerRuntimeEndpoint)
  --root-dir DIR                    kubelet state directory (rootDir)
  --node-name NAME                  node name (nodeName)
  --node-ip IP                      node IP reported as hostIP (nodeIP)
  --read-only-port N                read-only HTTP port, 0 disables (readOnlyPort)
  --log-level LEVEL                 trace|debug|info|warn|error
  -h, --help                        this help
`;

function parse(argv: string[]) {
  const { values, positionals } = parseArgs({
    args: argv,
    allowPositionals: true,
    options: {
      config: { type: 'string' },
      kubeconfig: { type: 'string' },
      'pod-manifest-path': { type: 'string' },
      'container-runtime-endpoint': { type: 'string' },
      'root-dir': { type: 'string' },
      'node-name': { type: 'string' },
      'node-ip': { type: 'string' },
      'read-only-port': { type: 'string' },
      'log-level': { type: 'string' },
      help: { type: 'boolean', short: 'h' },
    },
  });
  let readOnlyPort: number | undefined;
  if (values['read-only-port'] !== undefined) {
    readOnlyPort = Number(values['read-only-port']);
    if (!/^\d+$/.test(values['read-only-port'])) throw new ConfigError(`--read-only-port: '${values['read-only-port']}' is not a port number; allowed: an integer 0-65535 (0 disables)`);
  }
  const flags: ConfigFlags = {
    podManifestPath: values['pod-manifest-path'],
    kubeconfig: values.kubeconfig,
    containerRuntimeEndpoint: values['container-runtime-endpoint'],
    rootDir: values['root-dir'],
    nodeName: values['node-name'],
    nodeIP: values['node-ip'],
    readOnlyPort,
    logLevel: values['log-level'],
  };
  return { command: positionals[0] ?? 'run', configFile: values.config, flags, help: values.help === true };
}

async function main(): Promise<number> {
  // `logs` and `explain` talk to a running kubelet over its read-only port; they have flags of their own.
  const client = { logs: logsCommand, explain: explainCommand, events: eventsCommand }[process.argv[2] ?? ''];
  if (client) {
    const port = await loadConfig().then((c) => c.readOnlyPort || 10255, () => 10255);
    return client(process.argv.slice(3), { port, address: '127.0.0.1' });
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
  const config = await loadConfig({ ...(args.configFile ? { configFile: args.configFile } : {}), flags: args.flags });
  const logger = createLogger({ level: args.command === 'plugins' ? 'warn' : config.logLevel });
  const kubelet = new Kubelet(config, logger);

  if (args.command === 'plugins') {
    await kubelet.plugins.loadAll(config.plugins);
    for (const p of kubelet.plugins.loaded) {
      process.stdout.write(`${p.name}  (${p.kind}, ${p.origin}: ${p.location})  apply ${p.applyMs.toFixed(1)} ms\n`);
      if (p.slots.length) process.stdout.write(`  provides: ${p.slots.join(', ')}\n`);
      for (const t of p.taps) process.stdout.write(`  taps: ${t.hook}${t.stage ? ` (stage ${t.stage})` : ''}\n`);
    }
    await kubelet.plugins.close();
    return 0;
  }

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
