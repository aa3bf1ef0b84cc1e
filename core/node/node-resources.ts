/**
 * The node's capacity and allocatable as this kubelet computes them from the machine and its
 * reservations (the same arithmetic its Node status posts): what admission fits pods against
 * and what the downward API reports for a limit a container does not set.
 */
import type { KubeletConfig } from '../config/types.ts';
import { allocatableReservation, machineCapacity, nodeAllocatable, type ResourceList } from './allocatable.ts';
import { readMachineInfo, type MachineInfo } from './machine-info.ts';
import { quantityValue } from './resource-quantity.ts';

export interface NodeResources {
  capacity: ResourceList;
  allocatable: ResourceList;
}

export async function readNodeResources(
  config: Pick<KubeletConfig, 'rootDir' | 'maxPods' | 'systemReserved' | 'kubeReserved' | 'evictionHard'>,
  machineInfo: () => Promise<MachineInfo> = () => readMachineInfo({ rootDir: config.rootDir }),
): Promise<NodeResources> {
  const capacity = machineCapacity(await machineInfo(), config.maxPods);
  return { capacity, allocatable: nodeAllocatable(capacity, allocatableReservation(capacity, config)) };
}

/** A resource of a list as a plain number: cpu in cores, the rest in base units (0 when absent). */
export function resourceNumber(list: ResourceList, name: string): number {
  const q = list[name];
  if (!q) return 0;
  return name === 'cpu' ? Number(q.milli) / 1000 : Number(quantityValue(q));
}
