/**
 * The Node object the kubelet registers and the pieces of its status, as pure functions over
 * wire JSON (upstream kubelet_node_status.go and nodestatus/setters.go): the initial Node,
 * the reconciliation of an existing one, the Ready condition from the runtime's health,
 * condition times, and the strategic-merge patch of a status post.
 */
import type { V1Node, V1NodeCondition, V1NodeStatus } from '@kubernetes/client-node';
import { canonicalJSON } from '../objects/pod-util.ts';
import { formatDuration } from '../util/duration.ts';
import type { NodeConditionDraft } from '../hooks.ts';
import type { NodeTaint } from '../config/types.ts';

/** The annotation that lets the attach/detach controller manage this node's volumes (upstream enableControllerAttachDetach, default true). */
export const CONTROLLER_MANAGED_ATTACH_ANNOTATION = 'volumes.kubernetes.io/controller-managed-attach-detach';

/** Labels the kubelet owns and sets again on an existing Node (upstream updateDefaultLabels). */
export const DEFAULT_LABEL_KEYS: readonly string[] = [
  'kubernetes.io/hostname',
  'topology.kubernetes.io/zone',
  'topology.kubernetes.io/region',
  'failure-domain.beta.kubernetes.io/zone',
  'failure-domain.beta.kubernetes.io/region',
  'node.kubernetes.io/instance-type',
  'beta.kubernetes.io/instance-type',
  'kubernetes.io/os',
  'kubernetes.io/arch',
  'node.kubernetes.io/windows-build',
  'beta.kubernetes.io/os',
  'beta.kubernetes.io/arch',
];

/** The condition types whose defaults the kubelet posts besides Ready. */
export const PRESSURE_CONDITIONS: readonly NodeConditionDraft[] = [
  { type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: 'kubelet has sufficient memory available' },
  { type: 'DiskPressure', status: 'False', reason: 'KubeletHasNoDiskPressure', message: 'kubelet has no disk pressure' },
  { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
];

/** Upstream's PLEG relist threshold (pleg.relistThreshold): unhealthy when no relist finished for this long. */
export const PLEG_RELIST_THRESHOLD_MS = 3 * 60_000;

/** The labels a Node is registered with: hostname, os, arch (stable and beta), then nodeLabels over them. */
export function defaultNodeLabels(hostname: string, os: string, arch: string): Record<string, string> {
  return {
    'kubernetes.io/hostname': hostname,
    'kubernetes.io/os': os,
    'kubernetes.io/arch': arch,
    'beta.kubernetes.io/os': os,
    'beta.kubernetes.io/arch': arch,
  };
}

/** The Node to create (upstream initialNode): labels, the attach/detach annotation, taints, and the first status. */
export function initialNode(args: { name: string; labels: Record<string, string>; nodeLabels: Record<string, string>; taints: NodeTaint[]; status: V1NodeStatus }): V1Node {
  const taints = args.taints.map((t) => ({ key: t.key, ...(t.value ? { value: t.value } : {}), effect: t.effect }));
  return {
    apiVersion: 'v1',
    kind: 'Node',
    metadata: {
      name: args.name,
      labels: { ...args.labels, ...args.nodeLabels },
      annotations: { [CONTROLLER_MANAGED_ATTACH_ANNOTATION]: 'true' },
    },
    spec: taints.length ? { taints } : {},
    status: args.status,
  };
}

/**
 * What to change on an existing Node of this name before adopting it (upstream
 * tryRegisterWithAPIServer → reconcileCMADAnnotationWithExistingNode, updateDefaultLabels,
 * reconcileHugePageResource): the default labels and the attach/detach annotation take the
 * initial Node's values; huge page capacity and allocatable follow the machine, and sizes the
 * machine no longer offers are removed (null). nodeLabels and taints are not reconciled, as
 * upstream: NodeRestriction forbids a node to change its own taints. Returns undefined when
 * nothing differs.
 */
export function reconcileExistingNode(initial: V1Node, existing: V1Node): Record<string, unknown> | undefined {
  const labels: Record<string, string | null> = {};
  const existingLabels = existing.metadata?.labels ?? {};
  for (const key of DEFAULT_LABEL_KEYS) {
    const want = initial.metadata?.labels?.[key];
    if (want === undefined) continue;
    if (existingLabels[key] !== want) labels[key] = want === '' ? null : want;
  }
  const annotations: Record<string, string | null> = {};
  const wantAnnotation = initial.metadata?.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION];
  if ((existing.metadata?.annotations?.[CONTROLLER_MANAGED_ATTACH_ANNOTATION] ?? undefined) !== wantAnnotation) {
    annotations[CONTROLLER_MANAGED_ATTACH_ANNOTATION] = wantAnnotation ?? null;
  }
  const capacity: Record<string, string | null> = {};
  const allocatable: Record<string, string | null> = {};
  const isHuge = (k: string) => k.startsWith('hugepages-');
  const initialCap = initial.status?.capacity ?? {};
  const initialAlloc = initial.status?.allocatable ?? {};
  for (const [k, v] of Object.entries(initialCap)) if (isHuge(k) && existing.status?.capacity?.[k] !== v) capacity[k] = v;
  for (const [k, v] of Object.entries(initialAlloc)) if (isHuge(k) && existing.status?.allocatable?.[k] !== v) allocatable[k] = v;
  for (const k of Object.keys(existing.status?.capacity ?? {})) if (isHuge(k) && !(k in initialCap)) capacity[k] = null;
  for (const k of Object.keys(existing.status?.allocatable ?? {})) if (isHuge(k) && !(k in initialAlloc)) allocatable[k] = null;

  const metadata: Record<string, unknown> = {};
  if (Object.keys(labels).length) metadata.labels = labels;
  if (Object.keys(annotations).length) metadata.annotations = annotations;
  const status: Record<string, unknown> = {};
  if (Object.keys(capacity).length) status.capacity = capacity;
  if (Object.keys(allocatable).length) status.allocatable = allocatable;
  if (!Object.keys(metadata).length && !Object.keys(status).length) return undefined;
  return { ...(Object.keys(metadata).length ? { metadata } : {}), ...(Object.keys(status).length ? { status } : {}) };
}

/** A runtime condition as CRI Status reports it (RuntimeReady, NetworkReady). */
export interface RuntimeCondition { type: string; status: boolean; reason?: string; message?: string }

/** The inputs of the Ready condition at one moment. */
export interface ReadinessInputs {
  /** CRI Status conditions, or the error of the Status call when the runtime could not be asked. */
  runtime: { conditions: RuntimeCondition[] } | { error: string };
  plegHealthy: boolean;
  /** When PLEG last finished a relist (ms since the epoch; 0: never). */
  plegLastRelistMs: number | undefined;
  /** Resource names present in capacity. */
  capacity: string[];
  /** A graceful node shutdown is under way. */
  shuttingDown?: boolean;
  now: number;
}

/** A CRI condition as the kubelet prints it (RuntimeCondition.String): `NetworkReady=false reason:X message:Y`, `<nil>` when absent. */
function conditionText(c: RuntimeCondition | undefined): string {
  return c ? `${c.type}=${c.status} reason:${c.reason ?? ''} message:${c.message ?? ''}` : '<nil>';
}

/**
 * The Ready condition (upstream ReadyCondition with runtimeState.runtimeErrors and
 * networkErrors): True "kubelet is posting ready status", or False KubeletNotReady with every
 * problem in upstream's words, aggregated as upstream's errors.NewAggregate prints them (one
 * message alone, several as "[a, b]").
 */
export function readyCondition(inputs: ReadinessInputs): NodeConditionDraft {
  const problems: string[] = [];
  if ('error' in inputs.runtime) problems.push(`container runtime is down: ${inputs.runtime.error}`);
  if (!inputs.plegHealthy) {
    const last = inputs.plegLastRelistMs;
    problems.push(
      last
        ? `PLEG is not healthy: pleg was last seen active ${formatDuration(inputs.now - last)} ago; threshold is ${formatDuration(PLEG_RELIST_THRESHOLD_MS)}`
        : 'PLEG is not healthy: pleg has yet to be successful',
    );
  }
  if (!('error' in inputs.runtime)) {
    const runtimeReady = inputs.runtime.conditions.find((c) => c.type === 'RuntimeReady');
    if (!runtimeReady?.status) problems.push(`container runtime not ready: ${conditionText(runtimeReady)}`);
    const networkReady = inputs.runtime.conditions.find((c) => c.type === 'NetworkReady');
    if (!networkReady?.status) problems.push(`container runtime network not ready: ${conditionText(networkReady)}`);
  }
  const missing = ['cpu', 'memory', 'pods', 'ephemeral-storage'].filter((r) => !inputs.capacity.includes(r));
  if (missing.length) problems.push(`missing node capacity for resources: ${missing.join(', ')}`);
  // Upstream's node shutdown manager's error, last of the ready condition's errors.
  if (inputs.shuttingDown) problems.push('node is shutting down');
  const unique = [...new Set(problems)];
  if (!unique.length) return { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' };
  return { type: 'Ready', status: 'False', reason: 'KubeletNotReady', message: unique.length === 1 ? unique[0]! : `[${unique.join(', ')}]` };
}

/** metav1.Time on the wire: RFC 3339 in UTC, whole seconds. */
export function apiTime(ms: number): string {
  return new Date(Math.floor(ms / 1000) * 1000).toISOString().replace('.000Z', 'Z');
}

/**
 * Conditions with their times (upstream setters): lastHeartbeatTime is now; lastTransitionTime
 * stays what the server has while the status is the same, and is now when it changed or the
 * condition is new.
 */
export function conditionsWithTimes(drafts: NodeConditionDraft[], current: V1NodeCondition[] | undefined, now: number): V1NodeCondition[] {
  const stamp = apiTime(now);
  return drafts.map((d) => {
    const old = current?.find((c) => c.type === d.type);
    const transition = old && old.status === d.status && old.lastTransitionTime ? wireTime(old.lastTransitionTime) : stamp;
    return { type: d.type, status: d.status, reason: d.reason, message: d.message, lastHeartbeatTime: stamp as unknown as Date, lastTransitionTime: transition as unknown as Date };
  });
}

/** A time from a wire object (a string) or a client-node model (a Date), as the wire writes it. */
function wireTime(t: Date | string): string {
  return typeof t === 'string' ? t : apiTime(t.getTime());
}

/** The parts of a node status the kubelet owns and compares, heartbeat times left out (upstream nodeStatusHasChanged). */
export interface OwnedStatus {
  capacity: Record<string, string>;
  allocatable: Record<string, string>;
  conditions: V1NodeCondition[];
  addresses: Array<{ type: string; address: string }>;
  daemonEndpoints: { kubeletEndpoint: { Port: number } };
  nodeInfo: Record<string, string>;
  images: Array<{ names: string[]; sizeBytes: number }>;
  labels: Record<string, string>;
  /** Upstream's unique names of the attachable or device-mountable volumes in use on the node, sorted (status.volumesInUse). */
  volumesInUse?: string[];
}

/** True when the server's Node differs from what the kubelet would post, heartbeat times aside. */
export function ownedStatusChanged(server: V1Node | undefined, want: OwnedStatus): boolean {
  if (!server) return true;
  const st = (server.status ?? {}) as Record<string, unknown> & V1NodeStatus;
  const pick = (m: Record<string, string> | undefined, keys: string[]) => Object.fromEntries(keys.map((k) => [k, m?.[k]]));
  const conditionView = (cs: V1NodeCondition[] | undefined, types: string[]) =>
    types.map((t) => {
      const c = cs?.find((x) => x.type === t);
      return c ? { type: c.type, status: c.status, reason: c.reason ?? '', message: c.message ?? '', lastTransitionTime: c.lastTransitionTime ? wireTime(c.lastTransitionTime) : '' } : undefined;
    });
  const types = want.conditions.map((c) => c.type);
  const serverView = {
    capacity: pick(st.capacity, Object.keys(want.capacity)),
    allocatable: pick(st.allocatable, Object.keys(want.allocatable)),
    conditions: conditionView(st.conditions, types),
    addresses: (st.addresses ?? []).map((a) => ({ type: a.type, address: a.address })),
    daemonEndpoints: { kubeletEndpoint: { Port: st.daemonEndpoints?.kubeletEndpoint?.Port } },
    nodeInfo: pick(st.nodeInfo as unknown as Record<string, string> | undefined, Object.keys(want.nodeInfo)),
    images: (st.images ?? []).map((i) => ({ names: i.names ?? [], sizeBytes: i.sizeBytes })),
    labels: pick(server.metadata?.labels, Object.keys(want.labels)),
    volumesInUse: st.volumesInUse ?? [],
  };
  const wantView = { ...want, conditions: conditionView(want.conditions, types), volumesInUse: want.volumesInUse ?? [] };
  return canonicalJSON(serverView) !== canonicalJSON(wantView);
}

/**
 * The strategic-merge patch of a status post (PATCH nodes/NAME/status): conditions merge by
 * type, so conditions others own (NetworkUnavailable, set by a CNI) stay; addresses are
 * replaced whole (`$patch: replace`), so a changed node IP leaves no stale entry; images are
 * a plain list (replaced). Resources and labels the kubelet set in an earlier post and no
 * longer reports are removed with null.
 */
export function statusPatch(want: OwnedStatus, dropped: { resources: string[]; labels: string[] }): Record<string, unknown> {
  const withNulls = (m: Record<string, string>, gone: string[]) => ({ ...Object.fromEntries(gone.filter((k) => !(k in m)).map((k) => [k, null])), ...m });
  const labels = withNulls(want.labels, dropped.labels);
  return {
    ...(Object.keys(labels).length ? { metadata: { labels } } : {}),
    status: {
      capacity: withNulls(want.capacity, dropped.resources),
      allocatable: withNulls(want.allocatable, dropped.resources),
      conditions: want.conditions,
      addresses: [{ $patch: 'replace' }, ...want.addresses],
      daemonEndpoints: want.daemonEndpoints,
      nodeInfo: want.nodeInfo,
      images: want.images,
      // A plain list (replaced); null removes it once nothing is in use.
      volumesInUse: want.volumesInUse?.length ? want.volumesInUse : null,
    },
  };
}

/** Upstream's cap on images in the node status (nodeStatusMaxImages default) and names per image. */
export const MAX_IMAGES_IN_STATUS = 50;
export const MAX_NAMES_PER_IMAGE = 5;

/** The node status images (upstream Images setter): largest first, at most 50, names = digests then tags, at most 5 names. */
export function statusImages(images: Array<{ repoTags: string[]; repoDigests: string[]; size: number }>): Array<{ names: string[]; sizeBytes: number }> {
  return [...images]
    .map((i) => ({ names: [...(i.repoDigests ?? []), ...(i.repoTags ?? [])].slice(0, MAX_NAMES_PER_IMAGE), sizeBytes: Number(i.size) || 0 }))
    .filter((i) => i.names.length > 0)
    .sort((a, b) => b.sizeBytes - a.sizeBytes)
    .slice(0, MAX_IMAGES_IN_STATUS);
}
