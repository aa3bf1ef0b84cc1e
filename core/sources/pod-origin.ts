/** Where a pod came from, by the `kubernetes.io/config.source` annotation every source sets. */
import type { V1Pod } from '@kubernetes/client-node';
import { CONFIG_SOURCE_ANNOTATION } from './manifest.ts';

/** Sources whose pods are static: they get mirror pods (upstream: every source but the API server). */
const STATIC_SOURCES = new Set(['file', 'http']);

/** A pod the API server assigned to this node. */
export const isApiPod = (pod: V1Pod) => pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] === 'api';
/** A static pod (manifest directory or URL). */
export const isStaticPod = (pod: V1Pod) => STATIC_SOURCES.has(pod.metadata?.annotations?.[CONFIG_SOURCE_ANNOTATION] ?? '');
