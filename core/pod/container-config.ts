import type { V1Container, V1Pod } from '@kubernetes/client-node';
import os from 'node:os';
import { ANNOTATION, LABEL } from '../runtime/labels.ts';
import type { ContainerConfig, KeyValue, LinuxContainerResources, LinuxContainerSecurityContext } from '../runtime/types.ts';
import { bytes, milliCPU, parseQuantity } from './quantity.ts';
import { containerHash, gracePeriodSeconds } from './pod-util.ts';
import { namespaceModes } from './sandbox-config.ts';
import { expandVars } from './expansion.ts';

/** A container config that cannot be built (upstream reason CreateContainerConfigError). */
export class ContainerConfigError extends Error {}

const CPU_PERIOD_US = 100_000;
const MIN_SHARES = 2;
const MIN_QUOTA_US = 1000;

/** requests/limits → cgroup values, with upstream's conversions (milliCPUToShares, milliCPUToQuota). */
export function linuxResources(container: V1Container): LinuxContainerResources {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const out: LinuxContainerResources = {};
  // A limit without a request implies the request (API defaulting).
  const cpuRequest = requests.cpu ?? limits.cpu;
  out.cpuShares = cpuRequest === undefined ? MIN_SHARES : Math.max(MIN_SHARES, Math.floor((milliCPU(cpuRequest) * 1024) / 1000));
  if (limits.cpu !== undefined) {
    out.cpuPeriod = CPU_PERIOD_US;
    out.cpuQuota = Math.max(MIN_QUOTA_US, Math.floor((milliCPU(limits.cpu) * CPU_PERIOD_US) / 1000));
  }
  if (limits.memory !== undefined) out.memoryLimitInBytes = bytes(limits.memory);
  return out;
}

/** The values `fieldRef` may name in an env var, as the upstream downward API resolves them. */
function fieldRefValue(pod: V1Pod, fieldPath: string, podIP: string, hostIP: string): string {
  const m = pod.metadata ?? {};
  const sub = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(fieldPath);
  if (sub) return (sub[1] === 'labels' ? m.labels : m.annotations)?.[sub[2]!] ?? '';
  switch (fieldPath) {
    case 'metadata.name': return m.name ?? '';
    case 'metadata.namespace': return m.namespace ?? '';
    case 'metadata.uid': return m.uid ?? '';
    case 'spec.nodeName': return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName': return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP': return podIP;
    case 'status.podIPs': return podIP;
    case 'status.hostIP': return hostIP;
    case 'status.hostIPs': return hostIP;
    default: throw new ContainerConfigError(`unsupported fieldRef fieldPath "${fieldPath}"`);
  }
}

/** The container's environment in order; a value may refer to variables defined before it. */
function envVars(pod: V1Pod, container: V1Container, podIP: string, hostIP: string): KeyValue[] {
  const defined = new Map<string, string>();
  for (const e of container.env ?? []) {
    let value: string;
    if (e.valueFrom?.fieldRef) value = fieldRefValue(pod, e.valueFrom.fieldRef.fieldPath, podIP, hostIP);
    else if (e.valueFrom?.resourceFieldRef) value = resourceFieldValue(pod, container, e.valueFrom.resourceFieldRef);
    else if (e.valueFrom) throw new ContainerConfigError(`env ${e.name}: valueFrom source ${Object.keys(e.valueFrom).join(', ')} is not supported yet`);
    else value = expandVars(e.value ?? '', (name) => defined.get(name));
    defined.set(e.name, value);
  }
  return [...defined].map(([key, value]) => ({ key, value }));
}

/** `resourceFieldRef`: a container's request or limit in the divisor's units, rounded up as upstream. */
export function resourceFieldValue(pod: V1Pod, self: V1Container, ref: { containerName?: string; resource: string; divisor?: string }): string {
  const target = ref.containerName ? [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((c) => c.name === ref.containerName) : self;
  if (!target) throw new ContainerConfigError(`resourceFieldRef: no container named "${ref.containerName}"`);
  const [kind, resource] = ref.resource.split('.') as [string, string];
  const bag = kind === 'requests' ? target.resources?.requests : kind === 'limits' ? target.resources?.limits : undefined;
  if ((kind !== 'requests' && kind !== 'limits') || !['cpu', 'memory', 'ephemeral-storage'].includes(resource)) {
    throw new ContainerConfigError(`resourceFieldRef: unsupported resource "${ref.resource}"`);
  }
  // An unset limit reports the node's capacity (upstream: allocatable); an unset request 0.
  const nodeCapacity: Record<string, number> = { cpu: os.cpus().length, memory: os.totalmem(), 'ephemeral-storage': 0 };
  const value = bag?.[resource] !== undefined ? parseQuantity(bag[resource]!) : kind === 'limits' ? nodeCapacity[resource]! : 0;
  const divisor = parseQuantity(ref.divisor ?? '1');
  if (divisor <= 0) throw new ContainerConfigError(`resourceFieldRef: divisor must be positive`);
  return String(Math.ceil(value / divisor - 1e-9));
}

function securityContext(pod: V1Pod, container: V1Container): LinuxContainerSecurityContext {
  const psc = pod.spec?.securityContext;
  const csc = container.securityContext;
  const runAsUser = csc?.runAsUser ?? psc?.runAsUser;
  const runAsGroup = csc?.runAsGroup ?? psc?.runAsGroup;
  return {
    namespaceOptions: namespaceModes(pod),
    privileged: csc?.privileged ?? false,
    readonlyRootfs: csc?.readOnlyRootFilesystem ?? false,
    ...(runAsUser !== undefined ? { runAsUser: { value: runAsUser } } : {}),
    ...(runAsGroup !== undefined ? { runAsGroup: { value: runAsGroup } } : {}),
    ...(psc?.supplementalGroups ? { supplementalGroups: psc.supplementalGroups } : {}),
    noNewPrivs: csc?.allowPrivilegeEscalation === false,
    ...(csc?.capabilities ? { capabilities: { addCapabilities: csc.capabilities.add ?? [], dropCapabilities: csc.capabilities.drop ?? [] } } : {}),
  };
}

/**
 * Builds the runtime's container config from a pod's container, as upstream's
 * generateContainerConfig does: command/args/env/workingDir, labels that let a restarted
 * kubelet adopt it, restart count and spec hash in annotations, the log path
 * `<container>/<restartCount>.log`, resources and the security context.
 */
export function buildContainerConfig(pod: V1Pod, container: V1Container, restartCount: number, ips: { podIP: string; hostIP: string }): ContainerConfig {
  const m = pod.metadata!;
  const envs = envVars(pod, container, ips.podIP, ips.hostIP);
  const env = new Map(envs.map((e) => [e.key, e.value]));
  const expand = (s: string) => expandVars(s, (name) => env.get(name));
  return {
    metadata: { name: container.name, attempt: restartCount },
    image: { image: container.image! },
    command: (container.command ?? []).map(expand),
    args: (container.args ?? []).map(expand),
    workingDir: container.workingDir ?? '',
    envs,
    mounts: [],
    labels: {
      [LABEL.podName]: m.name!,
      [LABEL.podNamespace]: m.namespace ?? 'default',
      [LABEL.podUID]: m.uid!,
      [LABEL.containerName]: container.name,
      [LABEL.managed]: 'true',
    },
    annotations: {
      [ANNOTATION.containerHash]: containerHash(container),
      [ANNOTATION.containerRestartCount]: String(restartCount),
      [ANNOTATION.podTerminationGracePeriod]: String(gracePeriodSeconds(pod)),
      [ANNOTATION.containerTerminationMessagePath]: container.terminationMessagePath ?? '/dev/termination-log',
      [ANNOTATION.containerTerminationMessagePolicy]: container.terminationMessagePolicy ?? 'File',
      ...(container.ports?.length ? { [ANNOTATION.containerPorts]: JSON.stringify(container.ports) } : {}),
    },
    logPath: `${container.name}/${restartCount}.log`,
    stdin: container.stdin ?? false,
    stdinOnce: container.stdinOnce ?? false,
    tty: container.tty ?? false,
    linux: { resources: linuxResources(container), securityContext: securityContext(pod, container) },
  };
}
