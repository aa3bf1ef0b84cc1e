import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, isMountPoint, removeUnmounted, unmount, type Logger } from 'kubelet-ts';
import type { CsiDriver } from './registration.ts';

/** A volume published (or maybe published) at a target path: what it takes to undo it. */
export interface Publication {
  driver: string;
  volumeHandle: string;
  /** `<pod volume dir>/mount`; its parent (the pod's volume dir, with vol_data.json) goes with it. */
  targetPath: string;
  /** The pod's volume dir (vol_data.json) when the target is elsewhere (a block volume's `volumeDevices/publish/<pv>/<podUID>`). */
  volumeDir?: string;
  /** Only in records of kubelet-ts versions that staged inline volumes: unstaged after the unpublish. */
  stagingPath?: string;
}

/**
 * Codes after which the call may still be running in the driver (upstream's isFinalError):
 * a timeout, a cancellation, an unreachable or overloaded driver, CSI's "operation pending".
 */
const IN_PROGRESS = new Set<number>([grpc.status.CANCELLED, grpc.status.DEADLINE_EXCEEDED, grpc.status.UNAVAILABLE, grpc.status.RESOURCE_EXHAUSTED, grpc.status.ABORTED]);

/** True unless the error is a gRPC status saying the call is over (an error without a status may not have been sent, or may have been). */
export function mayStillRun(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  return typeof code !== 'number' || IN_PROGRESS.has(code);
}

/** Background retries once the pod is gone: the first at once, then after 1 s doubling up to 30 s, at most 20 attempts (about 8 minutes). */
const RETRY_FIRST_MS = 1000;
const RETRY_MAX_MS = 30_000;
const RETRY_ATTEMPTS = 20;

/** A failed set-up whose undo is still owed. */
interface Owed {
  publication: Publication;
  podUID: string;
  /** An unpublish of it was sent and did not answer: it may still run, so a new publish must wait for a definite unpublish first. */
  unpublishInFlight: boolean;
  attempts: number;
  timer: NodeJS.Timeout | undefined;
}

/**
 * Undoes publications (NodeUnpublishVolume, a check that the target is no longer mounted,
 * the pod's volume dir removed), and owns the ones a failed NodePublishVolume leaves: the
 * volume manager keeps no record of a failed set-up, so nothing else would ever undo them.
 *
 * - The driver answered with a final error: the publish is over, so it is undone at once. An
 *   inline volume is created by the driver inside NodePublishVolume; the unpublish is what
 *   tells it to delete what it made before failing, and a mount it left is removed.
 * - The call may still be running (a timeout, an unreachable driver): nothing is sent now. An
 *   unpublish sent while the publish runs can run before it, or run late, after a later publish
 *   of the same target succeeded, and unmount the volume from under a running pod (seen with
 *   the upstream hostpath driver). The pod's next sync publishes again (idempotent), which
 *   settles it; if the pod goes instead, the undo runs then.
 *
 * An undo that cannot be done now is owed: before a new set-up of the target (`beforeSetUp`),
 * and in the background once the pod is gone (`podGone`), until it succeeds.
 */
export class PublicationCleanup {
  private readonly owed = new Map<string, Owed>();
  /** The undo running for a target, so a set-up of that target waits for it instead of racing it. */
  private readonly running = new Map<string, Promise<void>>();
  private stopped = false;

  constructor(private readonly deps: { driver: (name: string) => CsiDriver | undefined; logger: Logger; retryFirstMs?: number }) {}

  /** One full undo of a publication; throws (naming the step) if it cannot be completed now. */
  async undo(p: Publication): Promise<void> {
    const driver = this.deps.driver(p.driver);
    if (!driver) throw new Error(`driver name ${p.driver} not found in the list of registered CSI drivers`);
    let unknown = false;
    try {
      await driver.client.nodeUnpublishVolume({ volumeId: p.volumeHandle, targetPath: p.targetPath });
    } catch (err) {
      // NOT_FOUND: the driver has no such volume (a publish that failed before creating it, or
      // state lost in a driver restart): there is nothing of it to unpublish.
      if ((err as { code?: number }).code !== grpc.status.NOT_FOUND) throw err;
      unknown = true;
    }
    if (await isMountPoint(p.targetPath)) {
      if (!unknown) throw new Error(`${p.targetPath} is still mounted after NodeUnpublishVolume`);
      // The driver disowns the volume yet a mount remains: only the kubelet can free the path.
      this.deps.logger.warn({ driver: p.driver, volumeHandle: p.volumeHandle, targetPath: p.targetPath }, 'the driver does not know the volume but its target is mounted; unmounting it');
      await unmount(p.targetPath);
    }
    if (p.stagingPath) {
      await driver.client.nodeUnstageVolume({ volumeId: p.volumeHandle, stagingTargetPath: p.stagingPath });
      if (await isMountPoint(p.stagingPath)) throw new Error(`${p.stagingPath} is still mounted after NodeUnstageVolume`);
      await removeUnmounted(path.dirname(p.stagingPath));
    }
    if (p.volumeDir) {
      // A block target: the file (if the driver left it), its parent once no other pod's target is
      // in it, and the pod's volume dir with vol_data.json.
      await removeUnmounted(p.targetPath);
      await fs.rmdir(path.dirname(p.targetPath)).catch(() => {});
      await removeUnmounted(p.volumeDir);
      return;
    }
    // The target (if the driver left it), vol_data.json and the volume dir itself.
    await removeUnmounted(path.dirname(p.targetPath));
  }

  /** After a failed NodePublishVolume (see the class comment). Never throws: the publish error is what the pod shows. */
  async afterFailure(p: Publication, podUID: string, publishError: unknown): Promise<void> {
    if (mayStillRun(publishError)) {
      this.owe({ publication: p, podUID, unpublishInFlight: false, attempts: 0, timer: undefined });
      return;
    }
    const err = await this.attempt(p);
    if (!err) return;
    this.deps.logger.warn({ driver: p.driver, volumeHandle: p.volumeHandle, targetPath: p.targetPath, err }, 'cleanup after a failed NodePublishVolume failed; it is tried again before the next set-up, or once the pod is gone');
    this.owe({ publication: p, podUID, unpublishInFlight: true, attempts: 1, timer: undefined });
  }

  /**
   * Before a set-up of `targetPath`: a background undo is stopped (or waited for), and an
   * unpublish that may still be in flight is made definite first, so it cannot land after the
   * new publish. Throws when that unpublish fails: the set-up fails and is tried again.
   */
  async beforeSetUp(targetPath: string): Promise<void> {
    const entry = this.owed.get(targetPath);
    if (entry) {
      clearTimeout(entry.timer);
      this.owed.delete(targetPath);
    }
    await this.running.get(targetPath);
    if (!entry?.unpublishInFlight) return;
    const err = await this.attempt(entry.publication);
    if (err) {
      this.owe({ ...entry, attempts: entry.attempts + 1, timer: undefined });
      throw new Error(`undoing an earlier attempt first: ${err}`);
    }
  }

  /** The pod is gone (its dirs may be too): what is owed for it is undone now, and retried in the background until done. */
  podGone(podUID: string): void {
    for (const entry of this.owed.values()) if (entry.podUID === podUID && !entry.timer) this.retry(entry, 0);
  }

  /** Targets with an undo still owed (for tests and debugging). */
  owedTargets(): string[] {
    return [...this.owed.keys()];
  }

  stop(): void {
    this.stopped = true;
    for (const e of this.owed.values()) clearTimeout(e.timer);
    this.owed.clear();
  }

  private owe(entry: Owed): void {
    clearTimeout(this.owed.get(entry.publication.targetPath)?.timer);
    this.owed.set(entry.publication.targetPath, entry);
  }

  /** One undo, registered as running for its target; resolves with the error text, or undefined when done. */
  private attempt(p: Publication): Promise<string | undefined> {
    const run = this.undo(p).then(() => undefined, (err) => errorMessage(err));
    const marker = run.then(() => {});
    this.running.set(p.targetPath, marker);
    return run.finally(() => {
      if (this.running.get(p.targetPath) === marker) this.running.delete(p.targetPath);
    });
  }

  /** Runs an owed undo after `delayMs`; again with back-off while it fails. The entry stays in `owed` meanwhile, so beforeSetUp ends it. */
  private retry(entry: Owed, delayMs: number): void {
    const p = entry.publication;
    if (this.stopped || this.owed.get(p.targetPath) !== entry) return;
    entry.timer = setTimeout(() => {
      if (this.owed.get(p.targetPath) !== entry) return;
      void this.attempt(p).then((err) => {
        // Taken over by a new set-up of the target (or stopped) while it ran: no longer ours.
        if (this.owed.get(p.targetPath) !== entry) return;
        entry.attempts++;
        if (!err) {
          this.owed.delete(p.targetPath);
          this.deps.logger.info({ driver: p.driver, volumeHandle: p.volumeHandle, targetPath: p.targetPath }, 'undid the publication of a failed set-up of a pod that is gone');
          return;
        }
        if (entry.attempts >= RETRY_ATTEMPTS) {
          this.owed.delete(p.targetPath);
          this.deps.logger.error({ driver: p.driver, volumeHandle: p.volumeHandle, targetPath: p.targetPath, err }, `giving up undoing a failed set-up after ${entry.attempts} attempts; the kubelet's housekeeping unmounts what is left in the pod dir`);
          return;
        }
        this.deps.logger.debug({ targetPath: p.targetPath, err, attempt: entry.attempts }, 'undoing a failed set-up failed again');
        this.retry(entry, Math.min(RETRY_MAX_MS, (this.deps.retryFirstMs ?? RETRY_FIRST_MS) * 2 ** Math.max(0, entry.attempts - 1)));
      });
    }, delayMs);
    entry.timer.unref();
  }
}
