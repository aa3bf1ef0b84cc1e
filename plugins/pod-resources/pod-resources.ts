import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { isSidecar, type ContainerDevices, type DeviceManagerView } from 'kubelet-ts';

/** A podresources v1 ContainerDevices: one device, with its NUMA node when its provider gave one. */
export interface WireContainerDevices { resourceName: string; deviceIds: string[]; topology?: { nodes: Array<{ ID: string }> } }
export interface WireContainerResources { name: string; devices: WireContainerDevices[]; cpuIds: string[]; memory: never[]; dynamicResources: never[] }
export interface WirePodResources { name: string; namespace: string; containers: WireContainerResources[] }

/** The NUMA nodes of each device, by resource, as its provider reported them. */
type Topology = Map<string, Map<string, number[]>>;

function topologyOf(devices: DeviceManagerView): Topology {
  const out: Topology = new Map();
  for (const r of devices.resources()) out.set(r.resourceName, new Map(r.devices.map((d) => [d.id, d.numaNodes ?? []])));
  return out;
}

/**
 * Devices as upstream's podresources server lists them (containerDevicesFromResourceDeviceInstances):
 * one entry per device, and per NUMA node of a device that has several; without topology when
 * the provider gave none.
 */
function wireDevices(entries: Array<{ resourceName: string; deviceIds: string[] }>, topology: Topology): WireContainerDevices[] {
  const out: WireContainerDevices[] = [];
  for (const { resourceName, deviceIds } of entries) {
    for (const id of deviceIds) {
      const nodes = topology.get(resourceName)?.get(id) ?? [];
      if (nodes.length === 0) out.push({ resourceName, deviceIds: [id] });
      else for (const n of nodes) out.push({ resourceName, deviceIds: [id], topology: { nodes: [{ ID: String(n) }] } });
    }
  }
  return out;
}

/** The containers podresources reports: sidecars (restartable init containers), then the app containers, as upstream since sidecars. */
function reportedContainers(pod: V1Pod): V1Container[] {
  return [...(pod.spec?.initContainers ?? []).filter(isSidecar), ...(pod.spec?.containers ?? [])];
}

/** One pod's resources: each reported container with its devices (no exclusive CPUs or memory: kubelet-ts has no CPU or memory manager). */
export function podResources(pod: V1Pod, devices: DeviceManagerView, topology = topologyOf(devices)): WirePodResources {
  const uid = pod.metadata?.uid ?? '';
  const held = devices.allocations(uid);
  const of = (name: string): ContainerDevices[] => held.filter((a) => a.containerName === name);
  return {
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? 'default',
    containers: reportedContainers(pod).map((c) => ({ name: c.name, devices: wireDevices(of(c.name), topology), cpuIds: [], memory: [], dynamicResources: [] })),
  };
}

/** List: every pod the kubelet knows. */
export function listPodResources(pods: V1Pod[], devices: DeviceManagerView): WirePodResources[] {
  const topology = topologyOf(devices);
  return pods.map((p) => podResources(p, devices, topology));
}

/** GetAllocatableResources: every healthy device (upstream GetAllocatableDevices). */
export function allocatableDevices(devices: DeviceManagerView): WireContainerDevices[] {
  const topology = topologyOf(devices);
  return wireDevices(devices.resources().map((r) => ({ resourceName: r.resourceName, deviceIds: r.devices.filter((d) => d.health === 'Healthy').map((d) => d.id) })), topology);
}
