/**
 * Mirror pods: the API's view of this node's static pods (file and URL sources), so that
 * `kubectl get pods` shows them and their status. As upstream's kubelet keeps them:
 *  - each static pod has one mirror pod of the same namespace/name in the API, annotated
 *    `kubernetes.io/config.mirror` with the static pod's hash (its config.hash), owned by
 *    the Node;
 *  - a mirror of another hash (the static pod was edited), or one being deleted, is deleted
 *    (grace 0, UID precondition) and made again; a mirror deleted by someone is made again;
 *  - a mirror whose static pod is gone is deleted;
 *  - the static pod's status is written to its mirror (see mirrorOf).
 * Mirror pods come back through the API pod source (they are bound to this node): the
 * kubelet hands them here instead of running them.
 */
import type { V1Pod } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import { CONFIG_HASH_ANNOTATION, CONFIG_MIRROR_ANNOTATION } from '../objects/pod-origin.ts';
import type { PodTarget, WriteFailure } from './api-status-sync.ts';
import { isAlreadyExistsError } from './api-errors.ts';
import { podFullName } from '../objects/pod-util.ts';

/** What the mirror pod manager writes (core/apiserver/pod-api.ts). */
export interface MirrorPodApi {
  createPod(pod: V1Pod): Promise<V1Pod>;
  deletePod(target: PodTarget): Promise<void>;
}


const hashOf = (p: V1Pod) => p.metadata?.annotations?.[CONFIG_HASH_ANNOTATION] ?? p.metadata?.uid ?? '';

/** How soon a failed create or delete is tried again. */
const RETRY_MS = 5000;
/** How soon writes wait for the Node's registration are tried again (a mirror is owned by the Node, so none is made before). */
const NODE_WAIT_MS = 500;

export class MirrorPods {
  /** Mirror pods as the API pod source last reported them, by namespace/name. */
  private readonly mirrors = new Map<string, V1Pod>();
  /** The static pods that want a mirror, by namespace/name. */
  private readonly statics = new Map<string, V1Pod>();
  /** Writes in flight, by namespace/name: one at a time per pod. */
  private readonly busy = new Set<string>();
  /** Problems already logged (a refused create is logged once, not on every retry). */
  private readonly reported = new Map<string, string>();
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;

  constructor(
    private readonly deps: {
      api: MirrorPodApi;
      nodeName: string;
      /** The Node's UID (the mirror's owner), once the Node is registered. */
      nodeUid: () => string | undefined;
      logger: Logger;
      classify: (err: unknown) => WriteFailure;
      /** A static pod's mirror appeared (its status can be written now). */
      onMirror?: (staticUid: string) => void;
    },
  ) {}

  /** The mirror pods the API holds now (every one bound to this node). */
  observe(mirrors: V1Pod[]): void {
    const before = new Map(this.mirrors);
    this.mirrors.clear();
    for (const m of mirrors) this.mirrors.set(podFullName(m), m);
    for (const [key, m] of this.mirrors) {
      const s = this.statics.get(key);
      const prev = before.get(key);
      if (s && hashOf(s) === m.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] && prev?.metadata?.uid !== m.metadata?.uid) this.deps.onMirror?.(s.metadata!.uid!);
    }
    this.reconcile();
  }

  /** The static pods this node runs now (from every file and URL source). */
  setStatic(pods: V1Pod[]): void {
    this.statics.clear();
    for (const p of pods) this.statics.set(podFullName(p), p);
    this.reconcile();
  }

  /** Where a static pod's status goes: its current mirror, if it has one (not one being replaced). */
  mirrorOf(staticPod: V1Pod): PodTarget | undefined {
    const m = this.mirrors.get(podFullName(staticPod));
    if (!m || m.metadata?.deletionTimestamp || m.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== hashOf(staticPod)) return undefined;
    return { namespace: m.metadata!.namespace!, name: m.metadata!.name!, uid: m.metadata!.uid! };
  }

  stop(): void {
    this.stopped = true;
    clearTimeout(this.timer);
  }

  private reconcile(): void {
    if (this.stopped) return;
    for (const [key, s] of this.statics) {
      const m = this.mirrors.get(key);
      if (m && (m.metadata?.deletionTimestamp || m.metadata?.annotations?.[CONFIG_MIRROR_ANNOTATION] !== hashOf(s))) this.write(key, 'delete', () => this.delete(m));
      else if (!m) this.write(key, 'create', () => this.create(s));
    }
    for (const [key, m] of this.mirrors) {
      if (!this.statics.has(key)) this.write(key, 'delete', () => this.delete(m));
    }
  }

  private write(key: string, what: string, fn: () => Promise<void>): void {
    if (this.busy.has(key)) return;
    if (!this.deps.nodeUid()) {
      // Static pods are read before the Node is registered; nothing else would bring them back here.
      this.retryLater(NODE_WAIT_MS);
      return;
    }
    this.busy.add(key);
    let done = false;
    void fn()
      .then(() => {
        done = true;
        this.reported.delete(key);
      })
      .catch((err) => {
        const message = errorMessage(err);
        if (this.reported.get(key) !== message) this.deps.logger.warn({ pod: key, err: message }, `could not ${what} the mirror pod; retrying`);
        this.reported.set(key, message);
        if (this.deps.classify(err) === 'retry' || what === 'create') this.retryLater();
      })
      .finally(() => {
        this.busy.delete(key);
        // A deleted outdated mirror is made again at once, not at the next change.
        if (done) this.reconcile();
      });
  }

  private retryLater(delayMs = RETRY_MS): void {
    if (this.timer || this.stopped) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      this.reconcile();
    }, delayMs);
    this.timer.unref();
  }

  /** The mirror of a static pod: its spec, labels and annotations, the mirror annotation, owned by the Node. */
  private async create(s: V1Pod): Promise<void> {
    const mirror: V1Pod = {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {
        name: s.metadata!.name!,
        namespace: s.metadata!.namespace ?? 'default',
        ...(s.metadata?.labels ? { labels: s.metadata.labels } : {}),
        annotations: { ...(s.metadata?.annotations ?? {}), [CONFIG_MIRROR_ANNOTATION]: hashOf(s) },
        ownerReferences: [{ apiVersion: 'v1', kind: 'Node', name: this.deps.nodeName, uid: this.deps.nodeUid()!, controller: true }],
      },
      spec: s.spec!,
    };
    let made: V1Pod;
    try {
      made = await this.deps.api.createPod(mirror);
    } catch (err) {
      // Made by an earlier attempt whose answer was lost, or not yet seen by the watch: the watch brings it.
      if (isAlreadyExistsError(err)) return;
      throw err;
    }
    // Known at once (the watch confirms it): a reconcile before then must not make it again.
    this.mirrors.set(podFullName(made), made);
    this.deps.logger.info({ pod: podFullName(s), mirrorUid: made.metadata?.uid }, 'created mirror pod');
    this.deps.onMirror?.(s.metadata!.uid!);
  }

  private async delete(m: V1Pod): Promise<void> {
    await this.deps.api.deletePod({ namespace: m.metadata!.namespace!, name: m.metadata!.name!, uid: m.metadata!.uid! }).catch((err) => {
      // Already gone, or already another: the watch tells what is there now.
      if (this.deps.classify(err) !== 'drop') throw err;
    });
    if (this.mirrors.get(podFullName(m))?.metadata?.uid === m.metadata?.uid) this.mirrors.delete(podFullName(m));
    this.deps.logger.info({ pod: podFullName(m), mirrorUid: m.metadata?.uid }, 'deleted mirror pod');
  }
}
