import type { V1Pod, V1Volume } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { KubeletHooks, VolumeMountResult } from '../hooks.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import type { StorageObjectSource } from '../objects/storage-objects.ts';
import { containersOf } from '../objects/pod-util.ts';
import { claimNameOf, resolveClaim, VolumeProcessError } from './claim-resolver.ts';
import { VolumeRecordStore } from './volume-record.ts';
import { isMountPoint, isWithin, mountsUnder, readMounts, removeUnmounted, unmount, unmountUnder, type MountInfo } from './mount-utils.ts';
import { bindSubPath, type SubPathBinder } from './subpath.ts';
import { NEVER_ABORTS, hookContext } from '../util/cancellation.ts';
import type { VolumeExpansion } from './volume-expansion.ts';

/** The volume source keys of a v1 Volume besides `name`: the first one set is its type. */
export function volumeType(v: V1Volume): string {
  for (const [key, value] of Object.entries(v)) if (key !== 'name' && value !== undefined && value !== null) return key;
  return 'emptyDir'; // the API's default for a volume with no source
}

/** Upstream plugin names, as they appear in `<rootDir>/pods/<uid>/volumes/<plugin~type>/`. */
const PLUGIN_DIRS: Record<string, string> = {
  emptyDir: 'kubernetes.io~empty-dir',
  hostPath: 'kubernetes.io~host-path',
  configMap: 'kubernetes.io~configmap',
  secret: 'kubernetes.io~secret',
  downwardAPI: 'kubernetes.io~downward-api',
  projected: 'kubernetes.io~projected',
  csi: 'kubernetes.io~csi',
};

/** `kubernetes.io~<type>` for the built-in names, `kubernetes.io~<kebab-type>` for others. */
export function pluginDirName(type: string): string {
  return PLUGIN_DIRS[type] ?? `kubernetes.io~${type.replace(/([a-z0-9])([A-Z])/g, '$1-$2').toLowerCase()}`;
}

/**
 * A volume the manager set up: what the provider returned, and for which type. A volume from a
 * claim has the PV's source type (`csi`), the claim's name, and its dir named after the PV.
 */
export interface MountedVolume { name: string; type: string; dir: string; result: VolumeMountResult; claim?: string }

/** One volume that is not ready: `process` when it could not even be resolved (its claim), else its set-up failed. */
export interface VolumeFailure { volume: string; message: string; process?: boolean }

/** Why a pod's volumes are not ready: one line per failed volume, as upstream's events word it. */
export class VolumeSetupError extends Error {
  constructor(
    readonly failures: VolumeFailure[],
    /** The volumes the pod's containers use that are not set up (upstream's "unmounted volumes"), sorted. */
    readonly unmounted: string[] = failures.map((f) => f.volume).sort(),
  ) {
    super(failures.map((f) => (f.process ? f.message : `MountVolume.SetUp failed for volume "${f.volume}": ${f.message}`)).join('; '));
    this.name = 'VolumeSetupError';
  }

  /**
   * The FailedMount events, as upstream words them: one `MountVolume.SetUp failed ...` per
   * volume whose set-up failed; volumes that could not be resolved give upstream's
   * WaitForAttachAndMount error (its pod errors cut the wait short) in one event.
   */
  eventMessages(): string[] {
    const out = this.failures.filter((f) => !f.process).map((f) => `MountVolume.SetUp failed for volume "${f.volume}" : ${f.message}`);
    const processed = this.failures.filter((f) => f.process);
    if (processed.length > 0) {
      const names = processed.map((f) => f.volume).sort();
      out.push(`Unable to attach or mount volumes: unmounted volumes=[${this.unmounted.join(' ')}], unattached volumes=[], failed to process volumes=[${names.join(' ')}]: ${processed.map((f) => f.message).join('; ')}`);
    }
    return out;
  }
}

/** The desired volume is what is mounted: the same claim for a claim's volume, else the same type. */
function sameSource(pod: V1Pod, want: V1Volume, mv: MountedVolume): boolean {
  const claim = claimNameOf(pod, want);
  return claim !== undefined ? mv.claim === claim : !mv.claim && volumeType(want) === mv.type;
}

/**
 * How often cleanupOrphans reads the pods directory when no pod was set up for the first time or
 * torn down since its last read: such a change rescans at once; otherwise only a directory
 * something else left there is looked for, and that may wait (housekeeping runs every 2 s, and
 * a node of many pods, or a process of many hollow nodes, would list the disk that often).
 */
const ORPHAN_RESCAN_MS = 30_000;

/**
 * The volume manager: for each pod a desired state (the volumes of its spec) and an actual
 * state (what providers set up, persisted next to the pod's volumes), reconciled on each
 * sync of the pod. Providers are the taps of `mountVolume.for(type)` / `unmountVolume.for(type)`.
 *
 * - `setUpPod` mounts what is desired and not mounted (and again, every sync, what asked for
 *   `requiresRemount`), and tears down what is mounted and no longer desired; the pod's
 *   containers are created only once it succeeded.
 * - `tearDownPod` unmounts everything of a pod and removes `<rootDir>/pods/<uid>`, never
 *   crossing a mount point that is still there.
 * - `start` reads the records of a previous run: volumes whose mount point is still in
 *   /proc/self/mountinfo are known as mounted (not mounted twice); those whose mount is gone
 *   are forgotten (set up again on the next sync).
 * - `cleanupOrphans` tears down pod dirs no pod owns any more.
 */
export class VolumeManager {
  private readonly actual = new Map<string, Map<string, MountedVolume>>();
  /** Per-pod serialisation: a housekeeping cleanup never races a pod's own worker. */
  private readonly locks = new Map<string, Promise<unknown>>();
  /** A pod dir may have come or gone since cleanupOrphans last read the pods directory (true at start: read it once). */
  private podDirsChanged = true;
  private lastOrphanScan = 0;
  /** What is set up, kept in each pod's dir (volume-record.ts) so a restarted kubelet knows what it mounted. */
  private readonly records = new VolumeRecordStore<MountedVolume>((uid) => this.podDir(uid));

  constructor(
    private readonly deps: {
      hooks: KubeletHooks;
      rootDir: string;
      logger: Logger;
      /** Where a pod's Secrets and ConfigMaps come from, handed to providers (API pods: the API; static pods: localObjectsDir). */
      objects: (pod: V1Pod) => ObjectSource;
      /** Where claims and PersistentVolumes come from: the API server for an API pod, none otherwise. */
      storage?: (pod: V1Pod) => StorageObjectSource | undefined;
      /** This node's name (a CSI VolumeAttachment names it). */
      nodeName?: string;
      /** The node side of volume resizes: a set-up claim volume whose PV grew is expanded on each sync. */
      expansion?: VolumeExpansion;
      /**
       * False on a node that mounts nothing on its host (`kubelet-ts hollow`): subPaths are not
       * bound, and removing a pod's directories reads no mount table. Default true.
       */
      hostMounts?: boolean;
    },
  ) {}

  private get hostMounts(): boolean {
    return this.deps.hostMounts ?? true;
  }

  /** Unmounts what is mounted at or below `dir` (deepest first), then removes it; without host mounts, only removes it. */
  private async unmountAndRemove(dir: string): Promise<void> {
    if (!this.hostMounts) return fs.rm(dir, { recursive: true, force: true });
    await unmountUnder(dir);
    await removeUnmounted(dir);
  }

  podDir(uid: string): string {
    return path.join(this.deps.rootDir, 'pods', uid);
  }

  /** `<rootDir>/pods/<uid>/volumes/<plugin~type>/<name>`. */
  volumeDir(uid: string, type: string, name: string): string {
    return path.join(this.podDir(uid), 'volumes', pluginDirName(type), name);
  }

  /** `<rootDir>/pods/<uid>/volume-subpaths`: the bind mounts of subPaths, as upstream lays them out. */
  private subPathsDir(uid: string): string {
    return path.join(this.podDir(uid), 'volume-subpaths');
  }

  /**
   * Binds subPaths for one container of a pod: each onto
   * `volume-subpaths/<volume>/<container>/<mount index>` (see subpath.ts for why the runtime
   * gets a bind mount and not a path inside the volume).
   */
  subPathBinder(uid: string, containerName: string): SubPathBinder {
    return async ({ volumeName, volumePath, subPath, mountIndex }) => {
      const target = path.join(this.subPathsDir(uid), volumeName, containerName, String(mountIndex));
      // Nothing runs on this host that would see the bind: the runtime gets the path it would have.
      if (!this.hostMounts) return target;
      await bindSubPath(volumePath, subPath, target);
      return target;
    };
  }

  /** Unmounts and removes the pod's subPath binds (before its volumes go: a bind keeps what it binds alive). */
  private async cleanSubPaths(uid: string): Promise<void> {
    await this.unmountAndRemove(this.subPathsDir(uid));
  }

  /** The volumes set up for a pod, by name (for container mounts). */
  mounted(uid: string): ReadonlyMap<string, VolumeMountResult> {
    return new Map([...(this.actual.get(uid) ?? [])].map(([name, v]) => [name, v.result]));
  }

  /** The unique names of the set-up volumes that declare one (node status volumesInUse), each once. */
  volumesInUse(): string[] {
    const names = new Set<string>();
    for (const vols of this.actual.values()) for (const v of vols.values()) if (v.result.uniqueVolumeName) names.add(v.result.uniqueVolumeName);
    return [...names];
  }

  /** The volumes set up for a pod, with their types and claims (for volume stats). */
  mountedVolumes(uid: string): MountedVolume[] {
    return [...(this.actual.get(uid)?.values() ?? [])];
  }

  /** The actual state of every pod (for tests and debugging). */
  actualState(): Map<string, MountedVolume[]> {
    return new Map([...this.actual].map(([uid, vols]) => [uid, [...vols.values()]]));
  }

  /** Reads the records of a previous run and checks them against the mounts that exist now. */
  async start(): Promise<void> {
    const podsDir = path.join(this.deps.rootDir, 'pods');
    await fs.mkdir(podsDir, { recursive: true });
    const mounts = this.hostMounts ? await readMounts() : [];
    for (const uid of await fs.readdir(podsDir)) {
      const recorded = await this.records.read(uid);
      if (!recorded) continue;
      const vols = new Map<string, MountedVolume>();
      for (const v of recorded.values()) {
        if (this.hostMounts && v.result.mountPoint && !(await isMountPoint(v.result.path, mounts))) {
          this.deps.logger.info({ uid, volume: v.name, path: v.result.path }, 'volume mount is gone since the last run: it will be set up again');
          continue;
        }
        vols.set(v.name, v);
      }
      this.actual.set(uid, vols);
      this.deps.logger.info({ uid, volumes: [...vols.keys()] }, 'reconstructed mounted volumes');
    }
  }

  /**
   * Sets up the pod's volumes (desired → actual). Throws VolumeSetupError naming each volume
   * that failed. `signal`: the pod's sync gives up (its providers' taps get it in their context).
   */
  async setUpPod(pod: V1Pod, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    const uid = pod.metadata!.uid!;
    await this.locked(uid, async () => {
      if (!this.actual.has(uid)) this.podDirsChanged = true;
      const actual = this.actual.get(uid) ?? new Map<string, MountedVolume>();
      this.actual.set(uid, actual);
      const desired = new Map((pod.spec?.volumes ?? []).map((v) => [v.name, v]));
      const failures: VolumeFailure[] = [];
      let removed = false;
      // Mounted but no longer desired (or now of another type or claim): tear down first.
      for (const [name, mv] of [...actual]) {
        const want = desired.get(name);
        if (want && sameSource(pod, want, mv)) continue;
        try {
          await this.tearDownVolume(uid, mv, signal);
          actual.delete(name);
          removed = true;
        } catch (err) {
          failures.push({ volume: name, message: `UnmountVolume.TearDown failed: ${errorMessage(err)}` });
        }
      }
      let changed = false;
      for (const volume of desired.values()) {
        const cur = actual.get(volume.name);
        if (cur && !cur.result.requiresRemount) continue;
        try {
          const mounted = await this.mountOne(pod, volume, cur?.result, signal);
          actual.set(volume.name, mounted);
          // Recorded after every volume: a kubelet killed half-way still knows what it set up.
          if (!cur || JSON.stringify(cur.result) !== JSON.stringify(mounted.result)) {
            changed = true;
            await this.records.append(uid, mounted);
          }
        } catch (err) {
          failures.push({ volume: volume.name, message: errorMessage(err), ...(err instanceof VolumeProcessError ? { process: true } : {}) });
        }
      }
      // The set as it is now, in one file (volumes torn down above included).
      if (changed || removed) await this.records.write(uid, actual.values());
      await this.expandResized(pod, actual, signal);
      if (failures.length > 0) {
        const used = new Set(containersOf(pod).flatMap((c) => [...(c.volumeMounts ?? []), ...(c.volumeDevices ?? [])].map((m) => m.name)));
        throw new VolumeSetupError(failures, [...desired.keys()].filter((n) => used.has(n) && !actual.has(n)).sort());
      }
    });
  }

  /**
   * Expands the set-up claim volumes whose PV grew (upstream checks on each reconcile, and
   * right after a mount: a pod that mounts an already-grown volume gets it expanded before its
   * containers start). Only for API pods, whose claims can be read.
   */
  private async expandResized(pod: V1Pod, actual: Map<string, MountedVolume>, signal: AbortSignal): Promise<void> {
    const storage = this.deps.storage?.(pod);
    if (!this.deps.expansion || !storage) return;
    for (const mv of actual.values()) {
      if (mv.claim !== undefined) await this.deps.expansion.sync(pod, mv, { storage, objects: this.deps.objects(pod) }, signal);
    }
  }

  /**
   * Sets up one volume. A claim's volume (`persistentVolumeClaim`, generic `ephemeral`) is first
   * resolved to its PersistentVolume (re-resolved only while it is not set up, as upstream's
   * populator adds a volume once); the PV's source type picks the provider, and its dir is named
   * after the PV (`volumes/kubernetes.io~csi/<pv>`), as upstream lays it out.
   */
  private async mountOne(pod: V1Pod, volume: V1Volume, previous: VolumeMountResult | undefined, signal: AbortSignal): Promise<MountedVolume> {
    const uid = pod.metadata!.uid!;
    const storage = this.deps.storage?.(pod);
    const claimName = claimNameOf(pod, volume);
    const resolved = claimName !== undefined ? await resolveClaim(storage, pod, volume) : undefined;
    const type = resolved?.type ?? volumeType(volume);
    const hook = this.deps.hooks.mountVolume.get(type);
    if (!hook || hook.taps.length === 0) throw new Error(`no volume plugin for type "${type}"${resolved ? ` (PersistentVolume ${resolved.volume.metadata?.name})` : ''}`);
    const dir = this.volumeDir(uid, type, resolved?.volume.metadata?.name ?? volume.name);
    await fs.mkdir(path.dirname(dir), { recursive: true, mode: 0o750 });
    const result = await hook.promise({
      pod, volume, type, dir, rootDir: this.deps.rootDir, previous, objects: this.deps.objects(pod), nodeName: this.deps.nodeName ?? '',
      ...(storage ? { storage } : {}),
      ...(resolved ? { persistentVolume: { volume: resolved.volume, claim: resolved.claim, readOnly: resolved.readOnly } } : {}),
    }, hookContext(signal));
    if (!result) throw new Error(`no volume plugin for type "${type}" accepted the volume`);
    return { name: volume.name, type, dir, result, ...(claimName !== undefined ? { claim: claimName } : {}) };
  }

  /** Tears down every volume of a pod and removes its directory. Throws (to be retried) if one cannot be torn down. */
  async tearDownPod(uid: string, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    this.podDirsChanged = true;
    await this.locked(uid, async () => {
      const actual = this.actual.get(uid) ?? new Map<string, MountedVolume>();
      const errors: string[] = [];
      try {
        await this.cleanSubPaths(uid);
      } catch (err) {
        errors.push(`cleaning subPath mounts failed: ${errorMessage(err)}`);
      }
      // One read of the mount table for all the pod's volumes (its containers have stopped).
      const table = this.hostMounts && actual.size > 0 ? await readMounts() : undefined;
      for (const mv of [...actual.values()].reverse()) {
        try {
          await this.tearDownVolume(uid, mv, signal, table);
          actual.delete(mv.name);
        } catch (err) {
          errors.push(`UnmountVolume.TearDown failed for volume "${mv.name}": ${errorMessage(err)}`);
        }
      }
      if (errors.length > 0) {
        await this.records.write(uid, actual.values());
        throw new Error(errors.join('; '));
      }
      await this.removeLeftovers(uid);
      this.actual.delete(uid);
      this.deps.expansion?.forget(uid);
    });
  }

  /**
   * Tears down every volume of a pod that ended but is still known (failed by the kubelet: an
   * evicted pod stays in the API as Failed), as upstream's volume manager drops a terminated
   * pod's volumes: an emptyDir's contents are what an eviction for disk was for. The pod's
   * directory stays (termination messages, /etc/hosts of its dead containers) until the pod is
   * removed. Returns the volumes torn down; throws (to be retried) if one cannot be.
   */
  async releaseVolumes(uid: string): Promise<string[]> {
    return this.locked(uid, async () => {
      const actual = this.actual.get(uid);
      if (!actual || actual.size === 0) return [];
      const released: string[] = [];
      const errors: string[] = [];
      await this.cleanSubPaths(uid).catch((err: unknown) => errors.push(`cleaning subPath mounts failed: ${errorMessage(err)}`));
      const table = this.hostMounts ? await readMounts() : undefined;
      for (const mv of [...actual.values()].reverse()) {
        try {
          await this.tearDownVolume(uid, mv, NEVER_ABORTS, table);
          actual.delete(mv.name);
          released.push(mv.name);
        } catch (err) {
          errors.push(`UnmountVolume.TearDown failed for volume "${mv.name}": ${errorMessage(err)}`);
        }
      }
      await this.records.write(uid, actual.values());
      if (errors.length > 0) throw new Error(errors.join('; '));
      return released.reverse();
    });
  }

  /** Whether any volume of the pod is still set up. */
  hasVolumes(uid: string): boolean {
    return (this.actual.get(uid)?.size ?? 0) > 0;
  }

  private async tearDownVolume(uid: string, mv: MountedVolume, signal: AbortSignal = NEVER_ABORTS, mountTable?: readonly MountInfo[]): Promise<void> {
    const hook = this.deps.hooks.unmountVolume.get(mv.type);
    const handled = hook && hook.taps.length > 0 ? await hook.promise({ podUID: uid, volumeName: mv.name, type: mv.type, dir: mv.dir, rootDir: this.deps.rootDir, mounted: mv.result, ...(mountTable ? { mountTable } : {}) }, hookContext(signal)) : undefined;
    if (!handled) await this.genericTearDown(uid, mv);
    this.deps.logger.info({ uid, volume: mv.name, type: mv.type }, 'volume torn down');
  }

  /** No provider claimed the teardown: unmount what the pod dir holds of it and remove it. */
  private async genericTearDown(uid: string, mv: MountedVolume): Promise<void> {
    if (!isWithin(this.podDir(uid), mv.dir)) return;
    await this.unmountAndRemove(mv.dir);
  }

  /**
   * Unmounts what is still mounted below the pod's dir (a volume the kubelet lost track
   * of, or mounted before a crash without recording it), then removes the dir.
   */
  private async removeLeftovers(uid: string): Promise<void> {
    const dir = this.podDir(uid);
    if (!this.hostMounts) return fs.rm(dir, { recursive: true, force: true });
    const mounts = await readMounts();
    for (const mp of await mountsUnder(dir, mounts)) {
      this.deps.logger.warn({ uid, mountPoint: mp }, 'unmounting a stale mount left in the pod dir');
      await unmount(mp, mounts);
    }
    await removeUnmounted(dir);
  }

  /** Tears down the dirs of pods `inUse` says no one owns (orphans after a restart or a failed teardown). */
  async cleanupOrphans(inUse: (uid: string) => boolean): Promise<void> {
    const podsDir = path.join(this.deps.rootDir, 'pods');
    let onDisk: string[] = [];
    if (this.podDirsChanged || Date.now() - this.lastOrphanScan >= ORPHAN_RESCAN_MS) {
      // Cleared before the read: a change while it runs is seen by the next call.
      this.podDirsChanged = false;
      this.lastOrphanScan = Date.now();
      onDisk = await fs.readdir(podsDir).catch(() => [] as string[]);
    }
    const uids = new Set([...onDisk, ...this.actual.keys()]);
    for (const uid of uids) {
      if (inUse(uid)) continue;
      try {
        await this.tearDownPod(uid);
        this.deps.logger.info({ uid }, 'removed volumes of an orphaned pod');
      } catch (err) {
        this.deps.logger.warn({ uid, err: errorMessage(err) }, 'could not clean up the volumes of an orphaned pod');
      }
    }
  }

  private async locked<T>(uid: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.locks.get(uid) ?? Promise.resolve();
    const next = prev.catch(() => {}).then(fn);
    this.locks.set(uid, next);
    try {
      return await next;
    } finally {
      if (this.locks.get(uid) === next) this.locks.delete(uid);
    }
  }
}

export type { MountInfo };
