/**
 * The routes the stats service serves: `/stats/summary` (upstream's summary API),
 * `/metrics/cadvisor` (cAdvisor's container_* families) and `/metrics/resource` (upstream's resource metrics, the endpoint metrics-server scrapes for
 * `kubectl top`: cumulative CPU seconds and working sets of the node, pods and containers, each
 * sample with the time it was measured, so rates come out right whenever the scrape happens).
 */
import type { KubeletMetrics } from '../metrics/kubelet-metrics.ts';
import { httpError, type RouteHandler } from '../util/http-route.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { cadvisorMetricsText } from './cadvisor-metrics.ts';
import { PROM_CONTENT_TYPE, PrometheusText } from './prometheus-text.ts';
import type { StatsProvider, StatsSnapshot } from './stats-provider.ts';

/** `GET /stats/summary[?only_cpu_and_memory=true]`. */
export function summaryRouteHandler(stats: StatsProvider): RouteHandler {
  return async (_req, url) => {
    const raw = url.searchParams.get('only_cpu_and_memory');
    let onlyCpuAndMemory = false;
    if (raw !== null && raw !== '') {
      const l = raw.toLowerCase();
      if (l === 'true' || l === '1') onlyCpuAndMemory = true;
      else if (l !== 'false' && l !== '0') throw httpError(400, `invalid value of query parameter "only_cpu_and_memory": ${JSON.stringify(raw)} (want true or false)`);
    }
    return stats.summary({ onlyCpuAndMemory });
  };
}

/** The Prometheus text of `/metrics/resource` for a snapshot, with upstream's names and help. */
export function resourceMetricsText(snap: StatsSnapshot): string {
  const out = new PrometheusText();
  const family = out.family.bind(out);
  const ms = (time: string) => Date.parse(time);
  const ctrCpu = family('container_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the container in core-seconds', 'counter');
  const ctrMem = family('container_memory_working_set_bytes', '[STABLE] Current working set of the container in bytes', 'gauge');
  const ctrStart = family('container_start_time_seconds', '[STABLE] Start time of the container since unix epoch in seconds', 'gauge');
  const nodeCpu = family('node_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the node in core-seconds', 'counter');
  const nodeMem = family('node_memory_working_set_bytes', '[STABLE] Current working set of the node in bytes', 'gauge');
  const podCpu = family('pod_cpu_usage_seconds_total', '[STABLE] Cumulative cpu time consumed by the pod in core-seconds', 'counter');
  const podMem = family('pod_memory_working_set_bytes', '[STABLE] Current working set of the pod in bytes', 'gauge');
  const scrapeError = family('resource_scrape_error', '[STABLE] 1 if there was an error while getting container metrics, 0 otherwise', 'gauge');
  const scrapeErrorOld = family('scrape_error', '[ALPHA] (Deprecated since 1.29.0) 1 if there was an error while getting container metrics, 0 otherwise', 'gauge');

  const { node, pods } = snap.summary;
  if (node.cpu?.usageCoreNanoSeconds !== undefined) nodeCpu({}, node.cpu.usageCoreNanoSeconds / 1e9, node.cpu.time);
  if (node.memory?.workingSetBytes !== undefined) nodeMem({}, node.memory.workingSetBytes, node.memory.time);
  for (const p of pods) {
    const pl = { namespace: p.podRef.namespace, pod: p.podRef.name };
    if (p.cpu?.usageCoreNanoSeconds !== undefined) podCpu(pl, p.cpu.usageCoreNanoSeconds / 1e9, p.cpu.time);
    if (p.memory?.workingSetBytes !== undefined) podMem(pl, p.memory.workingSetBytes, p.memory.time);
    for (const c of p.containers) {
      const cl = { container: c.name, ...pl };
      if (c.cpu?.usageCoreNanoSeconds !== undefined) ctrCpu(cl, c.cpu.usageCoreNanoSeconds / 1e9, c.cpu.time);
      if (c.memory?.workingSetBytes !== undefined) ctrMem(cl, c.memory.workingSetBytes, c.memory.time);
      ctrStart(cl, Math.floor(ms(c.startTime) / 1000), c.startTime);
    }
  }
  const failed = snap.containerStatsFailed ? 1 : 0;
  scrapeError({}, failed);
  scrapeErrorOld({}, failed);
  return out.text();
}

/** `GET /metrics/resource`. */
export function resourceMetricsRouteHandler(stats: StatsProvider): RouteHandler {
  return async (_req, _url, res) => {
    const text = resourceMetricsText(await stats.snapshot());
    res.writeHead(200, { 'content-type': PROM_CONTENT_TYPE }).end(text);
  };
}

/** `GET /metrics/cadvisor`: upstream's container_* families (cadvisor-metrics.ts). */
export function cadvisorMetricsRouteHandler(stats: StatsProvider, pods: () => V1Pod[]): RouteHandler {
  return async (_req, _url, res) => {
    const text = cadvisorMetricsText(await stats.snapshot(), pods());
    res.writeHead(200, { 'content-type': PROM_CONTENT_TYPE }).end(text);
  };
}

/** `GET /metrics/probes`: the prober's metrics only (upstream serves them on their own path). */
export function probeMetricsRouteHandler(metrics: KubeletMetrics): RouteHandler {
  return async (_req, _url, res) => {
    const text = await metrics.registry.getSingleMetricAsString('prober_probe_total');
    res.writeHead(200, { 'content-type': PROM_CONTENT_TYPE }).end(text.endsWith('\n') ? text : `${text}\n`);
  };
}
