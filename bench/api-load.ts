import { writeFile } from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { procMemorySplit, procRssBytes } from '../test/support/kubelet-process.ts';
import { envInt, envWindowSeconds, isMain, isSmoke, printTo, procCpuSeconds, round, runMain, table, writeResults } from './lib.ts';
import { apiPodsRound, type ApiDensityRound } from './api/api-pods-round.ts';
import { deleteAllPods, runningInApi } from './api/api-pods.ts';
import { withApiBench, type ApiBench, type ApiBenchOptions } from './api/api-bench.ts';
import { withNode, type NodeKind } from './api/bench-nodes.ts';
import { startCountingProxy } from './api/counting-proxy.ts';
import { readKubeconfigTls, writeRedirectedKubeconfig } from './api/kubeconfig-tls.ts';
import { makeProxyPki, type ProxyPki } from './api/proxy-pki.ts';
import { countWindow, type RequestWindow } from './api/request-counts.ts';

/**
 * api-load: the API requests a kubelet makes with N pods running and nothing changing, by
 * verb and resource (subresource included: pods/status, nodes/status, leases, events, ...),
 * kubelet-ts against the upstream kubelet v1.28.7 for the same N pods, one after the other in
 * one run. Each kubelet reaches the API server through its own counting proxy
 * (api/counting-proxy.ts: TLS-terminating on loopback, forwards with the node's client
 * certificate; its kubeconfig trusts the proxy's own CA), so every request of that kubelet and
 * only its requests are counted. A watch counts once, when it is asked for.
 *
 * Per kubelet: start it, wait for its Node Ready, create N pods in the API at once, wait until
 * all are Running in the API (also a density figure, through the proxy), let it settle
 * (SETTLE seconds), then count over a window of SECONDS; also its CPU and RSS from /proc over
 * the window. The requests from its start to all pods Running are reported too.
 *
 *   npm run bench:api-load             110 pods, 120 s window, 15 s settle
 *   N=30 SECONDS=60 npm run bench:api-load
 */

export interface ApiLoadSide {
  kind: NodeKind;
  node: string;
  code: string;
  /** Through the proxy: N pods created at once until all Running in the API. */
  start: ApiDensityRound;
  /** Requests from the kubelet's start until all N pods were Running. */
  startPhase: RequestWindow;
  /** Requests over the steady window. */
  window: RequestWindow;
  /** KiB per minute over the window: request bodies (to the API server), responses and watch streams (from it). */
  kibPerMinute: { in: number; out: number };
  cpuCores: number | undefined;
  rssMiB: { mean: number; max: number } | undefined;
  /** RSS at the window's end split into anonymous (the process's own) and file-backed pages (shared with any process mapping the same files), from smaps_rollup. */
  memoryMiB?: { anonymous: number; file: number };
}

export interface ApiLoadResult {
  benchmark: 'api-load';
  date: string;
  smoke: boolean;
  n: number;
  windowSeconds: number;
  settleSeconds: number;
  machine: Record<string, unknown>;
  sides: ApiLoadSide[];
  upstreamSkipped: string | undefined;
  /** A side that could not be measured at all (its kubelet did not come up, ...): the error, so the other side still reports. */
  failedSides: Array<{ kind: NodeKind; error: string }>;
  file?: string;
}

async function measureSide(b: ApiBench, kind: NodeKind, pki: ProxyPki, n: number, windowSeconds: number, settleSeconds: number): Promise<ApiLoadSide> {
  const { log } = b;
  const name = `bench-api-${kind === 'kubelet-ts' ? 'kts' : 'up'}-${b.tag}`;
  const nodeKubeconfig = await b.cluster.nodeKubeconfig(name);
  const proxy = await startCountingProxy({ upstream: readKubeconfigTls(nodeKubeconfig), pki, keepBodies: !!process.env.KUBELET_TS_BENCH_KEEP });
  try {
    const kubeconfig = path.join(path.dirname(pki.caFile), `${name}.kubeconfig`);
    await writeRedirectedKubeconfig(nodeKubeconfig, kubeconfig, proxy.url, pki.caFile);
    const t0 = performance.now();
    const ctx = { run: b.run, env: b.env, cluster: b.cluster, log, maxPods: Math.max(110, n) };
    return await withNode(kind, ctx, { name, kubeconfig }, async (node) => {
      log(`api-load: ${kind}: ${n} pods created at once`);
      const start = await apiPodsRound(b, node, n, `${name}-p`, { keep: true, partial: true });
      const runningAt = performance.now();
      if (start.notRunning) log(`api-load: ${kind}: warning: ${start.notRunning}/${n} pods not Running after ${round(start.totalMs)} ms; measuring the window as it is`);
      else log(`api-load: ${kind}: ${n} pods Running in ${round(start.totalMs)} ms; settling ${settleSeconds} s`);
      await sleep(settleSeconds * 1000);

      log(`api-load: ${kind}: counting for ${windowSeconds} s`);
      const w0 = performance.now();
      const bytes0 = proxy.bytes();
      const cpu0 = await procCpuSeconds(node.pid);
      const rss: number[] = [];
      const end = w0 + windowSeconds * 1000;
      while (performance.now() < end) {
        await sleep(Math.min(1000, Math.max(0, end - performance.now())));
        rss.push(await procRssBytes(node.pid).catch(() => NaN));
      }
      const w1 = performance.now();
      const cpu1 = await procCpuSeconds(node.pid);
      const split = await procMemorySplit(node.pid).catch(() => undefined);
      const bytes1 = proxy.bytes();
      const minutes = (w1 - w0) / 60_000;
      const stillRunning = b.pods.all().filter(runningInApi).length;
      if (stillRunning !== n) log(`api-load: ${kind}: warning: ${stillRunning}/${n} pods Running after the window`);

      log(`api-load: ${kind}: deleting the pods`);
      await deleteAllPods(b.cluster.admin, b.namespace, b.pods, 60_000 + n * 1000);
      const okRss = rss.filter(Number.isFinite);
      return {
        kind,
        node: name,
        code: node.code,
        start,
        startPhase: countWindow(proxy.records, t0, runningAt),
        window: countWindow(proxy.records, w0, w1),
        kibPerMinute: { in: (bytes1.in - bytes0.in) / 1024 / minutes, out: (bytes1.out - bytes0.out) / 1024 / minutes },
        cpuCores: cpu0 !== undefined && cpu1 !== undefined ? (cpu1 - cpu0) / ((w1 - w0) / 1000) : undefined,
        rssMiB: okRss.length ? { mean: okRss.reduce((a, x) => a + x, 0) / okRss.length / 2 ** 20, max: Math.max(...okRss) / 2 ** 20 } : undefined,
        ...(split ? { memoryMiB: { anonymous: split.anonymous / 2 ** 20, file: split.file / 2 ** 20 } } : {}),
      };
    });
  } finally {
    await proxy.close();
    // Every request (with its body under KUBELET_TS_BENCH_KEEP=1, which also keeps the run's directory), for a closer look.
    await writeFile(path.join(path.dirname(pki.caFile), `${name}.requests.jsonl`), proxy.records.map((r) => JSON.stringify(r)).join('\n'));
  }
}

/** Rows of every key either side has, side by side; `value` picks the figure. */
function sideBySide(sides: ApiLoadSide[], pick: (s: ApiLoadSide) => RequestWindow, value: (count: number, w: RequestWindow) => number | string): Array<Array<string | number>> {
  const keys = [...new Set(sides.flatMap((s) => pick(s).rows.map((r) => r.key)))];
  const total = (k: string) => sides.reduce((a, s) => a + (pick(s).rows.find((r) => r.key === k)?.count ?? 0), 0);
  keys.sort((a, b) => total(b) - total(a) || a.localeCompare(b));
  const cell = (s: ApiLoadSide, k: string) => {
    const row = pick(s).rows.find((r) => r.key === k);
    if (!row) return '-';
    const failed = Object.entries(row.statuses).filter(([code]) => !code.startsWith('2')).map(([code, c]) => `${c}x${code}`);
    return `${value(row.count, pick(s))}${failed.length ? ` (${failed.join(' ')})` : ''}`;
  };
  return [
    ...keys.map((k) => [k, ...sides.map((s) => cell(s, k))]),
    ['total', ...sides.map((s) => value(pick(s).total, pick(s)))],
  ];
}

export async function run(opts: ApiBenchOptions & { seconds?: number; settleSeconds?: number } = {}): Promise<ApiLoadResult> {
  const n = opts.n ?? (opts.smoke ? 3 : 110);
  const windowSeconds = opts.seconds ?? (opts.smoke ? 5 : 120);
  const settleSeconds = opts.settleSeconds ?? (opts.smoke ? 1 : 15);
  return withApiBench(opts, 'ld', async (b) => {
    const pki = await makeProxyPki(await b.run.subdir('proxy'));
    const sides: ApiLoadSide[] = [await measureSide(b, 'kubelet-ts', pki, n, windowSeconds, settleSeconds)];
    const failedSides: ApiLoadResult['failedSides'] = [];
    if (b.upstream.enabled) {
      // The comparison side may fail (a slow upstream node, a registration that times out):
      // kubelet-ts's figures are still worth printing, with why the other column is missing.
      try {
        sides.push(await measureSide(b, 'upstream', pki, n, windowSeconds, settleSeconds));
      } catch (err) {
        const error = err instanceof Error ? err.message : String(err);
        b.log(`api-load: upstream: not measured: ${error}`);
        failedSides.push({ kind: 'upstream', error });
        await deleteAllPods(b.cluster.admin, b.namespace, b.pods, 60_000 + n * 1000).catch(() => {});
      }
    }

    const result: ApiLoadResult = {
      benchmark: 'api-load',
      date: new Date().toISOString(),
      smoke: !!opts.smoke,
      n,
      windowSeconds,
      settleSeconds,
      machine: b.machine,
      sides,
      upstreamSkipped: b.upstream.enabled ? undefined : b.upstream.skipped,
      failedSides,
    };
    const file = await writeResults(opts, 'api-load', result);
    if (file) result.file = file;
    const header = ['request', ...sides.map((s) => (s.kind === 'kubelet-ts' ? `kubelet-ts (${s.code})` : 'upstream v1.28.7'))];
    const perMin = (count: number, w: RequestWindow) => round(count / (w.seconds / 60), 2);
    const watches = (s: ApiLoadSide) => Object.entries(s.window.openWatchesAtStart).map(([k, c]) => `${k.replace(/^watch /, '')}${c > 1 ? ` x${c}` : ''}`).join(', ') || 'none';
    const fmt = (x: number | undefined, d = 3) => (x === undefined || !Number.isFinite(x) ? 'n/a' : x.toFixed(d));
    printTo(opts)(
      [
        `api-load: ${n} pods running, requests per minute over a ${windowSeconds} s window (after all Running + ${settleSeconds} s), counted at a TLS proxy per kubelet; a watch counts when asked for`,
        table([header, ...sideBySide(sides, (s) => s.window, perMin)]),
        ...sides.map((s) => `watches open through the window (${s.kind}): ${watches(s)}`),
        table([
          ['', ...header.slice(1)],
          ['KiB/min to the API server (request bodies)', ...sides.map((s) => round(s.kibPerMinute.in, 1))],
          ['KiB/min from it (responses, watch streams)', ...sides.map((s) => round(s.kibPerMinute.out, 1))],
          ['kubelet CPU (cores) over the window', ...sides.map((s) => fmt(s.cpuCores, 4))],
          ['kubelet RSS MiB mean / max', ...sides.map((s) => (s.rssMiB ? `${round(s.rssMiB.mean)} / ${round(s.rssMiB.max)}` : 'n/a'))],
          ['  of it anonymous / file-backed (at the end)', ...sides.map((s) => (s.memoryMiB ? `${round(s.memoryMiB.anonymous)} / ${round(s.memoryMiB.file)}` : 'n/a'))],
          [`${n} pods created at once -> all Running in the API (ms, through the proxy)`, ...sides.map((s) => (s.start.notRunning ? `> ${round(s.start.totalMs)} (${s.start.notRunning} not Running)` : round(s.start.totalMs)))],
        ]),
        `requests from the kubelet's start until all ${n} pods were Running (count):`,
        table([header, ...sideBySide(sides, (s) => s.startPhase, (count) => count)]),
        ...failedSides.map((f) => `${f.kind} kubelet: not measured: ${f.error}`),
        `${b.upstream.enabled ? '' : `upstream kubelet: ${result.upstreamSkipped}\n`}${file ? `results: ${file}` : ''}`,
      ].filter(Boolean).join('\n'),
    );
    return result;
  });
}

if (await isMain(import.meta.url)) {
  await runMain(() => {
    const seconds = envWindowSeconds();
    return run({
      smoke: isSmoke(),
      ...(process.env.N ? { n: envInt('N', 110) } : {}),
      ...(seconds !== undefined ? { seconds } : {}),
      ...(process.env.SETTLE ? { settleSeconds: envInt('SETTLE', 15) } : {}),
    });
  });
}
