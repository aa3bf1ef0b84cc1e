/**
 * `GET /configz`: the configuration in force, as upstream serves it
 * (`{"kubeletconfig": {...KubeletConfiguration...}}`), with upstream's field names and Go
 * durations, so tools that read a kubelet's config (`kubectl get --raw
 * /api/v1/nodes/N/proxy/configz`) work. Plugins appear by name only: their options may hold
 * anything, and a plugin object is code.
 */
import type { KubeletConfig, PluginEntry } from '../config/types.ts';
import { formatDuration } from '../config/duration.ts';
import type { RouteHandler } from '../server.ts';

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
      runtimeRequestTimeout: d(c.runtimeRequestTimeoutMs),
      streamingConnectionIdleTimeout: d(c.streamingConnectionIdleTimeoutMs),
      maxPods: c.maxPods,
      podLogsDir: c.podLogsDir,
      cgroupsPerQOS: c.cgroupsPerQOS,
      cgroupRoot: c.cgroupRoot,
      cgroupDriver: 'cgroupfs',
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
      plugins: c.plugins.map(pluginName),
    },
  };
}

export function configzRouteHandler(config: KubeletConfig): RouteHandler {
  return () => configzBody(config);
}
