import type { V1Pod } from '@kubernetes/client-node';
import path from 'node:path';
import type { KubeletConfig } from '../config/types.ts';
import { ANNOTATION, LABEL, managedLabelValue } from '../runtime/labels.ts';
import type { NamespaceMode, PodSandboxConfig, PortMapping } from '../runtime/types.ts';
import { gracePeriodSeconds, isHostNetwork } from '../objects/pod-util.ts';
import { sandboxSecurityContext } from './security-context.ts';
import { podSysctls } from './sysctls.ts';
import { podHostnameAndDomain } from './pod-dns.ts';

/** `<podLogsDir>/<namespace>_<name>_<uid>`: the upstream per-pod log directory. */
export function podLogDir(config: Pick<KubeletConfig, 'podLogsDir'>, pod: V1Pod): string {
  const m = pod.metadata!;
  return path.join(config.podLogsDir, `${m.namespace}_${m.name}_${m.uid}`);
}

/** Namespace modes of a pod: shared host namespaces, or the pod's own. */
export function namespaceModes(pod: V1Pod): { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode } {
  const spec = pod.spec ?? { containers: [] };
  return {
    network: spec.hostNetwork ? 'NODE' : 'POD',
    pid: spec.hostPID ? 'NODE' : spec.shareProcessNamespace ? 'POD' : 'CONTAINER',
    ipc: spec.hostIPC ? 'NODE' : 'POD',
  };
}

/**
 * Builds the runtime's sandbox config for a pod, as upstream's generatePodSandboxConfig does
 * (labels, log directory, host ports, namespaces). The pod sync adds the pod's DNS config and
 * cgroup parent, and `beforeSandbox` taps refine it (network options) before the runtime sees it.
 */
export function buildSandboxConfig(pod: V1Pod, attempt: number, config: Pick<KubeletConfig, 'podLogsDir'> & Partial<Pick<KubeletConfig, 'runtimeInstance'>>): PodSandboxConfig {
  const m = pod.metadata!;
  const spec = pod.spec!;
  const portMappings: PortMapping[] = [];
  for (const c of spec.containers) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      portMappings.push({ protocol: (p.protocol ?? 'TCP') as PortMapping['protocol'], containerPort: p.containerPort, hostPort: p.hostPort, hostIp: p.hostIP ?? '' });
    }
  }
  // Names in the dotted form (upstream normalizes `net/ipv4/...`); admission already refused what this node does not allow.
  const sysctls = podSysctls(pod);
  return {
    metadata: { name: m.name!, uid: m.uid!, namespace: m.namespace ?? 'default', attempt },
    // The pod sync replaces it with the DNS-aware one (pod-dns.ts sandboxHostnameAndDns).
    hostname: isHostNetwork(pod) ? '' : podHostnameAndDomain(pod, '').hostname,
    logDirectory: podLogDir(config, pod),
    portMappings,
    labels: {
      ...(m.labels ?? {}),
      [LABEL.podName]: m.name!,
      [LABEL.podNamespace]: m.namespace ?? 'default',
      [LABEL.podUID]: m.uid!,
      [LABEL.managed]: managedLabelValue(config.runtimeInstance),
    },
    annotations: { ...(m.annotations ?? {}), [ANNOTATION.podTerminationGracePeriod]: String(gracePeriodSeconds(pod)) },
    linux: {
      securityContext: { namespaceOptions: namespaceModes(pod), ...sandboxSecurityContext(pod) },
      sysctls,
    },
  };
}
