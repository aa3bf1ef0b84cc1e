import path from 'node:path';
import {
  RawCri, benchPodManifest, isMain, isSmoke, printTo, round, runMain, summarize, table, writeResults,
  type Summary,
} from './lib.ts';
import { parseSizes } from './density.ts';
import { apiPodsRound, type ApiDensityRound } from './api/api-pods-round.ts';
import { withApiBench, type ApiBench, type ApiBenchOptions } from './api/api-bench.ts';
import { withNode, type BenchNode, type NodeKind } from './api/bench-nodes.ts';
import { RoundTrip } from './api/round-trip.ts';

/**
 * density, API mode: N pods created in the API server at once (N concurrent creates over one
 * HTTP/2 connection), each with `spec.nodeName` set to the node; the time from the first
 * create until a watch of the namespace's pods has delivered every one Running with all its
 * containers running. Against the raw CRI sequences of N pods started together (as
 * bench:density) plus one API round trip (the median of 5, measured just before the
 * kubelet's round; round-trip.ts). kubelet-ts runs as its own process; then, unless
 * UPSTREAM=0, the upstream kubelet v1.28.7 (own mount namespace and containerd) with the same
 * pods. One unmeasured warm-up pod each goes first. CPU seconds of each kubelet and of its
 * containerd over the round come from /proc.
 *
 *   npm run bench:density:api          110 pods
 *   N=110,250 npm run bench:density:api
 */

export interface ApiDensitySize {
  n: number;
  rawTotalMs: number;
  rawPerPod: Summary;
  /** CPU seconds of the control plane during the raw round (its idle cost, for comparison with the kubelet rounds). */
  rawControlPlaneCpuSeconds: number | undefined;
  /** Median API round trip (create -> watch) measured before the kubelet-ts round. */
  roundTripMs: number;
  rawPlusRoundTripMs: number;
  kubelet: ApiDensityRound;
  upstream: ApiDensityRound | undefined;
  /** kubelet total / (raw + round trip); upstream the same. */
  ratio: { kubelet: number; upstream: number | undefined };
}

export interface ApiDensityResult {
  benchmark: 'density-api';
  date: string;
  smoke: boolean;
  machine: Record<string, unknown>;
  rawImage: 'pull' | 'status';
  kubeletCode: string;
  sizes: ApiDensitySize[];
  upstreamSkipped: string | undefined;
  target: string;
  file?: string;
}

/** One warm-up pod on `node` (images and first-sandbox costs out of the measured rounds). */
async function warmUp(b: ApiBench, node: BenchNode, prefix: string): Promise<void> {
  await apiPodsRound(b, node, 1, `${prefix}-warm`);
}

export type { ApiDensityRound };

export async function run(opts: ApiBenchOptions & { sizes?: number[] } = {}): Promise<ApiDensityResult> {
  const sizes = opts.sizes ?? [opts.n ?? (opts.smoke ? 3 : 110)];
  return withApiBench(opts, 'dn', async (b) => {
    const { log } = b;
    const rt = await RoundTrip.start(b.cluster.admin, b.namespace);
    b.run.defer('round-trip watch', async () => rt.stop());
    const raw = new RawCri(b.env.containerdEndpoint, path.join(await b.run.subdir('raw-logs'), 'pods'));
    b.run.defer('raw CRI client', () => raw.close());
    const ctx = { run: b.run, env: b.env, cluster: b.cluster, log, maxPods: Math.max(110, ...sizes) };
    const bySize = new Map<number, Partial<ApiDensitySize>>();
    let kubeletCode = '';

    const sideRounds = async (kind: NodeKind, node: BenchNode) => {
      const prefix = kind === 'kubelet-ts' ? 'bench-api-kts' : 'bench-api-up';
      await warmUp(b, node, prefix);
      for (const n of sizes) {
        const entry = bySize.get(n) ?? { n };
        bySize.set(n, entry);
        if (kind === 'kubelet-ts') {
          log(`density-api: raw CRI, ${n} pods at once`);
          const rawDone: number[] = [];
          const cp0 = await b.cluster.cpuSeconds();
          const t0 = performance.now();
          const pods = await Promise.all(Array.from({ length: n }, async (_, i) => {
            const p = await raw.startPod(benchPodManifest(`bench-api-raw-${n}-${i}`, b.namespace, b.env.images.busybox));
            rawDone.push(performance.now() - t0);
            return p;
          }));
          entry.rawTotalMs = performance.now() - t0;
          entry.rawPerPod = summarize(rawDone);
          const cp1 = await b.cluster.cpuSeconds();
          entry.rawControlPlaneCpuSeconds = cp0 === undefined || cp1 === undefined ? undefined : cp1 - cp0;
          log(`density-api: raw ${n} pods in ${round(entry.rawTotalMs)} ms; removing`);
          await Promise.all(pods.map((p) => raw.removePod(p)));
          const trips: number[] = [];
          for (let i = 0; i < 5; i++) trips.push((await rt.measure()).createToWatchMs);
          entry.roundTripMs = summarize(trips).p50;
        }
        log(`density-api: ${kind}, ${n} pods created at once`);
        const r = await apiPodsRound(b, node, n, `${prefix}-${n}`);
        log(`density-api: ${kind} ${n} pods Running in the API in ${round(r.totalMs)} ms`);
        if (kind === 'kubelet-ts') entry.kubelet = r;
        else entry.upstream = r;
      }
    };

    await withNode('kubelet-ts', ctx, { name: `bench-api-kts-${b.tag}` }, async (node) => {
      kubeletCode = node.code;
      await sideRounds('kubelet-ts', node);
    });
    if (b.upstream.enabled) await withNode('upstream', ctx, { name: `bench-api-up-${b.tag}` }, (node) => sideRounds('upstream', node));

    const out: ApiDensitySize[] = sizes.map((n) => {
      const e = bySize.get(n)!;
      const rawPlus = e.rawTotalMs! + e.roundTripMs!;
      return {
        n,
        rawTotalMs: e.rawTotalMs!,
        rawPerPod: e.rawPerPod!,
        rawControlPlaneCpuSeconds: e.rawControlPlaneCpuSeconds,
        roundTripMs: e.roundTripMs!,
        rawPlusRoundTripMs: rawPlus,
        kubelet: e.kubelet!,
        upstream: e.upstream,
        ratio: { kubelet: e.kubelet!.totalMs / rawPlus, upstream: e.upstream ? e.upstream.totalMs / rawPlus : undefined },
      };
    });
    const result: ApiDensityResult = {
      benchmark: 'density-api',
      date: new Date().toISOString(),
      smoke: !!opts.smoke,
      machine: b.machine,
      rawImage: raw.image,
      kubeletCode,
      sizes: out,
      upstreamSkipped: b.upstream.enabled ? undefined : b.upstream.skipped,
      target: '110 pods: kubelet-ts <= 1.2 x (raw + API round trip)',
    };
    const file = await writeResults(opts, 'density-api', result);
    if (file) result.file = file;
    const f2 = (x: number | undefined) => round(x ?? NaN, 2);
    const cpu = (r: ApiDensityRound | undefined) => (r ? `${f2(r.cpuSeconds.kubelet)} / ${f2(r.cpuSeconds.containerd)} / ${f2(r.cpuSeconds.controlPlane)}` : '');
    printTo(opts)(
      [
        `density-api: pods created in the API at once (ms from the first create until all Running in the API; per-pod p50/p99 = when each was seen Running; raw image step ${raw.image === 'pull' ? 'PullImage' : 'ImageStatus'}, raw RunPodSandbox ${raw.sandboxBound})`,
        table([
          ['pods', 'side', 'all Running', 'vs raw+rt', 'p50', 'p99', 'creates done', 'pods/s', 'CPU s kubelet / containerd / control plane'],
          ...out.flatMap((s) => [
            [String(s.n), `raw CRI (+ rt ${round(s.roundTripMs, 1)} ms)`, `${round(s.rawTotalMs)} (+rt ${round(s.rawPlusRoundTripMs)})`, '', s.rawPerPod.p50, s.rawPerPod.p99, '', s.n / (s.rawTotalMs / 1000), `- / - / ${f2(s.rawControlPlaneCpuSeconds)}`],
            ['', `kubelet-ts (${kubeletCode})`, s.kubelet.totalMs, round(s.ratio.kubelet, 2), s.kubelet.perPod.p50, s.kubelet.perPod.p99, s.kubelet.createdAllMs, s.kubelet.podsPerSec, cpu(s.kubelet)],
            ...(s.upstream ? [['', 'upstream v1.28.7', s.upstream.totalMs, round(s.ratio.upstream!, 2), s.upstream.perPod.p50, s.upstream.perPod.p99, s.upstream.createdAllMs, s.upstream.podsPerSec, cpu(s.upstream)]] : []),
          ]),
        ]),
        `target: 110 pods, kubelet-ts <= 1.2 x (raw + round trip)${b.upstream.enabled ? '' : `\nupstream kubelet: ${result.upstreamSkipped}`}${file ? `\nresults: ${file}` : ''}`,
      ].join('\n'),
    );
    return result;
  });
}

if (await isMain(import.meta.url)) {
  await runMain(() => run({ smoke: isSmoke(), ...(process.env.N ? { sizes: parseSizes(process.env.N, [110]) } : {}) }));
}
