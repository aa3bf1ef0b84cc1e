import { setTimeout as sleep } from 'node:timers/promises';
import { LABEL } from '../core/runtime/labels.ts';
import { RuntimeCache } from '../core/runtime/runtime-cache.ts';
import {
  benchPodManifest, envInt, isMain, isSmoke, logTo, machineInfo, pollUntil, podRunning, printTo,
  procCpuSeconds, round, runMain, runTag, startBenchKubelet, summarize, table, withNodeEnv, writeResults,
  type BenchOptions, type Summary,
} from './lib.ts';

/**
 * steady: N pods running under an in-process kubelet-ts, nothing changing. Over a window of
 * SECONDS it samples the kubelet process's own CPU (`process.cpuUsage()` deltas: user + system,
 * as /proc/self/stat counts them; the benchmark itself only sleeps in the window) and RSS every
 * second, and containerd's CPU from /proc/<pid>/stat for context.
 *
 * PLEG relist duration: after the window, a fresh `RuntimeCache` over the kubelet's own
 * (instrumented) runtime is relisted the way PLEG does it: the first (cold) relist fetches the
 * status of every sandbox and container, later (warm) relists are what PLEG costs every period
 * in a steady state: two list RPCs plus grouping and change detection. The warm relists are
 * timed one after another (100, 10 in smoke mode) for p50/p99, next to the two list RPCs alone.
 * (The kubelet's PLEG keeps relisting meanwhile, as it would.)
 *
 *   npm run bench:steady               110 pods, 60 s window
 *   N=30 SECONDS=15 npm run bench:steady
 */

export interface SteadyResult {
  benchmark: 'steady';
  date: string;
  smoke: boolean;
  machine: Record<string, unknown>;
  n: number;
  windowSeconds: number;
  /** ms until all N pods ran (written at once). */
  startAllMs: number;
  kubeletCpuCores: number;
  kubeletCpuUserCores: number;
  kubeletCpuSystemCores: number;
  containerdCpuCores: number | undefined;
  rssMiB: { mean: number; max: number; last: number };
  heapUsedMiB: number;
  relistColdMs: number;
  relistMs: Summary;
  listOnlyMs: Summary;
  targets: { cpuCores: string; rssMiB: string; relistMs: string };
  file?: string;
}

export async function run(opts: BenchOptions & { seconds?: number } = {}): Promise<SteadyResult> {
  const log = logTo(opts);
  const n = opts.n ?? (opts.smoke ? 3 : 110);
  const windowSeconds = opts.seconds ?? (opts.smoke ? 3 : 60);
  const relists = opts.smoke ? 10 : 100;
  return withNodeEnv(opts, async (env) => {
    const machine = await machineInfo(env);
    const ns = `bench-st-${runTag()}`;
    const bk = await startBenchKubelet(env, { maxPods: Math.max(110, n) });
    const names = Array.from({ length: n }, (_, i) => `st-${i}`);
    try {
      log(`steady: starting ${n} pods`);
      const t0 = performance.now();
      await Promise.all(names.map((name) => bk.writeManifest(`${name}.json`, benchPodManifest(name, ns, env.images.busybox))));
      await pollUntil(`${n} pods Running`, () => bk.kubelet.pods().filter(podRunning).length === n, 60_000 + n * 2000, 50);
      const startAllMs = performance.now() - t0;
      log(`steady: ${n} pods Running in ${round(startAllMs)} ms; settling`);
      await sleep(opts.smoke ? 1000 : 5000);

      log(`steady: measuring for ${windowSeconds} s`);
      const rss: number[] = [];
      const cd0 = env.containerd.pid ? await procCpuSeconds(env.containerd.pid) : undefined;
      const cpu0 = process.cpuUsage();
      const w0 = performance.now();
      const end = w0 + windowSeconds * 1000;
      while (performance.now() < end) {
        await sleep(Math.min(1000, Math.max(0, end - performance.now())));
        rss.push(process.memoryUsage().rss);
      }
      const cpu = process.cpuUsage(cpu0);
      const wallSec = (performance.now() - w0) / 1000;
      const cd1 = env.containerd.pid ? await procCpuSeconds(env.containerd.pid) : undefined;
      const heapUsed = process.memoryUsage().heapUsed;
      const running = bk.kubelet.pods().filter(podRunning).length;
      if (running !== n) log(`steady: warning: ${running}/${n} pods Running after the window`);

      log(`steady: timing ${relists} relists`);
      const cache = new RuntimeCache(bk.kubelet.runtime);
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
        await Promise.all([bk.kubelet.runtime.listPodSandboxes(selector), bk.kubelet.runtime.listContainers(selector)]);
        listOnlyMs.push(performance.now() - c0);
      }

      const mib = (b: number) => b / 2 ** 20;
      const result: SteadyResult = {
        benchmark: 'steady',
        date: new Date().toISOString(),
        smoke: !!opts.smoke,
        machine,
        n,
        windowSeconds: wallSec,
        startAllMs,
        kubeletCpuCores: (cpu.user + cpu.system) / 1e6 / wallSec,
        kubeletCpuUserCores: cpu.user / 1e6 / wallSec,
        kubeletCpuSystemCores: cpu.system / 1e6 / wallSec,
        containerdCpuCores: cd0 !== undefined && cd1 !== undefined ? (cd1 - cd0) / wallSec : undefined,
        rssMiB: { mean: mib(rss.reduce((a, b) => a + b, 0) / rss.length), max: mib(Math.max(...rss)), last: mib(rss.at(-1)!) },
        heapUsedMiB: mib(heapUsed),
        relistColdMs,
        relistMs: summarize(relistMs),
        listOnlyMs: summarize(listOnlyMs),
        targets: { cpuCores: '<= 0.03 at 110 pods', rssMiB: '<= 120 at 110 pods', relistMs: '<= 20 at 110 pods' },
      };
      const file = await writeResults(opts, 'steady', result);
      if (file) result.file = file;
      printTo(opts)(
        [
          `steady: ${n} pods running, ${round(wallSec)} s window (kubelet-ts in-process with the benchmark, which only sleeps)`,
          table([
            ['measure', 'value', 'target (110 pods)'],
            ['kubelet CPU (cores)', result.kubeletCpuCores.toFixed(4), '<= 0.03'],
            ['  user / system', `${result.kubeletCpuUserCores.toFixed(4)} / ${result.kubeletCpuSystemCores.toFixed(4)}`, ''],
            ['containerd CPU (cores)', result.containerdCpuCores === undefined ? 'n/a' : result.containerdCpuCores.toFixed(3), ''],
            ['RSS MiB mean / max', `${round(result.rssMiB.mean)} / ${round(result.rssMiB.max)}`, '<= 120'],
            ['heap used MiB', round(result.heapUsedMiB), ''],
            ['PLEG relist ms p50', result.relistMs.p50, '<= 20'],
            ['PLEG relist ms p99', result.relistMs.p99, ''],
            ['  2 list RPCs alone ms p50 / p99', `${round(result.listOnlyMs.p50, 2)} / ${round(result.listOnlyMs.p99, 2)}`, ''],
            ['  cold relist ms', result.relistColdMs, ''],
            [`start ${n} pods at once ms`, result.startAllMs, ''],
          ]),
          file ? `results: ${file}` : '',
        ].filter(Boolean).join('\n'),
      );
      return result;
    } finally {
      log('steady: removing pods');
      await Promise.all(names.map((name) => bk.removeManifest(`${name}.json`)));
      await pollUntil(`${n} pods removed`, () => bk.kubelet.pods().length === 0, 60_000 + n * 1000, 50).catch((err) => log(`steady: ${(err as Error).message}`));
      await bk.stop();
    }
  });
}

if (await isMain(import.meta.url)) {
  const seconds = process.env.BENCH_SECONDS ?? process.env.SECONDS;
  await runMain(() =>
    run({
      smoke: isSmoke(),
      ...(process.env.N ? { n: envInt('N', 110) } : {}),
      ...(seconds ? { seconds: Number(seconds) > 0 ? Number(seconds) : 60 } : {}),
    }),
  );
}
