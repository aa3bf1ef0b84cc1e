import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { ANNOTATION, LABEL } from '../runtime/labels.ts';
import type { ContainerConfig, KeyValue, LinuxContainerResources, LinuxContainerSecurityContext } from '../runtime/types.ts';
import { bytes, milliCPU } from '../objects/quantity.ts';
import { containerHash, gracePeriodSeconds } from '../objects/pod-util.ts';
import { namespaceModes } from './sandbox-config.ts';
import { expandVars } from './expansion.ts';
import { ContainerConfigError, containerEnv, machineAllocatable } from './container-env.ts';
import { SecurityContextError, containerSecurityContext, type SecurityInputs } from './security-context.ts';

// Defined with the env code, which throws it most; re-exported here where callers expect it.
export { ContainerConfigError };

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
    linux: { resources: linuxResources(container), securityContext: securityContext(pod, container, security) },
  };
}
