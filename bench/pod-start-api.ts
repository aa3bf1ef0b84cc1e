import path from 'node:path';
import {
  RawCri, benchPodManifest, envInt, isMain, isSmoke, printTo, round, runMain, summarize, table, writeResults,
  type Summary,
} from './lib.ts';
import { apiBenchPod, createPod, runningInApi } from './api/api-pods.ts';
import { withApiBench, type ApiBench, type ApiBenchOptions } from './api/api-bench.ts';
import { withNode, type BenchNode } from './api/bench-nodes.ts';
import { RoundTrip, type RoundTripSample } from './api/round-trip.ts';

/**
 * pod-start, API mode: N pods one after another, each created in the API server with
 * `spec.nodeName` set to the node. Per pod: from the start of the create call until a watch of
 * the namespace's pods (the benchmark's own, HTTP/2, admin identity) delivers the pod Running
 * with all containers running, as the kubelet reported it to `pods/status`. Then the pod is
 * deleted (its grace period; the kubelet stops it and deletes the object) and the next starts
 * once the watch saw it gone.
 *
 * Side by side in one run, on one control plane:
 *   - raw: the raw CRI sequence (bench/lib.ts RawCri) plus one API round trip measured right
 *     before it (a ConfigMap created until a watch delivers it; round-trip.ts), added sample by
 *     sample; raw and kubelet-ts pods alternate as in bench:pod-start;
 *   - kubelet-ts as its own process (bin/kubelet-ts.mjs, compiled build when fresh);
 *   - the upstream kubelet v1.28.7 in its own mount namespace with its own containerd, after
 *     kubelet-ts stopped (never two kubelets at once); UPSTREAM=0 leaves it out.
 * One unmeasured warm-up pod each goes first.
 *
 *   npm run bench:pod-start:api          N=30
 *   N=10 UPSTREAM=0 npm run bench:pod-start:api
 */

export interface PodStartApiResult {
  benchmark: 'pod-start-api';
  date: string;
  smoke: boolean;
  n: number;
  machine: Record<string, unknown>;
  rawImage: 'pull' | 'status';
  kubeletCode: string;
  /** Per-pod times in ms. */
  rawMs: number[];
  roundTrips: RoundTripSample[];
  /** rawMs[i] + roundTrips[i].createToWatchMs. */
  rawPlusRoundTripMs: number[];
  kubeletMs: number[];
  upstreamMs: number[] | undefined;
  raw: Summary;
  roundTripCreateMs: Summary;
  roundTripCreateToWatchMs: Summary;
  rawPlusRoundTrip: Summary;
  kubelet: Summary;
  upstream: Summary | undefined;
  /** Against raw + round trip, p50 / p99. */
  ratio: { kubelet: { p50: number; p99: number }; upstream: { p50: number; p99: number } | undefined };
  upstreamSkipped: string | undefined;
  target: string;
  file?: string;
}

/** Starts one pod through the API on `node` and removes it again; returns ms from create to Running as the watch saw it. */
async function apiPodOnce(b: ApiBench, node: BenchNode, name: string): Promise<number> {
  const running = b.pods.until(name, runningInApi, 120_000, `pod ${name} Running`);
  running.catch(() => {});
  const t0 = performance.now();
  await createPod(b.cluster.admin, b.namespace, apiBenchPod(name, node.name, b.env.images.busybox));
  const ms = (await running) - t0;
  const gone = b.pods.until(name, (p) => p === undefined, 120_000, `pod ${name} deleted`);
  gone.catch(() => {});
  await b.cluster.admin.request('DELETE', `/api/v1/namespaces/${b.namespace}/pods/${name}`);
  await gone;
  return ms;
}

export async function run(opts: ApiBenchOptions = {}): Promise<PodStartApiResult> {
  const n = opts.n ?? (opts.smoke ? 3 : 30);
  return withApiBench(opts, 'ps', async (b) => {
    const { log } = b;
    const rt = await RoundTrip.start(b.cluster.admin, b.namespace);
    b.run.defer('round-trip watch', async () => rt.stop());
    const raw = new RawCri(b.env.containerdEndpoint, path.join(await b.run.subdir('raw-logs'), 'pods'));
    b.run.defer('raw CRI client', () => raw.close());
    const ctx = { run: b.run, env: b.env, cluster: b.cluster, log, maxPods: 110 };

    const rawMs: number[] = [];
    const roundTrips: RoundTripSample[] = [];
    const kubeletMs: number[] = [];
    const rawOnce = async (name: string) => {
      const sample = await rt.measure();
      const t0 = performance.now();
      const p = await raw.startPod(benchPodManifest(name, b.namespace, b.env.images.busybox));
      const ms = performance.now() - t0;
      await raw.removePod(p);
      return { ms, sample };
    };

    let kubeletCode = '';
    await withNode('kubelet-ts', ctx, { name: `bench-api-kts-${b.tag}` }, async (node) => {
      kubeletCode = node.code;
      log('pod-start-api: warm-up');
      await rawOnce('bench-api-raw-warm');
      await apiPodOnce(b, node, 'bench-api-kts-warm');
      for (let i = 0; i < n; i++) {
        const doRaw = async () => {
          const r = await rawOnce(`bench-api-raw-${i}`);
          rawMs.push(r.ms);
          roundTrips.push(r.sample);
        };
        const doKubelet = async () => kubeletMs.push(await apiPodOnce(b, node, `bench-api-kts-${i}`));
        if (i % 2 === 0) {
          await doRaw();
          await doKubelet();
        } else {
          await doKubelet();
          await doRaw();
        }
        log(`pod-start-api: ${i + 1}/${n}  raw ${round(rawMs.at(-1)!)} + rt ${round(roundTrips.at(-1)!.createToWatchMs)} ms  kubelet-ts ${round(kubeletMs.at(-1)!)} ms`);
      }
    });

    let upstreamMs: number[] | undefined;
    if (b.upstream.enabled) {
      upstreamMs = [];
      await withNode('upstream', ctx, { name: `bench-api-up-${b.tag}` }, async (node) => {
        log('pod-start-api: upstream warm-up');
        await apiPodOnce(b, node, 'bench-api-up-warm');
        for (let i = 0; i < n; i++) {
          upstreamMs!.push(await apiPodOnce(b, node, `bench-api-up-${i}`));
          log(`pod-start-api: upstream ${i + 1}/${n}  ${round(upstreamMs!.at(-1)!)} ms`);
        }
      });
    }

    const rawPlusRoundTripMs = rawMs.map((ms, i) => ms + roundTrips[i]!.createToWatchMs);
    const rawPlus = summarize(rawPlusRoundTripMs);
    const k = summarize(kubeletMs);
    const u = upstreamMs ? summarize(upstreamMs) : undefined;
    const r2 = (xs: number[]) => xs.map((x) => round(x, 2));
    const result: PodStartApiResult = {
      benchmark: 'pod-start-api',
      date: new Date().toISOString(),
      smoke: !!opts.smoke,
      n,
      machine: b.machine,
      rawImage: raw.image,
      kubeletCode,
      rawMs: r2(rawMs),
      roundTrips: roundTrips.map((s) => ({ createMs: round(s.createMs, 2), createToWatchMs: round(s.createToWatchMs, 2) })),
      rawPlusRoundTripMs: r2(rawPlusRoundTripMs),
      kubeletMs: r2(kubeletMs),
      upstreamMs: upstreamMs && r2(upstreamMs),
      raw: summarize(rawMs),
      roundTripCreateMs: summarize(roundTrips.map((s) => s.createMs)),
      roundTripCreateToWatchMs: summarize(roundTrips.map((s) => s.createToWatchMs)),
      rawPlusRoundTrip: rawPlus,
      kubelet: k,
      upstream: u,
      ratio: {
        kubelet: { p50: k.p50 / rawPlus.p50, p99: k.p99 / rawPlus.p99 },
        upstream: u ? { p50: u.p50 / rawPlus.p50, p99: u.p99 / rawPlus.p99 } : undefined,
      },
      upstreamSkipped: b.upstream.enabled ? undefined : b.upstream.skipped,
      target: 'kubelet-ts p50 <= 1.2 x (raw CRI + one API round trip) p50',
    };
    const file = await writeResults(opts, 'pod-start-api', result);
    if (file) result.file = file;
    const row = (label: string, s: Summary, ratio?: { p50: number; p99: number }) => [label, s.p50, s.p90, s.p99, s.min, s.max, ratio ? round(ratio.p50, 2) : '', ratio ? round(ratio.p99, 2) : ''];
    printTo(opts)(
      [
        `pod-start-api: ${n} pods one after another (ms, create call -> Running with all containers running, seen on a watch of the API)`,
        table([
          ['', 'p50', 'p90', 'p99', 'min', 'max', 'p50 / raw+rt', 'p99 / raw+rt'],
          row(`raw CRI (${raw.image === 'pull' ? 'PullImage' : 'ImageStatus'})`, result.raw),
          row('API round trip (create -> watch)', result.roundTripCreateToWatchMs),
          row('  create call alone', result.roundTripCreateMs),
          row('raw + round trip', rawPlus),
          row(`kubelet-ts (${kubeletCode})`, k, result.ratio.kubelet),
          ...(u ? [row('upstream kubelet v1.28.7', u, result.ratio.upstream)] : []),
        ]),
        `target: kubelet-ts p50 <= 1.2 x (raw + round trip) p50: ${round(result.ratio.kubelet.p50, 2)}${u ? '' : `\nupstream kubelet: ${result.upstreamSkipped}`}${file ? `\nresults: ${file}` : ''}`,
      ].join('\n'),
    );
    return result;
  });
}

if (await isMain(import.meta.url)) {
  await runMain(() => run({ smoke: isSmoke(), ...(process.env.N ? { n: envInt('N', 30) } : {}) }));
}
