import { spawn, type ChildProcess } from 'node:child_process';
import { laneRuntimeInstance } from './once-per-run.ts';
import { createWriteStream } from 'node:fs';
import { mkdir, mkdtemp, readFile, rename, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { fileURLToPath } from 'node:url';
import { freePort, unmountUnder } from '../../tools/node-env/util.ts';
import { removeCgroupRoot } from './cgroups.ts';

/**
 * kubelet-ts as an operator runs it: its own process, started by executing `bin/kubelet-ts.mjs`
 * (so its shebang's node flags apply, and it runs the compiled build when `npm run build`
 * made a fresh one), with a JSON config file. What the steady benchmark measures: the
 * process's RSS and CPU from /proc, with nothing of the benchmark in it.
 */
export interface KubeletProcess {
  pid: number;
  /** The read-only port: /pods, /metrics. */
  port: number;
  /** The main port (HTTPS, authenticated). */
  mainPort: number;
  /** The local socket of kubelet-ts commands (`<rootDir>/kubelet-ts.sock`). */
  socketPath: string;
  /** 'compiled' or 'sources', from the kubelet's own start log line. */
  code: string;
  /** The kubelet's log (pino JSON lines). */
  logFile: string;
  writeManifest(file: string, pod: V1Pod): Promise<void>;
  removeManifest(file: string): Promise<void>;
  /** GET /pods, items only; undefined if the kubelet did not answer. */
  pods(): Promise<V1Pod[] | undefined>;
  /** GET /metrics (Prometheus text). */
  metrics(): Promise<string>;
  /** The kubelet's directory (config, root dir, manifests, log): pass it as `dir` to start it again on the same state. */
  dir: string;
  manifestDir: string;
  /** Resolves with the exit code (or signal name) once the process exited. */
  exited: Promise<number | string>;
  /**
   * SIGTERM (or `signal`), wait for exit (SIGKILL after 30 s), then remove the directory and the
   * cgroup root unless `keepDir` (a restart on the same state follows).
   */
  stop(opts?: { signal?: NodeJS.Signals; keepDir?: boolean }): Promise<void>;
}

export const KUBELET_BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'kubelet-ts.mjs');

export interface KubeletProcessOptions {
  maxPods?: number;
  startTimeoutMs?: number;
  /** The command line before the kubelet's own flags. Default: the executable `bin/kubelet-ts.mjs`. */
  command?: string[];
  /** Prefix of the pods' cgroup root (a suffix keeps concurrent kubelets apart). */
  cgroupPrefix?: string;
  /** Config fields merged over the defaults here. */
  config?: Record<string, unknown>;
  /** Plugin entries loaded after cri-containerd (paths are absolute). */
  plugins?: unknown[];
  /** An existing kubelet directory (from a stopped `KubeletProcess.dir`): start again on its state. */
  dir?: string;
  /** Expect the process to exit during start (resolve with what it printed instead of throwing). */
  expectExit?: boolean;
  /**
   * The command line after the executable, instead of the JSON config this harness writes: what
   * a systemd unit passes (kubeadm's drop-in). It gets the harness's directory, ports and cgroup
   * root to put on it; the harness adds no flag of its own, and `config` and `plugins` are unused.
   */
  argv?: (h: { dir: string; port: number; mainPort: number; cgroupRoot: string; manifestDir: string }) => string[] | Promise<string[]>;
}

let instances = 0;

/** The cgroup roots kubelet processes of this run got (see removeLeftCgroupRoots); process-wide, whichever copy of this module made them. */
const cgroupRootsMade: Set<string> = ((globalThis as Record<symbol, unknown>)[Symbol.for('kubelet-ts.test.cgroup-roots')] ??= new Set<string>()) as Set<string>;

/**
 * Removes what is left of the cgroup roots of this run's kubelet processes. A kubelet stopped
 * while its pods still run leaves their cgroups busy, so its own clean-up cannot remove them;
 * once the runtime is gone (the node environment stopped) they are empty and go here.
 */
export async function removeLeftCgroupRoots(): Promise<void> {
  for (const root of cgroupRootsMade) await removeCgroupRoot(root).catch(() => {});
  cgroupRootsMade.clear();
}

/** How to abandon each kubelet process of this run that has not been stopped (see abandonRunningKubelets); process-wide like cgroupRootsMade. */
const runningKubelets: Set<() => Promise<void>> = ((globalThis as Record<symbol, unknown>)[Symbol.for('kubelet-ts.test.running-kubelets')] ??= new Set<() => Promise<void>>()) as Set<() => Promise<void>>;

/**
 * For an interrupted run (Ctrl-C on a benchmark): kills every kubelet process not yet stopped,
 * unmounts what its pods left mounted under its directory (emptyDirs, projected volumes) and
 * removes the directory. Stop the runtime after, and then removeLeftCgroupRoots: the pods'
 * cgroups empty only once their containers are gone.
 */
export async function abandonRunningKubelets(): Promise<void> {
  for (const abandon of [...runningKubelets]) await abandon().catch(() => {});
}

export async function startKubeletProcess(env: NodeEnv, opts: KubeletProcessOptions = {}): Promise<KubeletProcess> {
  const dir = opts.dir ?? (await mkdtemp(path.join(os.tmpdir(), 'ktsb-proc-')));
  const manifests = path.join(dir, 'manifests');
  await mkdir(manifests, { recursive: true });
  const port = await freePort();
  // The main port: a free one of its own (tests and benchmarks run side by side), on loopback.
  const mainPort = await freePort();
  // A restart on the same state keeps the cgroup root its pods run in.
  const cgroupRoot = opts.dir ? (await readFile(path.join(dir, 'cgroup-root'), 'utf8').catch(() => '')) || `/${opts.cgroupPrefix ?? 'kubelet-ts-proc'}-${process.pid}-${++instances}` : `/${opts.cgroupPrefix ?? 'kubelet-ts-proc'}-${process.pid}-${++instances}`;
  await writeFile(path.join(dir, 'cgroup-root'), cgroupRoot);
  cgroupRootsMade.add(cgroupRoot);
  const configFile = path.join(dir, 'kubelet.config.json');
  // Production periods are the schema's defaults (PLEG 1 s, manifest rescan 20 s besides file watching, sync 1 m).
  if (!opts.argv) await writeFile(
    configFile,
    JSON.stringify({
      nodeName: 'bench-node',
      rootDir: path.join(dir, 'root'),
      podLogsDir: path.join(dir, 'logs'),
      staticPodPath: manifests,
      containerRuntimeEndpoint: env.containerdEndpoint,
      readOnlyPort: port,
      port: mainPort,
      address: '127.0.0.1',
      maxPods: opts.maxPods ?? 110,
      cgroupRoot,
      logging: { level: 'info' },
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], ...(opts.plugins ?? [])],
      // npm test's node lanes run side by side on one containerd, each its own instance (scripts/test-lanes.mjs).
      ...(laneRuntimeInstance() ? { runtimeInstance: laneRuntimeInstance() } : {}),
      ...opts.config,
    }),
  );
  const logFile = path.join(dir, 'kubelet.log');
  const out = createWriteStream(logFile, { flags: 'a' });
  await once(out, 'open');
  const [cmd, ...args] = opts.command ?? [KUBELET_BIN];
  const argv = opts.argv ? await opts.argv({ dir, port, mainPort, cgroupRoot, manifestDir: manifests }) : ['--config', configFile];
  const child: ChildProcess = spawn(cmd!, [...args, ...argv], { stdio: ['ignore', out, out] });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);

  const base = `http://127.0.0.1:${port}`;
  const get = async (p: string) => {
    const res = await fetch(`${base}${p}`, { signal: AbortSignal.timeout(10_000) });
    if (!res.ok) throw new Error(`GET ${p}: HTTP ${res.status}`);
    return res;
  };
  const abandon = async () => {
    runningKubelets.delete(abandon);
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    out.end();
    await unmountUnder([dir]);
    await rm(dir, { recursive: true, force: true });
  };
  runningKubelets.add(abandon);
  const cleanup = async () => {
    runningKubelets.delete(abandon);
    out.end();
    await rm(dir, { recursive: true, force: true });
    await removeCgroupRoot(cgroupRoot).catch(() => {});
  };

  // Started = its 'kubelet started' log line, written once the read-only port listens; the
  // line also says which code runs (compiled or sources).
  const deadline = performance.now() + (opts.startTimeoutMs ?? 30_000);
  let code: string | undefined;
  while (code === undefined) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const tail = (await readFile(logFile, 'utf8').catch(() => '')).split('\n').slice(-10).join('\n');
      await cleanup();
      const err = new Error(`kubelet exited during start (${child.exitCode ?? child.signalCode}):\n${tail}`);
      if (opts.expectExit) throw Object.assign(err, { exitCode: child.exitCode, output: tail });
      throw err;
    }
    if (performance.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      await cleanup();
      throw new Error(`kubelet did not start within ${opts.startTimeoutMs ?? 30_000} ms (log: ${logFile})`);
    }
    await sleep(100);
    // This process's line: a restart on the same directory appends to the log of the last one.
    const started = (await readFile(logFile, 'utf8').catch(() => ''))
      .split('\n')
      .map((l) => { try { return JSON.parse(l) as { msg?: string; code?: string; pid?: number }; } catch { return undefined; } })
      .find((l) => l?.msg === 'kubelet started' && l.pid === child.pid);
    if (started) code = started.code ?? 'unknown';
  }

  return {
    pid: child.pid!,
    port,
    mainPort,
    socketPath: path.join(dir, 'root', 'kubelet-ts.sock'),
    code,
    logFile,
    dir,
    manifestDir: manifests,
    exited,
    async writeManifest(file, pod) {
      const tmp = path.join(manifests, `.${file}.tmp`);
      await writeFile(tmp, JSON.stringify(pod));
      await rename(tmp, path.join(manifests, file));
    },
    async removeManifest(file) {
      await rm(path.join(manifests, file), { force: true });
    },
    async pods() {
      try {
        return ((await (await get('/pods')).json()) as { items?: V1Pod[] }).items ?? [];
      } catch {
        return undefined;
      }
    },
    async metrics() {
      return (await get('/metrics')).text();
    },
    async stop(o = {}) {
      runningKubelets.delete(abandon);
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(o.signal ?? 'SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
        await exited;
        clearTimeout(timer);
      }
      if (o.keepDir) out.end();
      else await cleanup();
    },
  };
}

/** Resident set size of a process in bytes, from /proc/<pid>/status (VmRSS). */
/** CPU seconds (user + system) a process has used so far, from /proc/<pid>/stat; undefined if unreadable. */
export async function procCpuSeconds(pid: number): Promise<number | undefined> {
  try {
    const stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    // Fields after the parenthesised command: state is field 3, utime 14, stime 15.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    const ticks = Number(fields[11]) + Number(fields[12]);
    return ticks / 100; // USER_HZ is 100 on Linux
  } catch {
    return undefined;
  }
}

export async function procRssBytes(pid: number): Promise<number> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const kib = /^VmRSS:\s+(\d+) kB/m.exec(status)?.[1];
  if (kib === undefined) throw new Error(`/proc/${pid}/status has no VmRSS`);
  return Number(kib) * 1024;
}

/**
 * A process's resident memory split as /proc/<pid>/smaps_rollup splits it: `anonymous` (heap,
 * stacks, malloc: what this process alone costs the node) and `file` (mapped executables and
 * libraries: pages the kernel shares with every process that maps the same files, e.g. every
 * node process on the machine).
 */
export async function procMemorySplit(pid: number): Promise<{ rss: number; anonymous: number; file: number }> {
  const text = await readFile(`/proc/${pid}/smaps_rollup`, 'utf8');
  const kib = (field: string) => Number(new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(text)?.[1] ?? NaN) * 1024;
  const rss = kib('Rss');
  const anonymous = kib('Anonymous');
  if (!Number.isFinite(rss) || !Number.isFinite(anonymous)) throw new Error(`/proc/${pid}/smaps_rollup has no Rss or Anonymous`);
  return { rss, anonymous, file: rss - anonymous };
}

/**
 * A quantile (0..1) of a Prometheus histogram in the text exposition, interpolated linearly
 * inside the bucket as PromQL's histogram_quantile does. Undefined without observations.
 */
export function histogramQuantile(text: string, metric: string, q: number): number | undefined {
  const buckets: Array<{ le: number; count: number }> = [];
  const re = new RegExp(`^${metric}_bucket\\{(?:[^}]*,)?le="([^"]+)"[^}]*\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) buckets.push({ le: m[1] === '+Inf' ? Infinity : Number(m[1]), count: Number(m[2]) });
  buckets.sort((a, b) => a.le - b.le);
  const total = buckets.at(-1)?.count ?? 0;
  if (total === 0) return undefined;
  const rank = q * total;
  let prevLe = 0;
  let prevCount = 0;
  for (const b of buckets) {
    if (b.count >= rank) {
      if (b.le === Infinity) return prevLe; // above the largest finite bucket: its bound, as PromQL does
      return prevLe + ((b.le - prevLe) * (rank - prevCount)) / Math.max(1, b.count - prevCount);
    }
    prevLe = b.le;
    prevCount = b.count;
  }
  return prevLe;
}
