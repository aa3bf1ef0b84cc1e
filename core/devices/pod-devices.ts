/**
 * Which devices each container of each pod holds, with what its provider answered for them
 * (upstream podDevices): the allocation state the checkpoint keeps across restarts.
 */
import type { ContainerAllocation, ContainerDevices } from './device-types.ts';

/** One container's devices of one resource and the provider's answer for them. */
export interface PodDevicesEntry {
  podUID: string;
  containerName: string;
  resourceName: string;
  deviceIds: string[];
  allocation: ContainerAllocation;
}

type ByResource = Map<string, { deviceIds: string[]; allocation: ContainerAllocation }>;

export class PodDevices {
  /** pod UID → container name → resource name → devices. */
  private readonly pods = new Map<string, Map<string, ByResource>>();

  insert(e: PodDevicesEntry): void {
    let containers = this.pods.get(e.podUID);
    if (!containers) this.pods.set(e.podUID, (containers = new Map()));
    let resources = containers.get(e.containerName);
    if (!resources) containers.set(e.containerName, (resources = new Map()));
    resources.set(e.resourceName, { deviceIds: [...e.deviceIds], allocation: e.allocation });
  }

  /** The devices of `resource` a container holds, or undefined when it holds none. */
  containerDevices(podUID: string, containerName: string, resource: string): Set<string> | undefined {
    const ids = this.pods.get(podUID)?.get(containerName)?.get(resource)?.deviceIds;
    return ids ? new Set(ids) : undefined;
  }

  /** Each resource's devices of one container. */
  containerResources(podUID: string, containerName: string): Array<[string, string[]]> {
    return [...(this.pods.get(podUID)?.get(containerName) ?? new Map())].map(([r, v]) => [r, [...v.deviceIds]]);
  }

  /** Each resource's answer for one container. */
  containerAllocations(podUID: string, containerName: string): Array<[string, ContainerAllocation]> {
    return [...(this.pods.get(podUID)?.get(containerName) ?? new Map())].map(([r, v]) => [r, v.allocation]);
  }

  hasPod(podUID: string): boolean {
    return this.pods.has(podUID);
  }

  podUIDs(): string[] {
    return [...this.pods.keys()];
  }

  /** Forgets pods; true if any was known. */
  remove(podUIDs: Iterable<string>): boolean {
    let any = false;
    for (const uid of podUIDs) any = this.pods.delete(uid) || any;
    return any;
  }

  /** The devices in use, by resource. */
  allocated(): Map<string, Set<string>> {
    const out = new Map<string, Set<string>>();
    for (const containers of this.pods.values()) {
      for (const resources of containers.values()) {
        for (const [resource, { deviceIds }] of resources) {
          let set = out.get(resource);
          if (!set) out.set(resource, (set = new Set()));
          for (const id of deviceIds) set.add(id);
        }
      }
    }
    return out;
  }

  /** The allocations, of one pod with `podUID`, as the podresources API lists them. */
  list(podUID?: string): ContainerDevices[] {
    return this.entries(podUID).map(({ podUID: p, containerName, resourceName, deviceIds }) => ({ podUID: p, containerName, resourceName, deviceIds: [...deviceIds] }));
  }

  entries(podUID?: string): PodDevicesEntry[] {
    const out: PodDevicesEntry[] = [];
    for (const [uid, containers] of this.pods) {
      if (podUID !== undefined && uid !== podUID) continue;
      for (const [containerName, resources] of containers) {
        for (const [resourceName, { deviceIds, allocation }] of resources) out.push({ podUID: uid, containerName, resourceName, deviceIds: [...deviceIds], allocation });
      }
    }
    return out;
  }
}
