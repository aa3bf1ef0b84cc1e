import type { ReservedResources } from '../config/types.ts';
import type { ResourceList } from '../node/allocatable.ts';
import { parseQuantity, quantityValue } from '../node/resource-quantity.ts';
import { milliCPUToShares, type CgroupResources } from './cgroup-resources.ts';

/**
 * The resources of the `kubepods` cgroup, as upstream's node allocatable enforcement sets them:
 * with `pods` in enforceNodeAllocatable, the node's capacity less systemReserved and
 * kubeReserved (not the eviction thresholds: the eviction manager acts before the kernel
 * would), so the pods together can never take what is reserved for the system; without it, the
 * node's capacity. `pidMax` is the kernel's pid_max, the capacity of `pid`.
 */
export function kubepodsResources(opts: {
  capacity: ResourceList;
  systemReserved: ReservedResources;
  kubeReserved: ReservedResources;
  enforcePods: boolean;
  pidMax?: number | undefined;
}): CgroupResources {
  const reserved = (name: 'cpu' | 'memory' | 'pid'): { milli: bigint; value: bigint } => {
    let milli = 0n;
    let value = 0n;
    if (!opts.enforcePods) return { milli, value };
    for (const part of [opts.systemReserved[name], opts.kubeReserved[name]]) {
      if (part === undefined) continue;
      const q = parseQuantity(part);
      milli += q.milli;
      value += quantityValue(q);
    }
    return { milli, value };
  };
  const cpuMilli = opts.capacity.cpu ? opts.capacity.cpu.milli - reserved('cpu').milli : 0n;
  const memory = opts.capacity.memory ? quantityValue(opts.capacity.memory) - reserved('memory').value : undefined;
  const pidsReserved = reserved('pid').value;
  const out: CgroupResources = { cpuShares: milliCPUToShares(Number(cpuMilli > 0n ? cpuMilli : 0n)) };
  if (memory !== undefined && memory > 0n) out.memoryLimitBytes = Number(memory);
  if (opts.enforcePods && pidsReserved > 0n && opts.pidMax !== undefined) out.pidsLimit = Math.max(1, opts.pidMax - Number(pidsReserved));
  return out;
}
