import type { V1Pod } from '@kubernetes/client-node';
import { canonicalJSON, readinessGateStates } from '../objects/pod-util.ts';

export type PodOperation = 'ADD' | 'UPDATE' | 'REMOVE';

/** One change to the set of pods the kubelet should run. */
export interface PodUpdate { op: PodOperation; pods: V1Pod[]; source: string }

/**
 * Merges the pod sets that sources report (each source sends its whole set) into
 * ADD / UPDATE / REMOVE updates, as upstream's PodConfig does, and remembers which sources
 * have reported at least once (the kubelet only removes unknown pods after all have).
 */
export class PodConfig {
  private readonly bySource = new Map<string, Map<string, { pod: V1Pod; fingerprint: string }>>();
  /**
   * Fingerprints by pod object. A source sends its whole set at every change, and keeps the
   * objects of the pods that did not change: their fingerprints are not computed again (a node
   * of pods with thousands of env vars or volumes spent most of its CPU re-serialising them).
   */
  private readonly fingerprints = new WeakMap<V1Pod, string>();

  constructor(private readonly onUpdate: (update: PodUpdate) => void) {}

  /** Takes a source's complete current set. */
  set(source: string, pods: V1Pod[]): void {
    const prev = this.bySource.get(source) ?? new Map();
    const next = new Map<string, { pod: V1Pod; fingerprint: string }>();
    const added: V1Pod[] = [];
    const updated: V1Pod[] = [];
    for (const pod of pods) {
      const uid = pod.metadata!.uid!;
      const fingerprint = this.fingerprintOf(pod);
      next.set(uid, { pod, fingerprint });
      const old = prev.get(uid);
      if (!old) added.push(pod);
      else if (old.fingerprint !== fingerprint) updated.push(pod);
    }
    const removed = [...prev.entries()].filter(([uid]) => !next.has(uid)).map(([, e]) => e.pod);
    this.bySource.set(source, next);
    if (removed.length) this.onUpdate({ op: 'REMOVE', pods: removed, source });
    if (added.length) this.onUpdate({ op: 'ADD', pods: added, source });
    if (updated.length) this.onUpdate({ op: 'UPDATE', pods: updated, source });
  }

  /** What an UPDATE is about: the spec, labels, annotations, deletion and readiness gates (not the status). */
  private fingerprintOf(pod: V1Pod): string {
    let f = this.fingerprints.get(pod);
    if (f === undefined) {
      f = canonicalJSON({ spec: pod.spec, labels: pod.metadata?.labels, annotations: pod.metadata?.annotations, deletion: pod.metadata?.deletionTimestamp, grace: pod.metadata?.deletionGracePeriodSeconds, gates: readinessGateStates(pod) });
      this.fingerprints.set(pod, f);
    }
    return f;
  }

  /** True once every named source has reported at least once. */
  seenAll(sources: string[]): boolean {
    return sources.every((s) => this.bySource.has(s));
  }
}
