import type { V1Container, V1Pod } from '@kubernetes/client-node';
import crypto from 'node:crypto';
import { clampSeconds } from '../util/timeouts.ts';

/** `name_namespace(uid)`: how upstream names a pod in messages (format.Pod). */
export function podDesc(pod: V1Pod): string {
  return `${pod.metadata?.name}_${pod.metadata?.namespace}(${pod.metadata?.uid})`;
}

/** `namespace/name` (an unset namespace is `default`): how logs name a pod, and the key two versions of one static pod share. */
export function podFullName(pod: Pick<V1Pod, 'metadata'>): string {
  return `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? ''}`;
}

export function podUID(pod: V1Pod): string {
  return pod.metadata!.uid!;
}

export function isHostNetwork(pod: V1Pod): boolean {
  return pod.spec?.hostNetwork === true;
}

/** The pod's grace period: the deletion's if it has one, else the spec's (default 30), clamped to what the kubelet can time. */
export function gracePeriodSeconds(pod: V1Pod): number {
  const g = pod.metadata?.deletionGracePeriodSeconds ?? pod.spec?.terminationGracePeriodSeconds ?? 30;
  return clampSeconds(Number(g));
}

/**
 * Hashes by container object. Pod sources give a changed pod as a new object (API pods are
 * copied from each changed event, manifests parsed again), so an object's hash never changes;
 * each sync compares every container's hash, and a container of thousands of env vars took
 * milliseconds to serialise.
 */
const containerHashes = new WeakMap<V1Container, string>();

/**
 * A stable hash of a container's spec: stored on the container so a changed spec (same pod
 * UID, as for API pods) is noticed and the container replaced.
 */
export function containerHash(container: V1Container): string {
  let hash = containerHashes.get(container);
  if (hash === undefined) {
    hash = crypto.createHash('sha256').update(canonicalJSON(container)).digest('hex').slice(0, 16);
    containerHashes.set(container, hash);
  }
  return hash;
}

export function canonicalJSON(value: unknown): string {
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? 'null';
  if (Array.isArray(value)) return `[${value.map(canonicalJSON).join(',')}]`;
  const entries = Object.entries(value as Record<string, unknown>)
    .filter(([, v]) => v !== undefined)
    .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJSON(v)}`).join(',')}}`;
}

/**
 * Whether two JSON values are equal as canonicalJSON sees them (key order and keys whose value
 * is undefined do not count), without serialising either: a pod of thousands of env vars is
 * compared in one walk that stops at the first difference.
 */
export function jsonEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== 'object' || typeof b !== 'object') return (JSON.stringify(a) ?? 'null') === (JSON.stringify(b) ?? 'null');
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a)) {
    const bb = b as unknown[];
    if (a.length !== bb.length) return false;
    for (let i = 0; i < a.length; i++) if (!jsonEqual(a[i], bb[i])) return false;
    return true;
  }
  const ao = a as Record<string, unknown>;
  const bo = b as Record<string, unknown>;
  let defined = 0;
  for (const k in ao) {
    if (!Object.hasOwn(ao, k) || ao[k] === undefined) continue;
    defined++;
    if (!Object.hasOwn(bo, k) || bo[k] === undefined || !jsonEqual(ao[k], bo[k])) return false;
  }
  for (const k in bo) if (Object.hasOwn(bo, k) && bo[k] !== undefined) defined--;
  return defined === 0;
}

/** A sidecar: an init container that keeps running beside the app containers (restartPolicy Always). */
export const isSidecar = (c: V1Container) => c.restartPolicy === 'Always';

/** Where a container of a pod is declared: `spec.initContainers`, `spec.containers` or `spec.ephemeralContainers`. */
export type ContainerKind = 'init' | 'app' | 'ephemeral';

/**
 * The pod's ephemeral containers (added through the `ephemeralcontainers` subresource, as
 * `kubectl debug` does), as containers: their fields are a subset of a container's, plus
 * `targetContainerName`.
 */
export function ephemeralContainersOf(pod: Pick<V1Pod, 'spec'>): Array<V1Container & { targetContainerName?: string }> {
  return (pod.spec?.ephemeralContainers ?? []) as Array<V1Container & { targetContainerName?: string }>;
}

/** The pod's init containers, then its containers: what its lifetime runs (ephemeral ones aside). */
/**
 * The reason a container not created yet waits with, as upstream's status has it for every
 * container of the pod (init and app alike): PodInitializing in a pod with init containers,
 * ContainerCreating otherwise. A volume, sandbox or network failure keeps this reason (upstream
 * tells it in events, not in the reason), so a pod with init containers never shows an app
 * container in ContainerCreating; e2e's InitContainer tests fail on any other reason.
 */
export function defaultWaitingReason(pod: Pick<V1Pod, 'spec'>): 'PodInitializing' | 'ContainerCreating' {
  return pod.spec?.initContainers?.length ? 'PodInitializing' : 'ContainerCreating';
}

export function containersOf(pod: Pick<V1Pod, 'spec'>): V1Container[] {
  return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])];
}

/** Every container the pod declares: init, app, then ephemeral (each list as `containerKind` names it). */
export function allContainersOf(pod: Pick<V1Pod, 'spec'>): V1Container[] {
  return [...containersOf(pod), ...ephemeralContainersOf(pod)];
}

/** Which list of the pod's spec declares the container named `name` (app when none does). */
export function containerKind(pod: V1Pod, name: string): ContainerKind {
  if ((pod.spec?.initContainers ?? []).some((c) => c.name === name)) return 'init';
  if ((pod.spec?.ephemeralContainers ?? []).some((c) => c.name === name)) return 'ephemeral';
  return 'app';
}

/**
 * The statuses of the conditions a pod's readiness gates name (undefined without gates). Another
 * component sets them in the API, and a change must reach the pod's sync (its Ready condition
 * follows them), though the kubelet otherwise ignores the status the API server has: part of
 * what the pod sources compare to tell a change.
 */
export function readinessGateStates(pod: V1Pod): Array<[string, string | undefined]> | undefined {
  const gates = pod.spec?.readinessGates;
  if (!gates?.length) return undefined;
  return gates.map((g) => [g.conditionType, pod.status?.conditions?.find((c) => c.type === g.conditionType)?.status]);
}
