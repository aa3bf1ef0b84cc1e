/**
 * Pod admission as upstream's kubelet decides it (pkg/kubelet/lifecycle/predicate.go and the
 * scheduler's AdmissionCheck it runs): before a pod gets anything on the node, it must fit
 * the node's allocatable next to the pods already admitted (cpu, memory, ephemeral-storage,
 * pods), match the node's labels (nodeSelector, required node affinity), tolerate its NoExecute
 * taints (not checked for static pods) and not take a host port another pod holds. The first
 * failure is the rejection, with upstream's reason and message (the OS checks first, in
 * pod-os-admission.ts: PodOSSelectorNodeLabelDoesNotMatch, PodOSNotSupported):
 *   OutOfcpu / OutOfmemory / OutOfephemeral-storage / OutOfpods / OutOf<extended resource>:
 *     "Node didn't have enough resource: cpu, requested: 2000, used: 500, capacity: 1000"
 *   NodeAffinity, NodePorts, TaintToleration: "Predicate <name> failed: <reason>"
 * and, after the OS checks, what a newer upstream refuses on a node that cannot apply it
 * (checkUnsupportedFeatures: SupplementalGroupsPolicyNotSupported, PodLevelResourcesNotSupported).
 */
import type { V1Container, V1NodeSelectorRequirement, V1NodeSelectorTerm, V1Pod, V1Taint, V1Toleration } from '@kubernetes/client-node';
import { parseQuantity, quantityValue } from '../objects/quantity.ts';
import { containersOf } from '../objects/pod-util.ts';
import { qosClass } from '../status/pod-status.ts';
import { checkPodOS } from './pod-os-admission.ts';

/** What admission knows of the node. */
export interface AdmissionNode {
  /** Allocatable: cpu in millicores, memory and ephemeral-storage in bytes, pods as a count. */
  allocatable: { cpu: number; memory: number; 'ephemeral-storage': number; pods: number };
  /**
   * Allocatable extended resources the node knows (device plugins' resources), as counts. A pod's
   * request of an extended resource not listed is not checked (upstream
   * removeMissingExtendedResources: it may be a cluster-level resource).
   */
  extended?: Record<string, number>;
  labels: Record<string, string>;
  taints: V1Taint[];
  /**
   * Allocatable huge pages by resource name ('hugepages-2Mi'), bytes. When given, a pod's huge
   * page request is checked against it, a size the node lacks counting as 0 (upstream: huge pages
   * are no extended resources, never skipped): a pod cannot get pages the node has not reserved.
   */
  hugePages?: Record<string, number>;
}

export interface Rejection { reason: string; message: string }

const RESOURCES = ['cpu', 'memory', 'ephemeral-storage'] as const;
type Resource = (typeof RESOURCES)[number];

/** A container's request of a resource (cpu in millicores); a limit without a request implies it, as API defaulting does. */
function request(c: V1Container, r: Resource): number {
  const q = c.resources?.requests?.[r] ?? c.resources?.limits?.[r];
  if (q === undefined) return 0;
  try {
    const v = parseQuantity(q);
    return r === 'cpu' ? Math.ceil(v * 1000 - 1e-9) : Math.ceil(v - 1e-9);
  } catch {
    return 0;
  }
}

/**
 * A pod's effective request of each resource (upstream resource.PodRequests): the app
 * containers and sidecars together, or the peak of the init sequence (an init container
 * plus the sidecars started before it) if higher, plus the pod overhead.
 */
export function podRequests(pod: V1Pod): Record<Resource, number> {
  const spec = pod.spec;
  const out = {} as Record<Resource, number>;
  for (const r of RESOURCES) {
    let sidecars = 0;
    let initPeak = 0;
    for (const c of spec?.initContainers ?? []) {
      const v = request(c, r);
      if (c.restartPolicy === 'Always') {
        sidecars += v;
        initPeak = Math.max(initPeak, sidecars);
      } else initPeak = Math.max(initPeak, sidecars + v);
    }
    const regular = (spec?.containers ?? []).reduce((n, c) => n + request(c, r), 0) + sidecars;
    let overhead = 0;
    const o = spec?.overhead?.[r];
    if (o !== undefined) {
      try {
        overhead = r === 'cpu' ? Math.ceil(parseQuantity(o) * 1000 - 1e-9) : Math.ceil(parseQuantity(o) - 1e-9);
      } catch {
        overhead = 0;
      }
    }
    out[r] = Math.max(regular, initPeak) + overhead;
  }
  return out;
}

/** An extended resource's request of a pod, as podRequests counts cpu: init peak or the app containers and sidecars, plus overhead. */
function extendedRequest(pod: V1Pod, name: string): number {
  const of = (c: V1Container) => {
    const q = c.resources?.requests?.[name] ?? c.resources?.limits?.[name];
    const v = q === undefined ? undefined : quantityValue(q);
    return v === undefined || !Number.isFinite(v) ? 0 : Math.ceil(v - 1e-9);
  };
  let sidecars = 0;
  let initPeak = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const v = of(c);
    if (c.restartPolicy === 'Always') {
      sidecars += v;
      initPeak = Math.max(initPeak, sidecars);
    } else initPeak = Math.max(initPeak, sidecars + v);
  }
  const regular = (pod.spec?.containers ?? []).reduce((n, c) => n + of(c), 0) + sidecars;
  const o = pod.spec?.overhead?.[name];
  const overhead = o === undefined ? 0 : Math.ceil((quantityValue(o) ?? 0) - 1e-9);
  return Math.max(regular, initPeak) + overhead;
}

/** One node selector requirement against the node's labels (In, NotIn, Exists, DoesNotExist, Gt, Lt). */
function requirementMatches(req: V1NodeSelectorRequirement, labels: Record<string, string>): boolean {
  const has = Object.hasOwn(labels, req.key);
  const value = labels[req.key];
  const values = req.values ?? [];
  switch (req.operator) {
    case 'In': return has && values.includes(value!);
    case 'NotIn': return !has || !values.includes(value!);
    case 'Exists': return has;
    case 'DoesNotExist': return !has;
    case 'Gt':
    case 'Lt': {
      if (!has || values.length !== 1) return false;
      const a = Number(value);
      const b = Number(values[0]);
      if (!Number.isInteger(a) || !Number.isInteger(b)) return false;
      return req.operator === 'Gt' ? a > b : a < b;
    }
    default: return false;
  }
}

/** A term matches when all its label expressions do (field expressions: only metadata.name, the node's name). */
function termMatches(term: V1NodeSelectorTerm, labels: Record<string, string>, nodeName: string): boolean {
  const exprs = term.matchExpressions ?? [];
  const fields = term.matchFields ?? [];
  if (exprs.length === 0 && fields.length === 0) return false;
  return exprs.every((e) => requirementMatches(e, labels)) && fields.every((f) => f.key === 'metadata.name' && requirementMatches({ ...f, key: 'name' }, { name: nodeName }));
}

function affinityMatches(pod: V1Pod, node: AdmissionNode, nodeName: string): boolean {
  for (const [k, v] of Object.entries(pod.spec?.nodeSelector ?? {})) if (node.labels[k] !== v) return false;
  const terms = pod.spec?.affinity?.nodeAffinity?.requiredDuringSchedulingIgnoredDuringExecution?.nodeSelectorTerms;
  if (terms && terms.length > 0 && !terms.some((t) => termMatches(t, node.labels, nodeName))) return false;
  return true;
}

function tolerates(t: V1Toleration, taint: V1Taint): boolean {
  if (t.effect && t.effect !== taint.effect) return false;
  if (t.operator === 'Exists') return !t.key || t.key === taint.key;
  return t.key === taint.key && (t.value ?? '') === (taint.value ?? '');
}

/** `<protocol>/<hostIP>/<port>` of each host port a pod asks for (0.0.0.0 for any address). */
function hostPorts(pod: V1Pod): Array<{ protocol: string; ip: string; port: number }> {
  const out: Array<{ protocol: string; ip: string; port: number }> = [];
  for (const c of containersOf(pod)) {
    for (const p of c.ports ?? []) if (p.hostPort) out.push({ protocol: p.protocol ?? 'TCP', ip: p.hostIP || '0.0.0.0', port: p.hostPort });
  }
  return out;
}

function portsConflict(a: { protocol: string; ip: string; port: number }, b: { protocol: string; ip: string; port: number }): boolean {
  return a.port === b.port && a.protocol === b.protocol && (a.ip === b.ip || a.ip === '0.0.0.0' || b.ip === '0.0.0.0');
}

/**
 * Pod fields kubelet-ts does not apply and will not run a pod without, refused with the reason a
 * newer upstream kubelet gives on a node that cannot apply them (both fields are newer than
 * v1.28, whose API server and kubelet drop them; kubelet-ts decodes them, so it must say):
 * - `spec.securityContext.supplementalGroupsPolicy: Strict`: the image's groups would be merged
 *   in anyway (SupplementalGroupsPolicyNotSupported, upstream's message);
 * - pod-level `spec.resources`: no pod-level limit would hold the containers
 *   (PodLevelResourcesNotSupported, as upstream with the PodLevelResources gate off).
 */
export function checkUnsupportedFeatures(pod: V1Pod): Rejection | undefined {
  const spec = pod.spec as (V1Pod['spec'] & { securityContext?: { supplementalGroupsPolicy?: string } }) | undefined;
  if (spec?.securityContext?.supplementalGroupsPolicy === 'Strict') {
    return { reason: 'SupplementalGroupsPolicyNotSupported', message: 'SupplementalGroupsPolicy=Strict is not supported in this node' };
  }
  const podLevel = (spec as { resources?: { requests?: object; limits?: object } } | undefined)?.resources;
  if (podLevel && (Object.keys(podLevel.requests ?? {}).length > 0 || Object.keys(podLevel.limits ?? {}).length > 0)) {
    return { reason: 'PodLevelResourcesNotSupported', message: 'PodLevelResources feature gate is disabled: this kubelet does not apply pod-level resources (spec.resources); set them on the containers' };
  }
  return undefined;
}

/**
 * Whether `pod` may run next to `admitted` (the pods the node runs, not terminal) on `node`;
 * the first failure in upstream's order, or undefined.
 */
export function checkAdmission(pod: V1Pod, admitted: V1Pod[], node: AdmissionNode, opts: { nodeName: string; isStatic: boolean }): Rejection | undefined {
  // Upstream checks the OS first: no preemption can make a pod for another OS fit.
  const wrongOS = checkPodOS(pod);
  if (wrongOS) return wrongOS;
  const unsupported = checkUnsupportedFeatures(pod);
  if (unsupported) return unsupported;
  const others = admitted.filter((p) => p.metadata?.uid !== pod.metadata?.uid);
  if (others.length + 1 > node.allocatable.pods) {
    return { reason: 'OutOfpods', message: `Node didn't have enough resource: pods, requested: 1, used: ${others.length}, capacity: ${node.allocatable.pods}` };
  }
  const want = podRequests(pod);
  for (const r of RESOURCES) {
    if (want[r] === 0) continue;
    const used = others.reduce((n, p) => n + podRequests(p)[r], 0);
    const capacity = r === 'cpu' ? node.allocatable.cpu : node.allocatable[r];
    if (used + want[r] > capacity) {
      return { reason: `OutOf${r}`, message: `Node didn't have enough resource: ${r}, requested: ${want[r]}, used: ${used}, capacity: ${capacity}` };
    }
  }
  for (const [r, capacity] of Object.entries(node.extended ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
    const wanted = extendedRequest(pod, r);
    if (wanted === 0) continue;
    const used = others.reduce((n, p) => n + extendedRequest(p, r), 0);
    if (used + wanted > capacity) return { reason: `OutOf${r}`, message: `Node didn't have enough resource: ${r}, requested: ${wanted}, used: ${used}, capacity: ${capacity}` };
  }
  if (node.hugePages) {
    const sizes = new Set(containersOf(pod).flatMap((c) => Object.keys({ ...c.resources?.limits, ...c.resources?.requests })).filter((r) => r.startsWith('hugepages-')));
    for (const r of [...sizes].sort()) {
      const wanted = extendedRequest(pod, r);
      if (wanted === 0) continue;
      const used = others.reduce((n, p) => n + extendedRequest(p, r), 0);
      const capacity = node.hugePages[r] ?? 0;
      if (used + wanted > capacity) return { reason: `OutOf${r}`, message: `Node didn't have enough resource: ${r}, requested: ${wanted}, used: ${used}, capacity: ${capacity}` };
    }
  }
  if (!affinityMatches(pod, node, opts.nodeName)) return { reason: 'NodeAffinity', message: "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector" };
  const mine = hostPorts(pod);
  if (mine.length > 0) {
    const taken = others.flatMap(hostPorts);
    if (mine.some((m) => taken.some((t) => portsConflict(m, t)))) return { reason: 'NodePorts', message: "Predicate NodePorts failed: node(s) didn't have free ports for the requested pod ports" };
  }
  // Only NoExecute taints matter to the kubelet; static pods are not checked.
  if (!opts.isStatic) {
    const untolerated = node.taints.find((taint) => taint.effect === 'NoExecute' && !(pod.spec?.tolerations ?? []).some((t) => tolerates(t, taint)));
    if (untolerated) return { reason: 'TaintToleration', message: `Predicate TaintToleration failed: node(s) had untolerated taint {${untolerated.key}: ${untolerated.value ?? ''}}` };
  }
  return undefined;
}

/** A pod's request of one resource as upstream's preemption counts it (resource.GetResourceRequest): `pods` is 1, cpu in millicores. */
export function resourceRequest(pod: V1Pod, name: string): number {
  if (name === 'pods') return 1;
  if ((RESOURCES as readonly string[]).includes(name)) return podRequests(pod)[name as Resource];
  return extendedRequest(pod, name);
}

/** How much of a resource a pod lacks to fit (upstream InsufficientResourceError.GetInsufficientAmount: requested - (capacity - used)). */
export interface InsufficientResource { resource: string; quantity: number }

/**
 * Every resource `pod` does not fit next to `admitted` on `node`, in upstream's order (pods,
 * cpu, memory, ephemeral-storage, extended resources, huge pages), each with how much is
 * missing; and its first failure that is not a resource's (affinity, ports, taints: the checks
 * checkAdmission makes after them), if any. Critical pod preemption frees what is missing.
 */
export function insufficientResources(pod: V1Pod, admitted: V1Pod[], node: AdmissionNode, opts: { nodeName: string; isStatic: boolean }): { missing: InsufficientResource[]; otherFailure: Rejection | undefined } {
  const others = admitted.filter((p) => p.metadata?.uid !== pod.metadata?.uid);
  const missing: InsufficientResource[] = [];
  const check = (resource: string, capacity: number) => {
    const wanted = resourceRequest(pod, resource);
    if (wanted === 0) return;
    const used = others.reduce((n, p) => n + resourceRequest(p, resource), 0);
    if (used + wanted > capacity) missing.push({ resource, quantity: wanted - (capacity - used) });
  };
  check('pods', node.allocatable.pods);
  for (const r of RESOURCES) check(r, node.allocatable[r]);
  for (const [r, capacity] of Object.entries(node.extended ?? {}).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) check(r, capacity);
  if (node.hugePages) {
    const sizes = new Set(containersOf(pod).flatMap((c) => Object.keys({ ...c.resources?.limits, ...c.resources?.requests })).filter((r) => r.startsWith('hugepages-')));
    for (const r of [...sizes].sort()) check(r, node.hugePages[r] ?? 0);
  }
  // The same pod on a node without resource limits: any failure left is not a resource's.
  const unlimited = (m: Record<string, number> | undefined) => (m ? Object.fromEntries(Object.keys(m).map((k) => [k, Infinity])) : undefined);
  const roomy: AdmissionNode = {
    ...node,
    allocatable: { cpu: Infinity, memory: Infinity, 'ephemeral-storage': Infinity, pods: Infinity },
    ...(node.extended ? { extended: unlimited(node.extended)! } : {}),
    ...(node.hugePages ? { hugePages: new Proxy({}, { get: () => Infinity }) as Record<string, number> } : {}),
  };
  return { missing, otherFailure: checkAdmission(pod, admitted, roomy, opts) };
}

/** The taint a BestEffort pod must tolerate to be admitted under memory pressure (upstream v1.TaintNodeMemoryPressure). */
const MEMORY_PRESSURE_TAINT: V1Taint = { key: 'node.kubernetes.io/memory-pressure', effect: 'NoSchedule' };

/**
 * Admission under node pressure, as upstream's eviction manager admits (eviction_manager.go
 * Admit): critical pods always; under memory pressure alone, every pod but BestEffort ones
 * (unless they tolerate the memory-pressure taint); under disk or PID pressure, none. The
 * rejection is upstream's: reason `Evicted`, "The node had condition: [MemoryPressure]. ".
 */
export function checkPressureAdmission(pod: V1Pod, conditions: ReadonlySet<string>, opts: { critical: boolean }): Rejection | undefined {
  if (conditions.size === 0 || opts.critical) return undefined;
  if (conditions.size === 1 && conditions.has('MemoryPressure')) {
    if (qosClass(pod) !== 'BestEffort') return undefined;
    if ((pod.spec?.tolerations ?? []).some((t) => tolerates(t, MEMORY_PRESSURE_TAINT))) return undefined;
  }
  const order = ['MemoryPressure', 'DiskPressure', 'PIDPressure'].filter((c) => conditions.has(c));
  return { reason: 'Evicted', message: `The node had condition: [${order.join(' ')}]. ` };
}
