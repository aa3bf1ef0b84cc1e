import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { Logger } from './logger.ts';
import { errorMessage, pluginOf } from './errors.ts';
import type { KubeletHooks, ProbeResultEvent } from './hooks.ts';
import type { KubeletConfig } from './config/types.ts';
import type { KubeletMetrics } from './metrics/kubelet-metrics.ts';
import type { RuntimeCache } from './runtime/runtime-cache.ts';
import type { StatusManager } from './status/status-manager.ts';
import type { PodRejection } from './status/pod-status.ts';
import type { ProbeResults } from './status/probe-results.ts';
import type { PodTimelines } from './timeline/pod-timeline.ts';
import type { VolumeManager } from './volumes/volume-manager.ts';
import { podRef, type EventRecorder } from './events/event-recorder.ts';
import { orphanPod, type PodSyncer } from './pod/pod-sync.ts';
import { evictableContainers } from './pod/container-gc.ts';
import { gracePeriodSeconds, podFullName } from './objects/pod-util.ts';
import { effectiveGracePeriod } from './pod/termination-grace.ts';
import { PodWorkers } from './pod/pod-workers.ts';
import { WorkQueue } from './pod/work-queue.ts';
import { checkAdmission, checkPressureAdmission, type AdmissionNode } from './pod/admission.ts';
import { preemptForCriticalPod, PREEMPTED_DISRUPTION_MESSAGE, PREEMPTED_MESSAGE, PREEMPTED_REASON } from './pod/critical-pod-preemption.ts';
import type { SecurityAdmission } from './pod/security-admission.ts';
import { PodConfig, type PodUpdate } from './sources/pod-config.ts';
import { isApiPod, isStaticPod } from './objects/pod-origin.ts';
import { isMirrorPod } from './objects/pod-origin.ts';
import { objectRefsOf, type ObjectRef } from './objects/object-refs.ts';
import { hookContext } from './util/cancellation.ts';
import { EVICTED_REASON } from './eviction/eviction-manager.ts';

/** How soon a replacement static pod checks again whether its predecessor is gone. */
const REPLACEMENT_WAIT_MS = 200;
/** The grace of a terminating API pod once it is gone from the API server (upstream's override for pods no source knows). */
const GONE_FROM_API_GRACE_SECONDS = 1;
/**
 * How long a pod's worker must have been busy before a runtime change (PLEG) publishes the pod's
 * status in the middle of its operation. Upstream shows a runtime change only at the end of a
 * sync, and sees it no sooner than its relist period (1 s): a quick operation (a container
 * restarted for a changed image: killed, pulled, started) shows its end, not its middle (the
 * conformance test "lifecycle of Pods and PodStatus" reads Ready right after such a change and
 * failed when the killed container's status was out first); a worker busy for long (a slow pull,
 * postStart, a hanging tap) still has its status follow the runtime.
 */
const BUSY_STATUS_AFTER_MS = 1000;
/** How long the loop remembers that a pod's termination finished. */
const FINISHED_MEMORY_MS = 10 * 60_000;

/**
 * What the API-server side gives the loop, once it runs: where statuses go and which objects to
 * watch. Only what the loop calls, declared here (kubelet.ts passes the ApiPodReporter,
 * ApiObjectCache and TokenManager, which fit these), so the loop can be read and tested
 * without the API-server classes.
 */
export interface SyncLoopApi {
  reporter: SyncLoopReporter;
  objectCache: SyncLoopObjectWatch;
  tokens: SyncLoopTokens;
}

/** Where pod statuses and final deletes go (the API pod reporter), and the mirror pods it keeps. */
export interface SyncLoopReporter {
  mirrors: {
    /** The mirror pods the API server lists for this node. */
    observe(mirrors: V1Pod[]): void;
    /** The static pods the kubelet runs, whose mirrors it keeps. */
    setStatic(pods: V1Pod[]): void;
  };
  /** The pod finished terminating: an API pod is deleted from the server. */
  terminated(pod: V1Pod): void;
  /** Drops what is kept of the pod. */
  forget(uid: string): void;
}

/** The ConfigMaps and Secrets watched for each pod (the API object cache). */
export interface SyncLoopObjectWatch {
  setPodRefs(podUid: string, refs: ObjectRef[]): void;
  forgetPod(podUid: string): void;
}

/** Service account tokens kept per pod (the token manager). */
export interface SyncLoopTokens {
  forgetPod(uid: string): void;
}

/** What node pressure means for admission (the eviction manager's view). */
export interface SyncLoopPressure {
  conditions(): ReadonlySet<string>;
  isCritical(pod: V1Pod): boolean;
}

export interface SyncLoopDeps {
  config: KubeletConfig;
  logger: Logger;
  hooks: KubeletHooks;
  cache: RuntimeCache;
  status: StatusManager;
  syncer: PodSyncer;
  probes: ProbeResults;
  volumes: VolumeManager;
  timelines: PodTimelines;
  metrics: KubeletMetrics;
  events: EventRecorder;
  securityAdmission: SecurityAdmission;
  /** What admission fits pods against (allocatable, the Node's labels and taints). */
  admissionNode: () => AdmissionNode;
  /** Node pressure, for admission; known once the eviction manager exists. */
  pressure: () => SyncLoopPressure;
  /** Milliseconds a pod spent pulling images (the start SLI leaves them out). */
  pulledMs: (uid: string) => number;
  /** Device allocation at admission (core/devices), and its release when a pod is not admitted after all. */
  devices?: SyncLoopDevices;
  /** A refusal of every new pod for the node's state (a node shutdown in progress), checked first. */
  nodeAdmission?: () => { reason: string; message: string } | undefined;
}

/** What admission needs of the device manager. */
export interface SyncLoopDevices {
  /** Undefined when the pod needs no devices (admission goes on at once); else the allocation's refusal, if any. */
  admit(pod: V1Pod): Promise<{ reason: string; message: string } | undefined> | undefined;
  release(podUID: string): void;
}

/**
 * The sync loop: what the sources want (desired), what is being stopped (terminating), and
 * the machinery that makes the runtime match: the source merger, admission, the per-pod
 * workers and their queue, PLEG reactions, probe results, eviction of a chosen pod, and
 * housekeeping of pods no source wants. The composition root (kubelet.ts) builds it from the
 * parts it wires; it knows no plugin and no transport.
 */
export class SyncLoop {
  /** Pods the sources want, by UID. */
  private readonly desired = new Map<string, V1Pod>();
  /** Pods being terminated (removed from their source), by UID. */
  private readonly terminating = new Map<string, V1Pod>();
  /**
   * Pods whose termination finished, by UID, with when: an API pod the kubelet deleted is then
   * still listed until the watch reports the delete, and its removal is not a new termination.
   * Forgotten after FINISHED_MEMORY_MS.
   */
  private readonly finished = new Map<string, number>();
  /**
   * Pods added and not yet admitted, by UID, with the UIDs of the pods admitted before them (what
   * admission fits them next to). Admission runs in the pod's worker, ahead of its first sync, so
   * an update or removal that arrives while an `admitPod` tap is awaited waits its turn.
   */
  private readonly pendingAdmission = new Map<string, ReadonlySet<string>>();
  /**
   * Terminating pods their source no longer lists (a static manifest removed, an API pod gone
   * from the API server): admission does not count them, as upstream's does not (they leave its
   * pod manager at once), so a pod replaced under churn or a static pod's new version is not
   * refused for the room its predecessor still takes while it stops. An API pod being deleted
   * gracefully is still listed, and counted, until it is gone.
   */
  private readonly goneFromSource = new Set<string>();
  /** Pods whose start was already measured (kubelet_pod_start_duration_seconds counts each once). */
  private readonly startMeasured = new Set<string>();
  /** Deferred mid-operation status publications (publishWhileBusy), by pod UID. */
  private readonly busyStatusTimers = new Map<string, NodeJS.Timeout>();
  private readonly podConfig = new PodConfig((u) => this.handleUpdate(u));
  private readonly queue: WorkQueue;
  private readonly workers: PodWorkers;
  private api: SyncLoopApi | undefined;
  private housekeepingBusy = false;

  constructor(private readonly d: SyncLoopDeps) {
    this.queue = new WorkQueue((uid) => this.resync(uid));
    this.workers = new PodWorkers(
      {
        sync: (pod, signal) => this.syncPod(pod, signal),
        terminate: (pod, grace, signal) => d.syncer.terminate(pod, grace, signal),
        requeue: (uid, ms) => this.queue.enqueue(uid, ms),
        terminated: (pod) => this.onTerminated(pod),
        observe: d.metrics.observePodWorker,
      },
      d.logger.child({ component: 'pod-workers' }),
    );
  }

  /** API-server mode: statuses, mirror pods and final deletes go to the reporter; API objects are watched per pod. */
  attachApi(api: SyncLoopApi): void {
    this.api = api;
  }

  /**
   * A source's complete set: to the merger, except mirror pods (the API's copies of this
   * node's static pods, which the kubelet keeps but never runs).
   */
  onSourceSet(source: string, pods: V1Pod[]): void {
    if (source === 'api') {
      this.api?.reporter.mirrors.observe(pods.filter(isMirrorPod));
      pods = pods.filter((p) => !isMirrorPod(p));
    }
    this.podConfig.set(source, pods);
    this.api?.reporter.mirrors.setStatic([...this.desired.values()].filter(isStaticPod));
  }

  /** The pods this kubelet runs or is terminating, with their current status. */
  pods(): V1Pod[] {
    const out: V1Pod[] = [];
    // One entry per UID: a pod its source wants again while it still stops is in both maps,
    // and what runs of it is the stopping one until its worker is done.
    for (const [uid, pod] of new Map([...this.desired, ...this.terminating])) {
      const status = this.d.status.get(uid) ?? pod.status;
      out.push({ ...pod, apiVersion: 'v1', kind: 'Pod', ...(status ? { status } : {}) });
    }
    return out;
  }

  /** A pod the kubelet knows (wanted or stopping) with the status it last computed, for the API reporter. */
  statusOf(uid: string): { pod: V1Pod; status: V1PodStatus } | undefined {
    const pod = this.desired.get(uid) ?? this.terminating.get(uid);
    const status = this.d.status.get(uid);
    return pod && status ? { pod, status } : undefined;
  }

  /** A pod the sources want, by UID. */
  wanted(uid: string): V1Pod | undefined {
    return this.desired.get(uid);
  }

  /** The pods active on the node: wanted, admitted, not failed by the kubelet, not terminal, not terminating (eviction's candidates). */
  activePods(): V1Pod[] {
    return this.pods().filter((p) => {
      const uid = p.metadata!.uid!;
      return this.desired.has(uid) && !this.terminating.has(uid) && !this.d.status.rejection(uid) && p.status?.phase !== 'Succeeded' && p.status?.phase !== 'Failed';
    });
  }

  /**
   * Evicts a pod the eviction manager chose:
   * Failed with reason Evicted and the policy's message (upstream's wording), a Warning event, and
   * its containers killed with `gracePeriodSeconds` by its worker (the path of a pod past its
   * active deadline). False when it is no longer active. `disruptionTarget`: the status also
   * carries upstream's DisruptionTarget condition (reason TerminationByKubelet, the eviction's
   * message), as for a pressure eviction.
   */
  evictPod(pod: V1Pod, message: string, gracePeriodSeconds: number, disruptionTarget = true): boolean {
    return this.failPod(pod, { reason: EVICTED_REASON, message, gracePeriodSeconds, disruptionTarget, event: 'Warning' });
  }

  /**
   * Ends an active pod for the node's sake (an eviction, a node shutdown): Failed for good with
   * `reason` and `message`, killed by its worker with `gracePeriodSeconds`; with
   * `disruptionTarget`, its status carries DisruptionTarget; with `event`, the pod gets an event
   * of that type with the reason and message. False when it is no longer active.
   */
  failPod(pod: V1Pod, f: { reason: string; message: string; gracePeriodSeconds: number; disruptionTarget: PodRejection['disruptionTarget']; event?: 'Normal' | 'Warning' }): boolean {
    const uid = pod.metadata!.uid!;
    const current = this.desired.get(uid);
    if (!current || this.d.status.rejection(uid)) return false;
    this.d.status.reject(uid, f.reason, f.message, f.gracePeriodSeconds, f.disruptionTarget);
    if (f.event) this.d.events.record(podRef(current), f.event, f.reason, f.message);
    this.d.logger.warn({ pod: podFullName(current), uid, reason: f.reason, gracePeriodSeconds: f.gracePeriodSeconds, message: f.message }, 'pod failed by the kubelet');
    this.workers.update(current);
    return true;
  }

  /**
   * Node-level reclaim of dead containers before evicting pods for disk (upstream
   * deleteAllUnusedContainers): every dead container of a pod the kubelet failed (an evicted
   * pod's container and log are what fills the disk), and every other dead container but each
   * name's newest (restart counts).
   */
  async removeDeadContainers(): Promise<void> {
    const dead = this.d.cache.all().flatMap((rs) => (this.d.status.rejection(rs.uid)
      ? rs.containers.filter((c) => c.state === 'CONTAINER_EXITED')
      : evictableContainers(rs).flatMap(([, list]) => list)));
    for (const c of dead) await this.d.syncer.removeContainerAndLog(c);
  }

  /**
   * A probe result from the prober: the loop records it and syncs the pod at once (readiness and
   * startup feed its status; a liveness or startup failure makes the sync restart the container),
   * then `onProbe` tells the plugins. A failing tap is logged; it changes nothing of the result.
   */
  async reportProbe(e: ProbeResultEvent): Promise<void> {
    this.d.probes.set(e.containerId, e.probe, e.result);
    const pod = this.desired.get(e.pod.metadata!.uid!);
    if (pod) this.workers.update(pod);
    await this.d.hooks.onProbe.promise(e, hookContext()).catch((err) => this.d.logger.warn({ pod: podFullName(e.pod), container: e.containerName, plugin: pluginOf(err), err: errorMessage(err) }, 'an onProbe tap failed'));
  }

  /** The first time a pod has all its containers running: kubelet_pod_start_duration_seconds. */
  measureStart(pod: V1Pod, status: V1PodStatus): void {
    const uid = pod.metadata!.uid!;
    if (this.startMeasured.has(uid) || status.phase !== 'Running') return;
    if (!(status.containerStatuses ?? []).every((c) => c.state?.running)) return;
    this.startMeasured.add(uid);
    const seconds = (Date.now() - new Date(status.startTime ?? Date.now()).getTime()) / 1000;
    // The SLI leaves out image pulls, as upstream's does.
    this.d.metrics.observePodStart(seconds, Math.max(0, seconds - this.d.pulledMs(uid) / 1000));
  }

  /** Looks at a pod again: a wanted pod syncs; one whose termination failed tries it again. */
  resync(uid: string): void {
    const pod = this.desired.get(uid);
    if (pod) this.workers.update(pod);
    else if (this.workers.isTerminating(uid)) this.workers.retry(uid);
  }

  /** The periodic resync (syncFrequency): every wanted pod is looked at again. */
  resyncAll(): void {
    for (const pod of this.desired.values()) this.workers.update(pod);
  }

  /** PLEG saw these pods change in the runtime. */
  onPlegChange(uids: Set<string>): void {
    for (const uid of uids) {
      this.resync(uid);
      // A worker busy for long (a slow postStart, a hanging plugin tap) publishes the pod's
      // status only when it is done: meanwhile the status follows the runtime from here.
      this.publishWhileBusy(uid);
    }
  }

  /**
   * Publishes the status of a pod whose worker is busy, once the worker's operation has run
   * BUSY_STATUS_AFTER_MS (at once if it has). An operation that ends sooner publishes its own
   * status when it ends, so the deferred one is then dropped; one timer per pod at most.
   */
  private publishWhileBusy(uid: string): void {
    const ran = this.workers.busyForMs(uid);
    if (ran === undefined || !this.desired.has(uid)) return;
    if (ran >= BUSY_STATUS_AFTER_MS) {
      this.publishStatus(this.desired.get(uid)!, uid, false);
      return;
    }
    if (this.busyStatusTimers.has(uid)) return;
    // Looked at again when due: the worker may have begun another operation meanwhile (the change
    // may have come with it), which gets its own BUSY_STATUS_AFTER_MS; an idle worker has
    // published its status.
    const timer = setTimeout(() => {
      this.busyStatusTimers.delete(uid);
      this.publishWhileBusy(uid);
    }, BUSY_STATUS_AFTER_MS - ran);
    timer.unref();
    this.busyStatusTimers.set(uid, timer);
  }

  /**
   * Terminates runtime pods that no source wants (once every source in `sources` has reported),
   * collects dead containers beyond maxContainers, forgets old finished pods and removes volumes
   * of pods nobody runs any more.
   */
  async housekeeping(sources: string[]): Promise<void> {
    if (this.housekeepingBusy || !this.podConfig.seenAll(sources)) return;
    this.housekeepingBusy = true;
    try {
      for (const rs of this.d.cache.all()) {
        if (this.desired.has(rs.uid) || this.workers.has(rs.uid)) continue;
        const pod = orphanPod(rs);
        this.d.logger.info({ pod: podFullName(pod), uid: rs.uid }, 'removing pod no source wants');
        this.workers.update(pod, true);
      }
      await this.collectDeadContainers();
      const now = Date.now();
      for (const [uid, at] of this.finished) if (now - at > FINISHED_MEMORY_MS) this.finished.delete(uid);
      // Volumes of pods nobody runs any more (gone while the kubelet was down, or a teardown that failed).
      const runtimeUids = new Set(this.d.cache.uids());
      await this.d.volumes.cleanupOrphans((uid) => this.desired.has(uid) || this.terminating.has(uid) || this.workers.has(uid) || runtimeUids.has(uid));
    } catch (err) {
      this.d.logger.warn({ err: errorMessage(err) }, 'housekeeping failed');
    } finally {
      this.housekeepingBusy = false;
    }
  }

  /** Every source in `sources` has reported its pods at least once. */
  sourcesSeen(sources: string[]): boolean {
    return this.podConfig.seenAll(sources);
  }

  /** Stops the queue's timers (nothing is enqueued again) and the workers' container starts. */
  stopQueue(): void {
    this.queue.stop();
    for (const t of this.busyStatusTimers.values()) clearTimeout(t);
    this.busyStatusTimers.clear();
    this.workers.halt();
  }

  /** Waits up to `ms` (forever without) for busy pod workers; returns the UIDs still busy. */
  drain(ms?: number): Promise<string[]> {
    return this.workers.drain(ms);
  }

  private onTerminated(pod: V1Pod): void {
    const uid = pod.metadata!.uid!;
    this.terminating.delete(uid);
    this.goneFromSource.delete(uid);
    if (!this.desired.has(uid)) this.pendingAdmission.delete(uid);
    this.finished.set(uid, Date.now());
    this.api?.reporter.terminated(pod);
    this.api?.reporter.forget(uid);
    this.api?.objectCache.forgetPod(uid);
    this.api?.tokens.forgetPod(uid);
    this.startMeasured.delete(uid);
    this.d.metrics.forgetPod(uid);
    this.d.timelines.forget(uid);
    // Wanted again while it stopped (its manifest removed or broken, then back under the
    // same UID): it starts now, not at the next periodic resync.
    const again = this.desired.get(uid);
    if (again) {
      this.finished.delete(uid);
      this.d.timelines.seen(uid, again.metadata?.namespace ?? 'default', again.metadata?.name ?? '');
      this.workers.update(again);
    }
  }

  private handleUpdate(u: PodUpdate): void {
    for (let pod of u.pods) {
      const uid = pod.metadata!.uid!;
      // An API pod being deleted (deletionTimestamp set): terminated with its deletion's grace
      // period, then deleted from the API server by the kubelet (see ApiPodReporter.terminated).
      const deleting = u.op !== 'REMOVE' && isApiPod(pod) && !!pod.metadata?.deletionTimestamp;
      if (u.op === 'REMOVE' || deleting) {
        // Gone from its source after the kubelet finished it (an API pod it deleted): nothing left to do.
        if (!this.desired.has(uid) && !this.terminating.has(uid) && !this.workers.has(uid) && this.finished.has(uid)) {
          if (u.op === 'REMOVE') this.finished.delete(uid);
          continue;
        }
        // Forgotten when its termination ends (onTerminated), or when it is added again.
        if (u.op === 'REMOVE') this.goneFromSource.add(uid);
        if (this.terminating.has(uid) && this.workers.isTerminating(uid)) {
          // Already terminating: a second delete may shorten its grace (never lengthen it), and
          // an API pod gone from the API server (force-deleted) is killed promptly (1 s, as
          // upstream kills pods no source knows).
          this.workers.update(pod, true, u.op === 'REMOVE' && isApiPod(pod) ? GONE_FROM_API_GRACE_SECONDS : undefined);
          continue;
        }
        this.desired.delete(uid);
        this.queue.forget(uid);
        if (!deleting) {
          // Shown as Terminating (deletionTimestamp) while its containers get their grace period.
          const grace = pod.spec?.terminationGracePeriodSeconds ?? 30;
          pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date(), deletionGracePeriodSeconds: grace } };
        }
        this.terminating.set(uid, pod);
        this.publishStatus(pod, uid, true);
        this.d.logger.info({ pod: podFullName(pod), uid, source: u.source, gracePeriod: effectiveGracePeriod(undefined, pod) }, deleting ? 'pod deleted in the API server, terminating' : 'pod removed from source, terminating');
        this.workers.update(pod, true);
        continue;
      }
      if (u.op === 'ADD') {
        this.finished.delete(uid);
        this.goneFromSource.delete(uid);
        this.d.logger.info({ pod: podFullName(pod), uid, source: u.source }, 'pod added');
        this.d.timelines.seen(uid, pod.metadata?.namespace ?? 'default', pod.metadata?.name ?? '');
        // Fitted next to the pods added before it, whenever its worker gets to admit it.
        this.pendingAdmission.set(uid, new Set(this.admittedPods(uid).map((p) => p.metadata!.uid!)));
        this.desired.set(uid, pod);
        // Its ConfigMaps and Secrets are watched from now on: ready when its volumes are set up.
        if (isApiPod(pod)) this.api?.objectCache.setPodRefs(uid, objectRefsOf(pod));
        this.workers.update(pod);
        continue;
      }
      this.desired.set(uid, pod);
      this.api?.objectCache.setPodRefs(uid, isApiPod(pod) ? objectRefsOf(pod) : []);
      this.workers.update(pod);
    }
  }

  /** The pods admitted besides `except`: wanted and not rejected or finished, and those still terminating that their source still lists. */
  private admittedPods(except: string): V1Pod[] {
    const out: V1Pod[] = [];
    for (const [uid, p] of [...this.desired, ...this.terminating]) {
      if (uid === except || this.d.status.rejection(uid) || this.goneFromSource.has(uid)) continue;
      const phase = this.d.status.get(uid)?.phase ?? p.status?.phase;
      if (phase === 'Succeeded' || phase === 'Failed') continue;
      out.push(p);
    }
    return out;
  }

  /**
   * Admits a pod in its worker, before its first sync: 'admitted', 'rejected' (its Failed status
   * published), or 'gone' when the pod was removed while admission awaited (no rejection is kept
   * or posted for it; its worker terminates it next).
   */
  private async admit(pod: V1Pod, before: ReadonlySet<string>, signal: AbortSignal): Promise<'admitted' | 'rejected' | 'gone'> {
    const uid = pod.metadata!.uid!;
    const admitStart = Date.now();
    // A node shutting down refuses every pod first; then upstream's order of admit handlers: node
    // pressure, sysctls (and AppArmor), device allocation, then the general predicates against the
    // pods admitted before it (terminating ones count while their source still lists them).
    const pressure = this.d.pressure();
    let rejection: { reason: string; message: string } | undefined = this.d.nodeAdmission?.() ?? checkPressureAdmission(pod, pressure.conditions(), { critical: pressure.isCritical(pod) });
    rejection ??= this.d.securityAdmission.admit(pod);
    const allocating = rejection ? undefined : this.d.devices?.admit(pod);
    if (allocating) rejection = await allocating;
    const admitted = this.admittedPods(uid).filter((p) => before.has(p.metadata!.uid!));
    const node = this.d.admissionNode();
    rejection ??= checkAdmission(pod, admitted, node, { nodeName: this.d.config.nodeName, isStatic: isStaticPod(pod) });
    // A critical pod short of resources ends pods to make room instead (upstream's CriticalPodAdmissionHandler).
    if (rejection?.reason.startsWith('OutOf') && pressure.isCritical(pod)) {
      rejection = await preemptForCriticalPod(pod, admitted, node, {
        isCritical: (p) => pressure.isCritical(p),
        end: (victim, signal) => {
          const ended = this.failPod(victim, {
            reason: PREEMPTED_REASON, message: PREEMPTED_MESSAGE, gracePeriodSeconds: gracePeriodSeconds(victim),
            disruptionTarget: { message: PREEMPTED_DISRUPTION_MESSAGE }, event: 'Warning',
          });
          if (ended) this.d.metrics.preemptions.inc({ preemption_signal: signal });
          return ended;
        },
        stopped: (victimUID) => !(this.d.cache.get(victimUID)?.containers.some((c) => c.state === 'CONTAINER_RUNNING') ?? false),
        logger: this.d.logger,
        nodeName: this.d.config.nodeName,
      });
    }
    if (!rejection) {
      try {
        const reason = await this.d.hooks.admitPod.promise(pod, hookContext(signal));
        if (reason) rejection = { reason: 'UnexpectedAdmissionError', message: reason };
      } catch (err) {
        rejection = { reason: 'UnexpectedAdmissionError', message: errorMessage(err) };
      }
    }
    this.pendingAdmission.delete(uid);
    if (!this.desired.has(uid) || this.workers.isTerminating(uid)) {
      if (rejection) this.d.devices?.release(uid);
      this.d.logger.info({ pod: podFullName(pod), uid }, 'pod removed while it was being admitted; not started');
      return 'gone';
    }
    if (rejection) {
      this.d.devices?.release(uid);
      this.d.logger.warn({ pod: podFullName(pod), uid, ...rejection }, 'pod rejected');
      // Upstream's rejectPod: a Warning event of the reason besides the Failed status.
      this.d.events.record(podRef(pod), 'Warning', rejection.reason, rejection.message);
      this.d.status.reject(uid, rejection.reason, rejection.message);
      await this.d.status.update(this.desired.get(uid) ?? pod, undefined);
      return 'rejected';
    }
    this.d.timelines.record(uid, { step: 'admitted', startMs: admitStart, durationMs: Date.now() - admitStart });
    return 'admitted';
  }

  private async syncPod(pod: V1Pod, signal: AbortSignal): Promise<{ requeueAfterMs?: number }> {
    const uid = pod.metadata!.uid!;
    // Not admitted yet: admission first, in this worker, so nothing of the pod runs before it is
    // admitted and updates meanwhile wait (they run as this worker's next sync).
    const before = this.pendingAdmission.get(uid);
    if (before) {
      if (this.d.status.rejection(uid)) this.pendingAdmission.delete(uid);
      else if ((await this.admit(pod, before, signal)) !== 'admitted') return {};
    }
    // A pod replacing another of the same namespace/name (an edited static pod) waits until its
    // predecessor has fully stopped: the two never run side by side (both may bind host ports).
    const others = this.workers.terminatingWithName(podFullName(pod)).filter((u) => u !== pod.metadata!.uid);
    others.push(...this.stopPredecessors(pod));
    if (others.length > 0) {
      await this.d.status.update(pod, undefined);
      return { requeueAfterMs: REPLACEMENT_WAIT_MS };
    }
    // Rejected at admission (or failed for good): it never gets a sandbox, across resyncs too.
    // The syncer still stops what runs of it (a pod past its active deadline whose kill failed is retried).
    if (this.d.status.rejection(pod.metadata!.uid!)) return this.d.syncer.sync(pod, signal);
    // An API pod the server already has as Succeeded or Failed (it finished before a restart of
    // the kubelet) is never started again, whatever the runtime still holds of it.
    if (isApiPod(pod) && (pod.status?.phase === 'Succeeded' || pod.status?.phase === 'Failed') && !this.d.status.get(pod.metadata!.uid!)) {
      const rs = this.d.cache.get(pod.metadata!.uid!);
      if (!rs?.containers.some((c) => c.state === 'CONTAINER_RUNNING')) return {};
    }
    return this.d.syncer.sync(pod, signal);
  }

  /**
   * UIDs of pods in the runtime with this pod's namespace and name that no source wants (an
   * old version of an edited static pod, found running after a restart of the kubelet): their
   * termination starts now, not at the next housekeeping.
   */
  private stopPredecessors(pod: V1Pod): string[] {
    const uid = pod.metadata!.uid!;
    const found: string[] = [];
    for (const rs of this.d.cache.all()) {
      if (rs.uid === uid || rs.name !== pod.metadata?.name || rs.namespace !== (pod.metadata?.namespace ?? 'default') || this.desired.has(rs.uid)) continue;
      found.push(rs.uid);
      if (this.workers.has(rs.uid)) continue;
      this.d.logger.info({ pod: podFullName(pod), uid, predecessor: rs.uid }, 'stopping the earlier version of the pod before starting this one');
      this.workers.update(orphanPod(rs), true);
    }
    return found;
  }

  /**
   * Recomputes and publishes a pod's status outside its worker (the worker publishes its own
   * after each operation). A failure (a podStatus tap that throws) leaves the last status in
   * place until the worker's next one; logged with the pod and the plugin.
   */
  private publishStatus(pod: V1Pod, uid: string, terminating: boolean): void {
    this.d.status.update(pod, this.d.cache.get(uid), terminating).catch((err: unknown) => {
      this.d.logger.warn({ pod: podFullName(pod), uid, plugin: pluginOf(err), err: errorMessage(err) }, 'pod status not published');
    });
  }

  /** Node-wide container GC: beyond `maxContainers` dead containers, the oldest go first. */
  private async collectDeadContainers(): Promise<void> {
    const limit = this.d.config.maxContainers;
    if (limit < 0) return;
    const dead = this.d.cache.all().flatMap((rs) => evictableContainers(rs).flatMap(([, list]) => list));
    if (dead.length <= limit) return;
    dead.sort((a, b) => a.createdAt - b.createdAt);
    for (const c of dead.slice(0, dead.length - limit)) await this.d.syncer.removeContainerAndLog(c);
  }
}
