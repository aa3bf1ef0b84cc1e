import type { V1CSIVolumeSource, V1Pod } from '@kubernetes/client-node';
import crypto from 'node:crypto';

/** The volume context keys upstream adds when a CSIDriver has `podInfoOnMount: true`. */
export const CONTEXT_KEYS = {
  ephemeral: 'csi.storage.k8s.io/ephemeral',
  podName: 'csi.storage.k8s.io/pod.name',
  podNamespace: 'csi.storage.k8s.io/pod.namespace',
  podUID: 'csi.storage.k8s.io/pod.uid',
  serviceAccount: 'csi.storage.k8s.io/serviceAccount.name',
} as const;

/** Upstream's handle of an inline ephemeral volume: `csi-` + sha256(podUID + volume name). */
export function ephemeralVolumeHandle(podUID: string, volumeName: string): string {
  return `csi-${crypto.createHash('sha256').update(`${podUID}${volumeName}`).digest('hex')}`;
}

/**
 * The pod's identity in the volume context, as upstream's csiMountMgr.podAttributes() builds
 * it: the service account is the spec's as it is (empty for a static pod that names none;
 * only the API server's admission defaults it), and `ephemeral` says whether the volume is an
 * inline one ("true") or a PersistentVolume ("false").
 */
export function podInfo(pod: V1Pod, ephemeral = true): Record<string, string> {
  return {
    [CONTEXT_KEYS.podName]: pod.metadata?.name ?? '',
    [CONTEXT_KEYS.podNamespace]: pod.metadata?.namespace ?? 'default',
    [CONTEXT_KEYS.podUID]: pod.metadata?.uid ?? '',
    [CONTEXT_KEYS.serviceAccount]: pod.spec?.serviceAccountName ?? '',
    [CONTEXT_KEYS.ephemeral]: String(ephemeral),
  };
}

/**
 * The CSI access mode of an inline volume. Upstream gives inline volumes ReadWriteOnce and
 * maps it to SINGLE_NODE_MULTI_WRITER for a driver with that node capability (it can tell
 * one writer per node from one per pod), to SINGLE_NODE_WRITER otherwise.
 */
export function inlineAccessMode(nodeCapabilities: ReadonlySet<string>): 'SINGLE_NODE_MULTI_WRITER' | 'SINGLE_NODE_WRITER' {
  return nodeCapabilities.has('SINGLE_NODE_MULTI_WRITER') ? 'SINGLE_NODE_MULTI_WRITER' : 'SINGLE_NODE_WRITER';
}

/**
 * The NodePublishVolume request for an inline volume, field for field what upstream's kubelet
 * sends: no staging path (inline volumes are never staged), no publish context (there is no
 * ControllerPublish), the pod's `volumeAttributes` with the pod info merged over them when
 * the driver wants it, mount access with the volume's fsType and no mount flags.
 */
export function inlinePublishRequest(args: {
  pod: V1Pod;
  source: V1CSIVolumeSource;
  volumeId: string;
  targetPath: string;
  nodeCapabilities: ReadonlySet<string>;
  podInfoOnMount: boolean;
  secrets: Record<string, string>;
  /** The pod's fsGroup for a driver with VOLUME_MOUNT_GROUP (it mounts with that group). */
  volumeMountGroup?: string;
}): Record<string, unknown> {
  const { pod, source } = args;
  return {
    volumeId: args.volumeId,
    publishContext: {},
    stagingTargetPath: '',
    targetPath: args.targetPath,
    volumeCapability: { mount: { fsType: source.fsType ?? '', mountFlags: [], ...(args.volumeMountGroup ? { volumeMountGroup: args.volumeMountGroup } : {}) }, accessMode: { mode: inlineAccessMode(args.nodeCapabilities) } },
    readonly: source.readOnly === true,
    secrets: args.secrets,
    volumeContext: { ...(source.volumeAttributes ?? {}), ...(args.podInfoOnMount ? podInfo(pod) : {}) },
  };
}
