import type { V1Pod } from '@kubernetes/client-node';
import { randomUUID } from 'node:crypto';
import { mkdir, mkdtemp, readFile, realpath, rename, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { KubeletConfig } from '../core/config/types.ts';
import { Kubelet } from '../core/kubelet.ts';
import { silentLogger } from '../core/logger.ts';
import { buildContainerConfig } from '../core/pod/container-config.ts';
import { buildSandboxConfig } from '../core/pod/sandbox-config.ts';
import { LABEL } from '../core/runtime/labels.ts';
import { Limiter } from '../core/util/limiter.ts';
import { CriClient } from '../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../plugins/cri-containerd/cri-runtime.ts';
import { startNodeEnv, type NodeEnv } from '../tools/node-env/index.ts';
import { removeCgroupRoot } from '../test/support/cgroups.ts';
import { abandonRunningKubelets, removeLeftCgroupRoots } from '../test/support/kubelet-process.ts';
export { shebangNodeFlags } from '../test/support/shebang-flags.ts';
// Read from /proc as the RSS is: the benchmarks and the fuzz report share it.
export { procCpuSeconds } from '../test/support/kubelet-process.ts';
import { testConfig } from '../test/support/test-kubelet.ts';

/**
 * Shared pieces of the benchmarks: the node environment, an in-process kubelet on it, the
 * raw CRI sequence for the same pod spec, statistics, the table and the JSON results.
 */

/** What every benchmark's `run()` accepts. */
export interface BenchOptions {
  /** An already running node environment (tests pass the shared one); default: start one and stop it after. */
  env?: NodeEnv;
  /** Few pods and a short window: proves the benchmark works, measures nothing. */
  smoke?: boolean;
  /** Number of pods (each benchmark has its own default). */
  n?: number;
  /** Directory for the JSON results; false writes none. Default `bench/results` (none in smoke mode). */
  resultsDir?: string | false;
  /** Progress lines; default stderr. */
  log?: (line: string) => void;
  /** The table and summary; default stdout. */
  print?: (text: string) => void;
}

export const BENCH_DIR = path.dirname(fileURLToPath(import.meta.url));
export const DEFAULT_RESULTS_DIR = path.join(BENCH_DIR, 'results');

export const logTo = (opts: BenchOptions) => opts.log ?? ((line: string) => process.stderr.write(`${line}\n`));
export const printTo = (opts: BenchOptions) => opts.print ?? ((text: string) => process.stdout.write(`${text}\n`));

/** Runs `fn` with the given environment, or with a fresh one under a short tmp dir that is removed after. */
export async function withNodeEnv<T>(opts: BenchOptions, fn: (env: NodeEnv) => Promise<T>): Promise<T> {
  if (opts.env) return fn(opts.env);
  const log = logTo(opts);
  // Short: containerd's socket lives under it.
  const baseDir = await mkdtemp(path.join(os.tmpdir(), 'ktsb-'));
  log(`starting containerd + registry under ${baseDir} ...`);
  const env = await startNodeEnv({ baseDir, removeOnStop: true, ...(process.env.KUBELET_TS_BENCH_LOG ? { log } : {}) });
  // Ctrl-C: what the benchmark's own finally would have stopped goes too (its kubelets and their
  // pods' mounts, then the runtime, then the cgroups), or an interrupted soak leaves 100 tmpfs mounts.
  // `on`, not `once`, and idempotent: tsx sends the signal again when the first did not answer
  // within 30 ms, and a process with no listener left then exits mid-cleanup.
  let stopping = false;
  const stop = () => {
    if (stopping) return;
    stopping = true;
    log('interrupted: stopping the kubelets, containerd and the registry ...');
    void abandonRunningKubelets().then(() => env.stop()).then(removeLeftCgroupRoots).finally(() => process.exit(130));
  };
  process.on('SIGINT', stop);
  try {
    return await fn(env);
  } finally {
    process.off('SIGINT', stop);
    log('stopping containerd + registry ...');
    await env.stop();
    await removeLeftCgroupRoots();
  }
}

/** The measuring window from BENCH_SECONDS, else SECONDS: undefined when unset; a clear error when not a positive number of seconds. */
export function envWindowSeconds(): number | undefined {
  const name = process.env.BENCH_SECONDS !== undefined ? 'BENCH_SECONDS' : 'SECONDS';
  const v = process.env[name];
  if (v === undefined || v === '') return undefined;
  const x = Number(v);
  if (!(x > 0)) throw new Error(`${name}=${v}: expected a positive number of seconds`);
  return x;
}

/** An integer from the environment, or the default. */
export function envInt(name: string, def: number): number {
  const v = process.env[name];
  if (v === undefined || v === '') return def;
  const n = Number(v);
  if (!Number.isFinite(n) || n <= 0) throw new Error(`${name}=${v}: expected a positive number`);
  return Math.floor(n);
}

export const isSmoke = () => process.env.SMOKE === '1' || process.env.SMOKE === 'true';

/** True when the module at `url` is the script node was started with (`tsx bench/x.ts`). */
export async function isMain(url: string): Promise<boolean> {
  if (!process.argv[1]) return false;
  try {
    return (await realpath(fileURLToPath(url))) === (await realpath(process.argv[1]));
  } catch {
    return false;
  }
}

/** Runs a benchmark's main, printing the error and setting the exit code on failure. */
export async function runMain(main: () => Promise<unknown>): Promise<void> {
  try {
    await main();
  } catch (err) {
    process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
    process.exitCode = 1;
  }
}

// ---------------------------------------------------------------------------------------
// The pod spec both sides run.

/** A short random tag: keeps pods of concurrent or crashed runs apart. */
export const runTag = () => randomUUID().slice(0, 6);

/**
 * The benchmark pod: one busybox container that idles and exits at once on SIGTERM (so
 * cleanup does not wait for a grace period). `work` runs first in the shell (a log flood, say)
 * in a container named `container`.
 */
export function benchPodManifest(name: string, namespace: string, image: string, opts: { container?: string; work?: string } = {}): V1Pod {
  return {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: { name, namespace },
    spec: {
      terminationGracePeriodSeconds: 2,
      containers: [{
        name: opts.container ?? 'main', image, imagePullPolicy: 'IfNotPresent',
        command: ['sh', '-c', `${opts.work ? `${opts.work}; ` : ''}trap "exit 0" TERM; sleep 3600 & wait`],
      }],
    },
  };
}

// ---------------------------------------------------------------------------------------
// The kubelet side.

/**
 * A production-like resolved config: the test config (test/support/test-kubelet.ts, which
 * tracks new fields) with upstream default periods (PLEG 1 s, runtime timeout 2 m), QoS
 * cgroups on under a cgroup root of the benchmark's own, dirs under `dir`.
 */
export function benchConfig(dir: string, endpoint: string, overrides: Partial<KubeletConfig> = {}): KubeletConfig {
  return testConfig(dir, {
    nodeName: 'bench-node',
    fileCheckFrequencyMs: 20_000,
    syncFrequencyMs: 60_000,
    plegRelistPeriodMs: 1000,
    containerRuntimeEndpoint: endpoint,
    runtimeRequestTimeoutMs: 120_000,
    cgroupsPerQOS: true,
    cgroupRoot: `/kubelet-ts-bench-${process.pid}`,
    hookTimeoutMs: 120_000,
    logLevel: 'silent',
    plugins: [['cri-containerd', { endpoint }]],
    ...overrides,
  });
}

export interface BenchKubelet {
  kubelet: Kubelet;
  config: KubeletConfig;
  /** Writes a manifest atomically (tmp + rename), as an operator's tool would. */
  writeManifest(file: string, pod: object): Promise<void>;
  removeManifest(file: string): Promise<void>;
  /** The pod as the kubelet reports it, by the name in the manifest. */
  pod(name: string): V1Pod | undefined;
  /** Stops the kubelet (pods keep running) and removes its directories and (empty) cgroups. */
  stop(): Promise<void>;
}

/** Starts an in-process Kubelet (cri-containerd plugin, silent logger) on the environment. */
export async function startBenchKubelet(env: NodeEnv, overrides: Partial<KubeletConfig> = {}): Promise<BenchKubelet> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ktsb-kubelet-'));
  const config = benchConfig(dir, env.containerdEndpoint, overrides);
  await mkdir(config.staticPodPath!, { recursive: true });
  const kubelet = new Kubelet(config, silentLogger());
  await kubelet.start();
  const suffix = `-${config.nodeName}`;
  return {
    kubelet,
    config,
    async writeManifest(file, pod) {
      const tmp = path.join(config.staticPodPath!, `.${file}.tmp`);
      await writeFile(tmp, JSON.stringify(pod));
      await rename(tmp, path.join(config.staticPodPath!, file));
    },
    async removeManifest(file) {
      await rm(path.join(config.staticPodPath!, file), { force: true });
    },
    pod(name) {
      const full = `${name}${suffix}`;
      return kubelet.pods().find((p) => p.metadata?.name === full);
    },
    async stop() {
      await kubelet.stop();
      await rm(dir, { recursive: true, force: true });
      if (config.cgroupsPerQOS) await removeCgroupRoot(config.cgroupRoot);
    },
  };
}

/** Running with every container started (what the benchmarks wait for). */
export function podRunning(p: V1Pod | undefined): boolean {
  if (p?.status?.phase !== 'Running') return false;
  const statuses = p.status.containerStatuses ?? [];
  return statuses.length === (p.spec?.containers.length ?? 0) && statuses.every((c) => c.state?.running);
}

/** Polls `check` every `intervalMs` until true; throws after `timeoutMs` naming `what`. */
export async function pollUntil(what: string, check: () => boolean, timeoutMs: number, intervalMs = 10): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  while (!check()) {
    if (performance.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
    await sleep(intervalMs);
  }
}

// ---------------------------------------------------------------------------------------
// The raw CRI side: the physical limit for the same pod spec.

/** The raw side's image step from `RAW_IMAGE` ('pull' unless 'status'). */
export function rawImageMode(): 'pull' | 'status' {
  return process.env.RAW_IMAGE === 'status' ? 'status' : 'pull';
}

export interface RawPod { uid: string; sandboxId: string; containerIds: string[] }

/**
 * The raw CRI sequence for a pod: PullImage (present; or ImageStatus, see `image`), RunPodSandbox,
 * CreateContainer, StartContainer, with the configs the kubelet would build
 * (buildSandboxConfig / buildContainerConfig) and the log directories it creates. The
 * `io.kubernetes.managed` label is dropped so no kubelet on the node adopts or removes
 * these pods.
 */
export class RawCri {
  readonly runtime: CriRuntime;

  /**
   * `image`: 'pull' (default, the issue's definition: PullImage of the present image) or
   * 'status' (ImageStatus, pulling only when absent: what a kubelet does for IfNotPresent; env
   * `RAW_IMAGE=status`).
   */
  /** Bound on concurrent RunPodSandbox calls, from `RAW_SANDBOX_LIMIT` (default: none). */
  private readonly sandboxSlots: Limiter | undefined;

  constructor(endpoint: string, private readonly podLogsDir: string, readonly image: 'pull' | 'status' = rawImageMode()) {
    this.runtime = new CriRuntime(new CriClient(endpoint), { requestTimeoutMs: 120_000, pullTimeoutMs: 600_000 });
    const limit = Number(process.env.RAW_SANDBOX_LIMIT ?? 0);
    this.sandboxSlots = limit > 0 ? new Limiter(limit) : undefined;
  }

  /** 'unbounded' or the RunPodSandbox bound the raw side ran with. */
  get sandboxBound(): string {
    return this.sandboxSlots ? String(Number(process.env.RAW_SANDBOX_LIMIT)) : 'unbounded';
  }

  /** Runs the pod to all containers started; resolves when StartContainer of the last returned. */
  async startPod(manifest: V1Pod): Promise<RawPod> {
    const pod: V1Pod = { ...manifest, metadata: { ...manifest.metadata, uid: randomUUID() } };
    const sandboxConfig = buildSandboxConfig(pod, 0, { podLogsDir: this.podLogsDir });
    delete sandboxConfig.labels[LABEL.managed];
    await mkdir(sandboxConfig.logDirectory, { recursive: true });
    for (const c of pod.spec!.containers) {
      if (this.image === 'pull') await this.runtime.pullImage(c.image!, undefined, sandboxConfig);
      else if (!(await this.runtime.imageStatus(c.image!))) await this.runtime.pullImage(c.image!, undefined, sandboxConfig);
    }
    const run = () => this.runtime.runPodSandbox(sandboxConfig);
    const sandboxId = await (this.sandboxSlots ? this.sandboxSlots.run(run) : run());
    const containerIds = await Promise.all(
      pod.spec!.containers.map(async (c) => {
        const config = buildContainerConfig(pod, c, 0, { podIP: '', hostIP: '127.0.0.1' });
        delete config.labels[LABEL.managed];
        await mkdir(path.join(sandboxConfig.logDirectory, c.name), { recursive: true });
        const id = await this.runtime.createContainer(sandboxId, config, sandboxConfig);
        await this.runtime.startContainer(id);
        return id;
      }),
    );
    return { uid: pod.metadata!.uid!, sandboxId, containerIds };
  }

  /**
   * Stops and removes the pod's containers and sandbox. Under a burst of stops containerd 1.6
   * sometimes answers `ttrpc: closed` for a shim that is going away; the stop is tried again
   * (as a kubelet's next sync would) and the sandbox stop covers what is left.
   */
  async removePod(p: RawPod): Promise<void> {
    const stop = async (id: string) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await this.runtime.stopContainer(id, 2);
        } catch (err) {
          if (attempt >= 3) throw err;
          await sleep(500 * attempt);
        }
      }
    };
    await Promise.all(p.containerIds.map(stop));
    await this.runtime.stopPodSandbox(p.sandboxId);
    await this.runtime.removePodSandbox(p.sandboxId);
  }

  async close(): Promise<void> {
    await this.runtime.close();
  }
}

// ---------------------------------------------------------------------------------------
// Statistics, output.

export interface Summary { n: number; min: number; p50: number; p90: number; p99: number; max: number; mean: number }

/** Nearest-rank percentile of `values` (p in 0..100). */
export function percentile(values: number[], p: number): number {
  if (!values.length) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.ceil((p / 100) * sorted.length);
  return sorted[Math.min(sorted.length - 1, Math.max(0, rank - 1))]!;
}

export function summarize(values: number[]): Summary {
  const n = values.length;
  return {
    n,
    min: n ? Math.min(...values) : NaN,
    p50: percentile(values, 50),
    p90: percentile(values, 90),
    p99: percentile(values, 99),
    max: n ? Math.max(...values) : NaN,
    mean: n ? values.reduce((a, b) => a + b, 0) / n : NaN,
  };
}

export const round = (x: number, digits = 1) => (Number.isFinite(x) ? Math.round(x * 10 ** digits) / 10 ** digits : x);

/** A plain text table: first row is the header. */
export function table(rows: Array<Array<string | number>>): string {
  const cells = rows.map((r) => r.map((c) => (typeof c === 'number' ? String(round(c, 2)) : c)));
  const widths = cells[0]!.map((_, i) => Math.max(...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) => r.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [line(cells[0]!), widths.map((w) => '-'.repeat(w)).join('  '), ...cells.slice(1).map(line)].join('\n');
}

/** The machine and runtime the figures come from. */
export async function machineInfo(env: NodeEnv): Promise<Record<string, unknown>> {
  const rt = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 10_000 });
  let runtime: unknown;
  try {
    runtime = await rt.version();
  } catch {
    runtime = undefined;
  } finally {
    await rt.close();
  }
  let kernel = os.release();
  try {
    kernel = (await readFile('/proc/sys/kernel/osrelease', 'utf8')).trim();
  } catch {
    /* not Linux */
  }
  return {
    host: os.hostname(),
    cpus: os.cpus().length,
    cpuModel: os.cpus()[0]?.model,
    memoryMiB: Math.round(os.totalmem() / 2 ** 20),
    kernel,
    node: process.version,
    runtime,
  };
}

/** Writes `bench/results/<name>-<date>.json` (or into `opts.resultsDir`); returns the path. */
export async function writeResults(opts: BenchOptions, name: string, data: object): Promise<string | undefined> {
  if (opts.resultsDir === false || (opts.smoke && opts.resultsDir === undefined)) return undefined;
  const dir = opts.resultsDir ?? DEFAULT_RESULTS_DIR;
  await mkdir(dir, { recursive: true });
  const date = new Date().toISOString().replace(/:/g, '-').replace(/\.\d+Z$/, 'Z');
  const file = path.join(dir, `${name}-${date}.json`);
  await writeFile(file, `${JSON.stringify(data, null, 2)}\n`);
  return file;
}
