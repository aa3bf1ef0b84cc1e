/**
 * Node capacity and allocatable, as upstream computes them (nodestatus.MachineInfo with
 * cm.GetNodeAllocatableReservation): capacity comes from the machine; allocatable is capacity
 * minus systemReserved, kubeReserved and the hard eviction thresholds of memory.available and
 * nodefs.available, never below 0, and memory allocatable also loses the memory held as huge
 * pages. Pure functions over exact quantities.
 */
import type { EvictionSignal, ReservedResources } from '../config/types.ts';
import type { MachineInfo } from './machine-info.ts';
import { add, formatQuantity, milliQuantity, parseQuantity, quantityOf, quantityValue, subtract, type Quantity } from './resource-quantity.ts';

export type ResourceList = Record<string, Quantity>;

/** The resource name of a huge page size: 'hugepages-2Mi', 'hugepages-1Gi'. */
export function hugePageResourceName(pageSizeKiB: number): string {
  return `hugepages-${formatQuantity(quantityOf(BigInt(pageSizeKiB) * 1024n, 'BinarySI'))}`;
}

/**
 * Capacity from the machine, as cAdvisor's CapacityFromMachineInfo and the kubelet fill it:
 * cpu (cores, DecimalSI), memory (bytes, BinarySI), hugepages-<size> for every size the kernel
 * offers (0 when none are reserved), pods (maxPods) and ephemeral-storage (the root dir's
 * filesystem, BinarySI).
 */
export function machineCapacity(info: Pick<MachineInfo, 'numCores' | 'memoryCapacityBytes' | 'hugePages' | 'rootfsCapacityBytes'>, maxPods: number): ResourceList {
  const capacity: ResourceList = {
    cpu: milliQuantity(BigInt(info.numCores) * 1000n, 'DecimalSI'),
    memory: quantityOf(info.memoryCapacityBytes, 'BinarySI'),
  };
  for (const hp of info.hugePages) {
    capacity[hugePageResourceName(hp.pageSizeKiB)] = quantityOf(BigInt(hp.pageSizeKiB) * 1024n * BigInt(hp.numPages), 'BinarySI');
  }
  capacity.pods = quantityOf(maxPods, 'DecimalSI');
  if (info.rootfsCapacityBytes !== undefined) capacity['ephemeral-storage'] = quantityOf(info.rootfsCapacityBytes, 'BinarySI');
  return capacity;
}

/**
 * A threshold's quantity against a capacity (upstream evictionapi.GetThresholdQuantity): a
 * quantity as given, or a percentage of capacity computed as upstream does it, with the
 * percentage as a float32 (strconv.ParseFloat(s, 32) / 100) and the product truncated, so
 * '10%' of 18446032Ki reserves exactly what upstream reserves.
 */
export function thresholdQuantity(threshold: string, capacity: Quantity): Quantity {
  const t = threshold.trim();
  if (t.endsWith('%')) {
    const pct = Math.fround(Math.fround(Number(t.slice(0, -1))) / 100);
    if (!Number.isFinite(pct) || pct < 0 || pct > 1) throw new Error(`invalid percentage ${JSON.stringify(threshold)}`);
    return quantityOf(BigInt(Math.trunc(Number(quantityValue(capacity)) * pct)), 'BinarySI');
  }
  return parseQuantity(t);
}

export interface ReservationConfig {
  systemReserved: ReservedResources;
  kubeReserved: ReservedResources;
  evictionHard: Partial<Record<EvictionSignal, string>>;
}

/**
 * What allocatable holds back from each resource of capacity (upstream
 * GetNodeAllocatableReservation): systemReserved + kubeReserved + the hard eviction
 * reservation (memory.available → memory, nodefs.available → ephemeral-storage). Resources
 * not in capacity are ignored; zero reservations are left out.
 */
export function allocatableReservation(capacity: ResourceList, cfg: ReservationConfig): ResourceList {
  const eviction: ResourceList = {};
  const memAvail = cfg.evictionHard['memory.available'];
  if (memAvail !== undefined && capacity.memory) eviction.memory = thresholdQuantity(memAvail, capacity.memory);
  const fsAvail = cfg.evictionHard['nodefs.available'];
  if (fsAvail !== undefined && capacity['ephemeral-storage']) eviction['ephemeral-storage'] = thresholdQuantity(fsAvail, capacity['ephemeral-storage']);
  const out: ResourceList = {};
  for (const name of Object.keys(capacity)) {
    let value: Quantity = { milli: 0n, format: 'DecimalSI' };
    for (const part of [(cfg.systemReserved as Record<string, string | undefined>)[name], (cfg.kubeReserved as Record<string, string | undefined>)[name]]) {
      if (part !== undefined) value = add(value, parseQuantity(part));
    }
    if (eviction[name]) value = add(value, eviction[name]);
    if (value.milli !== 0n) out[name] = value;
  }
  return out;
}

/** Allocatable: capacity − reservation per resource, floored at 0, and memory − huge pages (upstream nodestatus.MachineInfo). */
export function nodeAllocatable(capacity: ResourceList, reservation: ResourceList): ResourceList {
  const floor = (q: Quantity): Quantity => (q.milli < 0n ? { milli: 0n, format: q.format } : q);
  const out: ResourceList = {};
  for (const [name, cap] of Object.entries(capacity)) {
    out[name] = floor(reservation[name] ? subtract(cap, reservation[name]) : cap);
  }
  if (out.memory) {
    for (const [name, cap] of Object.entries(capacity)) {
      if (name.startsWith('hugepages-')) out.memory = floor(subtract(out.memory, cap));
    }
  }
  return out;
}

/** A resource list as the API writes it: canonical quantity strings. */
export function formatResourceList(list: ResourceList): Record<string, string> {
  return Object.fromEntries(Object.entries(list).map(([k, q]) => [k, formatQuantity(q)]));
}
