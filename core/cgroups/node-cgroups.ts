import { readFile } from 'node:fs/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { KubeletConfig } from '../config/types.ts';
import { ConfigError, errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { ResourceList } from '../node/allocatable.ts';
import type { ContainerRuntime } from '../runtime/types.ts';
import { connectSystemd, type SystemdUnits } from '../systemd/systemd-manager.ts';
import type { CgroupDriver } from './cgroup-driver.ts';
import { readCgroupMounts, type CgroupMounts } from './cgroup-mounts.ts';
import { parseCgroupRoot, type CgroupDriverName } from './cgroup-name.ts';
import { CgroupfsDriver } from './cgroupfs-driver.ts';
import { kubepodsResources } from './kubepods-resources.ts';
import { PodCgroups } from './pod-cgroups.ts';
import { SystemdDriver } from './systemd-driver.ts';

/**
 * The node's cgroup set-up at start, as upstream's container manager does it: the cgroup
 * driver checked against the runtime's, the driver for this host's hierarchy, kubepods with
 * node allocatable and the QoS tiers. Every way this can be wrong on a node stops the start
 * with one line that names the setting and what to change, not a failed sandbox per pod.
 */
export interface NodeCgroupsOptions {
  config: Pick<KubeletConfig, 'cgroupsPerQOS' | 'cgroupRoot' | 'cgroupDriver' | 'enforceNodeAllocatablePods' | 'podPidsLimit' | 'systemReserved' | 'kubeReserved' | 'configFile'>;
  runtime: ContainerRuntime;
  capacity: ResourceList;
  activePods: () => V1Pod[];
  logger: Logger;
  /** Tests: another host's mounts, or a systemd of their own. */
  mounts?: CgroupMounts;
  connectSystemd?: () => Promise<SystemdUnits>;
}

/** Checks the driver against the runtime's and makes the pod cgroup hierarchy; undefined when pods run without pod cgroups. */
export async function setUpNodeCgroups(opts: NodeCgroupsOptions): Promise<PodCgroups | undefined> {
  const { config, logger } = opts;
  const where = config.configFile ?? 'the kubelet config';
  await checkRuntimeDriver(config.cgroupDriver, opts.runtime, where);
  if (!config.cgroupsPerQOS) return undefined;
  const mounts = opts.mounts ?? readCgroupMounts();
  if (mounts.version === 1 && !(mounts.v1.has('memory') && mounts.v1.has('cpu'))) {
    logger.warn('no cgroup v1 memory and cpu hierarchies and no cgroup v2 on this host: pods run without pod cgroups');
    return undefined;
  }
  let root;
  try {
    root = parseCgroupRoot(config.cgroupRoot, config.cgroupDriver);
  } catch (err) {
    throw new ConfigError(`${where}: ${errorMessage(err)}`);
  }
  let driver: CgroupDriver;
  if (config.cgroupDriver === 'systemd') {
    let units: SystemdUnits;
    try {
      units = await (opts.connectSystemd ?? (() => connectSystemd()))();
    } catch (err) {
      throw new ConfigError(`${where}: cgroupDriver is systemd, but ${errorMessage(err)}; on a node without systemd use cgroupDriver: cgroupfs`);
    }
    driver = new SystemdDriver(mounts, units);
  } else driver = new CgroupfsDriver(mounts, logger.child({ component: 'cgroups' }));
  const cgroups = new PodCgroups({
    driver,
    root,
    logger: logger.child({ component: 'cgroups' }),
    kubepods: kubepodsResources({
      capacity: opts.capacity,
      systemReserved: config.systemReserved,
      kubeReserved: config.kubeReserved,
      enforcePods: config.enforceNodeAllocatablePods,
      pidMax: await readPidMax(),
    }),
    podPidsLimit: config.podPidsLimit,
    activePods: opts.activePods,
  });
  try {
    await cgroups.ensureQoS();
  } catch (err) {
    await cgroups.close().catch(() => {});
    throw new ConfigError(`cannot make the pod cgroups (${config.cgroupDriver} driver, cgroup v${mounts.version}, kubepods at ${cgroups.kubepodsPath}): ${errorMessage(err)}`);
  }
  logger.info({ driver: driver.name, cgroupVersion: mounts.version, kubepods: cgroups.kubepodsPath }, 'pod cgroups ready');
  return cgroups;
}

/**
 * A runtime that reports its cgroup driver (containerd >= 2.0 through CRI RuntimeConfig) must
 * use the kubelet's: with the other, runc refuses every sandbox's cgroup parent. Upstream >= 1.31
 * reads the runtime's; kubelet-ts keeps the config's and says at once when they disagree.
 */
async function checkRuntimeDriver(driver: CgroupDriverName, runtime: ContainerRuntime, where: string): Promise<void> {
  if (!runtime.runtimeConfig) return;
  const reported = (await runtime.runtimeConfig())?.cgroupDriver;
  if (reported === undefined || reported === driver) return;
  const runc = reported === 'systemd' ? 'SystemdCgroup = true' : 'SystemdCgroup = false';
  throw new ConfigError(
    `${where}: cgroupDriver is ${driver}, but the container runtime uses the ${reported} cgroup driver (${runc} in containerd's runc options); ` +
    `set cgroupDriver: ${reported} (--cgroup-driver=${reported}), as kubeadm does for a runtime with ${runc}`,
  );
}

async function readPidMax(): Promise<number | undefined> {
  const text = await readFile('/proc/sys/kernel/pid_max', 'utf8').catch(() => undefined);
  const n = text === undefined ? NaN : Number(text.trim());
  return Number.isFinite(n) ? n : undefined;
}
