import type { V1Pod } from '@kubernetes/client-node';
import { jsonEqual, readinessGateStates } from '../objects/pod-util.ts';

export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE';

/** One change to the set of pods the kubelet should run. */
export interface PodUpdate { op: PodOperation; pods: V1Pod[]; source: string }

/**
 * Merges the pod sets that sources report (each source sends its whole set) into
 * ADD / UPDATE / REMOVE updates, as upstream's PodConfig does, and remembers which sources
 * have reported at least once (the kubelet only removes unknown pods after all have).
 */
export class PodConfig {
  /**
   * Each source's current pods by UID. A source sends its whole set at every change, and keeps
   * the objects of the pods that did not change: the same object is the same pod, and only a
   * new object of a known pod is compared with the old one (a node of pods with thousands of
   * env vars or volumes spent most of its CPU serialising them for fingerprints).
   */
  private readonly bySource = new Map<string, Map<string, V1Pod>>();

  constructor(private readonly onUpdate: (update: PodUpdate) => void) {}

  /** Takes a source's complete current set. */
  set(source: string, pods: V1Pod[]): void {
    const prev = this.bySource.get(source) ?? new Map<string, V1Pod>();
    const next = new Map<string, V1Pod>();
    const added: V1Pod[] = [];
    const updated: V1Pod[] = [];
    for (const pod of pods) {
      const uid = pod.metadata!.uid!;
      next.set(uid, pod);
      const old = prev.get(uid);
      if (!old) added.push(pod);
      else if (old !== pod && !jsonEqual(desiredView(old), desiredView(pod))) updated.push(pod);
    }
    const removed = [...prev.entries()].filter(([uid]) => !next.has(uid)).map(([, p]) => p);
    this.bySource.set(source, next);
    if (removed.length) this.onUpdate({ op: 'REMOVE', pods: removed, source });
    if (added.length) this.onUpdate({ op: 'ADD', pods: added, source });
    if (updated.length) this.onUpdate({ op: 'UPDATE', pods: updated, source });
  }

  /** True once every named source has reported at least once. */
  seenAll(sources: string[]): boolean {
    return sources.every((s) => this.bySource.has(s));
  }
}

/** What an UPDATE is about: the spec, labels, annotations, deletion and readiness gates (not the status). */
function desiredView(pod: V1Pod): unknown {
  const m = pod.metadata;
  return { spec: pod.spec, labels: m?.labels, annotations: m?.annotations, deletion: m?.deletionTimestamp, grace: m?.deletionGracePeriodSeconds, gates: readinessGateStates(pod) };
}
