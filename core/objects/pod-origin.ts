/** Where a pod came from, by the `kubernetes.io/config.source` annotation every source sets. */
import type { V1Pod } from '@kubernetes/client-node';

/** Annotation keys used by the kubelet (upstream pkg/kubelet/types/pod_update.go). */
export const CONFIG_SOURCE_ANNOTATION = 'kubernetes.io/config.source';
export const CONFIG_HASH_ANNOTATION = 'kubernetes.io/config.hash';
export const CONFIG_SEEN_ANNOTATION = 'kubernetes.io/config.seen';
export const CONFIG_MIRROR_ANNOTATION = 'kubernetes.io/config.mirror';

/** Sources whose pods are static: they get mirror pods (upstream: every source but the API server). */
const STATIC_SOURCES = new Set(['file', 'http']);

/** A pod the API server assigned to this node. */
export const isApiPod = (pod: V1Pod) => pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] === 'api';
/** A static pod (manifest directory or URL). */
export const isStaticPod = (pod: V1Pod) => STATIC_SOURCES.has(pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] ?? '');
/** True for a mirror pod (an API object standing for a static pod), which the kubelet never runs. */
export function isMirrorPod(pod: V1Pod): boolean {
  return pod.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== undefined;
}
