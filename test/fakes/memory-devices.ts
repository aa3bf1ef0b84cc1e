import { definePlugin, type ContainerAllocation, type Device, type DeviceProvider, type KubeletPlugin, type PreferredAllocationRequest } from '../../core/sdk/index.ts';

/**
 * An in-process device provider plugin, for unit tests of the device provider contract's own
 * logic: it registers `resourceName` in its start phase with the devices of `devices`, answers
 * `allocate` with a mount of `/tmp/<id>` per device (as upstream's sample device plugin does),
 * offers preferredAllocation and preStart. Every promise is a method a test may replace to break
 * one rule of the contract (fault injection, as in the other fakes).
 */
export class MemoryDevices implements DeviceProvider {
  resourceName: string;
  devices: Device[];
  preStarted: string[][] = [];

  constructor(resourceName: string, ids: string[]) {
    this.resourceName = resourceName;
    this.devices = ids.map((id) => ({ id, health: 'Healthy' }));
  }

  async allocate(ids: string[]): Promise<Partial<ContainerAllocation>> {
    for (const id of ids) if (!this.devices.some((d) => d.id === id && d.health === 'Healthy')) throw new Error(`invalid allocation request with non-existing device ${id}`);
    return { mounts: ids.map((id) => ({ containerPath: `/tmp/${id}`, hostPath: `/tmp/${id}`, readOnly: false })), envs: { MEMORY_DEVICES: ids.join(',') } };
  }

  async preferredAllocation(req: PreferredAllocationRequest): Promise<string[]> {
    return [...req.mustInclude, ...req.available.filter((id) => !req.mustInclude.includes(id))].slice(0, req.size);
  }

  async preStart(ids: string[]): Promise<void> {
    this.preStarted.push(ids);
  }

  /** The list sent at registration (and after each restart). */
  list(): Device[] {
    return this.devices.map((d) => ({ ...d }));
  }
}

/** The plugin: a fresh provider each start (a kubelet restart), made by `make`. */
export function memoryDevicePlugin(make: () => MemoryDevices): KubeletPlugin {
  return definePlugin({
    name: 'memory-devices',
    kind: 'device',
    apply(ctx) {
      ctx.onStart(() => {
        const provider = make();
        const registration = ctx.devices().register(provider);
        registration.update(provider.list());
        ctx.onClose(() => registration.close());
      });
    },
  });
}
