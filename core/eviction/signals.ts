/**
 * Eviction signals observed from one stats collection, as upstream's makeSignalObservations
 * computes them (pkg/kubelet/eviction/helpers.go):
 *   memory.available    = node memory capacity - working set (usage - total_inactive_file of the root memory cgroup)
 *   nodefs.available    = statfs(rootDir) free blocks for unprivileged users; capacity its size
 *   nodefs.inodesFree   = statfs(rootDir) free inodes; capacity its inodes
 *   imagefs.available   = the runtime's image filesystem (CRI ImageFsInfo, statfs of its mount point)
 *   imagefs.inodesFree  = the same, inodes
 *   pid.available       = pid_max - processes on the host
 * A signal the collection could not read is absent: no threshold of it is met (upstream too).
 */
import type { EvictionSignal } from '../config/types.ts';
import type { Summary } from '../stats/summary-types.ts';

/** What a signal shows now: available and the capacity percentages are taken of. */
export interface SignalObservation { available: number; capacity: number }

export type SignalObservations = Map<EvictionSignal, SignalObservation>;

export function observeSignals(summary: Summary): SignalObservations {
  const out: SignalObservations = new Map();
  const set = (signal: EvictionSignal, available: number | undefined, capacity: number | undefined) => {
    if (available !== undefined && capacity !== undefined && Number.isFinite(available) && Number.isFinite(capacity)) out.set(signal, { available, capacity });
  };
  const mem = summary.node.memory;
  // The stats service computes available as capacity - working set: capacity is their sum.
  if (mem?.availableBytes !== undefined && mem.workingSetBytes !== undefined) set('memory.available', mem.availableBytes, mem.availableBytes + mem.workingSetBytes);
  const nodefs = summary.node.fs;
  if (nodefs) {
    set('nodefs.available', nodefs.availableBytes, nodefs.capacityBytes);
    set('nodefs.inodesFree', nodefs.inodesFree, nodefs.inodes);
  }
  const imagefs = summary.node.runtime?.imageFs;
  if (imagefs) {
    set('imagefs.available', imagefs.availableBytes, imagefs.capacityBytes);
    set('imagefs.inodesFree', imagefs.inodesFree, imagefs.inodes);
  }
  const rlimit = summary.node.rlimit;
  if (rlimit?.maxpid !== undefined && rlimit.curproc !== undefined) set('pid.available', rlimit.maxpid - rlimit.curproc, rlimit.maxpid);
  return out;
}
