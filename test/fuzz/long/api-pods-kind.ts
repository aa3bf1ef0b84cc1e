/**
 * The api-pods kind: odd pods the API server accepts (api-pod-cases.ts) created through the
 * real API server, bound to the kubelet's node, in batches. A batch is done when the kubelet
 * posted a status for each of its pods (or a minute passed: counted, not a crash); then half
 * the batch is deleted gracefully (the kubelet stops the pod and deletes the object) and half
 * forcibly (the kubelet learns it from the watch), and the next batch waits until they are
 * gone. A pod of the node's that runs from before the fuzz must stay the same pod, Running,
 * never restarted.
 *
 * The kubelet is any process (a kubelet-ts on containerd, or `kubelet-ts hollow` with the
 * in-memory runtime: the same core behind the same API source); the runner needs only its pid
 * and exit.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { H2ApiClient } from '../../../bench/api/h2-client.ts';
import { apiPodCase } from '../api-pod-cases.ts';
import { closeReport, EXITED, memoryPoint, podDisturbed, podFacts, RssSampler, settle, type KindReport, type MemoryPoint } from './report.ts';
import type { FuzzedKubelet } from './requests-kind.ts';

export interface ApiPodsRunOptions {
  kubelet: FuzzedKubelet;
  admin: H2ApiClient;
  namespace: string;
  nodeName: string;
  /** The image of the pods' containers (one the node has, for a real runtime). */
  image: string;
  /** The kubelet's diagnostic report directory (reportOnSignalOptions), for its heap after each round. */
  reportDir?: string;
  seed: number;
  count: number;
  /** The first case's index (a reproduce line's). Default 0. */
  from?: number;
  /** Pods per batch. Default 50. */
  batch?: number;
  rounds?: number;
  settleMs?: number;
  /** How long the kubelet may take to report a batch's statuses, and to see it deleted. Default 60 s. */
  batchTimeoutMs?: number;
  /** How long the sentinel pod may take to run. Default 120 s. */
  sentinelTimeoutMs?: number;
  deadline?: number;
  reproduce(index: number): string;
  log?(line: string): void;
}

const SENTINEL = 'fz-sentinel';
const TABLE = 'application/json;as=Table;v=v1;g=meta.k8s.io';

interface TableRow { cells: unknown[]; object?: { metadata?: { name?: string } } }
interface Table { columnDefinitions: Array<{ name: string }>; rows?: TableRow[] }

/** The namespace's pods as `kubectl get pods` shows them: name -> { status, ip }. */
async function podRows(admin: H2ApiClient, ns: string): Promise<Map<string, { status: string; ip: string }>> {
  const res = await admin.request<Table>('GET', `/api/v1/namespaces/${ns}/pods?includeObject=None&limit=5000`, undefined, { accept: TABLE });
  const cols = res.body.columnDefinitions.map((c) => c.name);
  const [iName, iStatus, iIp] = [cols.indexOf('Name'), cols.indexOf('Status'), cols.indexOf('IP')];
  return new Map((res.body.rows ?? []).map((r) => [String(r.cells[iName]), { status: String(r.cells[iStatus]), ip: String(r.cells[iIp]) }]));
}

/** The API server's reason for refusing a pod: the first cause's field and reason, without values. */
function refusal(err: unknown): string {
  const body = (err as { body?: string }).body ?? (err as Error).message;
  try {
    const s = JSON.parse(body) as { reason?: string; details?: { causes?: Array<{ field?: string; reason?: string }> } };
    const c = s.details?.causes?.[0];
    return `${s.reason ?? '?'}${c ? ` ${c.field ?? ''} ${c.reason ?? ''}` : ''}`.replace(/\[\d+\]/g, '[*]');
  } catch {
    return String(body).slice(0, 120);
  }
}

export async function runApiPodsFuzz(o: ApiPodsRunOptions): Promise<KindReport> {
  const log = o.log ?? (() => {});
  const t0 = performance.now();
  const ns = o.namespace;
  let exited = false;
  let exitCode: number | string | undefined;
  void o.kubelet.exited.then((c) => { exited = true; exitCode = c; });
  const getPod = async (name: string) => (await o.admin.request<V1Pod>('GET', `/api/v1/namespaces/${ns}/pods/${name}`, undefined, { allow: [404] })).body;
  // The sentinel: a plain pod of the node's, Running before the fuzz starts.
  await o.admin.request('POST', `/api/v1/namespaces/${ns}/pods`, {
    apiVersion: 'v1', kind: 'Pod', metadata: { name: SENTINEL },
    spec: { nodeName: o.nodeName, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: o.image, command: ['sleep', '36000'] }] },
  });
  const sentinelUntil = performance.now() + (o.sentinelTimeoutMs ?? 120_000);
  let sentinel = podFacts(await getPod(SENTINEL));
  while (!sentinel?.running) {
    if (exited || performance.now() > sentinelUntil) throw new Error(`${ns}/${SENTINEL} did not run within ${o.sentinelTimeoutMs ?? 120_000} ms${exited ? ` (the kubelet exited: ${exitCode})` : ''}`);
    await sleep(250);
    sentinel = podFacts(await getPod(SENTINEL));
  }
  const sentinelBefore = sentinel;
  const rss = new RssSampler(o.kubelet.pid);
  const before = await rss.now();
  const rounds: MemoryPoint[] = [];
  const crashes: string[] = [];
  const reproduce: string[] = [];
  const refusals = new Map<string, number>();
  const statuses = new Map<string, number>();
  let generated = 0;
  let sent = 0;
  let unreported = 0;
  let undeleted = 0;
  let stoppedEarly: string | undefined;
  const batchSize = o.batch ?? 50;
  const batches = Math.ceil(o.count / batchSize);
  const roundsN = Math.max(1, Math.min(o.rounds ?? 1, batches));
  const settleMs = o.settleMs ?? 10_000;
  const timeoutMs = o.batchTimeoutMs ?? 60_000;
  try {
    for (let b = 0; b < batches && !exited && !stoppedEarly; b++) {
      if (o.deadline !== undefined && performance.now() > o.deadline) {
        stoppedEarly = `time bound reached after ${generated} inputs`;
        break;
      }
      const tBatch = performance.now();
      const first = b * batchSize;
      const created = new Map<string, number>();
      const indexes = Array.from({ length: Math.min(batchSize, o.count - first) }, (_, k) => (o.from ?? 0) + first + k);
      // Created 10 at a time: some of them are megabytes of JSON.
      for (let k = 0; k < indexes.length; k += 10) {
        await Promise.all(indexes.slice(k, k + 10).map(async (i) => {
          const c = apiPodCase(o.seed, i, o.nodeName, o.image);
          generated++;
          try {
            await o.admin.request('POST', `/api/v1/namespaces/${ns}/pods`, c.pod, { timeoutMs: 120_000 });
            created.set(c.pod.metadata!.name!, i);
            sent++;
          } catch (err) {
            const why = refusal(err);
            refusals.set(why, (refusals.get(why) ?? 0) + 1);
            if (refusals.get(why) === 1) log(`api-pods: the API server refused case ${i} (${c.kind}): ${why}`);
          }
        }));
      }
      const tCreated = performance.now();
      // The kubelet's status for each: what `kubectl get pods` shows moves off a bare Pending.
      const until = performance.now() + timeoutMs;
      let rows = await podRows(o.admin, ns);
      const reported = (name: string) => { const r = rows.get(name); return r !== undefined && (r.status !== 'Pending' || r.ip !== '<none>'); };
      while (!exited && performance.now() < until && [...created.keys()].some((n) => !reported(n))) {
        await sleep(250);
        rows = await podRows(o.admin, ns);
      }
      for (const name of created.keys()) {
        if (!reported(name)) unreported++;
        const s = (rows.get(name)?.status ?? 'gone').replace(/\d+/g, 'N');
        statuses.set(s, (statuses.get(s) ?? 0) + 1);
      }
      if (exited) {
        crashes.push(`${EXITED} (${exitCode}) during the batch of cases ${indexes[0]}..${indexes.at(-1)}`);
        for (const i of created.values()) reproduce.push(o.reproduce(i));
        break;
      }
      const tReported = performance.now();
      // Half deleted gracefully (the kubelet stops the pod, then deletes the object), half
      // forcibly (the watch tells it). A grace of 1 s: a pod's own may be centuries.
      let k = 0;
      await Promise.all([...created.keys()].map((name) => o.admin.request('DELETE', `/api/v1/namespaces/${ns}/pods/${name}`, { gracePeriodSeconds: k++ % 2 }, { allow: [404] }).catch(() => undefined)));
      const goneUntil = performance.now() + timeoutMs;
      for (;;) {
        rows = await podRows(o.admin, ns);
        const left = [...created.keys()].filter((n) => rows.has(n));
        if (!left.length || exited) break;
        if (performance.now() > goneUntil) {
          undeleted += left.length;
          log(`api-pods: batch ${b}: ${left.length} pods not deleted within ${timeoutMs} ms (e.g. case ${created.get(left[0]!)}); forcing`);
          await Promise.all(left.map((n) => o.admin.request('DELETE', `/api/v1/namespaces/${ns}/pods/${n}`, { gracePeriodSeconds: 0 }, { allow: [404] }).catch(() => undefined)));
          break;
        }
        await sleep(250);
      }
      log(`api-pods: batch ${b}: ${created.size} pods created in ${Math.round(tCreated - tBatch)} ms, reported on in ${Math.round(tReported - tCreated)} ms, gone in ${Math.round(performance.now() - tReported)} ms`);
      const roundEnd = Math.round(((rounds.length + 1) * batches) / roundsN);
      if (b + 1 === roundEnd || b + 1 === batches) {
        if (await settle(settleMs, () => exited)) break;
        rounds.push(await memoryPoint(o.kubelet.pid, o.reportDir, t0, sent));
        const why = podDisturbed(sentinelBefore, podFacts(await getPod(SENTINEL)));
        if (why) {
          crashes.push(`${ns}/${SENTINEL}: ${why} (by the end of case ${indexes.at(-1)})`);
          reproduce.push(o.reproduce(indexes[0]!));
          break;
        }
        log(`api-pods: round ${rounds.length}/${roundsN}: ${generated} generated, ${sent} accepted by the API server; RSS ${rounds.at(-1)!.rssMiB} MiB`);
      }
    }
    return await closeReport({
      kind: 'api-pods', seed: o.seed, count: o.count, sent, crashes, reproduce, t0, rss, beforeBytes: before, settleMs, rounds, stoppedEarly,
      details: {
        generated,
        'refused by the API server': Object.fromEntries(refusals),
        'what kubectl showed before the delete': Object.fromEntries([...statuses].sort((a, b) => b[1] - a[1])),
        'no status from the kubelet within the batch timeout': unreported,
        'not deleted within the batch timeout (forced)': undeleted,
      },
      exit: exited ? { code: exitCode ?? '?' } : undefined,
      disturbed: async () => { const why = podDisturbed(sentinelBefore, podFacts(await getPod(SENTINEL))); return why && `${ns}/${SENTINEL}: ${why}`; },
    });
  } finally {
    rss.stop();
  }
}
