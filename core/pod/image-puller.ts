import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ContainerRuntime, PodSandboxConfig } from '../runtime/types.ts';
import type { Backoff } from './backoff.ts';
import { Limiter } from '../util/limiter.ts';
import { formatDuration } from '../util/duration.ts';
import { podRef, type EventRecorder } from '../events/event-recorder.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import { pullCredentials, type RegistryCredential } from './pull-credentials.ts';
import { PullProgressTracker, type PullHandle } from '../runtime/pull-progress.ts';
import type { ActivePull } from './pull-progress-status.ts';
import { podFullName } from '../objects/pod-util.ts';
import { abortError, NEVER_ABORTS, untilAborted } from '../util/cancellation.ts';
import { providedCredentials, type CredentialLookup } from '../credentials/provided-credentials.ts';

/** The image is not there and the container must wait: the waiting reason and message. */
export interface ImageWait { reason: 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName'; message: string }

/** The image is there; `pulled` when this call pulled it: its size (when the runtime tells it) and the pull's own time. */
export interface ImageReady { imageRef: string; pulled?: { sizeBytes?: number; pullMs: number } }

/**
 * Ensures a container's image is on the node according to imagePullPolicy, with the
 * upstream reasons: ErrImagePull on a failed pull, then ImagePullBackOff while the pull
 * back-off lasts, ErrImageNeverPull for policy Never. Concurrent pulls of one image share
 * one runtime call, so many pods of one image do not pull it many times.
 */
export class ImagePuller {
  /** The pulls running or waiting for a slot, by image and credential, each with the pods waiting for it. */
  private readonly inflight = new Map<string, SharedPull>();
  /** Time each pod spent waiting for pulls (the pod start SLI leaves it out). */
  private readonly pulled = new Map<string, number>();

  /** Milliseconds the pod waited for image pulls so far. */
  /** Pods with a pull time kept (tests: every entry goes with its pod). */
  get podsWithPullTime(): number {
    return this.pulled.size;
  }

  pulledMs(uid: string): number {
    return this.pulled.get(uid) ?? 0;
  }

  /** Forgets a pod's pull time. */
  forget(uid: string): void {
    this.pulled.delete(uid);
  }

  private readonly limiter: Limiter | undefined;
  /** Progress of the runtime's pulls, when the runtime can tell it (ContainerRuntime.pullProgress). */
  private readonly progress: PullProgressTracker | undefined;
  /** The pull of each image running now (its progress). */
  private readonly running = new Map<string, PullHandle>();
  /** The containers waiting for a pull now, by pod UID, then by `init/name`. */
  private readonly waiters = new Map<string, Map<string, { container: string; init: boolean; image: string }>>();

  /** `providerCredentials`: the image credential providers' (the `imageCredentials` hook), tried after the pull secrets'. */
  constructor(private readonly deps: { runtime: ContainerRuntime; backoff: Backoff; logger: Logger; maxParallelPulls?: number; events?: EventRecorder; progressPollMs?: number; providerCredentials?: CredentialLookup }) {
    this.limiter = deps.maxParallelPulls ? new Limiter(deps.maxParallelPulls) : undefined;
    const runtime = deps.runtime;
    if (typeof runtime.pullProgress === 'function') {
      this.progress = new PullProgressTracker({ source: () => runtime.pullProgress!(), logger: deps.logger, ...(deps.progressPollMs ? { pollMs: deps.progressPollMs } : {}) });
    }
  }

  /** The pod's containers whose image is being pulled now, with the pull's progress when known. */
  activePulls(uid: string): ActivePull[] {
    const mine = this.waiters.get(uid);
    if (!mine) return [];
    return [...mine.values()].map((w) => ({ ...w, progress: this.running.get(w.image)?.snapshot() }));
  }

  /** One container's pull now, if its image is being pulled. */
  activePull(uid: string, container: string, init = false): ActivePull | undefined {
    return this.activePulls(uid).find((p) => p.container === container && p.init === init);
  }

  /**
   * Makes sure the container's image is there. `objects` gives the pod's image pull secrets:
   * each matching credential is tried in turn (upstream's keyring), then none. `signal`: the
   * pod's sync gives up (the pod is deleted, the kubelet stops); it cancels the image lookups,
   * the credential providers' taps and this pod's wait for the pull, and the runtime's pull
   * itself once no other pod waits for it (upstream cancels a pull with its pod's context).
   * A wait given up rejects with the signal's error: no ErrImagePull, no back-off.
   */
  async ensure(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig, init = false, objects?: ObjectSource, signal: AbortSignal = NEVER_ABORTS): Promise<ImageReady | ImageWait> {
    const ref = podRef(pod, container.name);
    const event = (type: 'Normal' | 'Warning', reason: string, message: string) => this.deps.events?.record(ref, type, reason, message);
    const image = container.image ?? '';
    if (!image.trim()) return { reason: 'InvalidImageName', message: `Failed to apply default image tag "${image}": couldn't parse image name` };
    const policy = container.imagePullPolicy ?? 'IfNotPresent';
    if (policy !== 'Always') {
      const present = await this.deps.runtime.imageStatus(image, { signal });
      if (present) {
        event('Normal', 'Pulled', `Container image "${image}" already present on machine`);
        return { imageRef: present.id };
      }
      if (policy === 'Never') {
        const message = `Container image "${image}" is not present with pull policy of Never`;
        event('Warning', 'ErrImageNeverPull', message);
        return { reason: 'ErrImageNeverPull', message };
      }
    }
    const key = `${pod.metadata!.uid}/${image}`;
    const now = Date.now();
    if (this.deps.backoff.isInBackOffSinceUpdate(key, now)) {
      event('Normal', 'BackOff', `Back-off pulling image "${image}"`);
      event('Warning', 'Failed', 'Error: ImagePullBackOff');
      return { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` };
    }
    const started = performance.now();
    const { credentials: secretCredentials, problems } = await pullCredentials(pod, image, objects);
    // Upstream's wording; the pull goes on without them (the registry may not need them).
    if (problems.length > 0) event('Warning', 'FailedToRetrieveImagePullSecret', `Unable to retrieve some image pull secrets (${problems.join('; ')}); attempting to pull the image may not succeed.`);
    // Upstream's keyring order: the pull secrets' credentials, then the credential providers'.
    const provided = await providedCredentials(this.deps.providerCredentials, pod, container, image, signal);
    for (const problem of provided.problems) event('Warning', 'FailedToRetrieveImageCredentials', problem);
    const credentials = [...secretCredentials, ...provided.credentials];
    event('Normal', 'Pulling', `Pulling image "${image}"`);
    const uid = pod.metadata!.uid!;
    const waiter = `${init ? 'init' : 'app'}/${container.name}`;
    let mine = this.waiters.get(uid);
    if (!mine) this.waiters.set(uid, (mine = new Map()));
    mine.set(waiter, { container: container.name, init, image });
    try {
      const { imageRef, pullMs, sizeBytes } = await this.pullWith(image, credentials, sandboxConfig, signal);
      const waitedMs = performance.now() - started;
      event('Normal', 'Pulled', pulledMessage(image, pullMs, waitedMs, sizeBytes));
      return { imageRef, pulled: { pullMs, ...(sizeBytes !== undefined ? { sizeBytes } : {}) } };
    } catch (err) {
      // The pod gave up (it is being deleted): its sync ends with the signal's error, as the other runtime calls' do.
      if (signal.aborted) throw abortError(signal, `pulling image "${image}"`);
      this.deps.backoff.next(key, now);
      this.deps.logger.warn({ pod: podFullName(pod), image, err: errorMessage(err) }, 'image pull failed');
      const message = `Failed to pull image "${image}": ${errorMessage(err)}`;
      event('Warning', 'Failed', message);
      event('Warning', 'Failed', 'Error: ErrImagePull');
      return { reason: 'ErrImagePull', message };
    } finally {
      mine.delete(waiter);
      if (mine.size === 0 && this.waiters.get(uid) === mine) this.waiters.delete(uid);
      this.pulled.set(uid, (this.pulled.get(uid) ?? 0) + performance.now() - started);
    }
  }

  /** Tries each credential in turn (most specific first), then none when there are none: the last failure is the pull's. */
  private async pullWith(image: string, credentials: RegistryCredential[], sandboxConfig: PodSandboxConfig, signal: AbortSignal): Promise<PullResult> {
    if (credentials.length === 0) return this.pull(image, undefined, sandboxConfig, signal);
    let last: unknown;
    for (const cred of credentials) {
      try {
        return await this.pull(image, cred, sandboxConfig, signal);
      } catch (err) {
        if (signal.aborted) throw err;
        last = err;
      }
    }
    throw last;
  }

  /**
   * Pulls once for all pods that need `image` with the same credential now; `pullMs` is the
   * pull's own time (without the wait for a slot). The caller stops waiting when `signal`
   * aborts; the runtime's pull is cancelled when the last pod waiting for it has stopped.
   */
  private pull(image: string, cred: RegistryCredential | undefined, sandboxConfig: PodSandboxConfig, signal: AbortSignal): Promise<PullResult> {
    if (signal.aborted) return Promise.reject(abortError(signal, `pulling image "${image}"`));
    const key = cred ? `${image}\0${cred.from}\0${cred.serverAddress}\0${cred.username ?? ''}` : image;
    let shared = this.inflight.get(key);
    if (!shared) {
      const { from: _from, ...auth } = cred ?? { from: '' };
      const cancel = new AbortController();
      const pull = async () => {
        // Every pod gave up while the pull waited for a slot: the slot passes on at once.
        if (cancel.signal.aborted) throw abortError(cancel.signal, `pulling image "${image}"`);
        const started = performance.now();
        // Progress is tracked while the runtime pulls (not while the pull waits for a slot).
        const handle = this.progress?.begin(image);
        if (handle) this.running.set(image, handle);
        let imageRef: string;
        try {
          imageRef = await this.deps.runtime.pullImage(image, cred ? auth : undefined, sandboxConfig, { signal: cancel.signal });
        } finally {
          handle?.end();
          if (handle && this.running.get(image) === handle) this.running.delete(image);
        }
        const pullMs = performance.now() - started;
        // The size is for the Pulled event only: a runtime that cannot tell it fails no pull.
        const sizeBytes = (await this.deps.runtime.imageStatus(imageRef).catch(() => null))?.size;
        this.deps.logger.info({ image, ms: Math.round(pullMs), ...(sizeBytes !== undefined ? { bytes: sizeBytes } : {}) }, 'pulled image');
        return { imageRef, pullMs, ...(sizeBytes !== undefined ? { sizeBytes } : {}) };
      };
      const created: SharedPull = {
        result: (this.limiter ? this.limiter.run(pull) : pull()).finally(() => {
          created.settled = true;
          if (this.inflight.get(key) === created) this.inflight.delete(key);
        }),
        cancel,
        waiting: 0,
        settled: false,
      };
      shared = created;
      this.inflight.set(key, shared);
    }
    return this.waitFor(key, shared, image, signal);
  }

  /** Waits for a shared pull until it ends or `signal` aborts; the last waiter to give up cancels it. */
  private async waitFor(key: string, shared: SharedPull, image: string, signal: AbortSignal): Promise<PullResult> {
    shared.waiting++;
    try {
      return await untilAborted(shared.result, signal, `pulling image "${image}"`);
    } finally {
      shared.waiting--;
      if (signal.aborted && shared.waiting === 0 && !shared.settled && !shared.cancel.signal.aborted) {
        // Nobody else waits: the runtime stops pulling, and a pod that wants the image later starts a pull of its own.
        if (this.inflight.get(key) === shared) this.inflight.delete(key);
        shared.cancel.abort(abortError(signal, `pulling image "${image}": no pod waits for it any more`));
        this.deps.logger.info({ image }, 'image pull cancelled: the pods that needed it gave up');
      }
    }
  }
}

/** One pull of the runtime's, shared by the pods that need the same image with the same credential now. */
interface SharedPull {
  result: Promise<PullResult>;
  /** Aborts the runtime's pull: when the last pod waiting for it gives up. */
  cancel: AbortController;
  /** Pods waiting for it now. */
  waiting: number;
  /** The runtime's pull has ended (nothing left to cancel). */
  settled: boolean;
}

/** A finished pull: the image reference, the pull's own time, and the image's size when the runtime says it. */
interface PullResult { imageRef: string; pullMs: number; sizeBytes?: number }

/**
 * Upstream's Pulled message: `Successfully pulled image "X" in 1.234s (1.5s including waiting).
 * Image size: N bytes.`, durations as Go prints them truncated to milliseconds (`850ms`,
 * `1m2.5s`). The size is the pulled image's as the runtime reports it; a runtime that cannot
 * tell it gets the sentence without its last part rather than a made-up `0 bytes`.
 */
export function pulledMessage(image: string, pullMs: number, waitedMs: number, sizeBytes?: number): string {
  const size = sizeBytes !== undefined && Number.isSafeInteger(sizeBytes) && sizeBytes >= 0 ? ` Image size: ${sizeBytes} bytes.` : '';
  return `Successfully pulled image "${image}" in ${formatDuration(pullMs)} (${formatDuration(waitedMs)} including waiting).${size}`;
}
