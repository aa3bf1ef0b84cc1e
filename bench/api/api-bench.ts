import type { V1Pod } from '@kubernetes/client-node';
import os from 'node:os';
import { startNodeEnv, type NodeEnv } from '../../tools/node-env/index.ts';
import { logTo, machineInfo, runTag, type BenchOptions } from '../lib.ts';
import { createNamespace, deleteNamespace } from './api-pods.ts';
import { nodeKindUnavailable } from './bench-nodes.ts';
import { withBenchRun, type BenchRun } from './bench-run.ts';
import { startCluster, withAdmin, type BenchCluster, type ClusterLike } from './cluster.ts';
import { ObjectWatch } from './object-watch.ts';

/**
 * What every API benchmark sets up before it measures: the run (its directory and cleanups),
 * the node environment (containerd + loopback registry with the project's images), the control
 * plane, a namespace of the run with a watch of its pods, and whether the upstream kubelet takes
 * part (`UPSTREAM=0` leaves it out; smoke runs leave it out unless `UPSTREAM=1`).
 */

export interface ApiBenchOptions extends BenchOptions {
  /** A running control plane (the test suite's); default: start one for the run. */
  cluster?: ClusterLike;
  /** Run the upstream kubelet too; default: yes, except in smoke mode (env UPSTREAM=0/1 overrides). */
  upstream?: boolean;
}

export interface ApiBench {
  run: BenchRun;
  env: NodeEnv;
  cluster: BenchCluster;
  /** A short random tag of this run (node and namespace names). */
  tag: string;
  namespace: string;
  pods: ObjectWatch<V1Pod>;
  machine: Record<string, unknown>;
  log: (line: string) => void;
  /** Whether the upstream kubelet runs, and why not when it was wanted but cannot. */
  upstream: { enabled: boolean; skipped: string | undefined };
}

/** UPSTREAM from the environment: true, false or undefined (not set). */
export function upstreamFromEnv(): boolean | undefined {
  const v = process.env.UPSTREAM;
  if (v === undefined || v === '') return undefined;
  return !['0', 'false', 'no'].includes(v.toLowerCase());
}

export async function withApiBench<T>(opts: ApiBenchOptions, short: string, fn: (b: ApiBench) => Promise<T>): Promise<T> {
  const log = logTo(opts);
  // The load average before the run starts anything says whether something else was using the
  // machine (2 CPUs: above ~0.5 the figures are noisy).
  const loadAverageBefore = os.loadavg().map((x) => Math.round(x * 100) / 100);
  return withBenchRun(log, async (run) => {
    let env = opts.env;
    if (!env) {
      const baseDir = await run.subdir('env');
      log(`starting containerd + registry under ${baseDir} ...`);
      const started = await startNodeEnv({ baseDir, removeOnStop: true, ...(process.env.KUBELET_TS_BENCH_LOG ? { log } : {}) });
      run.defer('node environment', () => started.stop());
      env = started;
    }
    const cluster = opts.cluster ? withAdmin(opts.cluster, run.defer) : await startCluster(await run.subdir('cp'), run.defer, log);
    const wanted = opts.upstream ?? upstreamFromEnv() ?? !opts.smoke;
    const reason = wanted ? nodeKindUnavailable('upstream', cluster) : undefined;
    if (reason) log(`upstream kubelet left out: ${reason}`);
    const tag = runTag();
    const namespace = `bench-api-${short}-${tag}`;
    await createNamespace(cluster.admin, namespace);
    run.defer(`namespace ${namespace}`, () => deleteNamespace(cluster.admin, namespace));
    const pods = await ObjectWatch.start<V1Pod>(cluster.admin, `/api/v1/namespaces/${namespace}/pods`);
    run.defer('pod watch', async () => pods.stop());
    return fn({
      run,
      env,
      cluster,
      tag,
      namespace,
      pods,
      machine: { ...(await machineInfo(env)), loadAverageBefore },
      log,
      upstream: { enabled: wanted && !reason, skipped: wanted ? reason : 'not requested (UPSTREAM=0, or smoke mode)' },
    });
  });
}
