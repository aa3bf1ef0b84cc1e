import type { V1Container, V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { errorMessage, pluginOf } from '../errors.ts';
import { ANNOTATION } from '../runtime/labels.ts';
import type { PodRuntimeStatus } from '../runtime/runtime-cache.ts';
import type { Limiter } from '../util/limiter.ts';
import type { ContainerConfig, ContainerStatus, PodSandboxConfig, RuntimeHandlerInfo, UserNamespaceOptions } from '../runtime/types.ts';
import { ContainerConfigError, buildContainerConfig } from './container-config.ts';
import { computePodActions, latestByName, type ContainerStart } from './pod-actions.ts';
import { allContainersOf, containersOf, defaultWaitingReason, ephemeralContainersOf, gracePeriodSeconds, isHostNetwork, isSidecar, podDesc, podUID } from '../objects/pod-util.ts';
import { buildSandboxConfig } from './sandbox-config.ts';
import { VolumeSetupError } from '../volumes/volume-manager.ts';
import { blockVolumeDevices } from './block-volume-devices.ts';
import { containerMounts } from './container-mounts.ts';
import { readHostResolvConf, sandboxHostnameAndDns } from './pod-dns.ts';
import { etcHostsMount } from './etc-hosts.ts';
import { SecurityContextError, needsImageUser, type ImageUser, type SecurityInputs } from './security-context.ts';
import { wantsUserNamespace } from './user-namespaces.ts';
import { checkSeccompProfile } from './seccomp-profiles.ts';
import { TerminationMessagePathError, terminationMessageMount } from './termination-message.ts';
import { DEADLINE_EXCEEDED, activeDeadlineLeftMs } from './active-deadline.ts';
import type { PodTimelines, TimedExtras } from '../timeline/pod-timeline.ts';
import { pulledNote } from '../runtime/pull-progress-format.ts';
import type { EventType } from '../events/event-recorder.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import { containerEnv, fetchEnvObjects, machineAllocatable } from './container-env.ts';
import type { DownwardInputs } from '../objects/downward-api.ts';
import { serviceLinkEnv, type ServiceLinkSource } from '../objects/service-links.ts';
import { isStaticPod } from '../objects/pod-origin.ts';
import type { TerminationGrace } from './termination-grace.ts';
import { PodKiller, type PodKillerDeps } from './pod-kill.ts';
import { containerKillGraceSeconds } from './container-kill-grace.ts';
import { ContainerGC, type ContainerGCDeps } from './container-gc.ts';
import { TerminalPodReclaim } from './terminal-pod-reclaim.ts';
import { PodTermination, type PodTerminationDeps } from './pod-termination.ts';
import { podLogger, recordPodEvent } from './pod-reporting.ts';
import { inLanes } from '../util/in-lanes.ts';
import { NEVER_ABORTS, hookContext } from '../util/cancellation.ts';

/** How a sync ended: when to look at the pod again (a back-off expiring, a pull to retry). */
export interface SyncOutcome { requeueAfterMs?: number }

/** How soon to look again at a pod that waits for an image or failed to start a container. */
const WAITING_RESYNC_MS = 1000;
/**
 * How soon to try again to set up the volumes of a pod whose volumes are not ready: upstream's
 * back-off for a failed volume operation, 500 ms doubling to 2 min 2 s, so a volume that cannot be
 * set up (a missing Secret, a driver not registered) costs a retry and a FailedMount event every
 * two minutes, not every second; a success starts it over.
 */
const VOLUME_RETRY_FIRST_MS = 500;
const VOLUME_RETRY_MAX_MS = 122_000;

type Waiting = Map<string, { reason: string; message: string }>;

/**
 * The longest wait for an active deadline: a far deadline (activeDeadlineSeconds may be 68
 * years) is looked at again after this, well below what a Node timer can hold (2^31-1 ms;
 * beyond, it fires at once, again and again).
 */
const MAX_DEADLINE_WAKE_MS = 3_600_000;

/** How long one sandbox creation holds its slot of maxParallelSandboxCreations at most. */
export const SANDBOX_SLOT_MS = 10_000;
/** How long one container's create and start hold their slot of maxParallelContainerCreations at most. */
export const CONTAINER_SLOT_MS = 30_000;
/**
 * How many of one pod's containers are being started at once. Upstream starts a pod's
 * containers one after another; a few at once keeps a pod of a few containers as quick to
 * start as before, while a pod of hundreds neither floods the runtime nor keeps hundreds of
 * half-built container configs in memory, and stops soon once it is being deleted.
 */
export const CONTAINER_STARTS_PER_POD = 4;
/**
 * What the pod syncer uses: what its kill path, container GC and termination use (their deps
 * interfaces), and what only the start path needs.
 */
export interface PodSyncerDeps extends PodKillerDeps, ContainerGCDeps, PodTerminationDeps {
  /** Records the steps of each pod's start, when set. */
  timeline?: PodTimelines;
  /** Bounds concurrent RunPodSandbox calls (maxParallelSandboxCreations), when set. */
  sandboxCreations?: Limiter;
  /** Bounds concurrent CreateContainer + StartContainer calls node-wide (maxParallelContainerCreations), when set. */
  containerCreations?: Limiter;
  /** Where a pod's ConfigMaps and Secrets come from (env, envFrom, image pull secrets). */
  objects?: (pod: V1Pod) => ObjectSource;
  /** The downward API's inputs for a pod (its IPs, the node's, the node's allocatable). */
  downward?: (pod: V1Pod) => DownwardInputs;
  /** The cluster's services for service link variables (API-server mode; none standalone, as upstream). */
  services?: () => ServiceLinkSource | undefined;
  /** Resolves a pod's runtimeClassName to the runtime handler its sandbox is created with. */
  runtimeClasses?: { handler(pod: V1Pod): Promise<string> };
}

/**
 * Carries out syncs and terminations for one pod at a time (the pod's worker serialises
 * calls): computes the actions, creates the sandbox, pulls images, creates and starts
 * containers, kills what must go (pod-kill.ts), removes what is dead (container-gc.ts), and
 * updates the pod's status right after acting. A termination is pod-termination.ts.
 */
export class PodSyncer {
  /** When this kubelet last changed each pod in the runtime (the cache is stale before it read the pod again). */
  private readonly actedAt = new Map<string, number>();
  /** Failed volume set-ups in a row, per pod (the retry's back-off). */
  private readonly volumeFailures = new Map<string, number>();
  /** The sandbox config of each pod's current sandbox: containers are created against it. */
  private readonly sandboxConfigs = new Map<string, { id: string; config: PodSandboxConfig }>();

  constructor(
    private readonly deps: PodSyncerDeps,
  ) {
    this.killer = new PodKiller(deps);
    this.gc = new ContainerGC(deps);
    this.termination = new PodTermination(deps, this.killer, this.gc);
    this.reclaim = new TerminalPodReclaim(deps);
  }

  /** What a pod the kubelet failed gives back once it stopped (volumes, cgroup). */
  private readonly reclaim: TerminalPodReclaim;

  /** The kill path (containers and sandboxes within the grace period). */
  private readonly killer: PodKiller;
  /** Container GC: dead containers and old sandboxes. */
  private readonly gc: ContainerGC;
  /** The end of a pod that left its source. */
  private readonly termination: PodTermination;

  /**
   * Brings a pod to its desired state; throws on a failure that should be retried with back-off.
   * `signal` aborts once the pod is to be terminated (or the kubelet stops): no further
   * sandbox or container is created, and what the sync waits for that can stop cleanly is
   * cancelled: hook taps (volume set-ups among them) and runtime reads. A sandbox creation or a
   * container's create and start the runtime has begun are not cut off: containerd would end a
   * start cancelled half-way as StartError (exit code 128) for the user to see, where upstream's
   * runs to its end; the termination that follows stops what they made.
   */
  async sync(pod: V1Pod, signal: AbortSignal = NEVER_ABORTS): Promise<SyncOutcome> {
    const call = { signal };
    const ctx = hookContext(signal);
    const { runtime, cache, hooks, config } = this.deps;
    const uid = podUID(pod);
    const log = this.podLogger(pod);
    // The cache is fresh unless this kubelet acted on the pod after the cache last read it
    // (then it is read again): most syncs (resyncs, probe results, PLEG events) cost no RPC.
    const cached = cache.get(uid);
    const actedAt = this.actedAt.get(uid);
    // Before the first node-wide relist succeeded, the cache knows nothing: read the pod (an
    // adopted pod must not look absent and get a second sandbox).
    const fresh = cache.lastRelistAt > 0 && (actedAt === undefined || (cached !== undefined && cached.observedAt >= actedAt));
    const rs = fresh ? cached : await cache.refreshPod(uid);
    // Failed by the kubelet for good (rejected at admission, or past its active deadline):
    // what still runs is stopped, and nothing starts again.
    this.checkActiveDeadline(pod);
    if (this.deps.status.rejection(uid)) return this.stopFailedPod(pod, rs, signal);
    const running = (rs?.containers ?? []).filter((c) => c.state === 'CONTAINER_RUNNING').map((c) => c.id);
    const actions = computePodActions(pod, rs, this.deps.crashBackoff, Date.now(), this.deps.probes.unhealthy(running));
    const acts = actions.killPod || actions.createSandbox || !!actions.nextInit || actions.containersToStart.length > 0 || actions.containersToKill.length > 0;
    const waiting: Waiting = new Map(actions.waiting);
    for (const [name, w] of actions.waiting) {
      if (w.reason === 'CrashLoopBackOff') this.event(pod, name, 'Warning', 'BackOff', `Back-off restarting failed container ${name} in pod ${podDesc(pod)}`);
    }
    let requeueAfterMs = actions.requeueAfterMs;
    let removedDead = false;
    // Marked before acting, so a sync that fails half-way makes the next one read the pod again.
    if (acts) this.actedAt.set(uid, Date.now());

    try {
      if (actions.killPod) {
        log.info({ createSandbox: actions.createSandbox }, actions.createSandbox ? 'sandbox changed, killing pod to recreate it' : 'pod finished, stopping its sandbox');
        await this.killer.killPod(pod, rs, gracePeriodSeconds(pod), signal);
      }
      if (!actions.createSandbox && (actions.killPod || !actions.sandboxId)) {
        // Finished for good (its restartPolicy restarts nothing) and nothing of it runs now: it
        // gives back its volumes and cgroup at once, while it stays known as Succeeded or Failed
        // (upstream SyncTerminatedPod; the API server deletes a terminal pod without waiting for
        // the kubelet, so nothing may be left for that delete).
        await this.reclaim.reclaim(pod);
        return this.finish(pod, waiting, requeueAfterMs, acts);
      }

      // Volumes before the sandbox and any container; again on each sync (for content that follows its source).
      try {
        await this.timed(uid, 'volumes', () => this.deps.volumes.setUpPod(pod, signal));
        this.volumeFailures.delete(uid);
      } catch (err) {
        if (!(err instanceof VolumeSetupError) || signal.aborted) throw err;
        // The containers wait with upstream's default reason (ContainerCreating, or PodInitializing
        // in a pod with init containers) and the FailedMount event's text as message; the sync retries.
        for (const c of containersOf(pod)) waiting.set(c.name, { reason: defaultWaitingReason(pod), message: err.message });
        log.warn({ err: err.message }, 'FailedMount');
        for (const message of err.eventMessages()) this.event(pod, undefined, 'Warning', 'FailedMount', message);
        const failures = this.volumeFailures.get(uid) ?? 0;
        this.volumeFailures.set(uid, failures + 1);
        return this.finish(pod, waiting, Math.min(VOLUME_RETRY_FIRST_MS * 2 ** Math.min(failures, 20), VOLUME_RETRY_MAX_MS), acts);
      }

      let sandboxId = actions.sandboxId;
      let sandboxConfig: PodSandboxConfig;
      let podIP: string;
      if (actions.createSandbox) {
        const started = performance.now();
        try {
          sandboxConfig = await this.sandboxConfig(pod, actions.attempt, true, signal);
          await fs.mkdir(sandboxConfig.logDirectory, { recursive: true });
          const cfg = sandboxConfig;
          // runtimeClassName → handler (an unknown RuntimeClass fails here, shown as FailedCreatePodSandBox).
          const handler = (await this.deps.runtimeClasses?.handler(pod)) ?? '';
          sandboxId = await this.createSandbox(uid, () => this.timed(uid, 'sandbox', () => runtime.runPodSandbox(cfg, handler || undefined), 'with its network'));
        } catch (err) {
          // Given up on (the pod is to be terminated): nothing to show, the termination runs next.
          if (signal.aborted) throw err;
          // Shown on every container (upstream's FailedCreatePodSandBox event), then retried.
          const message = `Failed to create pod sandbox: ${errorMessage(err)}`;
          for (const c of containersOf(pod)) waiting.set(c.name, { reason: defaultWaitingReason(pod), message });
          log.warn({ err: errorMessage(err) }, 'FailedCreatePodSandBox');
          this.event(pod, undefined, 'Warning', 'FailedCreatePodSandBox', message);
          await this.finish(pod, waiting, undefined).catch((e: unknown) => this.statusNotPublished(pod, e));
          throw new Error(message, { cause: err });
        }
        const sbStatus = await runtime.podSandboxStatus(sandboxId, call);
        this.deps.cache.rememberSandboxStatus(sbStatus);
        log.info({ sandboxId, ip: sbStatus.ip, ms: Math.round(performance.now() - started) }, 'sandbox created');
        this.sandboxConfigs.set(uid, { id: sandboxId, config: sandboxConfig });
        try {
          await hooks.afterSandbox.promise({ pod, sandboxId, config: sandboxConfig, status: sbStatus }, ctx);
        } catch (err) {
          // Shown on every container while the sync retries with back-off (the sandbox stays).
          for (const c of containersOf(pod)) waiting.set(c.name, { reason: defaultWaitingReason(pod), message: errorMessage(err) });
          await this.finish(pod, waiting, undefined).catch((e: unknown) => this.statusNotPublished(pod, e));
          throw err;
        }
        podIP = isHostNetwork(pod) ? config.nodeIP : sbStatus.ip;
      } else {
        const known = this.sandboxConfigs.get(uid);
        const sb = rs!.sandboxes[0]!;
        if (known && known.id === sandboxId) sandboxConfig = known.config;
        else {
          // Adopted after a restart: rebuild the config the sandbox was created with.
          sandboxConfig = await this.sandboxConfig(pod, sb.metadata.attempt, false, signal);
          this.sandboxConfigs.set(uid, { id: sandboxId!, config: sandboxConfig });
        }
        podIP = isHostNetwork(pod) ? config.nodeIP : sb.ip;
      }

      // A container killed for a failed liveness or startup probe gets that probe's grace period when it sets one.
      await Promise.all(actions.containersToKill.map((k) => this.killer.killContainer(pod, k.id, k.name, containerKillGraceSeconds(pod, allContainersOf(pod).find((c) => c.name === k.name), k.failedProbe), k.message, signal)));
      // Ephemeral containers before init containers, as upstream: a debugger must start even when an init container fails.
      await startEach(actions.ephemeralToStart, signal, (s) => this.startContainer(pod, s, sandboxId!, sandboxConfig, podIP, waiting, signal));
      if (actions.nextInit && !signal.aborted) {
        await this.startContainer(pod, actions.nextInit, sandboxId!, sandboxConfig, podIP, waiting, signal);
        // A started sidecar keeps running, so no exit will wake the pod: go on to the next init container now.
        if (isSidecar(actions.nextInit.container)) requeueAfterMs = 0;
      }
      await startEach(actions.containersToStart, signal, (s) => this.startContainer(pod, s, sandboxId!, sandboxConfig, podIP, waiting, signal));
      removedDead = await this.gc.removeDeadContainers(rs);
    } finally {
      if (waiting.size > (actions.waiting.size)) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, WAITING_RESYNC_MS);
    }
    return this.finish(pod, waiting, requeueAfterMs, acts || removedDead);
  }

  /**
   * The pod's sandbox config as the runtime gets it: the base config, the pod's host name and
   * DNS (from clusterDNS, clusterDomain, resolvConf and the pod's dnsPolicy / dnsConfig, for
   * whatever owns the network), its cgroup parent, then the beforeSandbox taps. `report`: say
   * what DNS had to cut or fall back from (DNSConfigForming, MissingClusterDNS), once per
   * sandbox creation, not on adoption.
   */
  private async sandboxConfig(pod: V1Pod, attempt: number, report: boolean, signal: AbortSignal): Promise<PodSandboxConfig> {
    const { config, hooks } = this.deps;
    const sandboxConfig = buildSandboxConfig(pod, attempt, config);
    const dns = sandboxHostnameAndDns(pod, { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain, hostResolvConf: await readHostResolvConf(config.resolvConf) });
    sandboxConfig.hostname = dns.hostname;
    sandboxConfig.dnsConfig = dns.dnsConfig;
    if (report) for (const w of dns.warnings) this.event(pod, undefined, 'Warning', w.reason, w.message);
    if (this.deps.cgroups) sandboxConfig.linux.cgroupParent = await this.deps.cgroups.ensurePod(pod);
    if (wantsUserNamespace(pod)) sandboxConfig.linux.securityContext.namespaceOptions.usernsOptions = await this.userNamespace(pod, signal);
    return hooks.beforeSandbox.promise(sandboxConfig, pod, hookContext(signal));
  }

  /**
   * Whether the pod's runtime handler makes recursive read-only mounts (CRI Status features),
   * asked only for a container that wants one.
   */
  private async recursiveReadOnlyMounts(pod: V1Pod, c: V1Container, signal: AbortSignal): Promise<boolean> {
    const wants = (c.volumeMounts ?? []).some((m) => { const mode = (m as { recursiveReadOnly?: string }).recursiveReadOnly; return mode === 'Enabled' || mode === 'IfPossible'; });
    if (!wants) return false;
    return (await this.handlerFeatures(pod, signal)).features?.recursiveReadOnlyMounts === true;
  }

  /** The pod's runtime handler (from its RuntimeClass; '' the default), what the runtime says it can do, and all it reports (CRI Status). */
  private async handlerFeatures(pod: V1Pod, signal: AbortSignal): Promise<{ handler: string; features: RuntimeHandlerInfo | undefined; all: RuntimeHandlerInfo[] }> {
    const handler = (await this.deps.runtimeClasses?.handler(pod)) ?? '';
    const all = (await this.deps.runtime.runtimeHandlers?.({ signal })) ?? [];
    return { handler, features: all.find((h) => h.name === handler), all };
  }

  /**
   * A `hostUsers: false` pod's user namespace: its own block of host IDs, when the runtime
   * handler its sandbox is made with can do user namespaces. As upstream (>= 1.30), the pod is
   * not run in the host's user namespace instead: its sandbox fails with the reason.
   */
  private async userNamespace(pod: V1Pod, signal: AbortSignal): Promise<UserNamespaceOptions> {
    const { handler, features, all: handlers } = await this.handlerFeatures(pod, signal);
    if (!features?.userNamespaces) {
      throw new Error(`RuntimeClass handler ${JSON.stringify(handler)} does not support user namespaces, which hostUsers: false asks for (the container runtime reports ${handlers.length ? `user namespaces for: ${handlers.filter((h) => h.userNamespaces).map((h) => JSON.stringify(h.name)).join(', ') || 'no handler'}` : 'no handler features: containerd 2.0 or later with runc 1.2 or later can run them'})`);
    }
    if (!this.deps.userNamespaces) throw new Error('this kubelet gives no user namespaces');
    return this.deps.userNamespaces.forPod(pod);
  }

  /**
   * Publishes the pod's status right after acting (not one relist later): when the sync
   * changed anything in the runtime, the pod is read again first.
   */
  private async finish(pod: V1Pod, waiting: Waiting, requeueAfterMs: number | undefined, acted = true): Promise<SyncOutcome> {
    const uid = podUID(pod);
    this.deps.status.setWaiting(uid, waiting);
    let rs = this.deps.cache.get(uid);
    if (acted) {
      this.actedAt.set(uid, Date.now());
      rs = await this.deps.cache.refreshPod(uid);
    }
    await this.deps.status.update(pod, rs);
    // Wake the pod's worker at its active deadline, not only at the next resync.
    const left = this.deps.status.rejection(uid) ? undefined : activeDeadlineLeftMs(pod, this.deps.status.startTime(uid) ?? pod.status?.startTime, Date.now());
    if (left !== undefined) requeueAfterMs = Math.min(requeueAfterMs ?? Infinity, Math.max(0, Math.min(left, MAX_DEADLINE_WAKE_MS)));
    return requeueAfterMs === undefined ? {} : { requeueAfterMs };
  }

  /** Fails the pod (DeadlineExceeded, with upstream's event) once it has been active longer than activeDeadlineSeconds. */
  private checkActiveDeadline(pod: V1Pod): void {
    const uid = podUID(pod);
    if (this.deps.status.rejection(uid)) return;
    const left = activeDeadlineLeftMs(pod, this.deps.status.startTime(uid) ?? pod.status?.startTime, Date.now());
    if (left === undefined || left > 0) return;
    this.deps.status.reject(uid, DEADLINE_EXCEEDED.reason, DEADLINE_EXCEEDED.message);
    this.event(pod, undefined, 'Normal', DEADLINE_EXCEEDED.reason, DEADLINE_EXCEEDED.message);
    this.podLogger(pod).info({ activeDeadlineSeconds: pod.spec?.activeDeadlineSeconds }, 'pod was active longer than its deadline: killing it');
  }

  /** A pod the kubelet failed: its containers and sandbox are stopped (with its grace period), its status published. */
  private async stopFailedPod(pod: V1Pod, rs: PodRuntimeStatus | undefined, signal: AbortSignal): Promise<SyncOutcome> {
    const live = (rs?.containers ?? []).some((c) => c.state === 'CONTAINER_RUNNING' || c.state === 'CONTAINER_CREATED') || (rs?.sandboxes ?? []).some((s) => s.state === 'SANDBOX_READY');
    if (live) {
      this.actedAt.set(podUID(pod), Date.now());
      // An eviction sets its own grace (0 for a hard threshold); others use the pod's.
      await this.killer.killPod(pod, rs, this.deps.status.rejection(podUID(pod))?.gracePeriodSeconds ?? gracePeriodSeconds(pod), signal);
    }
    // Nothing of it runs now (the kill waited for the containers): what it held on the node's
    // filesystems and in cgroups goes, so an eviction frees what it was for.
    await this.reclaim.reclaim(pod);
    return this.finish(pod, new Map(), undefined, live);
  }

  /** The security inputs of a container's config: the image's user (asked of the runtime only when the spec names none) and the seccomp root. */
  private async securityInputs(pod: V1Pod, c: V1Container, signal: AbortSignal): Promise<SecurityInputs> {
    let image: ImageUser = {};
    if (needsImageUser(pod, c)) {
      const info = await this.deps.runtime.imageStatus(c.image!, { signal });
      image = { ...(info?.uid !== undefined ? { uid: info.uid } : {}), ...(info?.username ? { username: info.username } : {}) };
    }
    return { image, seccompProfileRoot: path.join(this.deps.config.rootDir, 'seccomp'), seccompDefault: this.deps.config.seccompDefault };
  }

  /**
   * What a container's config needs from the node besides its volumes: its Localhost seccomp
   * profile must exist, and it gets a new termination message file. Throws ContainerConfigError.
   */
  private async prepareContainer(pod: V1Pod, c: V1Container, cfg: ContainerConfig): Promise<void> {
    try {
      await checkSeccompProfile(cfg.linux.securityContext, c.name, path.join(this.deps.config.rootDir, 'seccomp'));
      const mount = await terminationMessageMount(this.deps.config.rootDir, podUID(pod), c).catch((err: unknown) => {
        if (err instanceof TerminationMessagePathError) throw err;
        // As upstream: the container runs without its termination message file.
        this.podLogger(pod).warn({ container: c.name, err: errorMessage(err) }, 'could not create the termination message file');
        return undefined;
      });
      if (mount) cfg.mounts.push(mount);
    } catch (err) {
      if (err instanceof SecurityContextError || err instanceof TerminationMessagePathError) throw new ContainerConfigError(err.message);
      throw err;
    }
  }

  /** Creates and starts one container; a failure is recorded as the container's waiting reason. */
  private async startContainer(pod: V1Pod, start: ContainerStart, sandboxId: string, sandboxConfig: PodSandboxConfig, podIP: string, waiting: Waiting, signal: AbortSignal): Promise<void> {
    const { hooks, config } = this.deps;
    const c = start.container;
    const log = this.podLogger(pod).child({ container: c.name });
    const uid = podUID(pod);
    const init = (pod.spec?.initContainers ?? []).includes(c);
    // An ephemeral container's start is shown by explain after the pod's first Ready.
    const ephemeral = ephemeralContainersOf(pod).includes(c);
    const afterReady = { afterReady: ephemeral };
    const what = init ? `init ${c.name}` : ephemeral ? `ephemeral ${c.name}` : c.name;
    const event = (type: EventType, reason: string, message: string) => this.event(pod, c.name, type, reason, message);
    const objects = this.deps.objects?.(pod);
    // A pull that failed or waits in back-off is a failed step of the start, with its reason.
    const image = await this.timed(uid, 'image', () => this.deps.puller.ensure(pod, c, sandboxConfig, init, objects, signal), `${what}: ${c.image}`, (r) => ('reason' in r ? `${r.reason}: ${r.message}` : undefined), {
      // While it pulls, `explain` shows how far along it is; once pulled, its size and rate.
      live: () => {
        const pull = this.deps.puller.activePull(uid, c.name, init);
        return pull?.progress ? { progress: pull.progress } : undefined;
      },
      note: (r) => ('pulled' in r && r.pulled ? pulledNote(r.pulled) : undefined),
      ...afterReady,
    });
    if ('reason' in image) {
      waiting.set(c.name, image);
      return;
    }
    if (start.backoffKey) this.deps.crashBackoff.next(start.backoffKey, start.previousFinishedAt ?? Date.now());
    let containerConfig;
    try {
      const inputs = this.deps.downward?.(pod) ?? { podIPs: podIP ? [podIP] : [], hostIPs: [config.nodeIP], allocatable: machineAllocatable };
      if (podIP && inputs.podIPs.length === 0) inputs.podIPs = [podIP];
      const env = containerEnv(pod, c, await fetchEnvObjects(pod, c, objects), inputs, (bad) =>
        event('Warning', 'InvalidEnvironmentVariableNames', `Keys [${bad.keys.join(', ')}] from the EnvFrom ${bad.source} were skipped since they are considered invalid environment variable names.`),
      this.serviceEnv(pod));
      containerConfig = buildContainerConfig(pod, c, start.restartCount, { podIP, hostIP: config.nodeIP, env }, await this.securityInputs(pod, c, signal), config.runtimeInstance);
      if (ephemeral) this.targetNamespaces(pod, c, containerConfig);
      // The containers live in the sandbox's user namespace (the runtime checks they match).
      const userns = sandboxConfig.linux.securityContext.namespaceOptions.usernsOptions;
      if (userns) containerConfig.linux.securityContext.namespaceOptions = { ...containerConfig.linux.securityContext.namespaceOptions!, usernsOptions: userns };
      const volumes = this.deps.volumes.mounted(uid);
      containerConfig.mounts = await containerMounts(pod, c, containerConfig.envs, volumes, this.deps.volumes.subPathBinder(uid, c.name), await this.recursiveReadOnlyMounts(pod, c, signal));
      const blockDevices = blockVolumeDevices(c, volumes);
      if (blockDevices.length > 0) containerConfig.devices = [...(containerConfig.devices ?? []), ...blockDevices];
      const hosts = await etcHostsMount(pod, c, { podDir: this.deps.volumes.podDir(uid), podIPs: inputs.podIPs, clusterDomain: config.clusterDomain }).catch((err: unknown) => {
        throw new ContainerConfigError(`failed to write the pod's /etc/hosts: ${errorMessage(err)}`);
      });
      if (hosts) containerConfig.mounts.push(hosts);
      await this.prepareContainer(pod, c, containerConfig);
    } catch (err) {
      if (!(err instanceof ContainerConfigError)) throw err;
      waiting.set(c.name, { reason: 'CreateContainerConfigError', message: err.message });
      event('Warning', 'Failed', `Error: ${err.message}`);
      return;
    }
    await fs.mkdir(path.join(sandboxConfig.logDirectory, c.name), { recursive: true });
    try {
      containerConfig = await hooks.beforeContainerCreate.promise(containerConfig, { pod, container: c, sandboxId, sandboxConfig, restartCount: start.restartCount }, hookContext(signal));
    } catch (err) {
      if (signal.aborted) throw err;
      // A plugin refused or failed the container's config: the container waits with its reason; the sync retries.
      waiting.set(c.name, { reason: 'CreateContainerError', message: errorMessage(err) });
      log.warn({ err: errorMessage(err) }, 'Failed to create container');
      event('Warning', 'Failed', `Error: ${errorMessage(err)}`);
      return;
    }
    // Create and start within the node-wide bound (the runtime's work is the node's, not the pod's).
    // A pod that began terminating while this waited for a slot creates nothing more.
    const created = await this.createSlot(async () => (signal.aborted ? undefined : this.createAndStart(pod, c, containerConfig, sandboxId, sandboxConfig, what, afterReady, waiting, signal)));
    if (created === undefined) return;
    const id = created;
    log.info({ containerId: id, restartCount: start.restartCount }, 'started container');
    event('Normal', 'Started', `Started container ${c.name}`);
    try {
      // The container's own postStart handler first (bounded by its pod's grace period, not by
      // hookTimeout), then the plugins' afterStart taps; a failure of either fails the start.
      await this.deps.lifecycle.postStart({ pod, container: c, containerId: id, podIP });
      await hooks.afterStart.promise({ pod, container: c, containerId: id, sandboxId, podIP }, hookContext(signal));
    } catch (err) {
      // Upstream kills a container whose postStart handler failed, then restarts it per policy.
      log.warn({ err: errorMessage(err) }, 'FailedPostStartHook');
      event('Warning', 'FailedPostStartHook', errorMessage(err));
      await this.killer.killContainer(pod, id, c.name, gracePeriodSeconds(pod), `FailedPostStartHook: ${errorMessage(err)}`, signal);
    }
  }

  /**
   * CreateContainer then StartContainer; the container's id once started, undefined (its waiting
   * reason set) when either failed.
   */
  private async createAndStart(pod: V1Pod, c: V1Container, cfg: ContainerConfig, sandboxId: string, sandboxConfig: PodSandboxConfig, what: string, afterReady: { afterReady: boolean }, waiting: Waiting, signal: AbortSignal): Promise<string | undefined> {
    const { runtime } = this.deps;
    const uid = podUID(pod);
    const log = this.podLogger(pod).child({ container: c.name });
    const event = (type: EventType, reason: string, message: string) => this.event(pod, c.name, type, reason, message);
    let id: string;
    try {
      id = await this.timed(uid, 'create', () => runtime.createContainer(sandboxId, cfg, sandboxConfig), what, undefined, afterReady);
    } catch (err) {
      if (signal.aborted) throw err;
      waiting.set(c.name, { reason: 'CreateContainerError', message: errorMessage(err) });
      log.warn({ err: errorMessage(err) }, 'Failed to create container');
      event('Warning', 'Failed', `Error: ${errorMessage(err)}`);
      return undefined;
    }
    event('Normal', 'Created', `Created container ${c.name}`);
    // Given up on meanwhile: the termination removes the created container; it is not started.
    if (signal.aborted) return undefined;
    try {
      await this.timed(uid, 'start', () => runtime.startContainer(id), what, undefined, afterReady);
    } catch (err) {
      if (signal.aborted) throw err;
      waiting.set(c.name, { reason: 'RunContainerError', message: `failed to start container "${id}": ${errorMessage(err)}` });
      log.warn({ err: errorMessage(err) }, 'Failed to start container');
      event('Warning', 'Failed', `Error: failed to start container "${c.name}": ${errorMessage(err)}`);
      return undefined;
    }
    return id;
  }

  /** Runs a container's create and start within the node-wide bound on them, when there is one. */
  private createSlot<T>(fn: () => Promise<T>): Promise<T> {
    return this.deps.containerCreations ? this.deps.containerCreations.run(fn) : fn();
  }

  /**
   * An ephemeral container with `targetContainerName` joins that container's process namespace
   * (CRI NamespaceMode TARGET), as `kubectl debug --target` wants; the target must be running,
   * else the container waits with CreateContainerConfigError, as upstream.
   */
  private targetNamespaces(pod: V1Pod, c: V1Container & { targetContainerName?: string }, cfg: ContainerConfig): void {
    const target = c.targetContainerName;
    if (!target) return;
    const st = latestByName(this.deps.cache.get(podUID(pod))).get(target);
    if (st?.state !== 'CONTAINER_RUNNING') throw new ContainerConfigError(`unable to find target container ${target}`);
    cfg.linux.securityContext.namespaceOptions = { ...cfg.linux.securityContext.namespaceOptions!, pid: 'TARGET', targetId: st.id };
  }

  /**
   * The pod's service link variables. As upstream, an API pod waits (CreateContainerConfigError)
   * until the services were listed once, so a restarted kubelet never starts a container
   * without KUBERNETES_SERVICE_HOST; a static pod takes what is known.
   */
  private serviceEnv(pod: V1Pod): Map<string, string> {
    const services = this.deps.services?.();
    if (!services) return new Map();
    if (!services.synced && !isStaticPod(pod)) throw new ContainerConfigError('services have not yet been read at least once, cannot construct envvars');
    return serviceLinkEnv(services.list(), pod.metadata?.namespace ?? 'default', pod.spec?.enableServiceLinks !== false);
  }

  /**
   * Runs a sandbox creation within the bound on concurrent creations, when there is one; a
   * wait for a slot shows in the pod's start timeline as its own step.
   */
  private async createSandbox(uid: string, create: () => Promise<string>): Promise<string> {
    const slots = this.deps.sandboxCreations;
    if (!slots) return create();
    const asked = Date.now();
    return slots.run(() => {
      const waited = Date.now() - asked;
      if (waited > 0) this.deps.timeline?.record(uid, { step: 'sandbox-slot', startMs: asked, durationMs: waited, detail: 'waited for a sandbox creation slot (maxParallelSandboxCreations)' });
      return create();
    });
  }

  /** Runs `fn` as a step of the pod's start timeline (recorded until the pod is first Ready). */
  private timed<T>(uid: string, step: string, fn: () => Promise<T>, detail?: string, failureOf?: (result: T) => string | undefined, extras?: TimedExtras<T>): Promise<T> {
    return this.deps.timeline ? this.deps.timeline.time(uid, step, fn, detail, failureOf, extras) : fn();
  }

  /**
   * Stops and removes everything of a pod that left its source (pod-termination.ts); forgets
   * what the start path kept of it. `grace`: the termination's grace as the pod worker keeps
   * it (it may shorten while this runs).
   */
  async terminate(pod: V1Pod, grace?: TerminationGrace, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const uid = podUID(pod);
    this.sandboxConfigs.delete(uid);
    this.actedAt.delete(uid);
    this.volumeFailures.delete(uid);
    this.reclaim.forget(uid);
    await this.termination.terminate(pod, grace, signal);
  }

  /** Whether a terminal pod (failed by the kubelet, or finished) has stopped and given back its volumes and cgroup (eviction and node shutdown wait for it). */
  podReclaimed(uid: string): { volumes: string[] } | undefined {
    return this.reclaim.reclaimedOf(uid);
  }

  /** Removes a dead container and its log file, for the node-wide container GC. */
  removeContainerAndLog(c: ContainerStatus): Promise<void> {
    return this.gc.removeContainerAndLog(c);
  }

  /** A status that could not be published while the sync fails anyway (the sync's own error is what the worker reports). */
  private statusNotPublished(pod: V1Pod, err: unknown): void {
    this.podLogger(pod).warn({ plugin: pluginOf(err), err: errorMessage(err) }, 'pod status not published');
  }

  private event(pod: V1Pod, container: string | undefined, type: EventType, reason: string, message: string): void {
    recordPodEvent(this.deps.events, pod, container, type, reason, message);
  }

  private podLogger(pod: V1Pod): Logger {
    return podLogger(this.deps.logger, pod);
  }
}

/** A stand-in pod for runtime objects whose pod the kubelet no longer knows (orphans). */
export function orphanPod(rs: PodRuntimeStatus): V1Pod {
  const grace = Number(rs.containers[0]?.annotations[ANNOTATION.podTerminationGracePeriod] ?? rs.sandboxes[0]?.annotations[ANNOTATION.podTerminationGracePeriod] ?? 30);
  return {
    metadata: { name: rs.name, namespace: rs.namespace, uid: rs.uid },
    spec: { containers: [], terminationGracePeriodSeconds: Number.isFinite(grace) ? grace : 30 },
  };
}

/**
 * Starts `starts` at most CONTAINER_STARTS_PER_POD at a time, in order; none is begun once
 * `signal` says the pod is being terminated (those begun are cancelled through the same signal).
 */
function startEach<T>(starts: T[], signal: AbortSignal, start: (s: T) => Promise<void>): Promise<void> {
  return inLanes(starts, CONTAINER_STARTS_PER_POD, () => signal.aborted, start);
}

