import type { V1Pod } from '@kubernetes/client-node';
import { setTimeout as sleep } from 'node:timers/promises';
import { benchPodManifest, podRunning } from '../lib.ts';
import type { H2ApiClient } from './h2-client.ts';
import type { ObjectWatch } from './object-watch.ts';

/**
 * Pods in the API for the benchmarks: the same spec as the raw side and the static-pod
 * benchmarks (bench/lib.ts benchPodManifest), bound to the node by `spec.nodeName` (no
 * scheduler in the path), without a service-account token (projected tokens are not
 * implemented in kubelet-ts yet). Created, watched Running, deleted, in a namespace of the run.
 */

export function apiBenchPod(name: string, nodeName: string, image: string): V1Pod {
  const pod = benchPodManifest(name, '', image);
  delete pod.metadata!.namespace;
  pod.spec = { ...pod.spec!, nodeName, automountServiceAccountToken: false };
  return pod;
}

/** Running with every container running, as the API reports it. */
export const runningInApi = (p: V1Pod | undefined) => podRunning(p);

/** Creates the namespace and waits (bounded) for its `default` ServiceAccount, without which pod admission refuses pods. */
export async function createNamespace(admin: H2ApiClient, ns: string): Promise<void> {
  await admin.request('POST', '/api/v1/namespaces', { apiVersion: 'v1', kind: 'Namespace', metadata: { name: ns } });
  const deadline = performance.now() + 30_000;
  while ((await admin.request('GET', `/api/v1/namespaces/${ns}/serviceaccounts/default`, undefined, { allow: [404] })).status !== 200) {
    if (performance.now() > deadline) throw new Error(`ServiceAccount ${ns}/default not created within 30 s`);
    await sleep(100);
  }
}

export async function deleteNamespace(admin: H2ApiClient, ns: string): Promise<void> {
  await admin.request('DELETE', `/api/v1/namespaces/${ns}`, undefined, { allow: [404] });
}

/** POSTs the pod; resolves with its UID and the call's latency. */
export async function createPod(admin: H2ApiClient, ns: string, pod: V1Pod): Promise<{ uid: string; ms: number }> {
  const res = await admin.request<V1Pod>('POST', `/api/v1/namespaces/${ns}/pods`, pod);
  return { uid: res.body.metadata?.uid ?? '', ms: res.ms };
}

/**
 * Deletes every pod of the namespace (with their grace period: the kubelet stops them and
 * then deletes the objects) and waits until the watch shows none. Bounded by `timeoutMs`.
 */
export async function deleteAllPods(admin: H2ApiClient, ns: string, pods: ObjectWatch<V1Pod>, timeoutMs: number): Promise<void> {
  await admin.request('DELETE', `/api/v1/namespaces/${ns}/pods`);
  const deadline = performance.now() + timeoutMs;
  while (pods.all().length > 0) {
    if (performance.now() > deadline) {
      // What the watch last saw of one of them: whether the kubelet got as far as stopping it.
      const p = pods.all()[0];
      const seen = { name: p?.metadata?.name, deletionTimestamp: p?.metadata?.deletionTimestamp, phase: p?.status?.phase, containers: p?.status?.containerStatuses?.map((c) => c.state) };
      throw new Error(`${pods.all().length} pods still in ${ns} ${timeoutMs} ms after their deletion; one as the watch last saw it: ${JSON.stringify(seen)}`);
    }
    await sleep(200);
  }
}
