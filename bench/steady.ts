import { setTimeout as sleep } from 'node:timers/promises';
import { LABEL } from '../core/runtime/labels.ts';
import { RuntimeCache } from '../core/runtime/runtime-cache.ts';
import { existsSync, readlinkSync } from 'node:fs';
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { histogramQuantile, KUBELET_BIN, procMemorySplit, procRssBytes, startKubeletProcess } from '../test/support/kubelet-process.ts';
import {
  benchPodManifest, isMain, shebangNodeFlags, isSmoke, logTo, machineInfo, podRunning, printTo, procCpuSeconds, RawCri,
  round, runMain, runTag, summarize, table, withNodeEnv, writeResults, envInt, envWindowSeconds,
  type BenchOptions, type Summary,
} from './lib.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { startUpstreamSteady } from './steady-upstream.ts';

/**
 * steady: N pods running under kubelet-ts, nothing changing. The kubelet runs as an operator
 * runs it: its own process, `bin/kubelet-ts.mjs` executed with a JSON config (the compiled
 * build when `npm run build` made a fresh one: `npm run bench:steady` builds first). Over a
 * window of SECONDS the benchmark reads the kubelet's RSS (VmRSS) every second and its CPU
 * (utime + stime) at both ends from /proc/<pid>, and containerd's CPU for context; it does not
 * call the kubelet during the window.
 *
 * PLEG relist duration, two ways:
 *   - the kubelet's own `kubelet_pleg_relist_duration_seconds` histogram over the window
 *     (p50/p99 interpolated inside the buckets, as PromQL's histogram_quantile does);
 *   - after the window, a `RuntimeCache` in the benchmark relisted the way PLEG does it, over
 *     its own CRI client to the same containerd: the first (cold) relist fetches the status of
 *     every sandbox and container, later (warm) relists are what PLEG costs every period in a
 *     steady state (two list RPCs plus grouping and change detection), timed one after another
 *     (100; 10 in smoke mode) next to the two list RPCs alone.
 *
 * Then (not in smoke mode; UPSTREAM=0 leaves it out) kubelet-ts is stopped and the upstream
 * kubelet v1.28.7 runs the same N pods standalone (bench/steady-upstream.ts), measured over
 * the same window the same way; the table shows both sides.
 *
 *   npm run bench:steady               110 pods, 60 s window, then upstream
 *   N=30 SECONDS=15 UPSTREAM=0 npm run bench:steady
 */

export interface SteadyResult {
  benchmark: 'steady';
  date: string;
  smoke: boolean;
  machine: Record<string, unknown>;
  n: number;
  /** What ran: 'compiled' (dist/) or 'sources' (tsx). */
  kubeletCode: string;
  /** The Node.js the kubelet process ran on (its /proc/<pid>/exe, which its shebang found on PATH). */
  kubeletNode: string;
  windowSeconds: number;
  /** ms until all N pods ran (written at once), as seen through /pods polled every 500 ms. */
  startAllMs: number;
  kubeletCpuCores: number;
  containerdCpuCores: number | undefined;
  rssMiB: { mean: number; max: number; last: number };
  /** RSS at the window's end split into anonymous and file-backed pages (smaps_rollup). */
  memoryMiB?: { anonymous: number; file: number };
  /** From the kubelet's own histogram over the window (ms), undefined if it had no observation. */
  plegMetricMs: { p50: number | undefined; p99: number | undefined; count: number };
  /** CRI calls per minute in the window by upstream's operation_type (kubelet_runtime_operations_total). */
  runtimeOpsPerMinute: Record<string, number>;
  relistColdMs: number;
  relistMs: Summary;
  listOnlyMs: Summary;
  targets: { cpuCores: string; rssMiB: string; relistMs: string };
  /** The upstream kubelet standalone with the same pods, after kubelet-ts (absent with UPSTREAM=0 and in smoke mode). */
  upstream?: UpstreamFigures | { error: string };
  file?: string;
}

/** One row per CRI operation either side called in the window, most frequent first. */
function opRows(own: Record<string, number>, up: Record<string, number> | undefined): string[][] {
  const ops = [...new Set([...Object.keys(own), ...Object.keys(up ?? {})])];
  ops.sort((a, b) => Math.max(own[b] ?? 0, up?.[b] ?? 0) - Math.max(own[a] ?? 0, up?.[a] ?? 0));
  return ops.map((op) => [`  ${op}`, String(own[op] ?? 0), up ? String(up[op] ?? 0) : '-', '', '']);
}

export type UpstreamFigures = WindowFigures & { code: string; startAllMs: number; runtimeOpsPerMinute?: Record<string, number> };

const PLEG_METRIC = 'kubelet_pleg_relist_duration_seconds';
const PROFILER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'cpu-profile-window.mjs');
const HEAP_SNAPSHOTTER = path.join(path.dirname(fileURLToPath(import.meta.url)), 'heap-snapshot-window.mjs');


export interface WindowFigures {
  seconds: number;
  cpuCores: number;
  containerdCpuCores: number | undefined;
  rssMiB: { mean: number; max: number; last: number };
  /** RSS split at the window's end (smaps_rollup): anonymous memory, the process's own, and file-backed pages, shared with any process mapping the same binary and libraries. */
  memoryMiB?: { anonymous: number; file: number };
}

/** A kubelet's CPU (utime + stime at both ends) and RSS (VmRSS every second) over `seconds`, and its containerd's CPU, from /proc; calls nothing else. */
async function measureWindow(pid: number, containerdPid: number | undefined, seconds: number): Promise<WindowFigures> {
  const rss: number[] = [];
  const cd0 = containerdPid ? await procCpuSeconds(containerdPid) : undefined;
  const cpu0 = (await procCpuSeconds(pid))!;
  const w0 = performance.now();
  const end = w0 + seconds * 1000;
  while (performance.now() < end) {
    await sleep(Math.min(1000, Math.max(0, end - performance.now())));
    rss.push(await procRssBytes(pid));
  }
  const cpu1 = (await procCpuSeconds(pid))!;
  const split = await procMemorySplit(pid).catch(() => undefined);
  const wallSec = (performance.now() - w0) / 1000;
  const cd1 = containerdPid ? await procCpuSeconds(containerdPid) : undefined;
  const mib = (b: number) => b / 2 ** 20;
  return {
    seconds: wallSec,
    cpuCores: (cpu1 - cpu0) / wallSec,
    containerdCpuCores: cd0 !== undefined && cd1 !== undefined ? (cd1 - cd0) / wallSec : undefined,
    rssMiB: { mean: mib(rss.reduce((a, b) => a + b, 0) / rss.length), max: mib(Math.max(...rss)), last: mib(rss.at(-1)!) },
    ...(split ? { memoryMiB: { anonymous: mib(split.anonymous), file: mib(split.file) } } : {}),
  };
}

function histogramCount(text: string, metric: string): number {
  return Number(new RegExp(`^${metric}_count(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
}

export async function run(opts: BenchOptions & { seconds?: number; upstream?: boolean; profileDir?: string; heapSnapshotDir?: string } = {}): Promise<SteadyResult> {
  const log = logTo(opts);
  // Smoke mode measures kubelet-ts only (npm test runs it); UPSTREAM=0 leaves upstream out.
  const wantUpstream = opts.upstream ?? !opts.smoke;
  const n = opts.n ?? (opts.smoke ? 3 : 110);
  const windowSeconds = opts.seconds ?? (opts.smoke ? 3 : 60);
  const relists = opts.smoke ? 10 : 100;
  return withNodeEnv(opts, async (env) => {
    const machine = await machineInfo(env);
    const ns = `bench-st-${runTag()}`;
    // PROFILE=DIR: a CPU profile of the window (bench/cpu-profile-window.mjs, toggled by SIGUSR2); the profiler's cost is in that run's CPU figure.
    const profileDir = opts.profileDir;
    if (profileDir) process.env.KTS_CPU_PROFILE_DIR = path.resolve(profileDir);
    // HEAP_SNAPSHOT=DIR: memory figures and a heap snapshot at the window's end (bench/heap-snapshot-window.mjs).
    const heapSnapshotDir = opts.heapSnapshotDir;
    if (heapSnapshotDir) process.env.KTS_HEAP_SNAPSHOT_DIR = path.resolve(heapSnapshotDir);
    // Both preloads answer SIGUSR2, which the CPU profile sends at the window's start too.
    if (profileDir && heapSnapshotDir) throw new Error('steady: PROFILE and HEAP_SNAPSHOT take turns: set one');
    const preloads = [...(profileDir ? [PROFILER] : []), ...(heapSnapshotDir ? [HEAP_SNAPSHOTTER] : [])];
    const kp = await startKubeletProcess(env, {
      maxPods: Math.max(110, n),
      cgroupPrefix: 'kubelet-ts-bench',
      ...(preloads.length ? { command: [process.execPath, ...shebangNodeFlags(KUBELET_BIN), ...preloads.flatMap((p) => ['--import', p]), KUBELET_BIN] } : {}),
    });
    const kubeletNode = nodeVersionOf(kp.pid);
    log(`steady: kubelet pid ${kp.pid} (${kp.code}, Node ${kubeletNode}), log ${kp.logFile}`);
    const names = Array.from({ length: n }, (_, i) => `st-${i}`);
    const raw = new RawCri(env.containerdEndpoint, '/nonexistent');
    const runningCount = async () => ((await kp.pods()) ?? []).filter((p: V1Pod) => podRunning(p)).length;
    let kubeletTsStopped: Promise<void> | undefined;
    const stopKubeletTs = () =>
      (kubeletTsStopped ??= (async () => {
        log('steady: removing pods');
        await Promise.all(names.map((name) => kp.removeManifest(`${name}.json`)));
        const removeDeadline = performance.now() + 60_000 + n * 1000;
        while (((await kp.pods())?.length ?? 0) > 0 && performance.now() < removeDeadline) await sleep(500);
        const left = (await kp.pods())?.length ?? 0;
        if (left > 0) log(`steady: ${left} pods still present when the kubelet is stopped`);
        await kp.stop();
      })());
    try {
      log(`steady: starting ${n} pods`);
      const t0 = performance.now();
      await Promise.all(names.map((name) => kp.writeManifest(`${name}.json`, benchPodManifest(name, ns, env.images.busybox))));
      const startDeadline = t0 + 60_000 + n * 2000;
      let running = 0;
      while ((running = await runningCount()) < n) {
        if (performance.now() > startDeadline) throw new Error(`steady: ${running}/${n} pods Running after ${round(performance.now() - t0)} ms`);
        await sleep(500);
      }
      const startAllMs = performance.now() - t0;
      log(`steady: ${n} pods Running in ${round(startAllMs)} ms; settling`);
      await sleep(opts.smoke ? 1000 : 5000);

      log(`steady: measuring for ${windowSeconds} s`);
      const metrics0 = await kp.metrics();
      if (profileDir) process.kill(kp.pid, 'SIGUSR2');
      const win = await measureWindow(kp.pid, env.containerd.pid, windowSeconds);
      if (profileDir) {
        process.kill(kp.pid, 'SIGUSR2');
        log(`steady: CPU profile of the window in ${path.resolve(profileDir)}/kubelet-${kp.pid}-1.cpuprofile`);
      }
      const wallSec = win.seconds;
      const metrics1 = await kp.metrics();
      if (heapSnapshotDir) {
        process.kill(kp.pid, 'SIGUSR2');
        const file = path.join(path.resolve(heapSnapshotDir), `kubelet-${kp.pid}.heapsnapshot`);
        // The snapshot is written synchronously by the kubelet, which answers /pods again once it is done.
        const deadline = performance.now() + 120_000;
        while (!existsSync(file) && performance.now() < deadline) await sleep(500);
        await kp.pods();
        log(`steady: heap snapshot at the window's end in ${file} (memory figures beside it)`);
      }
      running = await runningCount();
      if (running !== n) log(`steady: warning: ${running}/${n} pods Running after the window`);

      // The window's own observations: the histogram at its end minus at its start.
      const windowHistogram = subtractHistograms(metrics1, metrics0, PLEG_METRIC);
      const runtimeOps = runtimeOpsPerMinute(metrics0, metrics1, wallSec);
      const ms = (s: number | undefined) => (s === undefined ? undefined : s * 1000);
      const plegMetricMs = {
        p50: ms(histogramQuantile(windowHistogram, PLEG_METRIC, 0.5)),
        p99: ms(histogramQuantile(windowHistogram, PLEG_METRIC, 0.99)),
        count: histogramCount(metrics1, PLEG_METRIC) - histogramCount(metrics0, PLEG_METRIC),
      };

      log(`steady: timing ${relists} relists`);
      const cache = new RuntimeCache(raw.runtime);
      let c0 = performance.now();
      await cache.relist();
      const relistColdMs = performance.now() - c0;
      const relistMs: number[] = [];
      const listOnlyMs: number[] = [];
      const selector = { labelSelector: { [LABEL.managed]: 'true' } };
      for (let i = 0; i < relists; i++) {
        c0 = performance.now();
        await cache.relist();
        relistMs.push(performance.now() - c0);
        c0 = performance.now();
        await Promise.all([raw.runtime.listPodSandboxes(selector), raw.runtime.listContainers(selector)]);
        listOnlyMs.push(performance.now() - c0);
      }

      // The kubelet-ts side is done: stop it before the upstream side (never two kubelets at once).
      await stopKubeletTs();
      let upstream: SteadyResult['upstream'];
      if (wantUpstream) {
        log('steady: upstream side');
        try {
          const up = await startUpstreamSteady(env, n, ns, log);
          try {
            await sleep(5000);
            log(`steady: upstream: ${n} pods Running in ${round(up.startAllMs)} ms; measuring for ${windowSeconds} s`);
            const upMetrics0 = await up.metrics();
            const w = await measureWindow(up.pid, up.containerdPid, windowSeconds);
            const upMetrics1 = await up.metrics();
            const upRuntimeOps = upMetrics0 && upMetrics1 ? runtimeOpsPerMinute(upMetrics0, upMetrics1, w.seconds) : undefined;
            const upRunning = await up.runningCount();
            if (upRunning !== n) log(`steady: upstream: warning: ${upRunning}/${n} pods Running after the window`);
            upstream = { code: 'v1.28.7', startAllMs: up.startAllMs, ...w, ...(upRuntimeOps ? { runtimeOpsPerMinute: upRuntimeOps } : {}) };
          } finally {
            await up.stop();
          }
        } catch (err) {
          log(`steady: upstream side failed: ${(err as Error).message}`);
          upstream = { error: (err as Error).message };
        }
      }

      const result: SteadyResult = {
        benchmark: 'steady',
        date: new Date().toISOString(),
        smoke: !!opts.smoke,
        machine,
        n,
        kubeletCode: kp.code,
        kubeletNode,
        windowSeconds: wallSec,
        startAllMs,
        kubeletCpuCores: win.cpuCores,
        containerdCpuCores: win.containerdCpuCores,
        rssMiB: win.rssMiB,
        ...(win.memoryMiB ? { memoryMiB: win.memoryMiB } : {}),
        plegMetricMs,
        runtimeOpsPerMinute: runtimeOps,
        relistColdMs,
        relistMs: summarize(relistMs),
        listOnlyMs: summarize(listOnlyMs),
        targets: { cpuCores: '<= 0.02 at 110 pods (<= 0.4x upstream)', rssMiB: '<= 0.6x upstream at 110 pods', relistMs: '<= 20 at 110 pods' },
        ...(upstream ? { upstream } : {}),
      };
      const file = await writeResults(opts, 'steady', result);
      if (file) result.file = file;
      const fmt = (x: number | undefined) => (x === undefined ? 'n/a' : round(x, 1));
      const measured = upstream && !('error' in upstream) ? upstream : undefined;
      const side = (f: (u: UpstreamFigures) => string | number) => (measured ? f(measured) : '-');
      const ratio = (f: (w: WindowFigures) => number, own: number) => (measured ? (own / f(measured)).toFixed(2) : '-');
      printTo(opts)(
        [
          `steady: ${n} pods running, ${round(wallSec)} s window; kubelet-ts in its own process (${kp.code}, Node ${kubeletNode}), read from /proc`,
          upstream && 'error' in upstream ? `upstream side: not measured (${upstream.error})` : '',
          table([
            ['measure', 'kubelet-ts', 'upstream v1.28.7', 'ratio', 'target (110 pods)'],
            ['kubelet CPU (cores)', result.kubeletCpuCores.toFixed(4), side((u) => u.cpuCores.toFixed(4)), ratio((w) => w.cpuCores, result.kubeletCpuCores), '<= 0.02, <= 0.4x'],
            ['containerd CPU (cores)', result.containerdCpuCores === undefined ? 'n/a' : result.containerdCpuCores.toFixed(3), side((u) => (u.containerdCpuCores === undefined ? 'n/a' : u.containerdCpuCores.toFixed(3))), '', ''],
            ['kubelet RSS MiB mean / max', `${round(result.rssMiB.mean)} / ${round(result.rssMiB.max)}`, side((u) => `${round(u.rssMiB.mean)} / ${round(u.rssMiB.max)}`), ratio((w) => w.rssMiB.mean, result.rssMiB.mean), '<= 0.6x'],
            ['  of it anonymous / file-backed (at the end)', result.memoryMiB ? `${round(result.memoryMiB.anonymous, 1)} / ${round(result.memoryMiB.file, 1)}` : 'n/a', side((u) => (u.memoryMiB ? `${round(u.memoryMiB.anonymous, 1)} / ${round(u.memoryMiB.file, 1)}` : 'n/a')), ratio((w) => w.memoryMiB?.anonymous ?? NaN, result.memoryMiB?.anonymous ?? NaN), ''],
            ['CRI calls per minute', String(totalOf(runtimeOps)), side((u) => String(totalOf(u.runtimeOpsPerMinute) ?? 'n/a')), '', ''],
            ...opRows(runtimeOps, measured?.runtimeOpsPerMinute),
            [`PLEG relist ms p50 / p99 (kubelet's histogram, ${plegMetricMs.count} relists)`, `${fmt(plegMetricMs.p50)} / ${fmt(plegMetricMs.p99)}`, '', '', '<= 20'],
            ['PLEG relist ms p50 / p99 (timed here)', `${round(result.relistMs.p50, 1)} / ${round(result.relistMs.p99, 1)}`, '', '', '<= 20'],
            ['  2 list RPCs alone ms p50 / p99', `${round(result.listOnlyMs.p50, 2)} / ${round(result.listOnlyMs.p99, 2)}`, '', '', ''],
            ['  cold relist ms', result.relistColdMs, '', '', ''],
            [`start ${n} pods at once ms`, result.startAllMs, side((u) => round(u.startAllMs)), '', ''],
          ]),
          file ? `results: ${file}` : '',
        ].filter(Boolean).join('\n'),
      );
      return result;
    } finally {
      await stopKubeletTs();
      await raw.close();
    }
  });
}

/** The `metric`'s bucket lines of `after` with the counts of `before` subtracted. */
/** upstream's (and kubelet-ts's) counter of CRI calls by operation_type. */
const RUNTIME_OPS_METRIC = 'kubelet_runtime_operations_total';

/** A counter's value per `label` value in the text exposition (series without the label are left out). */
function counterByLabel(text: string, metric: string, label: string): Map<string, number> {
  const out = new Map<string, number>();
  const re = new RegExp(`^${metric}\\{([^}]*)\\} (\\S+)$`, 'gm');
  for (const m of text.matchAll(re)) {
    const value = new RegExp(`(?:^|,)${label}="([^"]*)"`).exec(m[1]!)?.[1];
    if (value !== undefined) out.set(value, (out.get(value) ?? 0) + Number(m[2]));
  }
  return out;
}

/** CRI calls per minute by operation in a window, from the counter before and after it. */
function runtimeOpsPerMinute(before: string, after: string, seconds: number): Record<string, number> {
  const b = counterByLabel(before, RUNTIME_OPS_METRIC, 'operation_type');
  const out: Record<string, number> = {};
  for (const [op, v] of counterByLabel(after, RUNTIME_OPS_METRIC, 'operation_type')) {
    const perMin = ((v - (b.get(op) ?? 0)) * 60) / seconds;
    if (perMin > 0) out[op] = Math.round(perMin * 10) / 10;
  }
  return out;
}

const totalOf = (ops: Record<string, number> | undefined) => (ops ? Math.round(Object.values(ops).reduce((a, b) => a + b, 0) * 10) / 10 : undefined);

function subtractHistograms(after: string, before: string, metric: string): string {
  const counts = new Map<string, number>();
  const re = new RegExp(`^(${metric}_bucket\\{[^}]*\\}) (\\S+)$`, 'gm');
  for (const m of before.matchAll(re)) counts.set(m[1]!, Number(m[2]));
  return [...after.matchAll(re)].map((m) => `${m[1]} ${Number(m[2]) - (counts.get(m[1]!) ?? 0)}`).join('\n');
}

if (await isMain(import.meta.url)) {
  await runMain(() => {
    const seconds = envWindowSeconds();
    return run({
      smoke: isSmoke(),
      ...(process.env.N ? { n: envInt('N', 110) } : {}),
      ...(seconds !== undefined ? { seconds } : {}),
      ...(process.env.PROFILE ? { profileDir: process.env.PROFILE } : {}),
      ...(process.env.HEAP_SNAPSHOT ? { heapSnapshotDir: process.env.HEAP_SNAPSHOT } : {}),
      ...(process.env.UPSTREAM !== undefined ? { upstream: process.env.UPSTREAM !== '0' } : {}),
    });
  });
}

/** The version of the Node.js binary process `pid` runs (the kubelet's shebang resolves `node` on PATH, which may not be the benchmark's own). */
function nodeVersionOf(pid: number): string {
  try {
    return execFileSync(readlinkSync(`/proc/${pid}/exe`), ['--version'], { encoding: 'utf8' }).trim();
  } catch (err) {
    return `unknown (${(err as Error).message})`;
  }
}
