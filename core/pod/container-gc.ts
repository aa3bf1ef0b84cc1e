import type { Logger } from '../logger.ts';
import fs from 'node:fs/promises';
import { errorMessage, isNotFound } from '../errors.ts';
import type { KubeletConfig } from '../config/types.ts';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import type { ContainerRuntime, ContainerStatus } from '../runtime/types.ts';
import type { ProbeResults } from '../status/probe-results.ts';
import { removeTerminationMessageFile } from './termination-message.ts';

/** What container GC uses. */
export interface ContainerGCDeps {
  runtime: ContainerRuntime;
  config: KubeletConfig;
  probes: ProbeResults;
  logger: Logger;
}

/**
 * Removes dead containers and old sandboxes of a pod (after its sync), and a dead container
 * with what the kubelet keeps of it (log file, termination message, probe results) for the
 * node-wide GC.
 */
export class ContainerGC {
  constructor(private readonly deps: ContainerGCDeps) {}

  /**
   * Container GC for one pod, as upstream's: the newest instance of each container stays (its
   * status and logs are what users see); of the older dead ones, the newest
   * `maxPerPodContainer` stay and the rest go, oldest first, with their log files. Sandboxes
   * of past attempts go once no container uses them.
   */
  async removeDeadContainers(rs: PodRuntimeStatus | undefined): Promise<boolean> {
    if (!rs) return false;
    const dead = evictableContainers(rs).flatMap(([, list]) => (this.deps.config.maxPerPodContainer < 0 ? [] : list.slice(this.deps.config.maxPerPodContainer)));
    for (const c of dead) await this.removeContainerAndLog(c);
    const removed = new Set(dead.map((c) => c.id));
    const inUse = new Set(rs.containers.filter((c) => !removed.has(c.id)).map((c) => c.podSandboxId));
    const oldSandboxes = rs.sandboxes.slice(1).filter((sb) => sb.state !== 'SANDBOX_READY' && !inUse.has(sb.id));
    for (const sb of oldSandboxes) await this.removeQuietly(() => this.deps.runtime.removePodSandbox(sb.id));
    return dead.length > 0 || oldSandboxes.length > 0;
  }

  /** Removes a dead container and its log file (the runtime leaves log files to the kubelet). */
  async removeContainerAndLog(c: ContainerStatus): Promise<void> {
    await this.removeQuietly(() => this.deps.runtime.removeContainer(c.id));
    // A dead instance's probe results go with it (a crash-looping pod would keep one per restart).
    this.deps.probes.forget(c.id);
    await removeTerminationMessageFile(this.deps.config.rootDir, c);
    if (c.logPath) await fs.rm(c.logPath, { force: true }).catch(() => {});
  }

  /** Runs a runtime removal; gone already is fine, another failure is logged (the next round tries again). */
  async removeQuietly(fn: () => Promise<void>): Promise<void> {
    try {
      await fn();
    } catch (err) {
      if (!isNotFound(err)) this.deps.logger.warn({ err: errorMessage(err) }, 'remove failed');
    }
  }
}

/**
 * Dead containers GC may remove, per (pod, container name), newest first: every exited
 * instance except the newest instance of its name.
 */
export function evictableContainers(rs: PodRuntimeStatus): Array<[string, ContainerStatus[]]> {
  const byName = new Map<string, ContainerStatus[]>();
  for (const c of rs.containers) {
    const list = byName.get(c.metadata.name) ?? [];
    list.push(c);
    byName.set(c.metadata.name, list);
  }
  return [...byName].map(([name, list]) => [name, list.slice(1).filter((c) => c.state === 'CONTAINER_EXITED')]);
}
