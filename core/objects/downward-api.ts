/**
 * The downward API: the pod's own fields and its containers' resources, as env values
 * (`env[].valueFrom.fieldRef` / `resourceFieldRef`) and as files (`downwardAPI` volumes and
 * projections). One implementation for both, with upstream's rules of what each may name
 * (pkg/apis/core/validation: validEnvDownwardAPIFieldPathExpressions, validVolumeDownwardAPIFieldPathExpressions).
 */
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { parseQuantity } from './quantity.ts';
import { containersOf } from './pod-util.ts';

/** Where a downward API value goes: env allows a few more fields than volumes. */
export type DownwardTarget = 'env' | 'volume';

/** What the pod's spec does not hold: its IPs and the node's, and the node's allocatable (unset limits report it). */
export interface DownwardInputs {
  podIPs: string[];
  hostIPs: string[];
  /** The node's allocatable cpu (cores), memory and ephemeral-storage (bytes), for a limit the container does not set. */
  allocatable: () => { cpu: number; memory: number; 'ephemeral-storage': number };
}

/** A field or resource the downward API cannot give (the message says what is allowed). */
export class DownwardApiError extends Error {}

const COMMON = ['metadata.name', 'metadata.namespace', 'metadata.uid'];
const ENV_ONLY = ['spec.nodeName', 'spec.serviceAccountName', 'status.hostIP', 'status.hostIPs', 'status.podIP', 'status.podIPs'];
const VOLUME_ONLY = ['metadata.labels', 'metadata.annotations'];
const SUBSCRIPT = /^metadata\.(labels|annotations)\['([^']*)'\]$/;

/** `k="v"` lines, sorted, with Go's %q escaping of the value: how upstream renders labels and annotations in a file. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {}).sort().map((k) => `${k}=${JSON.stringify(m![k])}`).join('\n');
}

/** The value of a `fieldRef` fieldPath for env or a volume file. */
export function fieldRefValue(pod: V1Pod, fieldPath: string, target: DownwardTarget, inputs: Pick<DownwardInputs, 'podIPs' | 'hostIPs'>): string {
  const m = pod.metadata ?? {};
  const sub = SUBSCRIPT.exec(fieldPath);
  if (sub) return (sub[1] === 'labels' ? m.labels : m.annotations)?.[sub[2]!] ?? '';
  const allowed = [...COMMON, ...(target === 'env' ? ENV_ONLY : VOLUME_ONLY)];
  if (!allowed.includes(fieldPath)) {
    throw new DownwardApiError(`fieldRef "${fieldPath}" is not supported in ${target === 'env' ? 'env' : 'a downwardAPI volume'} (allowed: ${allowed.join(', ')}, metadata.labels['<key>'], metadata.annotations['<key>'])`);
  }
  switch (fieldPath) {
    case 'metadata.name': return m.name ?? '';
    case 'metadata.namespace': return m.namespace ?? '';
    case 'metadata.uid': return m.uid ?? '';
    case 'metadata.labels': return formatMap(m.labels);
    case 'metadata.annotations': return formatMap(m.annotations);
    case 'spec.nodeName': return pod.spec?.nodeName ?? '';
    case 'spec.serviceAccountName': return pod.spec?.serviceAccountName ?? '';
    case 'status.podIP': return inputs.podIPs[0] ?? '';
    case 'status.podIPs': return inputs.podIPs.join(',');
    case 'status.hostIP': return inputs.hostIPs[0] ?? '';
    case 'status.hostIPs': return inputs.hostIPs.join(',');
  }
  return '';
}

const RESOURCES = ['cpu', 'memory', 'ephemeral-storage'];

/**
 * A `resourceFieldRef`: a container's request or limit in the divisor's units, rounded up as
 * upstream (ExtractResourceValueByContainerName): an unset limit is the node's allocatable,
 * an unset request 0 (cpu: the limit's value when only the limit is set, as API defaulting
 * copies it).
 */
export function resourceFieldValue(pod: V1Pod, self: V1Container | undefined, ref: { containerName?: string; resource: string; divisor?: unknown }, inputs: Pick<DownwardInputs, 'allocatable'>): string {
  const all = containersOf(pod);
  const target = ref.containerName ? all.find((c) => c.name === ref.containerName) : self;
  if (!target) throw new DownwardApiError(ref.containerName ? `resourceFieldRef: no container named "${ref.containerName}"` : 'resourceFieldRef: containerName is required in a volume');
  const dot = ref.resource.indexOf('.');
  const kind = ref.resource.slice(0, dot);
  const resource = ref.resource.slice(dot + 1);
  const hugepages = resource.startsWith('hugepages-');
  if ((kind !== 'requests' && kind !== 'limits') || (!RESOURCES.includes(resource) && !hugepages)) {
    throw new DownwardApiError(`resourceFieldRef: unsupported resource "${ref.resource}" (allowed: limits.cpu, limits.memory, limits.ephemeral-storage, requests.* of the same, limits.hugepages-<size>, requests.hugepages-<size>)`);
  }
  const bag = kind === 'requests' ? target.resources?.requests : target.resources?.limits;
  let value: number;
  if (bag?.[resource] !== undefined) value = parseQuantity(bag[resource]!);
  else if (kind === 'limits') value = hugepages ? 0 : inputs.allocatable()[resource as 'cpu']!;
  else value = 0;
  let divisor: number;
  try {
    divisor = parseQuantity(ref.divisor === undefined || ref.divisor === '' ? '1' : (ref.divisor as string | number));
  } catch {
    throw new DownwardApiError(`resourceFieldRef: divisor "${String(ref.divisor)}" is not a quantity`);
  }
  // An unset divisor is the zero quantity, which the API server writes back as "0" when it
  // defaults the selector: upstream reads zero as 1 (ExtractContainerResourceValue).
  if (divisor === 0) divisor = 1;
  if (!(divisor > 0)) throw new DownwardApiError('resourceFieldRef: divisor must be positive');
  return String(Math.ceil(value / divisor - 1e-9));
}
