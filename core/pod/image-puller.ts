import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ContainerRuntime, PodSandboxConfig } from '../runtime/types.ts';
import type { Backoff } from './backoff.ts';
import { Limiter } from '../util/limiter.ts';

/** The image is not there and the container must wait: the waiting reason and message. */
export interface ImageWait { reason: 'ErrImagePull' | 'ImagePullBackOff' | 'ErrImageNeverPull' | 'InvalidImageName'; message: string }

/**
 * Ensures a container's image is on the node according to imagePullPolicy, with the
 * upstream reasons: ErrImagePull on a failed pull, then ImagePullBackOff while the pull
 * back-off lasts, ErrImageNeverPull for policy Never. Concurrent pulls of one image share
 * one runtime call, so many pods of one image do not pull it many times.
 */
export class ImagePuller {
  private readonly inflight = new Map<string, Promise<string>>();
  /** Time each pod spent waiting for pulls (the pod start SLI leaves it out). */
  private readonly pulled = new Map<string, number>();

  /** Milliseconds the pod waited for image pulls so far. */
  pulledMs(uid: string): number {
    return this.pulled.get(uid) ?? 0;
  }

  /** Forgets a pod's pull time. */
  forget(uid: string): void {
    this.pulled.delete(uid);
  }

  private readonly limiter: Limiter | undefined;

  constructor(private readonly deps: { runtime: ContainerRuntime; backoff: Backoff; logger: Logger; maxParallelPulls?: number }) {
    this.limiter = deps.maxParallelPulls ? new Limiter(deps.maxParallelPulls) : undefined;
  }

  async ensure(pod: V1Pod, container: V1Container, sandboxConfig: PodSandboxConfig): Promise<{ imageRef: string } | ImageWait> {
    const image = container.image ?? '';
    if (!image.trim()) return { reason: 'InvalidImageName', message: `Failed to apply default image tag "${image}": couldn't parse image name` };
    const policy = container.imagePullPolicy ?? 'IfNotPresent';
    if (policy !== 'Always') {
      const present = await this.deps.runtime.imageStatus(image);
      if (present) return { imageRef: present.id };
      if (policy === 'Never') return { reason: 'ErrImageNeverPull', message: `Container image "${image}" is not present with pull policy of Never` };
    }
    const key = `${pod.metadata!.uid}/${image}`;
    const now = Date.now();
    if (this.deps.backoff.isInBackOffSinceUpdate(key, now)) return { reason: 'ImagePullBackOff', message: `Back-off pulling image "${image}"` };
    const started = performance.now();
    try {
      return { imageRef: await this.pull(image, sandboxConfig) };
    } catch (err) {
      this.deps.backoff.next(key, now);
      this.deps.logger.warn({ pod: `${pod.metadata?.namespace}/${pod.metadata?.name}`, image, err: errorMessage(err) }, 'image pull failed');
      return { reason: 'ErrImagePull', message: `Failed to pull image "${image}": ${errorMessage(err)}` };
    } finally {
      const uid = pod.metadata!.uid!;
      this.pulled.set(uid, (this.pulled.get(uid) ?? 0) + performance.now() - started);
    }
  }

  private pull(image: string, sandboxConfig: PodSandboxConfig): Promise<string> {
    let p = this.inflight.get(image);
    if (!p) {
      const started = performance.now();
      const pull = () => this.deps.runtime.pullImage(image, undefined, sandboxConfig);
      p = (this.limiter ? this.limiter.run(pull) : pull()).finally(() => this.inflight.delete(image));
      p.then(() => this.deps.logger.info({ image, ms: Math.round(performance.now() - started) }, 'pulled image'), () => {});
      this.inflight.set(image, p);
    }
    return p;
  }
}
