import type { SystemdUnits, UnitProperty } from '../systemd/systemd-manager.ts';
import type { CgroupDriver } from './cgroup-driver.ts';
import { cgroupExists, writeResourceFiles } from './cgroup-files.ts';
import type { CgroupMounts } from './cgroup-mounts.ts';
import { parentSlice, toSystemdPath, toSystemdSlice, type CgroupName } from './cgroup-name.ts';
import { CPU_PERIOD_US, MAX_SHARES, MIN_SHARES, sharesToWeight, type CgroupResources } from './cgroup-resources.ts';

/** systemd's "no limit" for a 64-bit property (UINT64_MAX). */
const INFINITY = 2n ** 64n - 1n;

/**
 * The systemd driver: each cgroup is a transient slice unit that systemd makes and owns
 * (`kubepods-burstable-pod<uid>.slice` under `kubepods-burstable.slice` under `kubepods.slice`),
 * with its limits as unit properties, as upstream's kubelet (through runc's libcontainer) asks
 * for them. Then the cgroup files are written with the exact values too: systemd rounds a CPU
 * quota to whole percent on some versions, and runc writes the files after systemd for the same
 * reason. Slices take no `Delegate=` (systemd allows it on services and scopes only); the
 * runtime's container scopes below are delegated by the runtime.
 */
export class SystemdDriver implements CgroupDriver {
  readonly name = 'systemd' as const;
  readonly version: 1 | 2;

  constructor(private readonly mounts: CgroupMounts, private readonly units: SystemdUnits) {
    this.version = mounts.version;
  }

  path(name: CgroupName): string {
    return toSystemdPath(name);
  }

  async ensure(name: CgroupName, resources: CgroupResources): Promise<void> {
    if (name.length === 0) throw new Error('the root slice is systemd\'s own');
    const slice = toSystemdSlice(name);
    const limits = this.resourceProperties(resources);
    const created = await this.units.startTransientUnit(slice, [
      ['Description', 's', `kubelet-ts ${this.path(name)}`],
      // A slice's parent is spelled by its name; Wants= makes systemd start it first.
      ['Wants', 'as', [parentSlice(name)]],
      ['DefaultDependencies', 'b', false],
      // Accounting on: the cgroup files the kubelet reads (and its children's controllers) exist.
      ['MemoryAccounting', 'b', true],
      ['CPUAccounting', 'b', true],
      ['IOAccounting', 'b', true],
      ['TasksAccounting', 'b', true],
      ...limits,
    ]);
    if (created === 'exists') {
      if (!(await cgroupExists(this.mounts, this.path(name)))) {
        // Loaded but stopped (still referenced): unload it and make it again.
        await this.units.stopUnit(slice);
        await this.ensure(name, resources);
        return;
      }
      await this.units.setUnitProperties(slice, limits);
    }
    await writeResourceFiles(this.mounts, this.path(name), resources);
  }

  async remove(name: CgroupName): Promise<void> {
    // A transient slice is unloaded, and its cgroup removed, once stopped.
    await this.units.stopUnit(toSystemdSlice(name));
  }

  exists(name: CgroupName): Promise<boolean> {
    return cgroupExists(this.mounts, this.path(name));
  }

  close(): Promise<void> {
    return this.units.close();
  }

  /** The unit properties of these resources, as runc converts them for systemd. */
  private resourceProperties(r: CgroupResources): UnitProperty[] {
    const period = r.cpuPeriodUs ?? CPU_PERIOD_US;
    // µs of CPU per second, rounded up to 10 ms (1 %): systemd versions that keep the quota
    // in whole percent would otherwise give the pod less than its limit.
    let quotaPerSec = INFINITY;
    if (r.cpuQuotaUs !== undefined) {
      const perSec = Math.ceil((r.cpuQuotaUs * 1_000_000) / period);
      quotaPerSec = BigInt(Math.ceil(perSec / 10_000) * 10_000);
    }
    const limit = (v: number | undefined) => (v === undefined ? INFINITY : BigInt(Math.floor(v)));
    const common: UnitProperty[] = [
      ['CPUQuotaPerSecUSec', 't', quotaPerSec],
      ['TasksMax', 't', limit(r.pidsLimit)],
    ];
    if (this.version === 2) {
      return [
        ['CPUWeight', 't', BigInt(sharesToWeight(r.cpuShares))],
        ['CPUQuotaPeriodUSec', 't', BigInt(period)],
        ['MemoryMax', 't', limit(r.memoryLimitBytes)],
        ...common,
      ];
    }
    return [
      ['CPUShares', 't', BigInt(Math.min(MAX_SHARES, Math.max(MIN_SHARES, Math.floor(r.cpuShares))))],
      ['MemoryLimit', 't', limit(r.memoryLimitBytes)],
      ...common,
    ];
  }
}
