import type { V1ConfigMapProjection, V1DownwardAPIVolumeFile, V1KeyToPath, V1Pod, V1SecretProjection, V1VolumeProjection } from '@kubernetes/client-node';
import type { Payload } from '../atomic-writer.ts';
import { resourceFieldValue } from '../../pod/container-config.ts';
import type { LocalObjects } from './local-objects.ts';

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

export async function configMapPayload(objects: LocalObjects, pod: V1Pod, src: { name?: string; items?: V1KeyToPath[]; optional?: boolean }, defaultMode: number, out: Payload = new Map()): Promise<Payload> {
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

export async function secretPayload(objects: LocalObjects, pod: V1Pod, src: { secretName?: string; name?: string; items?: V1KeyToPath[]; optional?: boolean }, defaultMode: number, out: Payload = new Map()): Promise<Payload> {
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

/** `k="v"` lines, sorted, with Go's %q escaping of the value: how upstream renders labels and annotations. */
function formatMap(m: Record<string, string> | undefined): string {
  return Object.keys(m ?? {}).sort().map((k) => `${k}=${JSON.stringify(m![k])}`).join('\n');
}

function downwardValue(pod: V1Pod, item: V1DownwardAPIVolumeFile): string {
  if (item.fieldRef) {
    const f = item.fieldRef.fieldPath;
    const m = pod.metadata ?? {};
    const sub = /^metadata\.(labels|annotations)\['(.+)'\]$/.exec(f);
    if (sub) return (sub[1] === 'labels' ? m.labels : m.annotations)?.[sub[2]!] ?? '';
    switch (f) {
      case 'metadata.name': return m.name ?? '';
      case 'metadata.namespace': return m.namespace ?? '';
      case 'metadata.uid': return m.uid ?? '';
      case 'metadata.labels': return formatMap(m.labels);
      case 'metadata.annotations': return formatMap(m.annotations);
      default: throw new Error(`downwardAPI: unsupported fieldPath "${f}" (allowed in volumes: metadata.name, metadata.namespace, metadata.uid, metadata.labels, metadata.annotations and single keys of them)`);
    }
  }
  if (item.resourceFieldRef) {
    const ref = item.resourceFieldRef;
    if (!ref.containerName) throw new Error(`downwardAPI: resourceFieldRef of "${item.path}" needs a containerName in a volume`);
    const c = [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].find((x) => x.name === ref.containerName);
    if (!c) throw new Error(`downwardAPI: no container named "${ref.containerName}"`);
    return resourceFieldValue(pod, c, { containerName: ref.containerName, resource: ref.resource, ...(ref.divisor !== undefined ? { divisor: String(ref.divisor) } : {}) });
  }
  throw new Error(`downwardAPI: item "${item.path}" has neither fieldRef nor resourceFieldRef`);
}

export function downwardAPIPayload(pod: V1Pod, items: V1DownwardAPIVolumeFile[] | undefined, defaultMode: number, out: Payload = new Map()): Payload {
  for (const item of items ?? []) out.set(item.path, { data: Buffer.from(downwardValue(pod, item), 'utf8'), mode: item.mode ?? defaultMode });
  return out;
}

/** A projected volume: its sources into one payload; two sources writing one path is an error. */
export async function projectedPayload(objects: LocalObjects, pod: V1Pod, sources: V1VolumeProjection[] | undefined, defaultMode: number): Promise<Payload> {
  const out: Payload = new Map();
  for (const s of sources ?? []) {
    const part: Payload = new Map();
    if (s.configMap) await configMapPayload(objects, pod, s.configMap as V1ConfigMapProjection, defaultMode, part);
    else if (s.secret) await secretPayload(objects, pod, s.secret as V1SecretProjection, defaultMode, part);
    else if (s.downwardAPI) downwardAPIPayload(pod, s.downwardAPI.items, defaultMode, part);
    else if (s.serviceAccountToken) throw new Error('serviceAccountToken projections need an API server (not available in standalone mode)');
    else throw new Error(`unsupported projected volume source ${Object.keys(s).join(', ') || '(empty)'}`);
    for (const [p, f] of part) {
      if (out.has(p)) throw new Error(`projected volume: more than one source writes "${p}"`);
      out.set(p, f);
    }
  }
  return out;
}
