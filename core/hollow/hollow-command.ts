import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { ApiClient } from '../apiserver/api-client.ts';
import { H2Transport } from '../apiserver/h2-transport.ts';
import { loadKubeconfig } from '../apiserver/kubeconfig.ts';
import { credentialsOf } from '../apiserver/credentials.ts';
import { UsageError } from '../commands/command-args.ts';
import { loadConfig, type ConfigNotice } from '../config/load.ts';
import { ConfigError, errorMessage } from '../errors.ts';
import { createLogger, type Logger } from '../logger.ts';
import { Limiter } from '../util/limiter.ts';
import { RUNS_COMPILED } from '../util/package-root.ts';
import { HOLLOW_USAGE, parseHollowArgs, type HollowArgs } from './hollow-args.ts';
import { HollowFleet } from './hollow-fleet.ts';
import { exitOnUncaughtErrors, stopOnSignals } from '../process-lifecycle.ts';
import { cannotImpersonateNode } from './node-identity.ts';

/** How often the command logs what its nodes hold (pods, memory, API streams). */
const SUMMARY_MS = 60_000;
/**
 * The longest a signalled command takes to exit: stopping many nodes' workers, and with
 * --cleanup deleting their Nodes, is bounded here as a whole.
 */
const STOP_DEADLINE_MS = 120_000;
/** Node deletions at once with --cleanup. */
const CLEANUP_PARALLELISM = 16;

/**
 * `kubelet-ts hollow`: N hollow nodes in this process (hollow-fleet.ts) against the API server
 * of a kubeconfig, until SIGINT or SIGTERM. Returns the exit code of a start that failed (2 for
 * a usage error, 1 otherwise), or -1 once the nodes run: the signal handler exits.
 */
export async function hollowCommand(argv: string[]): Promise<number> {
  let args: HollowArgs;
  try {
    args = parseHollowArgs(argv);
  } catch (err) {
    if (!(err instanceof UsageError || err instanceof ConfigError)) throw err;
    process.stderr.write(`kubelet-ts hollow: ${errorMessage(err)}\n\n${HOLLOW_USAGE}`);
    return 2;
  }
  if (args.help) {
    process.stdout.write(HOLLOW_USAGE);
    return 0;
  }
  const notices: ConfigNotice[] = [];
  const base = await loadConfig({ ...(args.configFile !== undefined ? { configFile: args.configFile } : {}), settings: args.settings, notices });
  // The command's own lines at info whatever the nodes' level: start, summaries, stop.
  const log = createLogger({ level: 'info' }).child({ component: 'hollow' });
  const nodeLogger = createLogger({ level: base.logLevel });
  for (const n of notices) log[n.level](n.msg);

  const loaded = loadKubeconfig(base.kubeconfig!);
  // The sessions present the kubeconfig's client certificate (a token goes with each request).
  const { tls } = await credentialsOf(loaded).apply();
  const transport = new H2Transport({ server: loaded.server, tls: { ca: tls.ca, cert: tls.cert, key: tls.key, rejectUnauthorized: tls.rejectUnauthorized, ...(tls.servername ? { servername: tls.servername } : {}) }, logger: log });
  // The kubeconfig's own identity: the impersonation check and --cleanup.
  const own = new ApiClient(loaded, { logger: log, transport });
  const ownRootDir = args.rootDir === undefined;
  const rootDir = args.rootDir !== undefined ? path.resolve(args.rootDir) : await fs.mkdtemp(path.join(os.tmpdir(), 'kubelet-ts-hollow-'));
  const fleet = new HollowFleet({ base, nodes: args.nodes, prefix: args.prefix, rootDir, identity: args.identity, transport, kubeconfig: loaded, capacity: args.capacity, logger: nodeLogger });
  const names = fleet.names();

  // Crash-only, as a kubelet: a hollow node whose worker or watch died on a bug would go on
  // heartbeating as Ready while its pods are never synced, which is the failure a scale test
  // must not hide. The Nodes stay in the API; the command started again takes them over.
  exitOnUncaughtErrors({ logger: log, consequence: 'the hollow Nodes stay in the API; the command started again with the same prefix takes them over' });
  let summary: NodeJS.Timeout | undefined;
  const finish = async () => {
    clearInterval(summary);
    await fleet.stop();
    if (args.cleanup) await deleteNodes(own, names, log);
    transport.close();
    if (ownRootDir) await fs.rm(rootDir, { recursive: true, force: true }).catch(() => {});
  };
  const signals = stopOnSignals({
    logger: log,
    stoppingMessage: args.cleanup ? 'stopping the hollow nodes, then deleting their Nodes' : 'stopping the hollow nodes (their Nodes and pods stay in the API)',
    deadlineMs: STOP_DEADLINE_MS,
    deadlineConsequence: 'the hollow Nodes stay in the API',
    stop: async () => {
      await finish();
      log.info('hollow nodes stopped');
    },
  });

  try {
    if (args.identity === 'node') {
      const refused = await cannotImpersonateNode(own, names[0]!);
      if (refused) throw new ConfigError(`--identity node: ${refused}. Give a kubeconfig whose identity may impersonate nodes (system:masters may), or --identity kubeconfig to run every node as ${own.describeIdentity()}`);
    }
    const t0 = performance.now();
    await fleet.start();
    log.info({
      nodes: args.nodes, first: names[0], last: names.at(-1), identity: args.identity === 'node' ? 'system:node:<name> (impersonated)' : own.describeIdentity(),
      server: loaded.server, rootDir, startMs: Math.round(performance.now() - t0), api: transport.stats(), code: RUNS_COMPILED ? 'compiled' : 'sources',
    }, 'hollow nodes started');
  } catch (err) {
    if (signals.stopping()) return -1;
    await finish().catch(() => {});
    const known = err instanceof ConfigError || (err as { name?: string })?.name === 'KubeconfigError' || (err as { name?: string })?.name === 'ApiError';
    process.stderr.write(`kubelet-ts hollow: ${known ? errorMessage(err) : (err as Error)?.stack ?? errorMessage(err)}\n`);
    return 1;
  }
  summary = setInterval(() => log.info({ pods: fleet.kubelets.reduce((a, k) => a + k.pods().length, 0), rssMiB: Math.round(process.memoryUsage.rss() / 2 ** 20), api: transport.stats() }, 'hollow nodes'), SUMMARY_MS);
  summary.unref();
  return -1;
}

/** --cleanup: deletes the Nodes and their Leases (the kubeconfig's own identity: a node may not delete itself). */
async function deleteNodes(client: ApiClient, names: string[], log: Logger): Promise<void> {
  const limiter = new Limiter(CLEANUP_PARALLELISM);
  let failed = 0;
  await Promise.all(names.map((name) => limiter.run(async () => {
    for (const p of [`/api/v1/nodes/${name}`, `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`]) {
      try {
        await client.request('DELETE', p, { timeoutMs: 30_000 });
      } catch (err) {
        if ((err as { statusCode?: number }).statusCode === 404) continue;
        failed++;
        log.warn({ node: name, err: errorMessage(err) }, 'deleting a hollow node from the API failed');
      }
    }
  })));
  log.info({ nodes: names.length, failed }, 'deleted the hollow Nodes and Leases');
}
