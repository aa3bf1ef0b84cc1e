/**
 * A container's environment, as upstream's makeEnvironmentVariables builds it: `envFrom`
 * sources first (ConfigMaps and Secrets, each key with the source's `prefix`), then `env` in
 * order — plain values with `$(VAR)` expansion of what is defined before them (then of the
 * service links), ConfigMap and Secret keys, and the downward API — then the service link
 * variables the container does not define itself. A missing ConfigMap or Secret, or a missing key, is a
 * CreateContainerConfigError naming it unless the reference is `optional`; the pod starts once
 * it appears (the object cache watches it and the kubelet syncs the pod again).
 */
import os from 'node:os';
import type { V1ConfigMap, V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import type { KeyValue } from '../runtime/types.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import { expandVars } from './expansion.ts';
import { DownwardApiError, fieldRefValue, resourceFieldValue, type DownwardInputs } from '../objects/downward-api.ts';

/** A container config that cannot be built (upstream reason CreateContainerConfigError). */
export class ContainerConfigError extends Error {}

/** The ConfigMaps and Secrets a container's env refers to, fetched: by `configmaps/<name>` / `secrets/<name>`; an Error when it could not be read. */
export type EnvObjects = Map<string, V1ConfigMap | V1Secret | undefined | Error>;

/** Upstream 1.28's env var name rule (IsEnvVarName): letters, digits, `_`, `-`, `.`, not starting with a digit. */
const ENV_NAME = /^[-._a-zA-Z][-._a-zA-Z0-9]*$/;

/** Keys of an envFrom source that are not valid env var names: skipped and reported as upstream does. */
export interface InvalidEnvKeys { source: string; keys: string[] }

/** Fetches what the container's env and envFrom refer to, through `objects` (the API cache or local files). */
export async function fetchEnvObjects(pod: V1Pod, container: V1Container, objects: ObjectSource | undefined): Promise<EnvObjects> {
  const ns = pod.metadata?.namespace ?? 'default';
  const wanted = new Set<string>();
  for (const f of container.envFrom ?? []) {
    if (f.configMapRef?.name) wanted.add(`configmaps/${f.configMapRef.name}`);
    if (f.secretRef?.name) wanted.add(`secrets/${f.secretRef.name}`);
  }
  for (const e of container.env ?? []) {
    if (e.valueFrom?.configMapKeyRef?.name) wanted.add(`configmaps/${e.valueFrom.configMapKeyRef.name}`);
    if (e.valueFrom?.secretKeyRef?.name) wanted.add(`secrets/${e.valueFrom.secretKeyRef.name}`);
  }
  const out: EnvObjects = new Map();
  await Promise.all(
    [...wanted].map(async (key) => {
      const [kind, name] = [key.slice(0, key.indexOf('/')), key.slice(key.indexOf('/') + 1)];
      if (!objects) return void out.set(key, undefined);
      try {
        out.set(key, kind === 'configmaps' ? await objects.configMap(ns, name) : await objects.secret(ns, name));
      } catch (err) {
        out.set(key, err instanceof Error ? err : new Error(String(err)));
      }
    }),
  );
  return out;
}

/** The key → value data of a ConfigMap (data and binaryData) or a Secret (base64 data, and stringData of local files). */
function dataOf(kind: 'configmaps' | 'secrets', obj: V1ConfigMap | V1Secret): Map<string, string> {
  const m = new Map<string, string>();
  if (kind === 'configmaps') {
    const cm = obj as V1ConfigMap;
    for (const [k, v] of Object.entries(cm.data ?? {})) m.set(k, v);
    for (const [k, v] of Object.entries(cm.binaryData ?? {})) m.set(k, Buffer.from(v, 'base64').toString('utf8'));
  } else {
    const s = obj as V1Secret;
    for (const [k, v] of Object.entries(s.data ?? {})) m.set(k, Buffer.from(v, 'base64').toString('utf8'));
    for (const [k, v] of Object.entries(s.stringData ?? {})) m.set(k, v);
  }
  return m;
}

const KIND_NAME = { configmaps: ['configmap', 'ConfigMap'], secrets: ['secret', 'Secret'] } as const;

/**
 * The container's environment in order. Throws ContainerConfigError naming the missing
 * object or key; `onInvalidKeys` hears of envFrom keys skipped because they are no env var names.
 */
export function containerEnv(
  pod: V1Pod,
  container: V1Container,
  objects: EnvObjects,
  inputs: DownwardInputs,
  onInvalidKeys?: (r: InvalidEnvKeys) => void,
  /** The pod's service link variables (service-links.ts): `$(VAR)` sees them after the container's own; appended where the container does not define them. */
  serviceEnv: ReadonlyMap<string, string> = new Map(),
): KeyValue[] {
  const ns = pod.metadata?.namespace ?? 'default';
  const defined = new Map<string, string>();
  /** The object of a reference: undefined when absent (and optional), else an error naming it. */
  const lookup = (kind: 'configmaps' | 'secrets', name: string, optional: boolean): Map<string, string> | undefined => {
    const obj = objects.get(`${kind}/${name}`);
    if (obj instanceof Error) throw new ContainerConfigError(`${KIND_NAME[kind][0]} "${name}": ${obj.message}`);
    if (obj === undefined) {
      if (optional) return undefined;
      throw new ContainerConfigError(`${KIND_NAME[kind][0]} "${name}" not found`);
    }
    return dataOf(kind, obj);
  };
  for (const f of container.envFrom ?? []) {
    const kind = f.configMapRef ? 'configmaps' : f.secretRef ? 'secrets' : undefined;
    if (!kind) continue;
    const ref = (f.configMapRef ?? f.secretRef)!;
    const data = lookup(kind, ref.name ?? '', ref.optional === true);
    if (!data) continue;
    const invalid: string[] = [];
    for (const [k, v] of [...data].sort(([a], [b]) => (a < b ? -1 : 1))) {
      const name = `${f.prefix ?? ''}${k}`;
      if (!ENV_NAME.test(name)) {
        invalid.push(name);
        continue;
      }
      defined.set(name, v);
    }
    if (invalid.length > 0) onInvalidKeys?.({ source: `${KIND_NAME[kind][1]} ${ns}/${ref.name}`, keys: invalid });
  }
  for (const e of container.env ?? []) {
    let value: string | undefined;
    const from = e.valueFrom;
    try {
      if (from?.fieldRef) value = fieldRefValue(pod, from.fieldRef.fieldPath, 'env', inputs);
      else if (from?.resourceFieldRef) value = resourceFieldValue(pod, container, from.resourceFieldRef, inputs);
      else if (from?.configMapKeyRef || from?.secretKeyRef) {
        const kind = from.configMapKeyRef ? 'configmaps' : 'secrets';
        const ref = (from.configMapKeyRef ?? from.secretKeyRef)!;
        const data = lookup(kind, ref.name ?? '', ref.optional === true);
        if (!data) continue;
        value = data.get(ref.key);
        if (value === undefined) {
          if (ref.optional) continue;
          throw new ContainerConfigError(`couldn't find key ${ref.key} in ${KIND_NAME[kind][1]} ${ns}/${ref.name}`);
        }
      } else if (from) {
        // A source newer than this kubelet (fileKeyRef, v1.34) is named, not run with an empty value.
        const other = Object.keys(from).find((k) => (from as Record<string, unknown>)[k] !== undefined && (from as Record<string, unknown>)[k] !== null);
        throw new ContainerConfigError(other
          ? `env ${e.name}: valueFrom.${other} is not supported by this kubelet (it reads fieldRef, resourceFieldRef, configMapKeyRef and secretKeyRef)`
          : `env ${e.name}: valueFrom has no source (fieldRef, resourceFieldRef, configMapKeyRef or secretKeyRef)`);
      } else value = expandVars(e.value ?? '', (name) => defined.get(name) ?? serviceEnv.get(name));
    } catch (err) {
      if (err instanceof DownwardApiError) throw new ContainerConfigError(`env ${e.name}: ${err.message}`);
      throw err;
    }
    defined.set(e.name, value ?? '');
  }
  for (const [k, v] of serviceEnv) if (!defined.has(k)) defined.set(k, v);
  return [...defined].map(([key, value]) => ({ key, value }));
}

/** The machine's capacity, when the node's allocatable is not known (standalone, before registration). */
export function machineAllocatable(): { cpu: number; memory: number; 'ephemeral-storage': number } {
  return { cpu: os.availableParallelism(), memory: os.totalmem(), 'ephemeral-storage': 0 };
}
