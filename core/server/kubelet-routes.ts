/**
 * Which kubelet API paths each server serves. The read-only port (no authentication) serves
 * what upstream's read-only port serves: health, the pod list, stats and metrics. The main port
 * (and the local socket) serve those and everything that reads or reaches into containers:
 * logs, exec, attach, port-forward, run, the runtime's pods, the config, and kubelet-ts's
 * debugging views (start timelines, events).
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeletConfig } from '../config/types.ts';
import type { EventRecorder } from '../events/event-recorder.ts';
import { eventsRouteHandler } from '../events/events-route.ts';
import { containerLogsHandler } from '../logs/log-routes.ts';
import { metricsRouteHandler, type KubeletMetrics } from '../metrics/kubelet-metrics.ts';
import { podLogDir } from '../pod/sandbox-config.ts';
import { LABEL, managedSelector } from '../runtime/labels.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import type { RouteHandler } from '../util/http-route.ts';
import type { StatsProvider } from '../stats/stats-provider.ts';
import { cadvisorMetricsRouteHandler, probeMetricsRouteHandler, resourceMetricsRouteHandler, summaryRouteHandler } from '../stats/stats-routes.ts';
import type { PodTimelines } from '../timeline/pod-timeline.ts';
import { timelineRouteHandler } from '../timeline/timeline-route.ts';
import { configzRouteHandler } from './configz.ts';
import { RouteTable } from './routes.ts';
import { execResolver, portForwardResolver, runHandler, upgradeRequired, type StreamingDeps } from './streaming-routes.ts';

export interface KubeletRouteDeps {
  config: KubeletConfig;
  pods(): V1Pod[];
  podList(): object;
  healthz(): string;
  runtime(): ContainerRuntime;
  metrics: KubeletMetrics;
  stats: StatsProvider;
  timelines: PodTimelines;
  events: EventRecorder;
}

/** Upstream's read-only port: for the read-only server, and part of the main port. */
export function readOnlyRoutes(deps: KubeletRouteDeps): Array<[string, RouteHandler]> {
  return [
    ['/healthz', () => deps.healthz()],
    ['/pods', () => deps.podList()],
    ['/stats/summary', summaryRouteHandler(deps.stats)],
    ['/metrics', metricsRouteHandler(deps.metrics)],
    ['/metrics/resource', resourceMetricsRouteHandler(deps.stats)],
    ['/metrics/cadvisor', cadvisorMetricsRouteHandler(deps.stats, () => deps.pods())],
    ['/metrics/probes', probeMetricsRouteHandler(deps.metrics)],
  ];
}

/** The main port's (and the local socket's) routes. */
export function mainRoutes(deps: KubeletRouteDeps): RouteTable {
  const table = new RouteTable();
  for (const [path, handler] of readOnlyRoutes(deps)) table.add(path, handler);
  const streaming: StreamingDeps = { pods: () => deps.pods(), runtime: () => deps.runtime(), runTimeoutMs: deps.config.runtimeRequestTimeoutMs };
  table
    .add('/runningpods/', runningPodsHandler(deps))
    .add('/configz', configzRouteHandler(deps.config))
    .add('/containerLogs/', containerLogsHandler({ pods: () => deps.pods(), runtime: () => deps.runtime(), logDir: (pod) => podLogDir(deps.config, pod) }))
    .add('/run/', runHandler(streaming), ['POST'])
    .add('/debug/pods/', timelineRouteHandler(deps.timelines))
    .add('/debug/events', eventsRouteHandler(deps.events));
  for (const [path, resolver] of [
    ['/exec/', execResolver(streaming, 'exec')],
    ['/attach/', execResolver(streaming, 'attach')],
    ['/portForward/', portForwardResolver(streaming)],
  ] as const) {
    table.addUpgrade(path, resolver).add(path, upgradeRequired, ['GET', 'POST']);
  }
  return table;
}

/** `GET /runningpods/`: the pods as the runtime has them running (upstream: a PodList with names, UIDs and containers only). */
function runningPodsHandler(deps: KubeletRouteDeps): RouteHandler {
  return async () => {
    const rt = deps.runtime();
    const selector = managedSelector(deps.config.runtimeInstance);
    const [sandboxes, containers] = await Promise.all([rt.listPodSandboxes(selector), rt.listContainers(selector)]);
    const byUid = new Map<string, V1Pod>();
    for (const s of sandboxes) {
      if (s.state !== 'SANDBOX_READY') continue;
      byUid.set(s.metadata.uid, { metadata: { name: s.metadata.name, namespace: s.metadata.namespace, uid: s.metadata.uid }, spec: { containers: [] }, status: {} });
    }
    for (const c of containers) {
      if (c.state !== 'CONTAINER_RUNNING') continue;
      const pod = byUid.get(c.labels[LABEL.podUID] ?? '');
      pod?.spec!.containers.push({ name: c.labels[LABEL.containerName] ?? c.metadata.name, image: c.image, resources: {} });
    }
    return { kind: 'PodList', apiVersion: 'v1', metadata: {}, items: [...byUid.values()] };
  };
}
