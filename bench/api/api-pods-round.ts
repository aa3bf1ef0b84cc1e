import type { V1Pod } from '@kubernetes/client-node';
import { procCpuSeconds, summarize, type Summary } from '../lib.ts';
import type { ApiBench } from './api-bench.ts';
import { apiBenchPod, createPod, deleteAllPods, runningInApi } from './api-pods.ts';
import type { BenchNode } from './bench-nodes.ts';

export interface ApiDensityRound {
  /** ms from the first create until the last pod was seen Running. */
  totalMs: number;
  /** When each pod was seen Running, ms from the first create. */
  perPod: Summary;
  /** ms until the last create call returned. */
  createdAllMs: number;
  podsPerSec: number;
  /** CPU seconds over the round: the kubelet, its containerd (the daemon, not its shims), the control plane (all four components). */
  cpuSeconds: { kubelet: number | undefined; containerd: number | undefined; controlPlane: number | undefined };
  /** With `partial`: pods still not Running when the round's time ran out (totalMs is then that time). */
  notRunning: number;
}

/**
 * N pods created in the API at once on `node` (concurrent creates over the benchmark's one
 * HTTP/2 connection), until a watch of the namespace delivered every one Running with all its
 * containers running; then every pod of the namespace is deleted and gone, unless `keep`.
 */
export async function apiPodsRound(b: ApiBench, node: BenchNode, n: number, prefix: string, opts: { keep?: boolean; partial?: boolean } = {}): Promise<ApiDensityRound> {
  const names = Array.from({ length: n }, (_, i) => `${prefix}-${i}`);
  const pending = new Set(names);
  const done: number[] = [];
  let t0 = 0;
  let resolveAll: () => void;
  const all = new Promise<void>((r) => (resolveAll = r));
  const off = b.pods.onChange((name, pod, at) => {
    if (pending.has(name) && runningInApi(pod as V1Pod | undefined)) {
      pending.delete(name);
      done.push(at - t0);
      if (pending.size === 0) resolveAll();
    }
  });
  const timeoutMs = 60_000 + n * 2000;
  const cpu = async () => [node.pid ? await procCpuSeconds(node.pid) : undefined, node.containerdPid ? await procCpuSeconds(node.containerdPid) : undefined, await b.cluster.cpuSeconds()];
  const [k0, c0, p0] = await cpu();
  let timer: NodeJS.Timeout | undefined;
  try {
    t0 = performance.now();
    await Promise.all(names.map((name) => createPod(b.cluster.admin, b.namespace, apiBenchPod(name, node.name, b.env.images.busybox))));
    const createdAllMs = performance.now() - t0;
    const outOfTime = await Promise.race([
      all.then(() => false),
      new Promise<boolean>((resolve, reject) =>
        (timer = setTimeout(() => (opts.partial ? resolve(true) : reject(new Error(`${node.kind}: ${pending.size}/${n} pods not Running in the API after ${timeoutMs} ms`))), timeoutMs)),
      ),
    ]);
    // A slow side (`partial`) reports how far it got rather than aborting the whole run.
    const notRunning = pending.size;
    const totalMs = outOfTime ? timeoutMs : Math.max(...done);
    const [k1, c1, p1] = await cpu();
    const diff = (a: number | undefined, z: number | undefined) => (a === undefined || z === undefined ? undefined : z - a);
    return { totalMs, notRunning, perPod: summarize(done.length ? done : [totalMs]), createdAllMs, podsPerSec: (n - notRunning) / (totalMs / 1000), cpuSeconds: { kubelet: diff(k0, k1), containerd: diff(c0, c1), controlPlane: diff(p0, p1) } };
  } finally {
    clearTimeout(timer);
    off();
    if (!opts.keep) await deleteAllPods(b.cluster.admin, b.namespace, b.pods, 60_000 + n * 1000);
  }
}

