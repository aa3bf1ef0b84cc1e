// Diagnostic, not a benchmark: where kubelet-ts's pod start in API-server mode spends its time.
// N pods (10) one after another (AT_ONCE=1: created at once) on kubelet-ts (own process) through
// a counting proxy; per pod: create call -> the kubelet saw the pod (its timeline's source-seen)
// -> its last container started (timeline) -> the Running status PATCH reached the proxy (and
// how long that call took) -> the benchmark's watch delivered it. p50/p90/max at the end.
//   N=20 npx tsx bench/diag-api-timeline.ts        AT_ONCE=1 N=110 npx tsx bench/diag-api-timeline.ts
import http from 'node:http';
import path from 'node:path';
import { envInt, round, summarize, table } from './lib.ts';
import { apiBenchPod, createPod, deleteAllPods, runningInApi } from './api/api-pods.ts';
import { withApiBench } from './api/api-bench.ts';
import { withNode, type BenchNode } from './api/bench-nodes.ts';
import { startCountingProxy } from './api/counting-proxy.ts';
import { readKubeconfigTls, writeRedirectedKubeconfig } from './api/kubeconfig-tls.ts';
import { makeProxyPki } from './api/proxy-pki.ts';

const n = envInt('N', 10);
const atOnce = process.env.AT_ONCE === '1';

/** GET over the kubelet's local socket (where kubelet-ts serves its debugging views). */
function getOverSocket(socketPath: string, p: string): Promise<string> {
  return new Promise((resolve, reject) => {
    http.get({ socketPath, path: p, timeout: 10_000 }, (res) => {
      let body = '';
      res.setEncoding('utf8').on('data', (c: string) => (body += c)).on('end', () => (res.statusCode === 200 ? resolve(body) : reject(new Error(`GET ${p}: HTTP ${res.statusCode} ${body}`))));
    }).on('error', reject);
  });
}
const epoch = (perfMs: number) => performance.timeOrigin + perfMs;

await withApiBench({ upstream: false }, 'dg', async (b) => {
  const name = `bench-api-kts-${b.tag}`;
  const pki = await makeProxyPki(await b.run.subdir('proxy'));
  const nodeKubeconfig = await b.cluster.nodeKubeconfig(name);
  const proxy = await startCountingProxy({ upstream: readKubeconfigTls(nodeKubeconfig), pki, keepBodies: true });
  b.run.defer('proxy', () => proxy.close());
  const kubeconfig = path.join(path.dirname(pki.caFile), 'node.kubeconfig');
  await writeRedirectedKubeconfig(nodeKubeconfig, kubeconfig, proxy.url, pki.caFile);
  const rows: number[][] = [];
  const batch = async (node: BenchNode, names: string[], record: boolean) => {
    const running = names.map((pod) => b.pods.until(pod, runningInApi, 300_000, `${pod} Running`));
    const t0 = performance.now();
    await Promise.all(names.map((pod) => createPod(b.cluster.admin, b.namespace, apiBenchPod(pod, node.name, b.env.images.busybox))));
    const seen = await Promise.all(running);
    for (const [i, pod] of names.entries()) {
      const timeline = JSON.parse(await getOverSocket(node.localSocket!, `/debug/pods/${b.namespace}/${pod}/timeline`)) as { seenMs: number; steps: Array<{ step: string; startMs: number; durationMs: number }> };
      const startedMs = Math.max(...timeline.steps.filter((s) => s.step === 'start' || s.step.startsWith('start:')).map((s) => s.startMs + s.durationMs));
      const patch = proxy.records.find((r) => r.name === pod && r.subresource === 'status' && r.body && runningInApi({ ...JSON.parse(r.body), spec: { containers: [{ name: 'main' }] } }));
      if (record && patch) rows.push([timeline.seenMs - epoch(t0), startedMs - timeline.seenMs, epoch(patch.at) - startedMs, (patch.endAt ?? NaN) - patch.at, seen[i]! - patch.at, seen[i]! - t0]);
    }
    await deleteAllPods(b.cluster.admin, b.namespace, b.pods, 120_000 + names.length * 1000);
  };
  await withNode('kubelet-ts', { run: b.run, env: b.env, cluster: b.cluster, log: b.log, maxPods: Math.max(110, n) }, { name, kubeconfig }, async (node) => {
    await batch(node, ['bench-api-dg-warm'], false);
    if (atOnce) await batch(node, Array.from({ length: n }, (_, i) => `bench-api-dg-${i}`), true);
    else for (let i = 0; i < n; i++) await batch(node, [`bench-api-dg-${i}`], true);
  });
  const cols = ['create -> kubelet saw it', 'saw -> last container started', 'started -> Running PATCH at proxy', 'PATCH call', 'PATCH -> on our watch', 'total'];
  const stat = (label: string, p: 'p50' | 'p90' | 'max') => [label, ...cols.map((_, c) => round(summarize(rows.map((r) => r[c]!))[p], 1))];
  process.stdout.write(`${atOnce ? `${n} pods created at once` : `${n} pods one after another`} (ms)\n${table([
    ['pod', ...cols],
    ...(rows.length <= 30 ? rows.map((r, i) => [String(i), ...r.map((x) => round(x, 1))]) : []),
    stat('p50', 'p50'),
    stat('p90', 'p90'),
    stat('max', 'max'),
  ])}\n`);
});
