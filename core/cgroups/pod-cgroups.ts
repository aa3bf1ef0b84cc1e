import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { bytes, milliCPU } from '../objects/quantity.ts';
import { qosClass } from '../status/pod-status.ts';
import type { CgroupDriver } from './cgroup-driver.ts';
import type { CgroupName } from './cgroup-name.ts';
import { CPU_PERIOD_US, MIN_SHARES, milliCPUToQuota, milliCPUToShares, type CgroupResources } from './cgroup-resources.ts';

/** The cgroup of a pod below the kubelet's root, by QoS class, as upstream lays it out. */
export function podCgroupName(root: CgroupName, pod: V1Pod): CgroupName {
  const qos = qosClass(pod);
  const leaf = `pod${pod.metadata!.uid!}`;
  return qos === 'Guaranteed' ? [...root, 'kubepods', leaf] : [...root, 'kubepods', qos.toLowerCase(), leaf];
}

/** Every place a pod's cgroup can be (its QoS class may be unknown: an orphan's spec is gone). */
export function podCgroupCandidates(root: CgroupName, uid: string): CgroupName[] {
  const leaf = `pod${uid}`;
  return [[...root, 'kubepods', leaf], [...root, 'kubepods', 'burstable', leaf], [...root, 'kubepods', 'besteffort', leaf]];
}

type Amount = (c: V1Container) => number | undefined;

/**
 * What a pod needs of one resource, as upstream's PodRequests/PodLimits sum it: the app
 * containers and restartable (sidecar) init containers together, or the largest init container
 * plus the sidecars started before it, whichever is more, plus the pod's overhead.
 */
function podAmount(pod: V1Pod, amount: Amount, overhead: number | undefined): number {
  let total = (pod.spec?.containers ?? []).reduce((sum, c) => sum + (amount(c) ?? 0), 0);
  let sidecars = 0;
  let initMax = 0;
  for (const c of pod.spec?.initContainers ?? []) {
    const v = amount(c) ?? 0;
    if (c.restartPolicy === 'Always') {
      total += v;
      sidecars += v;
      initMax = Math.max(initMax, sidecars);
    } else initMax = Math.max(initMax, v + sidecars);
  }
  return Math.max(total, initMax) + (overhead ?? 0);
}

/**
 * Pod-level resources as upstream's ResourceConfigForPod: CPU shares from the requests (the
 * minimum for a pod without), a CPU quota and a memory limit only when every container declares
 * that limit, the pod's pids limit.
 */
export function podResources(pod: V1Pod, pidsLimit?: number): CgroupResources {
  const all = [...(pod.spec?.containers ?? []), ...(pod.spec?.initContainers ?? [])];
  const cpu = (q: string | undefined) => (q === undefined ? undefined : milliCPU(q));
  const mem = (q: string | undefined) => (q === undefined ? undefined : bytes(q));
  const overheadCpu = cpu(pod.spec?.overhead?.cpu);
  const overheadMem = mem(pod.spec?.overhead?.memory);
  const requestsMilli = podAmount(pod, (c) => cpu(c.resources?.requests?.cpu ?? c.resources?.limits?.cpu), overheadCpu);
  const cpuLimited = all.every((c) => c.resources?.limits?.cpu !== undefined && milliCPU(c.resources.limits.cpu) > 0);
  const memLimited = all.every((c) => c.resources?.limits?.memory !== undefined && bytes(c.resources.limits.memory) > 0);
  const out: CgroupResources = { cpuShares: milliCPUToShares(requestsMilli), cpuPeriodUs: CPU_PERIOD_US };
  if (cpuLimited) out.cpuQuotaUs = milliCPUToQuota(podAmount(pod, (c) => cpu(c.resources?.limits?.cpu), overheadCpu));
  if (memLimited) out.memoryLimitBytes = podAmount(pod, (c) => mem(c.resources?.limits?.memory), overheadMem);
  if (pidsLimit !== undefined && pidsLimit > 0) out.pidsLimit = pidsLimit;
  return out;
}

export interface PodCgroupsOptions {
  driver: CgroupDriver;
  /** The cgroup the kubelet's `kubepods` lives under (cgroupRoot), as a name. */
  root: CgroupName;
  logger: Logger;
  /** Resources of `kubepods` itself: node allocatable when enforced, else the node's capacity. */
  kubepods: CgroupResources;
  /** podPidsLimit: most processes in one pod (undefined: no limit). */
  podPidsLimit?: number | undefined;
  /** The pods the kubelet runs: the Burstable tier's CPU shares are the sum of their requests. */
  activePods?: () => V1Pod[];
}

/**
 * The pod cgroup hierarchy (upstream cgroupsPerQOS): `kubepods` with node allocatable (or the
 * node's capacity), the `burstable` and `besteffort` tiers, and a `pod<uid>` cgroup per pod
 * with its pod-level limits, passed to the runtime as the sandbox's cgroup parent and removed
 * when the pod goes, through whichever driver the node uses.
 */
export class PodCgroups {
  /** The Burstable tier's shares as last written (undefined: not yet), so an unchanged sum costs nothing. */
  private burstableWritten: number | undefined;

  constructor(private readonly opts: PodCgroupsOptions) {}

  get driver(): CgroupDriver {
    return this.opts.driver;
  }

  /** The `kubepods` cgroup, in the driver's path form (where the stats read all pods' use). */
  get kubepodsPath(): string {
    return this.opts.driver.path([...this.opts.root, 'kubepods']);
  }

  /**
   * Makes (or updates) kubepods and the QoS tiers: BestEffort gets the minimum CPU shares,
   * Burstable the sum of its pods' requests, as upstream's QoS container manager sets them.
   */
  async ensureQoS(): Promise<void> {
    const { driver, root } = this.opts;
    await driver.ensure([...root, 'kubepods'], this.opts.kubepods);
    const shares = this.burstableShares();
    await driver.ensure([...root, 'kubepods', 'burstable'], { cpuShares: shares });
    this.burstableWritten = shares;
    await driver.ensure([...root, 'kubepods', 'besteffort'], { cpuShares: MIN_SHARES });
  }

  /** Makes a pod's cgroup with its limits and returns the cgroup parent for the runtime. */
  async ensurePod(pod: V1Pod): Promise<string> {
    const name = podCgroupName(this.opts.root, pod);
    if (qosClass(pod) === 'Burstable') await this.updateBurstableShares();
    await this.opts.driver.ensure(name, podResources(pod, this.opts.podPidsLimit));
    return this.opts.driver.path(name);
  }

  /** Removes a pod's cgroup wherever its QoS class put it; only a cgroup without processes goes. */
  async removePod(uid: string): Promise<void> {
    for (const name of podCgroupCandidates(this.opts.root, uid)) {
      if (await this.opts.driver.exists(name)) await this.opts.driver.remove(name);
    }
    await this.updateBurstableShares();
  }

  /** Where a pod's cgroup is, in the driver's path form, if it exists. */
  async podPath(uid: string): Promise<string | undefined> {
    for (const name of podCgroupCandidates(this.opts.root, uid)) {
      if (await this.opts.driver.exists(name)) return this.opts.driver.path(name);
    }
    return undefined;
  }

  /** Whether a pod's cgroup exists. */
  exists(pod: V1Pod): Promise<boolean> {
    return this.opts.driver.exists(podCgroupName(this.opts.root, pod));
  }

  /** Releases the driver (its systemd connection). */
  close(): Promise<void> {
    return this.opts.driver.close();
  }

  private burstableShares(): number {
    const pods = (this.opts.activePods?.() ?? []).filter((p) => qosClass(p) === 'Burstable');
    return milliCPUToShares(pods.reduce((sum, p) => sum + podAmount(p, (c) => {
      const q = c.resources?.requests?.cpu ?? c.resources?.limits?.cpu;
      return q === undefined ? undefined : milliCPU(q);
    }, p.spec?.overhead?.cpu === undefined ? undefined : milliCPU(p.spec.overhead.cpu)), 0));
  }

  private async updateBurstableShares(): Promise<void> {
    const { driver, root } = this.opts;
    const shares = this.burstableShares();
    if (shares === this.burstableWritten) return;
    try {
      await driver.ensure([...root, 'kubepods', 'burstable'], { cpuShares: shares });
      this.burstableWritten = shares;
    } catch (err) {
      // The tier's weight is fairness between tiers, not a limit: a failed update is retried with the next pod.
      this.opts.logger.warn({ err: errorMessage(err) }, 'could not update the burstable QoS cgroup\'s CPU shares');
    }
  }
}
