import type { SharedClientOptions } from './apiserver/api-client.ts';
import type { MachineInfo } from './node/machine-info.ts';

/**
 * Which parts of a kubelet run, and what it shares with the other kubelets of its process: the
 * composition root's options for `kubelet-ts hollow` (many nodes in one process on an in-memory
 * runtime). A node run by `kubelet-ts run` takes none of them: every part runs.
 */
export interface KubeletOptions {
  /** The main port, the read-only port, the healthz port and the local socket. Default true. */
  servers?: boolean;
  /**
   * Node pressure on the host's disks and memory: eviction rounds, image GC and log rotation
   * (their node conditions are still reported, False). Default true.
   */
  nodePressure?: boolean;
  /**
   * Mounts on the host: tmpfs under secret and projected volumes and emptyDir `medium: Memory`,
   * subPath bind mounts, hostPath type checks, mount table reads. Off, volumes are plain
   * directories under the root dir (their content still comes from the API). Default true.
   */
  hostMounts?: boolean;
  /** A transport shared with other kubelets of the process, an identity to act as and the loaded kubeconfig, for the API clients. */
  api?: SharedClientOptions;
  /** What the node reads of the machine (capacity, identifiers) for admission and its Node status; default a fresh read of the host each time. */
  machineInfo?: () => Promise<MachineInfo>;
}
