import type { V1ConfigMapProjection, V1DownwardAPIVolumeFile, V1KeyToPath, V1Pod, V1SecretProjection, V1VolumeProjection } from '@kubernetes/client-node';
import type { Payload } from '../atomic-writer.ts';
import { fieldRefValue, resourceFieldValue, type DownwardInputs } from '../../objects/downward-api.ts';
import type { ObjectSource } from '../../objects/object-source.ts';
import type { TokenSource } from '../../objects/object-source.ts';

/** API defaulting: files of projected volumes are 0644 unless a mode says otherwise. */
export const DEFAULT_MODE = 0o644;

/** Maps keys to files: every key, or only `items` (each with its path and mode). */
function project(kind: string, name: string, data: Map<string, Buffer>, items: V1KeyToPath[] | undefined, defaultMode: number, optional: boolean, out: Payload): void {
  if (!items || items.length === 0) {
    for (const [key, value] of data) out.set(key, { data: value, mode: defaultMode });
    return;
  }
  for (const item of items) {
    const value = data.get(item.key);
    if (value === undefined) {
      if (optional) continue;
      throw new Error(`${kind} "${name}" references non-existent ${kind} key: ${item.key}`);
    }
    out.set(item.path, { data: value, mode: item.mode ?? defaultMode });
  }
}

export async function configMapPayload(objects: ObjectSource, pod: V1Pod, src: { name?: string; items?: V1KeyToPath[]; optional?: boolean }, defaultMode: number, out: Payload = new Map()): Promise<Payload> {
  const ns = pod.metadata?.namespace ?? 'default';
  const name = src.name ?? '';
  const cm = await objects.configMap(ns, name);
  if (!cm) {
    if (src.optional) return out;
    throw new Error(`configmap "${name}" not found`);
  }
  const data = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(cm.data ?? {})) data.set(k, Buffer.from(v, 'utf8'));
  for (const [k, v] of Object.entries(cm.binaryData ?? {})) data.set(k, Buffer.from(v, 'base64'));
  project('configmap', name, data, src.items, defaultMode, src.optional === true, out);
  return out;
}

export async function secretPayload(objects: ObjectSource, pod: V1Pod, src: { secretName?: string; name?: string; items?: V1KeyToPath[]; optional?: boolean }, defaultMode: number, out: Payload = new Map()): Promise<Payload> {
  const ns = pod.metadata?.namespace ?? 'default';
  const name = src.secretName ?? src.name ?? '';
  const secret = await objects.secret(ns, name);
  if (!secret) {
    if (src.optional) return out;
    throw new Error(`secret "${name}" not found`);
  }
  const data = new Map<string, Buffer>();
  for (const [k, v] of Object.entries(secret.data ?? {})) data.set(k, Buffer.from(v, 'base64'));
  // stringData is write-only in the API (merged into data); local files may use it directly.
  for (const [k, v] of Object.entries(secret.stringData ?? {})) data.set(k, Buffer.from(v, 'utf8'));
  project('secret', name, data, src.items, defaultMode, src.optional === true, out);
  return out;
}

/** What downward API files and projections need besides the pod: its IPs, the node's, the node's allocatable. */
export type ProjectionInputs = DownwardInputs;

function downwardValue(pod: V1Pod, item: V1DownwardAPIVolumeFile, inputs: ProjectionInputs): string {
  if (item.fieldRef) return fieldRefValue(pod, item.fieldRef.fieldPath, 'volume', inputs);
  if (item.resourceFieldRef) {
    if (!item.resourceFieldRef.containerName) throw new Error(`downwardAPI: resourceFieldRef of "${item.path}" needs a containerName in a volume`);
    return resourceFieldValue(pod, undefined, item.resourceFieldRef, inputs);
  }
  throw new Error(`downwardAPI: item "${item.path}" has neither fieldRef nor resourceFieldRef`);
}

export function downwardAPIPayload(pod: V1Pod, items: V1DownwardAPIVolumeFile[] | undefined, defaultMode: number, inputs: ProjectionInputs, out: Payload = new Map()): Payload {
  for (const item of items ?? []) out.set(item.path, { data: Buffer.from(downwardValue(pod, item, inputs), 'utf8'), mode: item.mode ?? defaultMode });
  return out;
}

/** A projected volume: its sources into one payload; two sources writing one path is an error. */
export async function projectedPayload(
  sources: { objects: ObjectSource; tokens: TokenSource | undefined; inputs: ProjectionInputs },
  pod: V1Pod,
  projections: V1VolumeProjection[] | undefined,
  defaultMode: number,
): Promise<Payload> {
  const out: Payload = new Map();
  for (const s of projections ?? []) {
    const part: Payload = new Map();
    if (s.configMap) await configMapPayload(sources.objects, pod, s.configMap as V1ConfigMapProjection, defaultMode, part);
    else if (s.secret) await secretPayload(sources.objects, pod, s.secret as V1SecretProjection, defaultMode, part);
    else if (s.downwardAPI) downwardAPIPayload(pod, s.downwardAPI.items, defaultMode, sources.inputs, part);
    else if (s.serviceAccountToken) {
      if (!sources.tokens) throw new Error('serviceAccountToken projections need an API server (not available in standalone mode)');
      const t = s.serviceAccountToken;
      const token = await sources.tokens.token(pod, { serviceAccountName: pod.spec?.serviceAccountName || 'default', audience: t.audience || undefined, expirationSeconds: t.expirationSeconds ?? 3600 });
      part.set(t.path, { data: Buffer.from(token, 'utf8'), mode: defaultMode });
    } else throw new Error(`unsupported projected volume source ${Object.keys(s).join(', ') || '(empty)'}`);
    for (const [p, f] of part) {
      if (out.has(p)) throw new Error(`projected volume: more than one source writes "${p}"`);
      out.set(p, f);
    }
  }
  return out;
}
