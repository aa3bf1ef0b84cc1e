import os from 'node:os';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, LABEL, managedLabelValue } from '../runtime/labels.ts';
import type { ContainerConfig, KeyValue, LinuxContainerResources, LinuxContainerSecurityContext } from '../runtime/types.ts';
import { bytes, milliCPU } from '../objects/quantity.ts';
import { containerHash, gracePeriodSeconds, isSidecar } from '../objects/pod-util.ts';
import { CPU_PERIOD_US, milliCPUToQuota, milliCPUToShares } from '../cgroups/cgroup-resources.ts';
import { isCriticalPod } from '../objects/critical-pods.ts';
import { qosClass } from '../status/pod-status.ts';
import { namespaceModes } from './sandbox-config.ts';
import { expandVars } from './expansion.ts';
import { ContainerConfigError, containerEnv, machineAllocatable } from './container-env.ts';
import { SecurityContextError, containerSecurityContext, type SecurityInputs } from './security-context.ts';

// Defined with the env code, which throws it most; re-exported here where callers expect it.
export { ContainerConfigError };

/** Upstream's oom_score_adj of Guaranteed (and node-critical) containers: the last the kernel kills. */
export const GUARANTEED_OOM_SCORE_ADJ = -997;
/** Upstream's oom_score_adj of BestEffort containers: the first the kernel kills. */
export const BESTEFFORT_OOM_SCORE_ADJ = 1000;

/** A container's memory request (a limit alone implies it, as API defaulting does), bytes. */
const memoryRequest = (c: V1Container): number => {
  const q = c.resources?.requests?.memory ?? c.resources?.limits?.memory;
  return q === undefined ? 0 : bytes(q);
};

/**
 * The container's oom_score_adj by its pod's QoS class, as upstream's
 * GetContainerOOMScoreAdjust: node-critical and Guaranteed -997, BestEffort 1000, Burstable
 * 1000 less its share of the machine's memory in thousandths (a container that uses more than
 * it requested scores 1000 and goes first), within 3 and 999; a sidecar scores no higher than
 * the pod's smallest app container, so it outlives what it serves.
 */
export function oomScoreAdj(pod: V1Pod, container: V1Container, memoryCapacityBytes: number): number {
  if (isCriticalPod(pod, { evictStaticPods: false }) && pod.spec?.priorityClassName === 'system-node-critical') return GUARANTEED_OOM_SCORE_ADJ;
  const qos = qosClass(pod);
  if (qos === 'Guaranteed') return GUARANTEED_OOM_SCORE_ADJ;
  if (qos === 'BestEffort') return BESTEFFORT_OOM_SCORE_ADJ;
  const score = (request: number) => 1000 - Math.trunc((1000 * request) / memoryCapacityBytes);
  let adj = score(memoryRequest(container));
  if (isSidecar(container) && (pod.spec?.initContainers ?? []).includes(container)) {
    const apps = pod.spec?.containers ?? [];
    if (apps.length) adj = Math.min(adj, score(Math.min(...apps.map(memoryRequest))));
  }
  if (adj < 1000 + GUARANTEED_OOM_SCORE_ADJ) return 1000 + GUARANTEED_OOM_SCORE_ADJ;
  if (adj === BESTEFFORT_OOM_SCORE_ADJ) return adj - 1;
  return adj;
}

/** requests/limits → cgroup values, with upstream's conversions (milliCPUToShares, milliCPUToQuota), and the QoS oom_score_adj. */
export function linuxResources(pod: V1Pod, container: V1Container, memoryCapacityBytes = os.totalmem()): LinuxContainerResources {
  const requests = container.resources?.requests ?? {};
  const limits = container.resources?.limits ?? {};
  const out: LinuxContainerResources = {};
  // A limit without a request implies the request (API defaulting).
  const cpuRequest = requests.cpu ?? limits.cpu;
  out.cpuShares = milliCPUToShares(cpuRequest === undefined ? 0 : milliCPU(cpuRequest));
  if (limits.cpu !== undefined) {
    out.cpuPeriod = CPU_PERIOD_US;
    out.cpuQuota = milliCPUToQuota(milliCPU(limits.cpu));
  }
  if (limits.memory !== undefined) out.memoryLimitInBytes = bytes(limits.memory);
  out.oomScoreAdj = oomScoreAdj(pod, container, memoryCapacityBytes);
  const hugepages = hugepageLimits(limits);
  if (hugepages.length > 0) out.hugepageLimits = hugepages;
  return out;
}

/** Upstream's HugePageUnitSizeFromByteSize: a page size in bytes as '2MB', '1GB' (1024-based), the hugetlb cgroup's spelling. */
export function hugePageUnitSize(sizeBytes: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let i = 0;
  let size = sizeBytes;
  while (size >= 1024 && i < units.length - 1) {
    size /= 1024;
    i++;
  }
  return `${size}${units[i]}`;
}

/**
 * The huge page limits of a container's `hugepages-<size>` limits, as upstream's
 * GetHugepageLimitsFromResources sets them (CRI hugepage_limits, the hugetlb cgroup). Upstream
 * also writes a 0 limit for every other page size the machine has; here only the sizes the
 * container names are sent, so a container that asks for none is created as before.
 */
export function hugepageLimits(limits: Record<string, string>): Array<{ pageSize: string; limit: number }> {
  const out: Array<{ pageSize: string; limit: number }> = [];
  for (const [name, q] of Object.entries(limits)) {
    if (!name.startsWith('hugepages-')) continue;
    out.push({ pageSize: hugePageUnitSize(bytes(name.slice('hugepages-'.length))), limit: bytes(q) });
  }
  return out.sort((a, b) => (a.pageSize < b.pageSize ? -1 : a.pageSize > b.pageSize ? 1 : 0));
}

/** Upstream's default seccomp profile root (--seccomp-profile-root): `<rootDir>/seccomp` of the default root dir. */
const DEFAULT_SECURITY_INPUTS: SecurityInputs = { image: {}, seccompProfileRoot: '/var/lib/kubelet/seccomp' };

/** The container's CRI security context (see security-context.ts); what cannot be honoured is a CreateContainerConfigError. */
function securityContext(pod: V1Pod, container: V1Container, inputs: SecurityInputs): LinuxContainerSecurityContext {
  try {
    return { namespaceOptions: namespaceModes(pod), ...containerSecurityContext(pod, container, inputs) };
  } catch (err) {
    if (err instanceof SecurityContextError) throw new ContainerConfigError(err.message);
    throw err;
  }
}

/**
 * Builds the runtime's container config from a pod's container, as upstream's
 * generateContainerConfig does: command/args/env/workingDir, labels that let a restarted
 * kubelet adopt it, restart count and spec hash in annotations, the log path
 * `<container>/<restartCount>.log`, resources and the security context.
 */
export function buildContainerConfig(
  pod: V1Pod,
  container: V1Container,
  restartCount: number,
  ips: { podIP: string; hostIP: string; env?: KeyValue[] },
  /** The image's user and the seccomp profile root (the kubelet's rootDir); without them: an image without a user, /var/lib/kubelet/seccomp. */
  security: SecurityInputs = DEFAULT_SECURITY_INPUTS,
  /** The kubelet's runtimeInstance (its managed label's value; see managedLabelValue). */
  runtimeInstance?: string,
): ContainerConfig {
  const m = pod.metadata!;
  // The env as the kubelet resolved it (objects fetched); without one, what needs no object.
  const envs = ips.env ?? containerEnv(pod, container, new Map(), { podIPs: ips.podIP ? [ips.podIP] : [], hostIPs: [ips.hostIP], allocatable: machineAllocatable });
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
      [LABEL.managed]: managedLabelValue(runtimeInstance),
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
    linux: { resources: linuxResources(pod, container), securityContext: securityContext(pod, container, security) },
  };
}
