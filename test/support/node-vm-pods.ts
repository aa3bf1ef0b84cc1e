import type { V1Pod, V1PodSpec } from '@kubernetes/client-node';
import type { TestNodeVm } from './node-vm.ts';
import { waitFor } from './wait-for.ts';

/** Pod helpers of the node VM suite: pods bound to the VM's Node, their cgroups as the guest has them. */

/** Creates a pod bound to the VM's node (no scheduler in the way) and waits until `until` holds (default: Running). */
export async function runVmPod(
  t: TestNodeVm,
  ns: string,
  name: string,
  spec: Omit<V1PodSpec, 'nodeName'>,
  opts: { until?: (p: V1Pod) => boolean; timeoutMs?: number } = {},
): Promise<V1Pod> {
  await t.core.createNamespacedPod({
    namespace: ns,
    // No service account token: one projected volume less per pod in a guest 10-30x slower than the host.
    body: { metadata: { name }, spec: { automountServiceAccountToken: false, terminationGracePeriodSeconds: 2, ...spec, nodeName: t.nodeName } },
  });
  const until = opts.until ?? ((p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running));
  const t0 = performance.now();
  const since = await t.now().catch(() => undefined);
  let last: V1Pod | undefined;
  const pod = await waitFor(`pod ${ns}/${name} on the VM's node`, async () => {
    const p = await t.core.readNamespacedPod({ name, namespace: ns });
    last = p;
    return until(p) ? p : undefined;
  }, opts.timeoutMs ?? 180_000, 1000).catch(async (err: Error) => {
    throw new Error(`${err.message}\n${await whyNot(t, `${ns}/${name}`, last, since)}`);
  });
  (pod as V1Pod & { startSeconds?: number }).startSeconds = (performance.now() - t0) / 1000;
  return pod;
}

/**
 * What a pod that did not get there was doing: its last status as the API had it, and the guest
 * kubelet's journal lines that name it (a failure in the VM suite is otherwise only a timeout).
 */
async function whyNot(t: TestNodeVm, pod: string, last: V1Pod | undefined, since: number | undefined): Promise<string> {
  const status = last?.status
    ? JSON.stringify({ phase: last.status.phase, reason: last.status.reason, message: last.status.message, conditions: last.status.conditions?.map((c) => `${c.type}=${c.status}${c.reason ? ` ${c.reason}` : ''}`), containers: last.status.containerStatuses?.map((c) => ({ name: c.name, state: c.state })) })
    : 'never read from the API';
  const journal = await t.journal('kubelet-ts', since).catch((err: Error) => `(journal not read: ${err.message})`);
  const lines = journal.split('\n').filter((l) => l.includes(pod) || /"level":(40|50|60)/.test(l)).slice(-40);
  return `its last status: ${status}\nthe guest kubelet's journal on it (and its warnings), last ${lines.length} lines:\n${lines.join('\n')}`;
}

/** Deletes a pod and waits until it is gone from the API (the kubelet in the guest killed it and deleted it). */
export async function deleteVmPod(t: TestNodeVm, ns: string, name: string): Promise<void> {
  await t.core.deleteNamespacedPod({ name, namespace: ns, gracePeriodSeconds: 1 }).catch(() => {});
  await waitFor(`pod ${ns}/${name} gone`, async () => (await t.core.readNamespacedPod({ name, namespace: ns }).then(() => false, () => true)), 120_000, 1000);
}

/** The pod's systemd slice directory under /sys/fs/cgroup, as the systemd driver names it. */
export function podSliceDir(qos: 'guaranteed' | 'burstable' | 'besteffort', uid: string): string {
  const u = uid.replace(/-/g, '_');
  return qos === 'guaranteed'
    ? `/sys/fs/cgroup/kubepods.slice/kubepods-pod${u}.slice`
    : `/sys/fs/cgroup/kubepods.slice/kubepods-${qos}.slice/kubepods-${qos}-pod${u}.slice`;
}

/** The containerd id of a pod's first container (`containerd://<id>`). */
export function containerId(pod: V1Pod, index = 0): string {
  const id = pod.status?.containerStatuses?.[index]?.containerID ?? '';
  const m = /^containerd:\/\/([0-9a-f]+)$/.exec(id);
  if (!m) throw new Error(`pod ${pod.metadata?.name}: no containerd container id in its status (${id || 'none'})`);
  return m[1]!;
}

/** The guest pid of a pod's container: the first process of its cgroup scope, found by its id anywhere under kubepods.slice. */
export async function containerPid(t: TestNodeVm, pod: V1Pod, index = 0): Promise<{ pid: number; scope: string }> {
  const id = containerId(pod, index);
  const scope = (await t.ssh(`find /sys/fs/cgroup/kubepods.slice -type d -name 'cri-containerd-${id}.scope'`)).stdout.trim();
  if (!scope) throw new Error(`no cgroup scope cri-containerd-${id}.scope under kubepods.slice`);
  const pid = Number((await t.ssh(`head -1 ${scope}/cgroup.procs`)).stdout.trim());
  if (!(pid > 0)) throw new Error(`${scope}/cgroup.procs: no process`);
  return { pid, scope };
}
