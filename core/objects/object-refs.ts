import type { V1PodSpec } from '@kubernetes/client-node';
import { containersOf } from './pod-util.ts';

/** The kinds of API objects a pod's volumes and env refer to by name (their resource names). */
export type ObjectKind = 'configmaps' | 'secrets';

/** One object a pod refers to. */
export interface ObjectRef { kind: ObjectKind; namespace: string; name: string }

/** The ConfigMaps and Secrets a pod refers to: volumes (also projected), env, envFrom, image pull secrets. */
export function objectRefsOf(pod: { metadata?: { namespace?: string }; spec?: V1PodSpec }): ObjectRef[] {
  const namespace = pod.metadata?.namespace ?? 'default';
  const out = new Map<string, ObjectRef>();
  const add = (kind: ObjectKind, name: unknown) => {
    if (typeof name === 'string' && name) out.set(`${kind}/${name}`, { kind, namespace, name });
  };
  const spec = pod.spec;
  for (const v of spec?.volumes ?? []) {
    add('configmaps', v.configMap?.name);
    add('secrets', v.secret?.secretName);
    add('secrets', v.csi?.nodePublishSecretRef?.name);
    for (const s of v.projected?.sources ?? []) {
      add('configmaps', s.configMap?.name);
      add('secrets', s.secret?.name);
    }
  }
  for (const c of containersOf(pod)) {
    for (const e of c.env ?? []) {
      add('configmaps', e.valueFrom?.configMapKeyRef?.name);
      add('secrets', e.valueFrom?.secretKeyRef?.name);
    }
    for (const f of c.envFrom ?? []) {
      add('configmaps', f.configMapRef?.name);
      add('secrets', f.secretRef?.name);
    }
  }
  for (const s of spec?.imagePullSecrets ?? []) add('secrets', s.name);
  return [...out.values()];
}
