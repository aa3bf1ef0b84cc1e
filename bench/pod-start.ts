import path from 'node:path';
import {
  RawCri, benchPodManifest, envInt, isMain, isSmoke, logTo, machineInfo, pollUntil, podRunning, printTo,
  round, runMain, runTag, startBenchKubelet, summarize, table, withNodeEnv, writeResults,
  type BenchOptions, type Summary,
} from './lib.ts';

/**
 * pod-start: N pods started one after another. Per pod, kubelet-ts's time from the manifest
 * written to the pod reported Running with all containers started (polling `kubelet.pods()`
 * every 10 ms), against the raw CRI sequence for the same spec (PullImage of a present image,
 * RunPodSandbox, CreateContainer, StartContainer) in the same run. Raw and kubelet pods
 * alternate (which side goes first flips every pod) so drift in containerd hits both; one
 * unmeasured warm-up pod each goes first. Every pod is removed before the next starts.
 *
 *   npm run bench:pod-start            N=30 by default
 *   N=10 npm run bench:pod-start
 */

export interface PodStartResult {
  benchmark: 'pod-start';
  date: string;
  smoke: boolean;
  n: number;
  machine: Record<string, unknown>;
  /** The raw side's image step: 'pull' (PullImage, present) or 'status' (ImageStatus). */
  rawImage: 'pull' | 'status';
  /** Per-pod start times in ms. */
  rawMs: number[];
  kubeletMs: number[];
  raw: Summary;
  kubelet: Summary;
  /** kubelet / raw for p50, p90, p99. */
  ratio: { p50: number; p90: number; p99: number };
  targets: { p50: string; p99: string };
  file?: string;
}

export async function run(opts: BenchOptions = {}): Promise<PodStartResult> {
  const log = logTo(opts);
  const n = opts.n ?? (opts.smoke ? 3 : 30);
  return withNodeEnv(opts, async (env) => {
    const machine = await machineInfo(env);
    const tag = runTag();
    const ns = `bench-ps-${tag}`;
    const bk = await startBenchKubelet(env);
    const raw = new RawCri(env.containerdEndpoint, path.join(bk.config.podLogsDir, 'raw'));
    const rawMs: number[] = [];
    const kubeletMs: number[] = [];
    try {
      const rawOnce = async (name: string): Promise<number> => {
        const t0 = performance.now();
        const p = await raw.startPod(benchPodManifest(name, ns, env.images.busybox));
        const ms = performance.now() - t0;
        await raw.removePod(p);
        return ms;
      };
      const kubeletOnce = async (name: string): Promise<number> => {
        const file = `${name}.json`;
        const t0 = performance.now();
        await bk.writeManifest(file, benchPodManifest(name, ns, env.images.busybox));
        await pollUntil(`kubelet pod ${name} Running`, () => podRunning(bk.pod(name)), 60_000, 10);
        const ms = performance.now() - t0;
        await bk.removeManifest(file);
        await pollUntil(`kubelet pod ${name} removed`, () => bk.pod(name) === undefined, 60_000, 10);
        return ms;
      };

      log(`pod-start: warm-up`);
      await rawOnce('warm-raw');
      await kubeletOnce('warm-kubelet');
      for (let i = 0; i < n; i++) {
        if (i % 2 === 0) {
          rawMs.push(await rawOnce(`raw-${i}`));
          kubeletMs.push(await kubeletOnce(`ps-${i}`));
        } else {
          kubeletMs.push(await kubeletOnce(`ps-${i}`));
          rawMs.push(await rawOnce(`raw-${i}`));
        }
        log(`pod-start: ${i + 1}/${n}  raw ${round(rawMs.at(-1)!)} ms  kubelet ${round(kubeletMs.at(-1)!)} ms`);
      }
    } finally {
      await raw.close();
      await bk.stop();
    }

    const r = summarize(rawMs);
    const k = summarize(kubeletMs);
    const result: PodStartResult = {
      benchmark: 'pod-start',
      date: new Date().toISOString(),
      smoke: !!opts.smoke,
      n,
      machine,
      rawImage: raw.image,
      rawMs: rawMs.map((x) => round(x, 2)),
      kubeletMs: kubeletMs.map((x) => round(x, 2)),
      raw: r,
      kubelet: k,
      ratio: { p50: k.p50 / r.p50, p90: k.p90 / r.p90, p99: k.p99 / r.p99 },
      targets: { p50: '<= 1.10 x raw', p99: '<= 1.3 x raw' },
    };
    const file = await writeResults(opts, 'pod-start', result);
    if (file) result.file = file;
    printTo(opts)(
      [
        `pod-start: ${n} pods one after another (ms, manifest written -> Running with all containers started)`,
        table([
          ['', 'p50', 'p90', 'p99', 'min', 'max', 'mean'],
          [`raw CRI (${raw.image === 'pull' ? 'PullImage' : 'ImageStatus'})`, r.p50, r.p90, r.p99, r.min, r.max, r.mean],
          ['kubelet-ts', k.p50, k.p90, k.p99, k.min, k.max, k.mean],
          ['ratio', result.ratio.p50, result.ratio.p90, result.ratio.p99, k.min / r.min, k.max / r.max, k.mean / r.mean],
        ]),
        `targets: p50 ratio <= 1.10, p99 ratio <= 1.3${file ? `\nresults: ${file}` : ''}`,
      ].join('\n'),
    );
    return result;
  });
}

if (await isMain(import.meta.url)) {
  await runMain(() => run({ smoke: isSmoke(), ...(process.env.N ? { n: envInt('N', 30) } : {}) }));
}
