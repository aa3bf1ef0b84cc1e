import type { V1FlexPersistentVolumeSource, V1FlexVolumeSource, V1Pod, V1Secret } from '@kubernetes/client-node';

/** The source of a flexVolume, inline or a PersistentVolume's, with where its Secret is. */
export interface FlexSource {
  source: V1FlexVolumeSource | V1FlexPersistentVolumeSource;
  readOnly: boolean;
  /** The pod's volume name, or the PersistentVolume's name (upstream's pvOrVolumeName). */
  pvOrVolumeName: string;
  secret?: { namespace: string; name: string };
  /** Names the source in errors. */
  field: string;
}

/**
 * The JSON options a driver's `mount` gets, keyed as upstream keys them: the source's
 * `options`, then `kubernetes.io/fsType`, `readwrite`, `pvOrVolumeName`, the pod's name,
 * namespace, UID and service account, its fsGroup, and each key of the Secret as
 * `kubernetes.io/secret/<key>` (base64, as upstream sends it). A source option under the
 * reserved `kubernetes.io/` prefix is refused (the API server refuses it too; a static pod is
 * not checked by one): it would let a pod tell the driver it is another pod.
 */
export function driverOptions(pod: V1Pod, src: FlexSource, secret: V1Secret | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(src.source.options ?? {})) {
    if (k.toLowerCase().startsWith('kubernetes.io/')) throw new Error(`${src.field}.options: key ${JSON.stringify(k)} is reserved (the kubernetes.io/ prefix is the kubelet's)`);
    if (typeof v !== 'string') throw new Error(`${src.field}.options: the value of ${JSON.stringify(k)} is not a string`);
    out[k] = v;
  }
  out['kubernetes.io/fsType'] = src.source.fsType ?? '';
  out['kubernetes.io/readwrite'] = src.readOnly ? 'ro' : 'rw';
  out['kubernetes.io/pvOrVolumeName'] = src.pvOrVolumeName;
  out['kubernetes.io/pod.name'] = pod.metadata?.name ?? '';
  out['kubernetes.io/pod.namespace'] = pod.metadata?.namespace ?? '';
  out['kubernetes.io/pod.uid'] = pod.metadata?.uid ?? '';
  out['kubernetes.io/serviceAccount.name'] = pod.spec?.serviceAccountName ?? pod.spec?.serviceAccount ?? 'default';
  const fsGroup = pod.spec?.securityContext?.fsGroup;
  if (fsGroup !== undefined && fsGroup !== null) out['kubernetes.io/fsGroup'] = String(fsGroup);
  for (const [k, v] of Object.entries(secret?.data ?? {})) out[`kubernetes.io/secret/${k}`] = v;
  for (const [k, v] of Object.entries(secret?.stringData ?? {})) out[`kubernetes.io/secret/${k}`] = Buffer.from(v).toString('base64');
  return out;
}
