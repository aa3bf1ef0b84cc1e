/**
 * Hand-built pods and runtime views (PodRuntimeStatus) for unit tests of the pure sync
 * logic (computePodActions, computePodStatus): what the runtime would report, without one.
 */
import type { V1Container, V1Pod, V1PodSpec } from '@kubernetes/client-node';
import { ANNOTATION, LABEL } from '../../core/runtime/labels.ts';
import type { PodRuntimeStatus } from '../../core/runtime/runtime-cache.ts';
import type { ContainerState, ContainerStatus, SandboxState, SandboxStatus } from '../../core/runtime/types.ts';
import { containerHash } from '../../core/objects/pod-util.ts';

export const UID = 'uid-1';
export const T0 = Date.parse('2024-05-01T10:00:00Z');

export function makePod(spec: Partial<V1PodSpec> = {}, name = 'web'): V1Pod {
  return {
    metadata: { name, namespace: 'default', uid: UID },
    spec: { containers: [{ name: 'app', image: 'busybox:1.36' }], ...spec },
  };
}

export function makeSandbox(o: { id?: string; state?: SandboxState; attempt?: number; ip?: string; additionalIps?: string[]; createdAt?: number } = {}): SandboxStatus {
  const attempt = o.attempt ?? 0;
  return {
    id: o.id ?? `sb-${attempt}`,
    metadata: { name: 'web', uid: UID, namespace: 'default', attempt },
    state: o.state ?? 'SANDBOX_READY',
    createdAt: o.createdAt ?? T0 + attempt * 1000,
    labels: { [LABEL.podUID]: UID, [LABEL.podName]: 'web', [LABEL.podNamespace]: 'default', [LABEL.managed]: 'true' },
    annotations: {},
    ip: o.ip ?? '10.88.0.5',
    additionalIps: o.additionalIps ?? [],
  };
}

export interface ContainerOpts {
  id?: string;
  sandboxId?: string;
  state?: ContainerState;
  exitCode?: number;
  reason?: string;
  restartCount?: number;
  startedAt?: number;
  finishedAt?: number;
  createdAt?: number;
  /** Overrides the spec hash annotation (a container created from an older spec). */
  hash?: string;
  imageRef?: string;
}

/** A container instance of `spec` as the runtime reports it (state defaults to RUNNING). */
export function makeContainer(spec: V1Container, o: ContainerOpts = {}): ContainerStatus {
  const restartCount = o.restartCount ?? 0;
  const state = o.state ?? 'CONTAINER_RUNNING';
  const createdAt = o.createdAt ?? T0 + 10_000 + restartCount * 1000;
  const exited = state === 'CONTAINER_EXITED';
  return {
    id: o.id ?? `${spec.name}-${restartCount}`,
    podSandboxId: o.sandboxId ?? 'sb-0',
    metadata: { name: spec.name, attempt: restartCount },
    image: spec.image ?? '',
    imageRef: o.imageRef ?? 'docker.io/library/busybox@sha256:abc',
    state,
    createdAt,
    labels: { [LABEL.podUID]: UID, [LABEL.containerName]: spec.name, [LABEL.managed]: 'true' },
    annotations: {
      [ANNOTATION.containerHash]: o.hash ?? containerHash(spec),
      [ANNOTATION.containerRestartCount]: String(restartCount),
    },
    startedAt: o.startedAt ?? (state === 'CONTAINER_CREATED' ? 0 : createdAt + 100),
    finishedAt: o.finishedAt ?? (exited ? createdAt + 500 : 0),
    exitCode: o.exitCode ?? (exited ? 0 : 0),
    reason: o.reason ?? (exited ? ((o.exitCode ?? 0) === 0 ? 'Completed' : 'Error') : ''),
    message: '',
    logPath: '',
  };
}

/** The runtime's view of the pod: newest sandbox and containers first, as the cache keeps them. */
export function makeRuntimeStatus(sandboxes: SandboxStatus[], containers: ContainerStatus[]): PodRuntimeStatus {
  return {
    uid: UID,
    name: 'web',
    namespace: 'default',
    sandboxes: [...sandboxes].sort((a, b) => b.createdAt - a.createdAt),
    containers: [...containers].sort((a, b) => b.createdAt - a.createdAt),
    observedAt: T0 + 60_000,
  };
}

/** A clock the test moves by hand. */
export function fakeClock(start = T0 + 60_000) {
  let t = start;
  return { now: () => t, set: (v: number) => (t = v), advance: (ms: number) => (t += ms) };
}
