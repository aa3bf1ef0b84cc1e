import path from 'node:path';
import {
  RawCri, benchPodManifest, procCpuSeconds, isMain, isSmoke, logTo, machineInfo, pollUntil, podRunning, printTo,
  round, runMain, runTag, startBenchKubelet, summarize, table, withNodeEnv, writeResults,
  type BenchOptions, type Summary,
} from './lib.ts';

/**
 * density: N pods dropped at once. kubelet-ts: all N manifests written together, time until
 * every pod is reported Running with all containers started (polling `kubelet.pods()` every
 * 10 ms). Raw CRI: the same N pod sequences (PullImage present, RunPodSandbox, CreateContainer,
 * StartContainer) started together with Promise.all, which is the kubelet's concurrency too
 * (one worker per pod, no limit). Raw goes first, is removed, then the kubelet's pods; one
 * unmeasured warm-up pod each before.
 *
 *   npm run bench:density              110 pods (the upstream maxPods default)
 *   N=250 npm run bench:density        250 pods;  N=110,250 runs both
 */

export interface DensityRound {
  n: number;
  /** ms from the start until the last pod ran. */
  rawTotalMs: number;
  kubeletTotalMs: number;
  ratio: number;
  /** When each pod ran, ms from the start. */
  rawPerPod: Summary;
  kubeletPerPod: Summary;
  /** Pods per second to Running. */
  rawPodsPerSec: number;
  kubeletPodsPerSec: number;
  /**
   * CPU seconds used until all ran, by this process (raw: the CRI client; kubelet-ts: the
   * kubelet and the 10 ms poll) and by containerd (the daemon only, not its shims).
   */
  cpuSeconds: { rawClient: number; kubelet: number; containerdRaw: number | undefined; containerdKubelet: number | undefined };
}

export interface DensityResult {
  benchmark: 'density';
  date: string;
  smoke: boolean;
  machine: Record<string, unknown>;
  /** The raw side's image step: 'pull' (PullImage, present) or 'status' (ImageStatus). */
  rawImage: 'pull' | 'status';
  rounds: DensityRound[];
  target: string;
  file?: string;
}

/** `N` as one size or a comma list (`110,250`). */
export function parseSizes(v: string | undefined, def: number[]): number[] {
  if (!v) return def;
  const sizes = v.split(',').map((s) => Number(s.trim()));
  if (sizes.some((s) => !Number.isInteger(s) || s <= 0)) throw new Error(`N=${v}: expected a positive integer or a comma list of them`);
  return sizes;
}

export async function run(opts: BenchOptions & { sizes?: number[] } = {}): Promise<DensityResult> {
  const log = logTo(opts);
  const sizes = opts.sizes ?? [opts.n ?? (opts.smoke ? 3 : 110)];
  return withNodeEnv(opts, async (env) => {
    const machine = await machineInfo(env);
    const tag = runTag();
    const ns = `bench-dn-${tag}`;
    const bk = await startBenchKubelet(env, { maxPods: Math.max(110, ...sizes) });
    const raw = new RawCri(env.containerdEndpoint, path.join(bk.config.podLogsDir, 'raw'));
    const rounds: DensityRound[] = [];
    try {
      log('density: warm-up');
      await raw.removePod(await raw.startPod(benchPodManifest('warm-raw', ns, env.images.busybox)));
      await bk.writeManifest('warm.json', benchPodManifest('warm', ns, env.images.busybox));
      await pollUntil('warm-up pod Running', () => podRunning(bk.pod('warm')), 60_000);
      await bk.removeManifest('warm.json');
      await pollUntil('warm-up pod removed', () => bk.kubelet.pods().length === 0, 60_000);

      for (const n of sizes) {
        const timeoutMs = 60_000 + n * 2000;
        // Raw CRI: all sequences at once.
        log(`density: raw CRI, ${n} pods at once`);
        const rawDone: number[] = [];
        const cd = async () => (env.containerd.pid ? procCpuSeconds(env.containerd.pid) : undefined);
        const cpuSince = (u: NodeJS.CpuUsage) => { const d = process.cpuUsage(u); return (d.user + d.system) / 1e6; };
        const diff = (a: number | undefined, b: number | undefined) => (a === undefined || b === undefined ? undefined : b - a);
        let cd0 = await cd();
        let cpu0 = process.cpuUsage();
        let t0 = performance.now();
        const pods = await Promise.all(
          Array.from({ length: n }, async (_, i) => {
            const p = await raw.startPod(benchPodManifest(`raw-${n}-${i}`, ns, env.images.busybox));
            rawDone.push(performance.now() - t0);
            return p;
          }),
        );
        const rawTotalMs = performance.now() - t0;
        const rawClientCpu = cpuSince(cpu0);
        const containerdRaw = diff(cd0, await cd());
        log(`density: raw CRI ${n} pods in ${round(rawTotalMs)} ms; removing`);
        await Promise.all(pods.map((p) => raw.removePod(p)));

        // kubelet-ts: all manifests at once.
        log(`density: kubelet-ts, ${n} manifests at once`);
        const names = Array.from({ length: n }, (_, i) => `dn-${n}-${i}`);
        const pending = new Set(names.map((name) => `${name}-${bk.config.nodeName}`));
        const kubeletDone: number[] = [];
        cd0 = await cd();
        cpu0 = process.cpuUsage();
        t0 = performance.now();
        await Promise.all(names.map((name) => bk.writeManifest(`${name}.json`, benchPodManifest(name, ns, env.images.busybox))));
        await pollUntil(
          `${n} kubelet pods Running`,
          () => {
            for (const p of bk.kubelet.pods()) {
              const full = p.metadata?.name ?? '';
              if (pending.has(full) && podRunning(p)) {
                pending.delete(full);
                kubeletDone.push(performance.now() - t0);
              }
            }
            return pending.size === 0;
          },
          timeoutMs,
          10,
        );
        const kubeletTotalMs = performance.now() - t0;
        const kubeletCpu = cpuSince(cpu0);
        const containerdKubelet = diff(cd0, await cd());
        log(`density: kubelet-ts ${n} pods in ${round(kubeletTotalMs)} ms; removing`);
        await Promise.all(names.map((name) => bk.removeManifest(`${name}.json`)));
        await pollUntil(`${n} kubelet pods removed`, () => bk.kubelet.pods().length === 0, timeoutMs, 50);

        rounds.push({
          n,
          rawTotalMs,
          kubeletTotalMs,
          ratio: kubeletTotalMs / rawTotalMs,
          rawPerPod: summarize(rawDone),
          kubeletPerPod: summarize(kubeletDone),
          rawPodsPerSec: n / (rawTotalMs / 1000),
          kubeletPodsPerSec: n / (kubeletTotalMs / 1000),
          cpuSeconds: { rawClient: rawClientCpu, kubelet: kubeletCpu, containerdRaw, containerdKubelet },
        });
      }
    } finally {
      await raw.close();
      await bk.stop();
    }

    const result: DensityResult = { benchmark: 'density', date: new Date().toISOString(), smoke: !!opts.smoke, machine, rawImage: raw.image, rounds, target: '110 pods: kubelet <= 1.2 x raw; 250 pods all Running' };
    const file = await writeResults(opts, 'density', result);
    if (file) result.file = file;
    printTo(opts)(
      [
        `density: pods dropped at once (ms until all Running; per-pod p50/p99 = when each pod ran; raw image step: ${raw.image === 'pull' ? 'PullImage' : 'ImageStatus'}; raw RunPodSandbox ${raw.sandboxBound}; kubelet maxParallelSandboxCreations ${bk.config.maxParallelSandboxCreations ?? 'unbounded'})`,
        table([
          ['pods', 'raw all', 'kubelet all', 'ratio', 'raw p50', 'raw p99', 'kubelet p50', 'kubelet p99', 'raw pods/s', 'kubelet pods/s', 'CPU s client/kubelet', 'containerd CPU s raw/kubelet'],
          ...rounds.map((r) => [
            String(r.n), r.rawTotalMs, r.kubeletTotalMs, r.ratio, r.rawPerPod.p50, r.rawPerPod.p99, r.kubeletPerPod.p50, r.kubeletPerPod.p99, r.rawPodsPerSec, r.kubeletPodsPerSec,
            `${round(r.cpuSeconds.rawClient, 2)} / ${round(r.cpuSeconds.kubelet, 2)}`,
            `${round(r.cpuSeconds.containerdRaw ?? NaN, 2)} / ${round(r.cpuSeconds.containerdKubelet ?? NaN, 2)}`,
          ]),
        ]),
        `target: ratio <= 1.2 at 110 pods; 250 pods all Running${file ? `\nresults: ${file}` : ''}`,
      ].join('\n'),
    );
    return result;
  });
}

if (await isMain(import.meta.url)) {
  await runMain(() => run({ smoke: isSmoke(), ...(process.env.N ? { sizes: parseSizes(process.env.N, [110]) } : {}) }));
}
