import type { PodCgroups } from './cgroups/pod-cgroups.ts';
import type { KubeletConfig } from './config/types.ts';
import type { EventRecorder } from './events/event-recorder.ts';
import { STAGE, type KubeletHooks } from './hooks.ts';
import type { Logger } from './logger.ts';
import type { KubeletMetrics } from './metrics/kubelet-metrics.ts';
import type { ApiClient } from './apiserver/api-client.ts';
import { RuntimeClasses } from './apiserver/runtime-classes.ts';
import type { ServiceCache } from './apiserver/service-cache.ts';
import type { ObjectSource } from './objects/object-source.ts';
import type { DownwardInputs } from './objects/downward-api.ts';
import { Backoff } from './pod/backoff.ts';
import { ImagePuller } from './pod/image-puller.ts';
import { LifecycleHandlers } from './pod/lifecycle-handlers.ts';
import { CONTAINER_SLOT_MS, PodSyncer, SANDBOX_SLOT_MS } from './pod/pod-sync.ts';
import type { SecurityAdmission } from './pod/security-admission.ts';
import { withTerminationMessage } from './pod/termination-message.ts';
import type { UserNamespaces } from './pod/user-namespaces.ts';
import { Pleg } from './runtime/pleg.ts';
import { RuntimeCache } from './runtime/runtime-cache.ts';
import type { ContainerRuntime } from './runtime/types.ts';
import type { ProbeResults } from './status/probe-results.ts';
import { StatusManager } from './status/status-manager.ts';
import { SyncLoop, type SyncLoopDeps } from './sync-loop.ts';
import type { PodTimelines } from './timeline/pod-timeline.ts';
import { Limiter } from './util/limiter.ts';
import type { VolumeManager } from './volumes/volume-manager.ts';
import { hookContext } from './util/cancellation.ts';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';

/**
 * The pod engine: what turns wanted pods into running ones. The runtime's cache and PLEG (what
 * runs), the status manager, the image puller, the pod syncer (one pod's sync) and the sync loop
 * that runs it for every pod.
 */
export interface PodEngine {
  readonly cache: RuntimeCache;
  readonly status: StatusManager;
  readonly puller: ImagePuller;
  readonly syncer: PodSyncer;
  readonly loop: SyncLoop;
  /** Not started: the kubelet starts it (the first relist adopts what runs) before any pod source. */
  readonly pleg: Pleg;
}

/** What the engine works with: the parts built before it, and the kubelet's views of the API side (there only in API-server mode). */
export interface PodEngineDeps {
  config: KubeletConfig;
  logger: Logger;
  hooks: KubeletHooks;
  runtime: ContainerRuntime;
  runtimeName: () => string;
  probes: ProbeResults;
  cgroups: PodCgroups | undefined;
  userNamespaces: UserNamespaces;
  volumes: VolumeManager;
  timelines: PodTimelines;
  metrics: KubeletMetrics;
  events: EventRecorder;
  securityAdmission: SecurityAdmission;
  devices: SyncLoopDeps['devices'];
  admissionNode: SyncLoopDeps['admissionNode'];
  pressure: SyncLoopDeps['pressure'];
  nodeAdmission: SyncLoopDeps['nodeAdmission'];
  objects: (pod: V1Pod) => ObjectSource;
  downward: (pod: V1Pod) => DownwardInputs;
  /** Where a changed pod status goes (the API server's status sync, when there is one). */
  onStatus: (pod: V1Pod, status: V1PodStatus) => void;
  apiClient: () => ApiClient | undefined;
  services: () => ServiceCache | undefined;
}

export function createPodEngine(deps: PodEngineDeps): PodEngine {
  const { config, logger, hooks, runtime, events } = deps;
  // An exited container's status carries its termination message (read once, safely, from the file the kubelet made).
  const cache = new RuntimeCache(runtime, { decorateExited: (s) => withTerminationMessage(config.rootDir, s), runtimeInstance: config.runtimeInstance });
  const crashBackoff = new Backoff(config.crashLoopBackOff.initialMs, config.crashLoopBackOff.maxMs);
  const pullBackoff = new Backoff(config.imagePullBackOff.initialMs, config.imagePullBackOff.maxMs);
  const status = new StatusManager({ hooks, logger, nodeIP: config.nodeIP, runtimeName: deps.runtimeName, probes: deps.probes, onUpdate: deps.onStatus });
  const puller = new ImagePuller({
    runtime, backoff: pullBackoff, logger, events, ...(config.maxParallelImagePulls ? { maxParallelPulls: config.maxParallelImagePulls } : {}),
    providerCredentials: (request, signal) => hooks.imageCredentials.promise({ credentials: [], failures: [] }, request, hookContext(signal)),
  });
  // A creation still running after SANDBOX_SLOT_MS gives up its slot: a hung CNI plugin delays
  // the pods behind it by that much, not by the runtime request timeout.
  const sandboxCreations = config.maxParallelSandboxCreations ? new Limiter(config.maxParallelSandboxCreations, SANDBOX_SLOT_MS) : undefined;
  // The same for containers: a pod of hundreds of containers (or many pods at once) keeps the
  // runtime at a load it can answer within its deadlines.
  const containerCreations = config.maxParallelContainerCreations ? new Limiter(config.maxParallelContainerCreations, CONTAINER_SLOT_MS) : undefined;
  const syncer = new PodSyncer({
    runtime, cache, hooks, config, crashBackoff, pullBackoff, puller, status,
    probes: deps.probes, cgroups: deps.cgroups, userNamespaces: deps.userNamespaces, volumes: deps.volumes, timeline: deps.timelines, events, logger,
    lifecycle: new LifecycleHandlers({ runtime: () => runtime, logger, events }),
    objects: deps.objects, downward: deps.downward, ...(sandboxCreations ? { sandboxCreations } : {}), ...(containerCreations ? { containerCreations } : {}),
    runtimeClasses: new RuntimeClasses({ client: deps.apiClient, handlers: config.runtimeClassHandlers ?? {} }),
    services: deps.services,
  });
  const loop = new SyncLoop({
    config, logger, hooks, cache, status, syncer, probes: deps.probes,
    volumes: deps.volumes, timelines: deps.timelines, metrics: deps.metrics, events, securityAdmission: deps.securityAdmission,
    admissionNode: deps.admissionNode,
    pressure: deps.pressure,
    pulledMs: (uid) => puller.pulledMs(uid),
    ...(deps.devices ? { devices: deps.devices } : {}),
    ...(deps.nodeAdmission ? { nodeAdmission: deps.nodeAdmission } : {}),
  });
  hooks.podStatusChanged.tap({ name: 'kubelet:metrics', stage: STAGE.OBSERVE }, (pod, podStatus) => {
    loop.measureStart(pod, podStatus);
    if (podStatus.conditions?.some((c) => c.type === 'Ready' && c.status === 'True')) deps.timelines.ready(pod.metadata!.uid!);
  });
  const pleg = new Pleg({
    cache,
    periodMs: config.plegRelistPeriodMs,
    logger,
    onChange: (uids) => loop.onPlegChange(uids),
    ...(runtime.containerEvents ? { events: (onEvent, options) => runtime.containerEvents!(onEvent, options) } : {}),
    observe: (durationMs, intervalMs) => {
      deps.metrics.observeRelist(durationMs, intervalMs);
      deps.metrics.setRunningFrom(cache.all());
    },
  });
  return { cache, status, puller, syncer, loop, pleg };
}
