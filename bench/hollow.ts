import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Node, V1Pod } from '@kubernetes/client-node';
import { procRssBytes } from '../test/support/kubelet-process.ts';
import { startHollowProcess } from '../test/support/hollow-process.ts';
import { envWindowSeconds, isMain, isSmoke, logTo, printTo, procCpuSeconds, round, runMain, runTag, table, writeResults, type BenchOptions } from './lib.ts';
import { createNamespace, deleteNamespace } from './api/api-pods.ts';
import { withBenchRun, type BenchRun } from './api/bench-run.ts';
import { startCluster, withAdmin, type BenchCluster, type ClusterLike } from './api/cluster.ts';
import { startCountingProxy, type CountingProxy } from './api/counting-proxy.ts';
import { readKubeconfigTls, writeRedirectedKubeconfig } from './api/kubeconfig-tls.ts';
import { kubemarkBinary, startKubemarkNodes } from './api/kubemark-nodes.ts';
import { ObjectWatch } from './api/object-watch.ts';
import { makeProxyPki, type ProxyPki } from './api/proxy-pki.ts';
import { countWindow, type RequestWindow } from './api/request-counts.ts';

/**
 * hollow: what a node costs when a cluster is simulated at scale. kubelet-ts hollow nodes
 * (`kubelet-ts hollow`: N kubelet cores in one process on an in-memory runtime) against
 * kubemark's (upstream's hollow node: a real kubelet with a fake runtime, one process per
 * node), one side after the other against the same control plane, in one run.
 *
 * Per side: start the nodes, time until every Node is Ready; settle, then measure an idle
 * window; create a Deployment of PODS_PER_NODE pods per node spread over them by the
 * scheduler, time until all run; settle, measure a window with the pods. A window gives RSS
 * (VmRSS every second, summed over the side's processes) and CPU (utime + stime) per node, the
 * API requests per minute per node (counted at a TLS proxy in front of the API server, as
 * api-load does), and the control plane's own CPU. Then the pods and the Nodes go.
 *
 *   npm run bench:hollow                      kubelet-ts N=10,50,200; kubemark 10 processes
 *   N=1000 KUBEMARK=0 PODS_PER_NODE=0 npm run bench:hollow    the largest N alone
 */

export interface HollowWindow {
  seconds: number;
  rssMiB: { total: number; perNode: number; max: number };
  cpuCores: { total: number; perNode: number };
  /** API requests per minute per node (undefined without the proxy). */
  requestsPerMinutePerNode: number | undefined;
  requests: RequestWindow | undefined;
  controlPlaneCores: number | undefined;
  /** Nodes Ready at the window's end. */
  readyAtEnd: number;
}

export interface HollowSide {
  kind: 'kubelet-ts' | 'kubemark';
  nodes: number;
  processes: number;
  code: string;
  /** Processes started until every Node Ready. */
  readyMs: number | undefined;
  idle: HollowWindow | undefined;
  pods: number;
  /** Deployment created until every pod Running (as the API reports it). */
  podsRunningMs: number | undefined;
  withPods: HollowWindow | undefined;
  /** Why the side stopped early (a size this machine does not hold), if it did. */
  error?: string;
}

export interface HollowResult {
  benchmark: 'hollow';
  date: string;
  smoke: boolean;
  windowSeconds: number;
  settleSeconds: number;
  podsPerNode: number;
  proxy: boolean;
  machine: Record<string, unknown>;
  loadAverage: { before: number[]; after: number[] };
  sides: HollowSide[];
  kubemarkSkipped: string | undefined;
  file?: string;
}

export interface HollowOptions extends BenchOptions {
  /** A running control plane (the test suite's); default: start one for the run. */
  cluster?: ClusterLike;
  /** kubelet-ts sizes (default 10, 50, 200; smoke 3). */
  sizes?: number[];
  /** kubemark processes (default 10; smoke 0). */
  kubemark?: number;
  podsPerNode?: number;
  seconds?: number;
  settleSeconds?: number;
  /** Count requests at a proxy (default true). Without it the nodes talk to the API server directly (a size too large for the proxy). */
  proxy?: boolean;
}

/** What every hollow node of the run reports, kubemark's fake machine (1 CPU, 3840Mi) for kubelet-ts too, so the scheduler sees the same nodes. */
const CAPACITY = 'cpu=1,memory=3840Mi';
const LABEL = 'kubelet-ts.bench/hollow';

interface Ctx {
  run: BenchRun;
  cluster: BenchCluster;
  pki: ProxyPki | undefined;
  namespace: string;
  nodes: ObjectWatch<V1Node>;
  pods: ObjectWatch<V1Pod>;
  tag: string;
  log: (line: string) => void;
  seconds: number;
  settle: number;
  podsPerNode: number;
}

const ready = (n: V1Node | undefined) => n?.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') ?? false;
const running = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running);

/** Waits (polling the watch's store) until `check` holds; throws after `timeoutMs` with `what` and the last count. */
async function until(what: string, check: () => number | true, want: number, timeoutMs: number): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const got = check();
    if (got === true || got >= want) return;
    if (performance.now() > deadline) throw new Error(`${what}: ${got}/${want} after ${Math.round(timeoutMs / 1000)} s`);
    await sleep(200);
  }
}

/** RSS and CPU of `pids` over a window, requests at the proxies, the control plane's CPU. */
async function measure(ctx: Ctx, pids: number[], names: string[], proxies: CountingProxy[]): Promise<HollowWindow> {
  const cpu = async () => (await Promise.all(pids.map((p) => procCpuSeconds(p)))).reduce<number>((a, x) => a + (x ?? NaN), 0);
  const t0 = performance.now();
  const cpu0 = await cpu();
  const cp0 = await ctx.cluster.cpuSeconds();
  const rss: number[] = [];
  const end = t0 + ctx.seconds * 1000;
  while (performance.now() < end) {
    await sleep(Math.min(1000, Math.max(0, end - performance.now())));
    rss.push((await Promise.all(pids.map((p) => procRssBytes(p).catch(() => NaN)))).reduce((a, x) => a + x, 0));
  }
  const t1 = performance.now();
  const cpu1 = await cpu();
  const cp1 = await ctx.cluster.cpuSeconds();
  const seconds = (t1 - t0) / 1000;
  const ok = rss.filter(Number.isFinite);
  const mean = ok.reduce((a, x) => a + x, 0) / Math.max(1, ok.length) / 2 ** 20;
  const n = names.length;
  const requests = proxies.length ? merge(proxies.map((p) => countWindow(p.records, t0, t1))) : undefined;
  return {
    seconds,
    rssMiB: { total: mean, perNode: mean / n, max: Math.max(...ok) / 2 ** 20 },
    cpuCores: { total: (cpu1 - cpu0) / seconds, perNode: (cpu1 - cpu0) / seconds / n },
    requestsPerMinutePerNode: requests ? requests.totalPerMinute / n : undefined,
    requests,
    controlPlaneCores: cp0 !== undefined && cp1 !== undefined ? (cp1 - cp0) / seconds : undefined,
    readyAtEnd: names.filter((name) => ready(ctx.nodes.get(name))).length,
  };
}

/** One window of several proxies (kubemark: one per process) as one. */
function merge(windows: RequestWindow[]): RequestWindow {
  const rows = new Map<string, RequestWindow['rows'][number]>();
  for (const w of windows) for (const r of w.rows) {
    const row = rows.get(r.key) ?? { key: r.key, count: 0, perMinute: 0, statuses: {}, bytesIn: 0, bytesOut: 0 };
    row.count += r.count;
    row.perMinute += r.perMinute;
    row.bytesIn += r.bytesIn;
    row.bytesOut += r.bytesOut;
    for (const [s, c] of Object.entries(r.statuses)) row.statuses[s] = (row.statuses[s] ?? 0) + c;
    rows.set(r.key, row);
  }
  const seconds = windows[0]?.seconds ?? 0;
  const total = windows.reduce((a, w) => a + w.total, 0);
  return { seconds, total, totalPerMinute: windows.reduce((a, w) => a + w.totalPerMinute, 0), rows: [...rows.values()].sort((a, b) => b.count - a.count), openWatchesAtStart: {} };
}

/** The Deployment of a side: PODS_PER_NODE pods per node, only on the side's nodes, spread by the scheduler. */
function deployment(name: string, selector: Record<string, string>, replicas: number): object {
  return {
    apiVersion: 'apps/v1', kind: 'Deployment', metadata: { name },
    spec: {
      replicas,
      selector: { matchLabels: { app: name } },
      template: {
        metadata: { labels: { app: name } },
        spec: {
          nodeSelector: selector,
          terminationGracePeriodSeconds: 1,
          containers: [{ name: 'pause', image: 'registry.k8s.io/pause:3.9', resources: { requests: { cpu: '10m', memory: '16Mi' } } }],
        },
      },
    },
  };
}

/** The pods phase of a side: create, time to all Running, settle, window; then delete and wait until they are gone. */
async function podsPhase(ctx: Ctx, side: HollowSide, selector: Record<string, string>, pids: number[], names: string[], proxies: CountingProxy[]): Promise<void> {
  const n = ctx.podsPerNode * names.length;
  side.pods = n;
  if (n === 0) return;
  const name = `${side.kind === 'kubelet-ts' ? 'kts' : 'km'}-${names.length}`;
  const mine = () => ctx.pods.all().filter((p) => p.metadata?.labels?.app === name);
  ctx.log(`hollow: ${side.kind} ${names.length} nodes: a Deployment of ${n} pods`);
  const t0 = performance.now();
  await ctx.cluster.admin.request('POST', `/apis/apps/v1/namespaces/${ctx.namespace}/deployments`, deployment(name, selector, n));
  try {
    await until(`${side.kind}: pods Running`, () => mine().filter(running).length, n, 120_000 + n * 200);
    side.podsRunningMs = performance.now() - t0;
    ctx.log(`hollow: ${side.kind}: ${n} pods Running in ${round(side.podsRunningMs)} ms; settling ${ctx.settle} s, then ${ctx.seconds} s with pods`);
    await sleep(ctx.settle * 1000);
    side.withPods = await measure(ctx, pids, names, proxies);
  } finally {
    await ctx.cluster.admin.request('DELETE', `/apis/apps/v1/namespaces/${ctx.namespace}/deployments/${name}`, { kind: 'DeleteOptions', apiVersion: 'v1', propagationPolicy: 'Foreground' }, { allow: [404] });
    await until(`${side.kind}: pods gone`, () => (mine().length === 0 ? true : 0), 1, 60_000 + n * 200).catch((err: Error) => ctx.log(`hollow: ${err.message}`));
  }
}

async function kubeletTsSide(ctx: Ctx, n: number): Promise<HollowSide> {
  const side: HollowSide = { kind: 'kubelet-ts', nodes: n, processes: 1, code: '', readyMs: undefined, idle: undefined, pods: 0, podsRunningMs: undefined, withPods: undefined };
  const labelValue = `${ctx.tag}-kts-${n}`;
  const prefix = `hb-${ctx.tag}-${n}`;
  const mark = ctx.run.mark();
  const proxies: CountingProxy[] = [];
  try {
    let kubeconfig = ctx.cluster.adminKubeconfig;
    if (ctx.pki) {
      const proxy = await startCountingProxy({ upstream: readKubeconfigTls(ctx.cluster.adminKubeconfig), pki: ctx.pki });
      ctx.run.defer('kubelet-ts proxy', () => proxy.close());
      proxies.push(proxy);
      kubeconfig = path.join(await ctx.run.subdir('kts'), 'admin-via-proxy.kubeconfig');
      await writeRedirectedKubeconfig(ctx.cluster.adminKubeconfig, kubeconfig, proxy.url, ctx.pki.caFile);
    }
    ctx.log(`hollow: kubelet-ts: ${n} nodes in one process`);
    const t0 = performance.now();
    const h = await startHollowProcess({
      nodes: n, kubeconfig, prefix, startTimeoutMs: 120_000 + n * 500,
      args: ['--cleanup', '--node-labels', `${LABEL}=${labelValue}`, '--capacity', CAPACITY, '--cluster-dns', '10.0.0.10'],
    });
    ctx.run.defer(`kubelet-ts hollow ${n}`, async () => {
      const { code, output } = await h.stop('SIGINT', 120_000);
      if (code !== 0) ctx.log(`hollow: kubelet-ts exited ${code}: ${output.split('\n').slice(-3).join(' | ')}`);
    });
    side.code = h.code;
    await until('kubelet-ts: Nodes Ready', () => h.names.filter((name) => ready(ctx.nodes.get(name))).length, n, 120_000 + n * 500);
    side.readyMs = performance.now() - t0;
    ctx.log(`hollow: kubelet-ts: ${n} Nodes Ready in ${round(side.readyMs)} ms; settling ${ctx.settle} s, then ${ctx.seconds} s idle`);
    await sleep(ctx.settle * 1000);
    side.idle = await measure(ctx, [h.pid], h.names, proxies);
    await podsPhase(ctx, side, { [LABEL]: labelValue }, [h.pid], h.names, proxies);
  } catch (err) {
    side.error = (err as Error).message;
    ctx.log(`hollow: kubelet-ts ${n}: ${side.error}`);
  } finally {
    await ctx.run.unwind(mark);
  }
  return side;
}

async function kubemarkSide(ctx: Ctx, k: number, binary: string): Promise<HollowSide> {
  const side: HollowSide = { kind: 'kubemark', nodes: k, processes: k, code: 'v1.28.7', readyMs: undefined, idle: undefined, pods: 0, podsRunningMs: undefined, withPods: undefined };
  const labelValue = `${ctx.tag}-km`;
  const mark = ctx.run.mark();
  const proxies: CountingProxy[] = [];
  try {
    const dir = await ctx.run.subdir('kubemark');
    const nodes: Array<{ name: string; kubeconfig: string }> = [];
    for (let i = 0; i < k; i++) {
      const name = `hb-${ctx.tag}-km-${i}`;
      let kubeconfig = await ctx.cluster.nodeKubeconfig(name);
      if (ctx.pki) {
        // One proxy per process: it forwards with that node's own certificate.
        const proxy = await startCountingProxy({ upstream: readKubeconfigTls(kubeconfig), pki: ctx.pki });
        ctx.run.defer(`kubemark proxy ${name}`, () => proxy.close());
        proxies.push(proxy);
        const redirected = path.join(dir, `${name}.kubeconfig`);
        await writeRedirectedKubeconfig(kubeconfig, redirected, proxy.url, ctx.pki.caFile);
        kubeconfig = redirected;
      }
      nodes.push({ name, kubeconfig });
    }
    ctx.log(`hollow: kubemark: ${k} processes`);
    const t0 = performance.now();
    const km = await startKubemarkNodes({ binary, nodes, labels: { [LABEL]: labelValue }, logDir: dir });
    ctx.run.defer('kubemark nodes', async () => {
      await km.stop();
      for (const name of km.names) {
        await ctx.cluster.admin.request('DELETE', `/api/v1/nodes/${name}`, undefined, { allow: [404] });
        await ctx.cluster.admin.request('DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`, undefined, { allow: [404] });
      }
    });
    await until('kubemark: Nodes Ready', () => km.names.filter((name) => ready(ctx.nodes.get(name))).length, k, 120_000 + k * 5000);
    side.readyMs = performance.now() - t0;
    ctx.log(`hollow: kubemark: ${k} Nodes Ready in ${round(side.readyMs)} ms; settling ${ctx.settle} s, then ${ctx.seconds} s idle`);
    await sleep(ctx.settle * 1000);
    side.idle = await measure(ctx, km.pids, km.names, proxies);
    await podsPhase(ctx, side, { [LABEL]: labelValue }, km.pids, km.names, proxies);
  } catch (err) {
    side.error = (err as Error).message;
    ctx.log(`hollow: kubemark: ${side.error}`);
  } finally {
    await ctx.run.unwind(mark);
  }
  return side;
}

function machine(): Record<string, unknown> {
  return { host: os.hostname(), cpus: os.cpus().length, cpuModel: os.cpus()[0]?.model, memoryMiB: Math.round(os.totalmem() / 2 ** 20), kernel: os.release(), node: process.version };
}

const loadAverage = () => os.loadavg().map((x) => round(x, 2));

export async function run(opts: HollowOptions = {}): Promise<HollowResult> {
  const log = logTo(opts);
  const smoke = !!opts.smoke;
  const sizes = opts.sizes ?? (smoke ? [3] : [10, 50, 200]);
  const seconds = opts.seconds ?? (smoke ? 5 : 60);
  const settle = opts.settleSeconds ?? (smoke ? 1 : 20);
  const podsPerNode = opts.podsPerNode ?? (smoke ? 2 : 10);
  const proxy = opts.proxy ?? true;
  const before = loadAverage();
  return withBenchRun(log, async (run) => {
    const cluster = opts.cluster ? withAdmin(opts.cluster, run.defer) : await startCluster(await run.subdir('cp'), run.defer, log);
    const kubemarkCount = opts.kubemark ?? (smoke ? 0 : 10);
    const binary = kubemarkBinary(cluster.dir);
    const kubemarkSkipped = kubemarkCount === 0 ? 'not requested (KUBEMARK=0, or smoke mode)' : binary ? undefined : `no kubemark in ${cluster.dir}/bin (control-plane.sh up unpacks it)`;
    const tag = runTag();
    const namespace = `bench-hollow-${tag}`;
    await createNamespace(cluster.admin, namespace);
    run.defer(`namespace ${namespace}`, () => deleteNamespace(cluster.admin, namespace));
    const nodes = await ObjectWatch.start<V1Node>(cluster.admin, '/api/v1/nodes');
    run.defer('node watch', async () => nodes.stop());
    const pods = await ObjectWatch.start<V1Pod>(cluster.admin, `/api/v1/namespaces/${namespace}/pods`);
    run.defer('pod watch', async () => pods.stop());
    const pki = proxy ? await makeProxyPki(await run.subdir('proxy')) : undefined;
    const ctx: Ctx = { run, cluster, pki, namespace, nodes, pods, tag, log, seconds, settle, podsPerNode };

    const sides: HollowSide[] = [];
    for (const n of sizes) sides.push(await kubeletTsSide(ctx, n));
    if (!kubemarkSkipped && binary) sides.push(await kubemarkSide(ctx, kubemarkCount, binary));

    const result: HollowResult = {
      benchmark: 'hollow', date: new Date().toISOString(), smoke, windowSeconds: seconds, settleSeconds: settle, podsPerNode, proxy,
      machine: machine(), loadAverage: { before, after: loadAverage() }, sides, kubemarkSkipped,
    };
    const file = await writeResults(opts, 'hollow', result);
    if (file) result.file = file;
    printTo(opts)(report(result));
    return result;
  });
}

/** The tables: one column per side. */
export function report(r: HollowResult): string {
  const head = ['', ...r.sides.map((s) => `${s.kind === 'kubelet-ts' ? `kubelet-ts (${s.code})` : 'kubemark v1.28.7'} ${s.nodes} node${s.nodes > 1 ? 's' : ''}${s.processes > 1 ? ` / ${s.processes} proc` : ''}`)];
  const num = (x: number | undefined, d = 1) => (x === undefined || !Number.isFinite(x) ? 'n/a' : round(x, d).toFixed(d));
  const w = (pick: (s: HollowSide) => HollowWindow | undefined, f: (x: HollowWindow) => string) => r.sides.map((s) => { const x = pick(s); return x ? f(x) : 'n/a'; });
  const rows: Array<Array<string | number>> = [
    head,
    ['all Nodes Ready (s)', ...r.sides.map((s) => num(s.readyMs === undefined ? undefined : s.readyMs / 1000))],
    ['idle: RSS MiB per node (total)', ...w((s) => s.idle, (x) => `${num(x.rssMiB.perNode, 2)} (${num(x.rssMiB.total, 0)})`)],
    ['idle: CPU cores per node (total)', ...w((s) => s.idle, (x) => `${num(x.cpuCores.perNode, 5)} (${num(x.cpuCores.total, 3)})`)],
    ['idle: API requests/min per node', ...w((s) => s.idle, (x) => num(x.requestsPerMinutePerNode, 1))],
    ['idle: control plane CPU cores', ...w((s) => s.idle, (x) => num(x.controlPlaneCores, 3))],
    ['pods (per node)', ...r.sides.map((s) => `${s.pods} (${s.nodes ? s.pods / s.nodes : 0})`)],
    ['Deployment: all pods Running (s)', ...r.sides.map((s) => num(s.podsRunningMs === undefined ? undefined : s.podsRunningMs / 1000))],
    ['pods: RSS MiB per node (total)', ...w((s) => s.withPods, (x) => `${num(x.rssMiB.perNode, 2)} (${num(x.rssMiB.total, 0)})`)],
    ['pods: CPU cores per node (total)', ...w((s) => s.withPods, (x) => `${num(x.cpuCores.perNode, 5)} (${num(x.cpuCores.total, 3)})`)],
    ['pods: API requests/min per node', ...w((s) => s.withPods, (x) => num(x.requestsPerMinutePerNode, 1))],
    ['pods: control plane CPU cores', ...w((s) => s.withPods, (x) => num(x.controlPlaneCores, 3))],
    ['Nodes Ready at the end', ...r.sides.map((s) => `${s.withPods?.readyAtEnd ?? s.idle?.readyAtEnd ?? 0}/${s.nodes}`)],
  ];
  const errors = r.sides.filter((s) => s.error).map((s) => `${s.kind} ${s.nodes}: ${s.error}`);
  return [
    `hollow: kubelet-ts hollow nodes vs kubemark, ${r.windowSeconds} s windows after ${r.settleSeconds} s settling, ${r.podsPerNode} pods per node; per node = the side's processes / its nodes; requests counted ${r.proxy ? 'at a TLS proxy per process' : '(no proxy: not counted)'}`,
    table(rows),
    `load average before ${r.loadAverage.before.join(' ')}, after ${r.loadAverage.after.join(' ')} (${r.machine.cpus} CPUs)`,
    ...errors.map((e) => `stopped early: ${e}`),
    r.kubemarkSkipped ? `kubemark: ${r.kubemarkSkipped}` : '',
    r.file ? `results: ${r.file}` : '',
  ].filter(Boolean).join('\n');
}

if (await isMain(import.meta.url)) {
  await runMain(() => {
    const list = (name: string) => process.env[name]?.split(',').map((x) => Number(x.trim())).filter((x) => Number.isInteger(x) && x > 0);
    const int = (name: string) => (process.env[name] !== undefined && process.env[name] !== '' ? Number(process.env[name]) : undefined);
    const seconds = envWindowSeconds();
    const sizes = list('N');
    const kubemark = int('KUBEMARK');
    const podsPerNode = int('PODS_PER_NODE');
    const settle = int('SETTLE');
    return run({
      smoke: isSmoke(),
      ...(sizes?.length ? { sizes } : {}),
      ...(kubemark !== undefined ? { kubemark } : {}),
      ...(podsPerNode !== undefined ? { podsPerNode } : {}),
      ...(seconds !== undefined ? { seconds } : {}),
      ...(settle !== undefined ? { settleSeconds: settle } : {}),
      ...(process.env.PROXY === '0' ? { proxy: false } : {}),
    });
  });
}
