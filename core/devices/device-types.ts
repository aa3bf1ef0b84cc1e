/**
 * The device manager as plugins see it (`ctx.devices()`, exported by the SDK): how a device
 * provider offers the devices of one extended resource (`vendor.example/gpu`) and how the kubelet
 * asks it for them, in the shape of upstream's device plugin API v1beta1 without its transport.
 * The built-in `device-plugins` plugin turns each gRPC device plugin into one of these; a vendor
 * may write one in-process instead.
 *
 * The life of a provider: `register` it (the newest registration of a resource wins, as
 * upstream), push its full device list with `update` whenever it changes (ListAndWatch), `close`
 * the registration when it goes away (its devices turn unhealthy at once; the resource leaves the
 * Node after a grace period unless a provider registers it again). The kubelet calls `allocate`
 * at pod admission, once per container needing the resource, `preferredAllocation` before it
 * (when offered) and `preStart` before each start of such a container (when offered).
 */
import type { CallOptions } from '../util/cancellation.ts';

/** A device's health, as the provider reports it (anything else counts as Unhealthy). */
export type DeviceHealth = 'Healthy' | 'Unhealthy';

/** One device of a resource. */
export interface Device {
  /** Unique within the resource; what allocations and the podresources API name. */
  id: string;
  health: DeviceHealth;
  /** The NUMA nodes the device is attached to (topology), if the provider knows them. */
  numaNodes?: number[];
}

/** A host path to mount into the container. */
export interface DeviceMount {
  containerPath: string;
  hostPath: string;
  readOnly: boolean;
}

/** A host device node to give the container, with its cgroup permissions (some of `r`, `w`, `m`). */
export interface DeviceNode {
  containerPath: string;
  hostPath: string;
  permissions: string;
}

/**
 * What a container gets for the devices allocated to it (upstream ContainerAllocateResponse):
 * environment variables, mounts, device nodes, CDI device names (passed to the runtime as CRI
 * `CDI_devices`, as upstream since DevicePluginCDIDevices went GA in 1.31) and annotations.
 */
export interface ContainerAllocation {
  envs: Record<string, string>;
  mounts: DeviceMount[];
  devices: DeviceNode[];
  annotations: Record<string, string>;
  cdiDevices: string[];
}

/** What `preferredAllocation` is asked (upstream ContainerPreferredAllocationRequest). */
export interface PreferredAllocationRequest {
  /** The devices the kubelet may choose from. */
  available: string[];
  /** Devices that must be in the answer (already given to the container). */
  mustInclude: string[];
  /** How many devices to answer. */
  size: number;
}

/** A source of the devices of one extended resource. */
export interface DeviceProvider {
  /** The extended resource: `domain/name`, outside `kubernetes.io` (`example.com/resource`). */
  resourceName: string;
  /**
   * Prepares `deviceIds` for one container and answers what the container must get. Called at
   * admission; a rejection (or an answer the kubelet refuses: see docs/operating/device-plugins.md) refuses the pod
   * with `UnexpectedAdmissionError`. Bounded by the kubelet (30 s). Every call takes `options`
   * last: its signal aborts when the kubelet gives up on the call (that bound), as the runtime's do.
   */
  allocate(deviceIds: string[], options?: CallOptions): Promise<Partial<ContainerAllocation>>;
  /** Offered: the kubelet asks which devices it prefers before it allocates (upstream GetPreferredAllocation). */
  preferredAllocation?(request: PreferredAllocationRequest, options?: CallOptions): Promise<string[]>;
  /** Offered: called before each start of a container with devices of this resource (upstream PreStartContainer); a rejection fails that start. */
  preStart?(deviceIds: string[], options?: CallOptions): Promise<void>;
}

/** A provider's registration: how it reports its devices and its end. */
export interface DeviceRegistration {
  /** The provider's full device list, replacing the one before (a ListAndWatch message). */
  update(devices: Device[]): void;
  /** The provider is gone: its devices turn unhealthy; harmless when repeated. */
  close(): void;
  /** Closed by `close()`, or replaced by a newer registration of the resource. */
  readonly closed: boolean;
}

/** One resource with its devices, as the device manager holds them now. */
export interface ResourceDevices {
  resourceName: string;
  devices: Device[];
  /** A provider is registered and serving (false: restored from the checkpoint, or its provider went away). */
  registered: boolean;
}

/** Devices of one resource allocated to one container of a pod. */
export interface ContainerDevices {
  podUID: string;
  containerName: string;
  resourceName: string;
  deviceIds: string[];
}

/** The device manager as a plugin uses it (`ctx.devices()`). */
export interface DeviceManagerView {
  /** Registers a provider; throws `InvalidInput` for a resource name that is not an extended resource name. */
  register(provider: DeviceProvider): DeviceRegistration;
  /** Every resource the manager knows, with its devices. */
  resources(): ResourceDevices[];
  /** The devices allocated to containers (of one pod, with `podUID`), for monitoring (podresources). */
  allocations(podUID?: string): ContainerDevices[];
}
