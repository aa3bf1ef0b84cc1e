import type { V1Pod } from '@kubernetes/client-node';
import { mkdir, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { InhibitorLock, Logind } from '../systemd/logind.ts';
import type { ShutdownGroup } from '../config/types.ts';

/**
 * Graceful node shutdown (upstream's nodeshutdown manager, shutdownGracePeriod and its kin): the
 * kubelet holds a "delay" inhibitor lock on shutdown, so that when the node is powered off
 * logind first tells it (PrepareForShutdown) and waits for it. The kubelet then marks the node
 * not ready ("node is shutting down"), refuses new pods, and terminates the running ones group by
 * group, the lowest priority first, each with its group's grace period (or the pod's own, when
 * shorter), their status Failed with upstream's reason and a DisruptionTarget condition; then it
 * lets the shutdown go on. logind waits at most its InhibitDelayMaxSec, which the kubelet raises
 * to the sum of the groups' periods with a drop-in, as upstream does.
 */

/** The status of a pod ended for a shutdown (upstream nodeShutdownReason and nodeShutdownMessage). */
export const NODE_SHUTDOWN_REASON = 'Terminated';
export const NODE_SHUTDOWN_MESSAGE = 'Pod was terminated in response to imminent node shutdown.';
/** A pod refused while the node shuts down (upstream nodeShutdownNotAdmittedReason and its message). */
export const NODE_SHUTDOWN_NOT_ADMITTED_REASON = 'NodeShutdown';
export const NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE = 'Pod was rejected as the node is shutting down.';
/** The Ready condition's message meanwhile. */
export const NODE_SHUTTING_DOWN = 'node is shutting down';
/** Where the kubelet raises logind's InhibitDelayMaxSec (upstream's file name). */
export const LOGIND_DROP_IN = '/etc/systemd/logind.conf.d/99-kubelet.conf';
/** How long logind may take to apply a reloaded configuration. */
const LOGIND_RELOAD_WAIT_MS = 5000;
/** After the pods: how long the kubelet waits for their last statuses to reach the API server. */
const STATUS_FLUSH_MS = 5000;

/**
 * Pods in their groups, lowest priority first: a pod goes to the group of the highest priority
 * not above its own; a pod below every group's priority to the lowest group.
 */
export function groupByPriority(periods: readonly ShutdownGroup[], pods: readonly V1Pod[]): Array<ShutdownGroup & { pods: V1Pod[] }> {
  const groups = [...periods].sort((a, b) => a.priority - b.priority).map((p) => ({ ...p, pods: [] as V1Pod[] }));
  if (groups.length === 0) return [];
  for (const pod of pods) {
    const priority = pod.spec?.priority ?? 0;
    let index = 0;
    for (let i = 0; i < groups.length; i++) if (groups[i]!.priority <= priority) index = i;
    groups[index]!.pods.push(pod);
  }
  return groups;
}

/** The grace a pod gets in its group: the group's, or the pod's own when that is shorter. */
export function shutdownGraceOf(pod: V1Pod, groupSeconds: number): number {
  const own = pod.spec?.terminationGracePeriodSeconds;
  return own !== undefined && own !== null && own <= groupSeconds ? own : groupSeconds;
}

export interface GracefulShutdownDeps {
  /** The groups (empty: graceful shutdown is off). */
  periods: ShutdownGroup[];
  logind: () => Promise<Logind>;
  /** Where InhibitDelayMaxSec is raised (default LOGIND_DROP_IN). */
  logindDropIn?: string;
  /** The pods running on the node now. */
  activePods: () => V1Pod[];
  /** Fails a pod for the shutdown and kills it with this grace; false when it is no longer active. */
  terminate: (pod: V1Pod, gracePeriodSeconds: number) => boolean;
  /** True once a terminated pod's containers are stopped and its resources released (or the pod is gone). */
  podStopped: (uid: string) => boolean;
  /** True when no pod status waits to be sent to the API server. */
  statusesPosted: () => boolean;
  /** The shutdown began or was cancelled: the Node's Ready condition changes now. */
  onStateChange: () => void;
  nodeEvent: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  logger: Logger;
  /** How often to look whether pods stopped (tests make it short). */
  pollMs?: number;
}

export class GracefulNodeShutdown {
  private logind: Logind | undefined;
  private lock: InhibitorLock | undefined;
  private shuttingDown = false;
  private handling: Promise<void> | undefined;
  private stopped = false;

  constructor(private readonly d: GracefulShutdownDeps) {}

  /** True when graceful shutdown is configured (some group has time). */
  get enabled(): boolean {
    return this.d.periods.length > 0;
  }

  /** The seconds the node's shutdown is held up at most: the sum of the groups' periods. */
  get requestedSeconds(): number {
    return this.d.periods.reduce((s, p) => s + p.gracePeriodSeconds, 0);
  }

  /**
   * Raises logind's InhibitDelayMaxSec when it is shorter than the groups need, takes the lock,
   * and listens for shutdowns. Throws naming what failed (no logind, a delay it would not take);
   * the kubelet runs on without graceful shutdown then, as upstream's does.
   */
  async start(): Promise<void> {
    if (!this.enabled) return;
    const logind = (this.logind = await this.d.logind());
    const requestedMs = this.requestedSeconds * 1000;
    let current = await logind.inhibitDelayMaxMs();
    if (current < requestedMs) {
      const file = this.d.logindDropIn ?? LOGIND_DROP_IN;
      await mkdir(dirname(file), { recursive: true });
      await writeFile(file, `# Written by kubelet-ts: graceful node shutdown needs this long (shutdownGracePeriod).\n[Login]\nInhibitDelayMaxSec=${this.requestedSeconds}\n`);
      await logind.reloadConfig();
      const deadline = Date.now() + LOGIND_RELOAD_WAIT_MS;
      while ((current = await logind.inhibitDelayMaxMs()) < requestedMs && Date.now() < deadline) await sleep(200);
      if (current < requestedMs) {
        throw new Error(`logind's InhibitDelayMaxSec is ${current / 1000}s after writing ${file}, less than the ${this.requestedSeconds}s graceful node shutdown needs (shutdownGracePeriod): another drop-in of logind.conf.d sets it later`);
      }
      this.d.logger.info({ file, inhibitDelayMaxSec: this.requestedSeconds }, "raised logind's InhibitDelayMaxSec for graceful node shutdown");
    }
    logind.onPrepareForShutdown((active) => this.onPrepareForShutdown(active));
    this.lock = await logind.delayShutdown();
    this.d.logger.info({ groups: this.d.periods, inhibitorPid: this.lock.pid }, 'graceful node shutdown: holding a delay lock on shutdown');
  }

  /** True from a shutdown's start until it is cancelled. */
  isShuttingDown(): boolean {
    return this.shuttingDown;
  }

  /** The refusal of a new pod while the node shuts down (upstream's admit handler). */
  admission(): { reason: string; message: string } | undefined {
    return this.shuttingDown ? { reason: NODE_SHUTDOWN_NOT_ADMITTED_REASON, message: NODE_SHUTDOWN_NOT_ADMITTED_MESSAGE } : undefined;
  }

  /** Resolves when a shutdown being handled has let go of the lock (tests). */
  async settled(): Promise<void> {
    await this.handling;
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.lock?.release().catch(() => {});
    await this.logind?.close().catch(() => {});
  }

  private onPrepareForShutdown(active: boolean): void {
    if (this.stopped) return;
    if (active && !this.shuttingDown) {
      this.shuttingDown = true;
      this.d.logger.warn({ groups: this.d.periods }, 'the node is shutting down: terminating pods by priority before the lock is released');
      this.d.nodeEvent('Normal', 'Shutdown', 'Shutdown manager detected shutdown event');
      this.d.onStateChange();
      this.handling = this.terminatePods()
        .catch((err) => this.d.logger.error({ err: errorMessage(err) }, 'graceful node shutdown failed; releasing the lock'))
        .finally(() => this.lock?.release());
    } else if (!active && this.shuttingDown) {
      // logind cancelled the shutdown (`shutdown -c`): ready again, and the lock taken anew.
      this.shuttingDown = false;
      this.d.logger.info('the node shutdown was cancelled');
      this.d.onStateChange();
      void (async () => {
        await this.handling;
        if (this.stopped || !this.logind) return;
        this.lock = await this.logind.delayShutdown();
      })().catch((err) => this.d.logger.error({ err: errorMessage(err) }, 'graceful node shutdown: could not take the lock again'));
    }
  }

  private async terminatePods(): Promise<void> {
    const pollMs = this.d.pollMs ?? 250;
    const started = Date.now();
    for (const group of groupByPriority(this.d.periods, this.d.activePods())) {
      if (group.pods.length === 0) continue;
      const t0 = Date.now();
      const ended: string[] = [];
      for (const pod of group.pods) {
        const grace = shutdownGraceOf(pod, group.gracePeriodSeconds);
        if (this.d.terminate(pod, grace)) ended.push(pod.metadata!.uid!);
        this.d.logger.info({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, priority: pod.spec?.priority ?? 0, gracePeriodSeconds: grace }, 'graceful node shutdown: terminating pod');
      }
      // A group of 0 s is killed without a wait, as upstream's; else the next group waits for this one (at most its period).
      if (group.gracePeriodSeconds <= 0) continue;
      const deadline = t0 + group.gracePeriodSeconds * 1000;
      let left = ended.filter((uid) => !this.d.podStopped(uid));
      while (left.length > 0 && Date.now() < deadline) {
        await sleep(Math.min(pollMs, Math.max(1, deadline - Date.now())));
        left = left.filter((uid) => !this.d.podStopped(uid));
      }
      if (left.length > 0) this.d.logger.warn({ priority: group.priority, pods: left, gracePeriodSeconds: group.gracePeriodSeconds }, 'graceful node shutdown: pods still stopping at the end of their group\'s period; going on');
    }
    // Their final statuses on their way to the API server before the network goes down.
    // Posted on two looks in a row: a pod's last status may be computed just after its stop.
    const flushDeadline = Date.now() + STATUS_FLUSH_MS;
    for (let quiet = 0; quiet < 2 && Date.now() < flushDeadline; ) {
      await sleep(pollMs);
      quiet = this.d.statusesPosted() ? quiet + 1 : 0;
    }
    this.d.logger.info({ seconds: Math.round((Date.now() - started) / 100) / 10 }, 'graceful node shutdown: pods terminated; letting the shutdown go on');
  }
}
