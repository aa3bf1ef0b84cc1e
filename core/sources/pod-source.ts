import type { V1Pod } from '@kubernetes/client-node';

/**
 * A source of desired pods for this node (upstream kubelet: the file, http and apiserver
 * config sources). Each source reports its complete current set ("SET" semantics);
 * the pod config merger diffs consecutive sets.
 */
export interface PodSource {
  /** Source name used in annotations and logs: 'file', 'http', 'api'. */
  readonly name: string;
  /** Starts watching; calls `onSet` with the complete current set of this source's pods each time it may have changed (first call = initial state, even if empty). */
  start(onSet: (pods: V1Pod[]) => void): Promise<void>;
  /** Stops watching and releases watchers and timers. */
  stop(): Promise<void>;
}
