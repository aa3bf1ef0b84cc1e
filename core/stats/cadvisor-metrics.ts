/**
 * `/metrics/cadvisor`: the `container_*` and `machine_*` families upstream's kubelet serves
 * from its embedded cAdvisor, which Prometheus's kubelet scrape configs and the common
 * dashboards read (CPU, memory, network, filesystem per container), made from what the stats
 * provider already collects (CRI stats and cgroups). Labels as cAdvisor gives them for a
 * Kubernetes container: `container`, `image`, `name` (the runtime's container id), `namespace`,
 * `pod`; the pod's own cgroup as a series with empty `container`, `image` and `name` (what
 * dashboards leave out with `container!=""`); network per pod and interface. Every sample
 * carries the time it was measured, as cAdvisor's do.
 *
 * Not served (cAdvisor has them; kubelet-ts has no source yet): per-device disk I/O, CPU
 * throttling, `container_spec_*`, process and OOM counts. `id` (the cgroup path) is left out.
 */
import os from 'node:os';
import type { V1Pod } from '@kubernetes/client-node';
import { PrometheusText } from './prometheus-text.ts';
import type { StatsSnapshot } from './stats-provider.ts';
import type { ContainerStats, CPUStats, MemoryStats } from './summary-types.ts';

/** The host's figures for `machine_*` (tests give their own). */
export interface MachineFacts { cpuCores: number; memoryBytes: number }

export const hostMachineFacts = (): MachineFacts => ({ cpuCores: os.cpus().length, memoryBytes: os.totalmem() });

export function cadvisorMetricsText(snap: StatsSnapshot, pods: readonly V1Pod[], machine: MachineFacts = hostMachineFacts()): string {
  const out = new PrometheusText();
  const cpu = out.family('container_cpu_usage_seconds_total', 'Cumulative cpu time consumed in seconds.', 'counter');
  const workingSet = out.family('container_memory_working_set_bytes', 'Current working set in bytes.', 'gauge');
  const usage = out.family('container_memory_usage_bytes', 'Current memory usage in bytes, including all memory regardless of when it was accessed', 'gauge');
  const rss = out.family('container_memory_rss', 'Size of RSS in bytes.', 'gauge');
  const fsUsage = out.family('container_fs_usage_bytes', 'Number of bytes that are consumed by the container on this filesystem.', 'gauge');
  const rxBytes = out.family('container_network_receive_bytes_total', 'Cumulative count of bytes received', 'counter');
  const txBytes = out.family('container_network_transmit_bytes_total', 'Cumulative count of bytes transmitted', 'counter');
  const rxErrors = out.family('container_network_receive_errors_total', 'Cumulative count of errors encountered while receiving', 'counter');
  const txErrors = out.family('container_network_transmit_errors_total', 'Cumulative count of errors encountered while transmitting', 'counter');
  const started = out.family('container_start_time_seconds', 'Start time of the container since unix epoch in seconds.', 'gauge');
  const lastSeen = out.family('container_last_seen', 'Last time a container was seen by the exporter', 'gauge');
  const cores = out.family('machine_cpu_cores', 'Number of logical CPU cores.', 'gauge');
  const memory = out.family('machine_memory_bytes', 'Amount of memory installed on the machine.', 'gauge');

  const seenAt = snap.collectedAt / 1000;
  const byUid = new Map(pods.map((p) => [p.metadata?.uid ?? '', p]));
  const cpuAndMemory = (l: Record<string, string>, c: { cpu?: CPUStats; memory?: MemoryStats }) => {
    if (c.cpu?.usageCoreNanoSeconds !== undefined) cpu({ ...l, cpu: 'total' }, c.cpu.usageCoreNanoSeconds / 1e9, c.cpu.time);
    const m = c.memory;
    if (m?.workingSetBytes !== undefined) workingSet(l, m.workingSetBytes, m.time);
    if (m?.usageBytes !== undefined) usage(l, m.usageBytes, m.time);
    if (m?.rssBytes !== undefined) rss(l, m.rssBytes, m.time);
  };

  for (const p of snap.summary.pods) {
    const pod = byUid.get(p.podRef.uid);
    const base = { namespace: p.podRef.namespace, pod: p.podRef.name };
    const podLabels = { container: '', image: '', name: '', ...base };
    cpuAndMemory(podLabels, p);
    for (const i of p.network?.interfaces ?? (p.network ? [p.network] : [])) {
      const l = { ...podLabels, interface: i.name };
      const time = p.network!.time;
      if (i.rxBytes !== undefined) rxBytes(l, i.rxBytes, time);
      if (i.txBytes !== undefined) txBytes(l, i.txBytes, time);
      if (i.rxErrors !== undefined) rxErrors(l, i.rxErrors, time);
      if (i.txErrors !== undefined) txErrors(l, i.txErrors, time);
    }
    started(podLabels, Math.floor(Date.parse(p.startTime) / 1000));
    lastSeen(podLabels, Math.floor(seenAt));
    for (const c of p.containers) {
      const l = { container: c.name, image: imageOf(pod, c), name: containerIdOf(pod, c), ...base };
      cpuAndMemory(l, c);
      if (c.rootfs?.usedBytes !== undefined) fsUsage({ ...l, device: '' }, c.rootfs.usedBytes, c.rootfs.time);
      started(l, Math.floor(Date.parse(c.startTime) / 1000));
      lastSeen(l, Math.floor(seenAt));
    }
  }
  cores({}, machine.cpuCores);
  memory({}, machine.memoryBytes);
  return out.text();
}

const statusOf = (pod: V1Pod | undefined, c: ContainerStats) =>
  [...(pod?.status?.containerStatuses ?? []), ...(pod?.status?.initContainerStatuses ?? []), ...(pod?.status?.ephemeralContainerStatuses ?? [])].find((s) => s.name === c.name);

/** The image the runtime runs for the container (its status), else the spec's. */
function imageOf(pod: V1Pod | undefined, c: ContainerStats): string {
  const fromSpec = [...(pod?.spec?.containers ?? []), ...(pod?.spec?.initContainers ?? []), ...(pod?.spec?.ephemeralContainers ?? [])].find((s) => s.name === c.name)?.image;
  return statusOf(pod, c)?.image || fromSpec || '';
}

/** The runtime's id of the container (`containerd://<id>` in its status, without the scheme). */
function containerIdOf(pod: V1Pod | undefined, c: ContainerStats): string {
  return statusOf(pod, c)?.containerID?.replace(/^[a-z0-9.+-]+:\/\//, '') ?? '';
}
