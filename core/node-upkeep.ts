import type { V1Pod } from '@kubernetes/client-node';
import type { PodCgroups } from './cgroups/pod-cgroups.ts';
import type { KubeletConfig } from './config/types.ts';
import { EvictionManager, PRESSURE_CONDITION_TYPES, type EvictionManagerDeps } from './eviction/eviction-manager.ts';
import { hasDedicatedImageFs } from './eviction/image-fs.ts';
import { ImageGC } from './eviction/image-gc.ts';
import { nodeRef, podRef, type EventRecorder } from './events/event-recorder.ts';
import { STAGE, type KubeletHooks } from './hooks.ts';
import type { Logger } from './logger.ts';
import { LogRotation } from './logs/log-rotation.ts';
import type { KubeletMetrics } from './metrics/kubelet-metrics.ts';
import { registerVolumeStatsMetrics } from './metrics/volume-stats-metrics.ts';
import type { ContainerRuntime } from './runtime/types.ts';
import { StatsProvider } from './stats/stats-provider.ts';
import { PersistentVolumeStats } from './volumes/persistent-volume-stats.ts';
import { hookContext } from './util/cancellation.ts';
import type { VolumeManager } from './volumes/volume-manager.ts';

/**
 * The node's upkeep: what it uses (stats of the node, its pods and their persistent volumes)
 * and what keeps it usable (eviction under pressure, image GC, container log rotation).
 */
export interface NodeUpkeep {
  /** Node and pod resource use (CRI stats, cgroups, filesystems): /stats/summary, /metrics/resource, and eviction decisions. */
  readonly stats: StatsProvider;
  /** Node pressure: eviction signals, the pressure conditions, evictions through `onPressure` (core/eviction). */
  readonly eviction: EvictionManager;
  /** Image garbage collection (imageGCHighThresholdPercent, ...), also the eviction manager's reclaim for imagefs. */
  readonly imageGC: ImageGC;
  /** Container log rotation (containerLogMaxSize, containerLogMaxFiles). */
  readonly logRotation: LogRotation;
  /** Starts the periodic work (once the pod sources run: eviction needs to know the pods). */
  start(): void;
}

/** What the upkeep reads and acts on: the parts of the kubelet built before it. */
export interface NodeUpkeepDeps {
  config: KubeletConfig;
  logger: Logger;
  hooks: KubeletHooks;
  metrics: KubeletMetrics;
  events: EventRecorder;
  cgroups: PodCgroups | undefined;
  runtime: () => ContainerRuntime;
  volumes: VolumeManager;
  /** The pods the kubelet knows (stats), and those still running (eviction's candidates). */
  pods: () => V1Pod[];
  activePods: () => V1Pod[];
  /** The containers running now, with their log paths (what log rotation looks at). */
  runningContainers: () => Array<{ id: string; logPath: string }>;
  evict: EvictionManagerDeps['evict'];
  podReclaimed: EvictionManagerDeps['podReclaimed'];
  /** Removes the dead containers the kubelet may remove (the first node-level reclaim). */
  removeDeadContainers: () => Promise<void>;
}

/** Builds the node's upkeep and taps what it contributes: volume stats metrics, the pressure conditions of the Node. */
export function createNodeUpkeep(deps: NodeUpkeepDeps): NodeUpkeep {
  const { config, logger, hooks, events } = deps;
  const nodeEvent = (type: 'Normal' | 'Warning', reason: string, message: string) => events.record(nodeRef(config.nodeName), type, reason, message);
  // Persistent volumes' use, asked of their providers (csi-grpc: NodeGetVolumeStats) at most once a minute.
  const pvStats = new PersistentVolumeStats({
    hooks,
    mounted: (uid) => deps.volumes.mountedVolumes(uid),
    logger: logger.child({ component: 'volume-stats' }),
    periodMs: config.volumeStatsAggPeriodMs,
    onAbnormal: (uid, volume, message) => {
      const pod = deps.pods().find((p) => p.metadata?.uid === uid);
      if (pod) events.record(podRef(pod), 'Warning', 'VolumeConditionAbnormal', `Volume ${volume}: ${message}`);
    },
  });
  hooks.podRemoved.tapPromise({ name: 'kubelet:volume-stats', stage: STAGE.OBSERVE }, async (pod) => {
    if (pod.metadata?.uid) pvStats.forget(pod.metadata.uid);
  });
  registerVolumeStatsMetrics(deps.metrics.registry, async () => {
    const perPod = await Promise.all(deps.pods().map((p) => pvStats.claimsOf(p.metadata!.uid!, p.metadata?.namespace ?? 'default')));
    return perPod.flat();
  });
  const stats = new StatsProvider({
    nodeName: config.nodeName, rootDir: config.rootDir, podLogsDir: config.podLogsDir, cgroups: deps.cgroups,
    runtime: deps.runtime, pods: deps.pods, logger: logger.child({ component: 'stats' }),
    persistentVolumes: (uid, namespace, time) => pvStats.forPod(uid, namespace, time),
    volumeStatsPeriodMs: config.volumeStatsAggPeriodMs,
    runtimeInstance: config.runtimeInstance,
  });
  const imageGC = new ImageGC({
    settings: config.imageGC,
    runtime: deps.runtime,
    imageFs: async () => {
      const fs = (await stats.snapshot(0, { pods: false })).summary.node.runtime?.imageFs;
      return fs?.capacityBytes !== undefined && fs.availableBytes !== undefined ? { capacity: fs.capacityBytes, available: fs.availableBytes } : undefined;
    },
    nodeEvent,
    logger: logger.child({ component: 'image-gc' }),
  });
  /**
   * Node-level reclaim before evicting pods for disk (upstream deleteAllUnusedContainers): every
   * dead container of a pod the kubelet failed (an evicted pod's container and log are what
   * fills the disk), and every other dead container but each name's newest (restart counts);
   * for the image filesystem, and for the node's when images share its disk, then every unused
   * image (upstream deleteAllUnusedImages).
   */
  const reclaimNodeLevel = async (signal: string): Promise<void> => {
    await deps.removeDeadContainers();
    const images = signal.startsWith('imagefs.') || (signal.startsWith('nodefs.') && !(await hasDedicatedImageFs(deps.runtime(), config.rootDir)));
    if (images) await imageGC.deleteAllUnused();
  };
  // Node pressure (core/eviction): the same stats, a round every evictionMonitoringPeriod once the sources run.
  const eviction = new EvictionManager({
    evictionHard: config.evictionHard,
    settings: config.eviction,
    stats,
    activePods: deps.activePods,
    decide: (event) => hooks.onPressure.promise(event, hookContext()),
    evict: deps.evict,
    reclaimNodeLevel,
    podReclaimed: deps.podReclaimed,
    podEvent: (pod, type, reason, message) => events.record(podRef(pod), type, reason, message),
    nodeEvent,
    logger: logger.child({ component: 'eviction' }),
  });
  const logRotation = new LogRotation({
    policy: config.containerLogs,
    runtime: deps.runtime,
    runningContainers: deps.runningContainers,
    logger: logger.child({ component: 'log-rotation' }),
  });
  // The node's pressure conditions are the eviction manager's; plugins tapping later may still change them.
  hooks.nodeStatus.tap({ name: 'kubelet:eviction', stage: -1000 }, (draft) => {
    const pressure = eviction.conditionDrafts();
    const others = draft.conditions.filter((c) => !(PRESSURE_CONDITION_TYPES as readonly string[]).includes(c.type));
    return { ...draft, conditions: [...pressure, ...others] };
  });
  return {
    stats, eviction, imageGC, logRotation,
    start() {
      eviction.start();
      imageGC.start();
      logRotation.start();
    },
  };
}
