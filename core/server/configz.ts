/**
 * `GET /configz`: the configuration in force, as upstream serves it
 * (`{"kubeletconfig": {...KubeletConfiguration...}}`), with upstream's field names and Go
 * durations, so tools that read a kubelet's config (`kubectl get --raw
 * /api/v1/nodes/N/proxy/configz`) work. Plugins appear by name only: their options may hold
 * anything, and a plugin object is code.
 */
import type { KubeletConfig, PluginEntry } from '../config/types.ts';
import { formatDuration } from '../util/duration.ts';
import type { RouteHandler } from '../util/http-route.ts';

function pluginName(e: PluginEntry): string {
  const head = Array.isArray(e) ? e[0] : e;
  return typeof head === 'string' ? head : head?.name ?? '(inline)';
}

export function configzBody(c: KubeletConfig): { kubeletconfig: Record<string, unknown> } {
  const d = (ms: number) => formatDuration(ms);
  return {
    kubeletconfig: {
      kind: 'KubeletConfiguration',
      apiVersion: 'kubelet.config.k8s.io/v1beta1',
      staticPodPath: c.staticPodPath ?? '',
      syncFrequency: d(c.syncFrequencyMs),
      fileCheckFrequency: d(c.fileCheckFrequencyMs),
      address: c.address,
      port: c.port,
      readOnlyPort: c.readOnlyPort,
      healthzPort: c.healthzPort,
      healthzBindAddress: c.healthzBindAddress,
      tlsCertFile: c.tlsCertFile ?? '',
      tlsPrivateKeyFile: c.tlsPrivateKeyFile ?? '',
      ...(c.tlsMinVersion ? { tlsMinVersion: c.tlsMinVersion } : {}),
      ...(c.tlsCipherSuites.length ? { tlsCipherSuites: c.tlsCipherSuites } : {}),
      authentication: {
        x509: { clientCAFile: c.authentication.x509ClientCAFile ?? '' },
        webhook: { enabled: c.authentication.webhookEnabled, cacheTTL: d(c.authentication.webhookCacheTTLMs) },
        anonymous: { enabled: c.authentication.anonymousEnabled },
      },
      authorization: {
        mode: c.authorization.mode,
        webhook: { cacheAuthorizedTTL: d(c.authorization.cacheAuthorizedTTLMs), cacheUnauthorizedTTL: d(c.authorization.cacheUnauthorizedTTLMs) },
      },
      registerNode: c.registerNode,
      nodeStatusUpdateFrequency: d(c.nodeStatusUpdateFrequencyMs),
      nodeStatusReportFrequency: d(c.nodeStatusReportFrequencyMs),
      nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
      // The groups in force, in upstream's by-priority form (shutdownGracePeriod resolves to two of them).
      ...(c.shutdownGroups.length ? { shutdownGracePeriodByPodPriority: c.shutdownGroups.map((g) => ({ priority: g.priority, shutdownGracePeriodSeconds: g.gracePeriodSeconds })) } : {}),
      runtimeRequestTimeout: d(c.runtimeRequestTimeoutMs),
      streamingConnectionIdleTimeout: d(c.streamingConnectionIdleTimeoutMs),
      maxPods: c.maxPods,
      podLogsDir: c.podLogsDir,
      cgroupsPerQOS: c.cgroupsPerQOS,
      cgroupRoot: c.cgroupRoot,
      cgroupDriver: c.cgroupDriver,
      enableServer: c.enableServer,
      enableDebuggingHandlers: c.enableDebuggingHandlers,
      enforceNodeAllocatable: c.enforceNodeAllocatablePods ? ['pods'] : [],
      podPidsLimit: c.podPidsLimit ?? -1,
      containerRuntimeEndpoint: c.containerRuntimeEndpoint,
      serializeImagePulls: c.maxParallelImagePulls === 1,
      ...(c.maxParallelImagePulls && c.maxParallelImagePulls > 1 ? { maxParallelImagePulls: c.maxParallelImagePulls } : {}),
      kubeAPIQPS: c.kubeAPIQPS,
      kubeAPIBurst: c.kubeAPIBurst,
      eventRecordQPS: c.eventRecordQPS,
      eventBurst: c.eventBurst,
      systemReserved: c.systemReserved,
      kubeReserved: c.kubeReserved,
      evictionHard: c.evictionHard,
      evictionSoft: c.eviction.soft,
      evictionSoftGracePeriod: Object.fromEntries(Object.entries(c.eviction.softGracePeriodMs).map(([k, ms]) => [k, d(ms ?? 0)])),
      evictionMinimumReclaim: c.eviction.minimumReclaim,
      evictionPressureTransitionPeriod: d(c.eviction.pressureTransitionPeriodMs),
      evictionMaxPodGracePeriod: c.eviction.maxPodGracePeriodSeconds,
      imageGCHighThresholdPercent: c.imageGC.highThresholdPercent,
      imageGCLowThresholdPercent: c.imageGC.lowThresholdPercent,
      imageMinimumGCAge: d(c.imageGC.minAgeMs),
      imageMaximumGCAge: d(c.imageGC.maxAgeMs),
      containerLogMaxSize: `${c.containerLogs.maxSizeBytes}`,
      containerLogMaxFiles: c.containerLogs.maxFiles,
      containerLogMonitorInterval: d(c.containerLogs.monitorIntervalMs),
      volumeStatsAggPeriod: d(c.volumeStatsAggPeriodMs),
      registerWithTaints: c.registerWithTaints,
      nodeLabels: c.nodeLabels,
      crashLoopBackOff: { maxContainerRestartPeriod: d(c.crashLoopBackOff.maxMs) },
      logging: { verbosity: 0, format: 'json' },
      // kubelet-ts fields.
      rootDir: c.rootDir,
      nodeName: c.nodeName,
      nodeIP: c.nodeIP,
      plegRelistPeriod: d(c.plegRelistPeriodMs),
      hookTimeout: d(c.hookTimeoutMs),
      evictionMonitoringPeriod: d(c.eviction.monitoringPeriodMs),
      evictStaticPods: c.eviction.evictStaticPods,
      plugins: c.plugins.map(pluginName),
    },
  };
}

export function configzRouteHandler(config: KubeletConfig): RouteHandler {
  return () => configzBody(config);
}
