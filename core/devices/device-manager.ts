/**
 * The device manager, as upstream's (pkg/kubelet/cm/devicemanager) minus the transport: the
 * extended resources of every device provider with their devices and health, the Node's
 * capacity (every device) and allocatable (the healthy ones), allocation at pod admission
 * (init containers first, their devices reusable by the app containers), what an allocation
 * adds to a container, a checkpoint under the root dir so allocations survive a restart, and
 * freeing when a pod goes. Providers come from plugins through `view(plugin)` (the SDK's
 * `ctx.devices()`); the gRPC device plugin API is the `device-plugins` plugin's.
 *
 * A provider is another party: every call to it is bounded (CALL_TIMEOUT_MS), what it lists and
 * answers is checked (resource-names.ts, allocation-policy.ts), and nothing it does stops the
 * kubelet; a failure refuses the pod or the container start it was for, with its reason.
 */
import path from 'node:path';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage, invalidInput } from '../errors.ts';
import { quantityValue } from '../objects/quantity.ts';
import { AllocationRefused, acceptAllocation, mergeAllocations } from './allocation-policy.ts';
import { readCheckpoint, writeCheckpoint } from './device-checkpoint.ts';
import { PodDevices } from './pod-devices.ts';
import { deviceIdProblem, isExtendedResourceName, shownName } from './resource-names.ts';
import type { CallOptions } from '../util/cancellation.ts';
import type { ContainerAllocation, ContainerDevices, Device, DeviceManagerView, DeviceProvider, DeviceRegistration, ResourceDevices } from './device-types.ts';

/** Upstream's endpointStopGracePeriod: how long a resource whose provider went away stays on the Node. */
export const RESOURCE_GRACE_PERIOD_MS = 5 * 60_000;
/** How long one call to a provider may take (upstream's PreStartContainer bound; upstream sets none for Allocate). */
export const CALL_TIMEOUT_MS = 30_000;
/** The most devices one resource may list; a longer list is refused whole (the previous one stays). */
export const MAX_DEVICES_PER_RESOURCE = 10_000;
/** The most resources the node keeps. */
export const MAX_RESOURCES = 256;

/** The admission result when devices cannot be allocated (upstream's lifecycle.PodAdmitResult). */
export interface DeviceRejection { reason: string; message: string }

export interface DeviceManagerDeps {
  /** The kubelet's root dir: the checkpoint lives under it, and no allocated mount may reach it. */
  rootDir: string;
  logger: Logger;
  /** The pods that may hold devices: wanted or stopping, not finished (upstream activePods). */
  activePods(): V1Pod[];
  /** Every pod source has reported once, so a pod not active is really gone. */
  sourcesReady(): boolean;
  /** Some container of the pod runs in the runtime (after a kubelet restart its devices are its own). */
  podRunning(podUID: string): boolean;
  now?: () => number;
  gracePeriodMs?: number;
  callTimeoutMs?: number;
}

interface Registered {
  registration: Registration;
  provider: DeviceProvider;
  plugin: string;
}

interface ResourceState {
  devices: Map<string, Device>;
  /** The serving provider; undefined once it went away, or before it registers again after a restart. */
  serving: Registered | undefined;
  /** The last provider asked for PreStartContainer calls. */
  preStartRequired: boolean;
  /** When it lost its provider (or was restored from the checkpoint); undefined while served. */
  stoppedAt: number | undefined;
}

class Registration implements DeviceRegistration {
  closed = false;
  constructor(
    private readonly manager: DeviceManager,
    readonly resourceName: string,
  ) {}

  update(devices: Device[]): void {
    if (!this.closed) this.manager.updateDevices(this, devices);
  }

  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.manager.providerGone(this);
  }
}

/** `p`, or a rejection once `ms` passed. */
/** A provider call bounded by `ms`: past it the call fails and its signal aborts (the provider stops its work too). */
function bounded<T>(p: (options: CallOptions) => Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const controller = new AbortController();
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      const err = new Error(`${what} did not answer within ${ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`}`);
      controller.abort(err);
      reject(err);
    }, ms);
  });
  return Promise.race([Promise.resolve().then(() => p({ signal: controller.signal })), timeout]).finally(() => clearTimeout(timer));
}

const byId = (a: string, b: string) => (a < b ? -1 : a > b ? 1 : 0);
const isSidecar = (c: V1Container) => c.restartPolicy === 'Always';

/** How many devices a limit asks for (a whole number; API validation refuses others). */
function count(q: unknown): number {
  const v = quantityValue(q);
  return v === undefined || !Number.isFinite(v) || v < 0 ? 0 : Math.floor(v);
}

export class DeviceManager {
  private readonly resourcesByName = new Map<string, ResourceState>();
  private readonly podDevices = new PodDevices();
  /** Resources removed after their grace period: reported as 0 for the rest of this run, as upstream leaves them on the Node. */
  private readonly removed = new Set<string>();
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly checkpointFile: string;
  /** Allocations run one at a time (upstream admits pods one at a time). */
  private queue: Promise<unknown> = Promise.resolve();
  private writing: Promise<void> | undefined;
  private dirty = false;

  constructor(private readonly deps: DeviceManagerDeps) {
    this.log = deps.logger.child({ component: 'device-manager' });
    this.now = deps.now ?? Date.now;
    this.checkpointFile = path.join(deps.rootDir, 'device-manager', 'checkpoint.json');
  }

  private get grace(): number {
    return this.deps.gracePeriodMs ?? RESOURCE_GRACE_PERIOD_MS;
  }

  private get timeout(): number {
    return this.deps.callTimeoutMs ?? CALL_TIMEOUT_MS;
  }

  /** Reads the checkpoint: allocations come back, registered resources come back without devices until their provider registers again. */
  async start(): Promise<void> {
    let data;
    try {
      data = await readCheckpoint(this.checkpointFile, this.deps.rootDir);
    } catch (err) {
      this.log.warn({ file: this.checkpointFile, err: errorMessage(err) }, 'device manager checkpoint unusable; going on without it (allocations made before this start are forgotten)');
      return;
    }
    if (!data) return;
    for (const e of data.podDevices) this.podDevices.insert(e);
    for (const resource of Object.keys(data.registeredDevices)) {
      this.resourcesByName.set(resource, { devices: new Map(), serving: undefined, preStartRequired: false, stoppedAt: this.now() });
    }
    this.log.info({ pods: this.podDevices.podUIDs().length, resources: Object.keys(data.registeredDevices) }, 'device allocations restored from the checkpoint');
  }

  /** Writes what is pending of the checkpoint. */
  async stop(): Promise<void> {
    await this.queue.catch(() => {});
    await this.writing;
  }

  /** The device manager as plugin `plugin` sees it (`ctx.devices()`). */
  view(plugin: string): DeviceManagerView {
    return Object.freeze({
      register: (provider: DeviceProvider) => this.register(plugin, provider),
      resources: () => this.resources(),
      allocations: (podUID?: string) => this.allocations(podUID),
    });
  }

  register(plugin: string, provider: DeviceProvider): DeviceRegistration {
    const name = provider?.resourceName;
    if (!isExtendedResourceName(name)) throw invalidInput(`device provider of plugin '${plugin}': the resource name ${shownName(name)} is invalid: an extended resource name is 'domain/name', outside kubernetes.io`);
    if (typeof provider.allocate !== 'function') throw invalidInput(`device provider of ${name} (plugin '${plugin}') has no allocate function`);
    let state = this.resourcesByName.get(name);
    if (!state && this.resourcesByName.size >= MAX_RESOURCES) throw invalidInput(`device provider of ${name} (plugin '${plugin}'): the node already has ${MAX_RESOURCES} device resources`);
    if (!state) this.resourcesByName.set(name, (state = { devices: new Map(), serving: undefined, preStartRequired: false, stoppedAt: undefined }));
    // The newest registration wins, as upstream: the one before is closed without marking devices unhealthy.
    const previous = state.serving;
    if (previous) previous.registration.closed = true;
    const registration = new Registration(this, name);
    state.serving = { registration, provider, plugin };
    state.preStartRequired = typeof provider.preStart === 'function';
    state.stoppedAt = undefined;
    this.removed.delete(name);
    this.log.info({ resource: name, plugin, preStart: state.preStartRequired, preferredAllocation: typeof provider.preferredAllocation === 'function', replaced: previous !== undefined }, 'device provider registered');
    this.persist();
    return registration;
  }

  /** A provider's full device list (ListAndWatch), checked: a bad device is dropped, a list too long refused whole. */
  updateDevices(reg: Registration, devices: Device[]): void {
    const state = this.resourcesByName.get(reg.resourceName);
    if (!state || state.serving?.registration !== reg) return;
    const log = this.log.child({ resource: reg.resourceName, plugin: state.serving.plugin });
    if (!Array.isArray(devices)) {
      log.warn('device list refused: not a list');
      return;
    }
    if (devices.length > MAX_DEVICES_PER_RESOURCE) {
      log.warn({ devices: devices.length, max: MAX_DEVICES_PER_RESOURCE }, 'device list refused: too many devices; the previous list stays');
      return;
    }
    const next = new Map<string, Device>();
    const dropped: string[] = [];
    for (const d of devices) {
      const problem = deviceIdProblem(d?.id);
      if (problem) {
        dropped.push(problem);
        continue;
      }
      const numa = Array.isArray(d.numaNodes) && d.numaNodes.length <= 64 && d.numaNodes.every((n) => Number.isInteger(n) && n >= 0) ? [...d.numaNodes] : undefined;
      next.set(d.id, { id: d.id, health: d.health === 'Healthy' ? 'Healthy' : 'Unhealthy', ...(numa ? { numaNodes: numa } : {}) });
    }
    if (dropped.length > 0) log.warn({ dropped: dropped.length, first: dropped[0] }, 'devices dropped from the list');
    const healthyBefore = [...state.devices.values()].filter((d) => d.health === 'Healthy').length;
    state.devices = next;
    const healthy = [...next.values()].filter((d) => d.health === 'Healthy').length;
    if (healthy !== healthyBefore || next.size !== devices.length - dropped.length) log.info({ devices: next.size, healthy }, 'devices updated');
    else log.debug({ devices: next.size, healthy }, 'devices updated');
    this.persist();
  }

  /** The serving provider went away: its devices are unhealthy now, and the resource goes after the grace period. */
  providerGone(reg: Registration): void {
    const state = this.resourcesByName.get(reg.resourceName);
    if (!state || state.serving?.registration !== reg) return;
    for (const d of state.devices.values()) d.health = 'Unhealthy';
    this.log.info({ resource: reg.resourceName, plugin: state.serving.plugin, graceSeconds: this.grace / 1000 }, 'device provider gone: its devices are unhealthy');
    state.serving = undefined;
    state.stoppedAt = this.now();
    this.persist();
  }

  /** Drops resources whose provider has been gone longer than the grace period. */
  private expire(): void {
    const now = this.now();
    for (const [name, state] of this.resourcesByName) {
      if (state.stoppedAt === undefined || now - state.stoppedAt <= this.grace) continue;
      this.resourcesByName.delete(name);
      this.removed.add(name);
      this.log.info({ resource: name }, 'device resource removed: no provider registered it within the grace period');
      this.persist();
    }
  }

  resources(): ResourceDevices[] {
    this.expire();
    return [...this.resourcesByName].map(([resourceName, s]) => ({
      resourceName,
      registered: s.serving !== undefined,
      devices: [...s.devices.values()].map((d) => ({ ...d, ...(d.numaNodes ? { numaNodes: [...d.numaNodes] } : {}) })),
    }));
  }

  allocations(podUID?: string): ContainerDevices[] {
    this.freeInactive();
    return this.podDevices.list(podUID);
  }

  /**
   * What the Node reports: each resource's devices as capacity and its healthy devices as
   * allocatable; a resource removed after its grace period stays, at 0 (upstream: so it is told
   * apart from cluster-level extended resources).
   */
  nodeResources(): { capacity: Record<string, string>; allocatable: Record<string, string> } {
    this.expire();
    const capacity: Record<string, string> = {};
    const allocatable: Record<string, string> = {};
    for (const name of this.removed) capacity[name] = allocatable[name] = '0';
    for (const [name, s] of this.resourcesByName) {
      capacity[name] = String(s.devices.size);
      allocatable[name] = String([...s.devices.values()].filter((d) => d.health === 'Healthy').length);
    }
    return { capacity, allocatable };
  }

  /**
   * What admission fits extended resources against: each resource's healthy devices, and at
   * least what is allocated already (upstream sanitizeNodeAllocatable: admitted pods keep
   * passing when their plugin is away).
   */
  admissionAllocatable(): Record<string, number> {
    this.expire();
    const out: Record<string, number> = {};
    for (const [name, s] of this.resourcesByName) out[name] = [...s.devices.values()].filter((d) => d.health === 'Healthy').length;
    for (const [name, ids] of this.podDevices.allocated()) out[name] = Math.max(out[name] ?? 0, ids.size);
    return out;
  }

  /** A resource of the device manager: registered now or before a restart, or held by a pod. */
  private isDeviceResource(name: string): boolean {
    return this.resourcesByName.has(name) || this.podDevices.allocated().has(name);
  }

  private needsDevices(pod: V1Pod): boolean {
    return [...(pod.spec?.initContainers ?? []), ...(pod.spec?.containers ?? [])].some((c) => Object.entries(c.resources?.limits ?? {}).some(([r, q]) => count(q) > 0 && this.isDeviceResource(r)));
  }

  /**
   * Allocates the devices a pod's containers ask for in their limits (extended resources: requests
   * equal limits), init containers first; a regular init container's devices may be reused by the
   * app containers, a sidecar's are its own. Refusal: upstream's UnexpectedAdmissionError, and
   * nothing of the pod stays allocated. Undefined (nothing to wait for) when the pod asks for no
   * device resource.
   */
  admit(pod: V1Pod): Promise<DeviceRejection | undefined> | undefined {
    if (!this.needsDevices(pod)) return undefined;
    const uid = pod.metadata!.uid!;
    return this.serial(async () => {
      const reusable = new Map<string, Set<string>>();
      // Devices a regular init container held may be reused by the containers after it; a container's own are not.
      const use = (name: string, add: boolean) => {
        for (const [resource, ids] of this.podDevices.containerResources(uid, name)) {
          let set = reusable.get(resource);
          if (!set) reusable.set(resource, (set = new Set()));
          for (const id of ids) (add ? set.add(id) : set.delete(id));
        }
      };
      try {
        for (const c of pod.spec?.initContainers ?? []) {
          await this.allocateContainer(pod, c, reusable);
          use(c.name, !isSidecar(c));
        }
        for (const c of pod.spec?.containers ?? []) {
          await this.allocateContainer(pod, c, reusable);
          use(c.name, false);
        }
        return undefined;
      } catch (err) {
        this.release(uid);
        const message = `Allocate failed due to ${errorMessage(err)}, which is unexpected`;
        this.log.warn({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, uid, err: errorMessage(err) }, 'device allocation failed');
        return { reason: 'UnexpectedAdmissionError', message };
      }
    });
  }

  /** Frees a pod's devices (it is gone, or was not admitted). */
  release(podUID: string): void {
    if (this.podDevices.remove([podUID])) {
      this.log.info({ uid: podUID }, 'devices freed');
      this.persist();
    }
  }

  /**
   * What a container gets for its devices when it is created: the merged answers of its
   * resources' providers, after PreStartContainer where a provider asks for it. A device
   * resource it holds nothing of yet (its allocation lost with the checkpoint) is allocated now,
   * as upstream. Throws (the container's start fails with the reason) when a call fails.
   */
  async containerAllocation(pod: V1Pod, container: V1Container): Promise<ContainerAllocation | undefined> {
    const uid = pod.metadata!.uid!;
    let reallocate = false;
    for (const [resource, q] of Object.entries(container.resources?.limits ?? {})) {
      if (count(q) === 0 || !this.isDeviceResource(resource)) continue;
      await this.preStart(uid, container.name, resource);
      if (!this.isActive(uid)) continue;
      if (!this.podDevices.containerDevices(uid, container.name, resource)) reallocate = true;
    }
    if (reallocate) {
      this.log.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, container: container.name }, 'allocating devices again for a container that holds none');
      await this.serial(() => this.allocateContainer(pod, container, new Map()));
    }
    const answers = this.podDevices.containerAllocations(uid, container.name);
    if (answers.length === 0) return undefined;
    const merged = mergeAllocations(answers, (what) => this.log.warn({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, container: container.name }, what));
    return merged;
  }

  private isActive(podUID: string): boolean {
    return this.deps.activePods().some((p) => p.metadata?.uid === podUID);
  }

  private async preStart(podUID: string, containerName: string, resource: string): Promise<void> {
    const state = this.resourcesByName.get(resource);
    if (!state?.preStartRequired) return;
    const devices = this.podDevices.containerDevices(podUID, containerName, resource);
    if (!devices) throw new Error(`no devices found allocated in local cache for pod ${podUID}, container ${containerName}, resource ${resource}`);
    const provider = state.serving?.provider;
    if (!provider?.preStart) throw new Error(`device plugin PreStartContainer rpc failed with err: the device provider of ${resource} is not registered`);
    try {
      await bounded((options) => provider.preStart!([...devices].sort(byId), options), this.timeout, `device plugin ${resource} PreStartContainer`);
    } catch (err) {
      throw new Error(`device plugin PreStartContainer rpc failed with err: ${errorMessage(err)}`, { cause: err });
    }
  }

  /** Frees the devices of pods no longer active, once every source has reported (upstream UpdateAllocatedDevices). */
  private freeInactive(keep?: string): void {
    if (!this.deps.sourcesReady()) return;
    const active = new Set(this.deps.activePods().map((p) => p.metadata?.uid));
    if (keep) active.add(keep);
    const gone = this.podDevices.podUIDs().filter((uid) => !active.has(uid));
    if (gone.length === 0) return;
    this.podDevices.remove(gone);
    this.log.info({ pods: gone }, 'devices of pods no longer active freed');
    this.persist();
  }

  /** Allocates one container's device resources (upstream allocateContainerResources). */
  private async allocateContainer(pod: V1Pod, container: V1Container, reusable: Map<string, Set<string>>): Promise<void> {
    const uid = pod.metadata!.uid!;
    let freed = false;
    for (const [resource, q] of Object.entries(container.resources?.limits ?? {})) {
      const needed = count(q);
      if (needed === 0 || !this.isDeviceResource(resource)) continue;
      if (!freed) {
        this.freeInactive(uid);
        freed = true;
      }
      const ids = await this.devicesToAllocate(uid, container.name, resource, needed, reusable.get(resource) ?? new Set());
      if (!ids) continue;
      const provider = this.resourcesByName.get(resource)?.serving?.provider;
      if (!provider) throw new Error(`unknown Device Plugin ${resource}`);
      const answer = await bounded((options) => provider.allocate(ids, options), this.timeout, `device plugin ${resource} Allocate`);
      let allocation: ContainerAllocation;
      try {
        allocation = acceptAllocation(answer, this.deps.rootDir);
      } catch (err) {
        if (err instanceof AllocationRefused) throw new Error(`device plugin ${resource} answered Allocate with what the kubelet refuses: ${err.message}`);
        throw err;
      }
      this.podDevices.insert({ podUID: uid, containerName: container.name, resourceName: resource, deviceIds: ids, allocation });
      this.log.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, container: container.name, resource, devices: ids }, 'devices allocated');
      this.persist();
    }
  }

  /** The devices to ask the provider for, or undefined when there is nothing to do (upstream devicesToAllocate, without topology). */
  private async devicesToAllocate(podUID: string, containerName: string, resource: string, required: number, reusable: Set<string>): Promise<string[] | undefined> {
    let needed = required;
    const have = this.podDevices.containerDevices(podUID, containerName, resource);
    if (have) {
      needed -= have.size;
      if (needed !== 0) throw new Error(`pod "${podUID}" container "${containerName}" changed request for resource "${resource}" from ${have.size} to ${required}`);
      // A kubelet restart: the pod runs with these devices already, whatever its provider does now.
      if (this.deps.podRunning(podUID)) return undefined;
    }
    const state = this.resourcesByName.get(resource);
    if (!state) throw new Error(`cannot allocate unregistered device ${resource}`);
    const healthy = new Set([...state.devices.values()].filter((d) => d.health === 'Healthy').map((d) => d.id));
    if (healthy.size === 0) throw new Error(`no healthy devices present; cannot allocate unhealthy devices ${resource}`);
    if (have && ![...have].every((id) => healthy.has(id))) throw new Error(`previously allocated devices are no longer healthy; cannot allocate unhealthy devices ${resource}`);
    if (needed === 0) return undefined;

    const chosen: string[] = [];
    const take = (from: Iterable<string>) => {
      for (const id of from) {
        if (needed === 0) break;
        if (chosen.includes(id)) continue;
        chosen.push(id);
        needed--;
      }
      return needed === 0;
    };
    if (take([...reusable].sort(byId))) return chosen;
    const inUse = this.podDevices.allocated().get(resource) ?? new Set<string>();
    const available = [...healthy].filter((id) => !inUse.has(id) && !chosen.includes(id)).sort(byId);
    if (available.length < needed) throw new Error(`requested number of devices unavailable for ${resource}. Requested: ${needed}, Available: ${available.length}`);
    const provider = state.serving?.provider;
    if (provider?.preferredAllocation) {
      let preferred: string[];
      try {
        preferred = await bounded((options) => provider.preferredAllocation!({ available: [...chosen, ...available], mustInclude: [...chosen], size: required }, options), this.timeout, `device plugin ${resource} GetPreferredAllocation`);
      } catch (err) {
        throw new Error(`device plugin GetPreferredAllocation rpc failed with err: ${errorMessage(err)}`, { cause: err });
      }
      // Only what is available counts, whatever the provider answered.
      if (Array.isArray(preferred) && take(preferred.filter((id) => typeof id === 'string' && available.includes(id)))) return chosen;
    }
    if (take(available)) return chosen;
    throw new Error(`unexpectedly allocated less resources than required. Requested: ${required}, Got: ${required - needed}`);
  }

  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const run = this.queue.then(fn, fn);
    this.queue = run.catch(() => {});
    return run;
  }

  /** Writes the checkpoint soon (writes are coalesced and never overlap); a failed write is logged. */
  private persist(): void {
    this.dirty = true;
    if (this.writing) return;
    this.writing = (async () => {
      while (this.dirty) {
        this.dirty = false;
        const registeredDevices: Record<string, string[]> = {};
        for (const [name, s] of this.resourcesByName) registeredDevices[name] = [...s.devices.values()].filter((d) => d.health === 'Healthy').map((d) => d.id);
        try {
          await writeCheckpoint(this.checkpointFile, { podDevices: this.podDevices.entries(), registeredDevices });
        } catch (err) {
          this.log.warn({ file: this.checkpointFile, err: errorMessage(err) }, 'writing the device manager checkpoint failed');
        }
      }
    })().finally(() => (this.writing = undefined));
  }
}
