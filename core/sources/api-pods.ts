/**
 * The API server pod source (upstream kubelet config/apiserver.go): the pods bound to this
 * node, list-watched across all namespaces with `fieldSelector=spec.nodeName=<node>`, reported
 * to the kubelet as complete sets ("SET" semantics, like every PodSource).
 *
 * It runs on the kubelet's own reflector (core/apiserver/reflector.ts) rather than client-node's
 * ListWatch/informer, because the informer does not do what a kubelet needs: it stops for good
 * on the first list or watch error (a kubelet must keep retrying through an outage, holding the
 * pods it knows), its start() resolves even when the list failed, it keys objects by
 * namespace/name (a recreated pod of the same name is another pod, with another UID), it stores
 * objects without checking them, and its watch has no timeout, so a connection that died
 * silently is noticed only when TCP keepalive gives up. Here:
 * - the first list reads the API server's watch cache (resourceVersion=0, as upstream's
 *   reflector), a re-list after 410 Gone / Expired reads etcd (resourceVersion="");
 * - a re-list replaces the store with the list and emits only if some pod was added, removed or
 *   changed (by UID, metadata, spec and readiness gate conditions: other status changes are not given again), so a
 *   re-list of an unchanged set emits nothing and no pod is ever removed by a re-list that does
 *   not remove it;
 * - while the API server is away the last set stays (nothing is emitted because of an error);
 *   the outage is logged once by the client's connectivity tracker; watches are retried from
 *   the last resourceVersion with back-off (800 ms doubling to 30 s, upstream's reflector back-off);
 * - watches ask for bookmarks and end after 30–60 minutes (upstream's kubelet: 5–10), which
 *   cuts their renewals to about a sixth; a watch that delivered nothing, not even a
 *   bookmark, for 150 s is taken for dead and watched again from its resourceVersion (the
 *   reflector's silence check), so a dead watch hides a new pod for minutes, not until its
 *   timeout;
 * - pods are hostile input: one without metadata.uid, name or namespace, a spec, containers, or
 *   with another spec.nodeName is left out, with one log line per pod and reason.
 *
 * start() resolves once the first list succeeded and was emitted, or after
 * `initialListTimeoutMs` (default 5 s) with a warning when the API server does not answer, so
 * static pods are not held back by an outage; the source then emits its first set as soon as a
 * list succeeds. Until then it has not reported, so the kubelet does not remove pods it may be
 * running for it.
 *
 * Each pod given to the kubelet is a copy with `kubernetes.io/config.source: api` and
 * `kubernetes.io/config.seen` (the first time this source saw the UID), as upstream's PodConfig
 * annotates the pods of every source.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { jsonEqual, readinessGateStates } from '../objects/pod-util.ts';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from '../apiserver/api-client.ts';
import { isUnavailableError } from '../apiserver/api-errors.ts';
import { longWatchTimeoutSeconds, Reflector } from '../apiserver/reflector.ts';
import { CONFIG_SEEN_ANNOTATION, CONFIG_SOURCE_ANNOTATION } from '../objects/pod-origin.ts';
import type { PodSource } from './pod-source.ts';
import { TIMED_OUT, withTimeout } from '../util/with-timeout.ts';

export interface ApiPodSourceOptions {
  /** The kubelet's main (throttled) client. */
  client: ApiClient;
  nodeName: string;
  logger: Logger;
  /** How long start() waits for the first list before returning without it. Default 5000 ms. */
  initialListTimeoutMs?: number;
  /** Seconds a watch may last (the server ends it); default random in [1800, 3600) (longWatchTimeoutSeconds). */
  watchTimeoutSeconds?: () => number;
  /** How long the watch may deliver nothing before it is started again; default the reflector's (150 s). */
  silenceMs?: number;
  /** Back-off after a failed list or watch. Default 800 ms doubling to 30 s. */
  backoff?: { initialMs: number; maxMs: number };
  /** The server's bookmark interval (tests); see Reflector. */
  bookmarkIntervalMs?: number;
}

interface StoredPod {
  /** The pod as given to the kubelet (annotated copy). */
  pod: V1Pod;
  /**
   * What the kubelet acts on, as the server sent it: metadata (but resourceVersion and
   * managedFields), spec and readiness gates. An event that changes none of it (the kubelet's
   * own status updates, most events once pods run) keeps the stored copy as it is.
   */
  view: { metadata: object; spec: unknown; gates: unknown };
  /** Bumped at each change of the view: what the set given to the kubelet is compared by. */
  version: number;
  key: string;
}

export class ApiPodSource implements PodSource {
  readonly name = 'api';
  private readonly log: Logger;
  private readonly store = new Map<string, StoredPod>();
  /** namespace/name → UID, for a DELETED event whose object lacks its UID. */
  private readonly byKey = new Map<string, string>();
  private readonly seen = new Map<string, string>();
  private readonly skipped = new Set<string>();
  private onSet: ((pods: V1Pod[]) => void) | undefined;
  private readonly reflector: Reflector;
  private lastEmitted: string | undefined;
  /** The last StoredPod version given out. */
  private versions = 0;
  private emitScheduled = false;
  private stopped = false;
  private firstList: (() => void) | undefined;
  private lastError = '';
  /** A failure was logged at warn (an outage is the connectivity tracker's line, not this source's). */
  private warned = false;

  constructor(private readonly opts: ApiPodSourceOptions) {
    this.log = opts.logger.child({ component: 'api-pod-source', source: 'api', node: opts.nodeName });
    this.reflector = new Reflector({
      client: opts.client,
      path: '/api/v1/pods',
      query: { fieldSelector: `spec.nodeName=${opts.nodeName}` },
      logger: this.log,
      // A dead watch is caught by the reflector's silence check, so it may last long.
      watchTimeoutSeconds: opts.watchTimeoutSeconds ?? longWatchTimeoutSeconds,
      ...(opts.silenceMs !== undefined ? { silenceMs: opts.silenceMs } : {}),
      ...(opts.backoff ? { backoff: opts.backoff } : {}),
      ...(opts.bookmarkIntervalMs ? { bookmarkIntervalMs: opts.bookmarkIntervalMs } : {}),
      handler: {
        replace: (items) => this.replace(items),
        event: (type, object) => this.onEvent(type, object),
        failed: (what, err, retryInMs) => this.logFailure(what === 'list' ? 'listing the pods bound to this node failed; retrying' : 'watching the pods bound to this node failed; retrying', err, retryInMs),
      },
    });
  }

  async start(onSet: (pods: V1Pod[]) => void): Promise<void> {
    if (this.onSet) throw new Error('ApiPodSource already started');
    this.onSet = onSet;
    const listed = new Promise<void>((resolve) => (this.firstList = resolve));
    this.reflector.start();
    const waitMs = this.opts.initialListTimeoutMs ?? 5000;
    const timedOut = (await withTimeout(listed, waitMs)) === TIMED_OUT;
    if (timedOut && !this.stopped) {
      this.log.warn({ waitedMs: waitMs, server: this.opts.client.server }, 'the pods bound to this node are not known yet (the API server has not answered the list); they are reported as soon as it does');
    }
  }

  /** Lists the pods bound to this node again, from etcd (the server's data may have gone back in time). */
  relist(reason: string): void {
    this.reflector.relist(reason);
  }

  async stop(): Promise<void> {
    this.stopped = true;
    await this.reflector.stop();
    this.onSet = undefined;
  }

  /** A complete list from the server: the store becomes it. */
  private replace(items: unknown[]): void {
    if (this.stopped) return;
    const next = new Map<string, StoredPod>();
    for (const item of items) {
      const stored = this.accept(item);
      if (stored) next.set(stored.uid, stored.entry);
    }
    this.store.clear();
    this.byKey.clear();
    for (const [uid, entry] of next) {
      this.store.set(uid, entry);
      this.byKey.set(entry.key, uid);
    }
    if (this.warned) this.log.info({ pods: this.store.size }, 'listed the pods bound to this node again');
    this.lastError = '';
    this.warned = false;
    this.emitNow();
    this.firstList?.();
    this.firstList = undefined;
  }

  /** Applies one watch event. */
  private onEvent(type: 'ADDED' | 'MODIFIED' | 'DELETED', obj: unknown): void {
    if (type === 'DELETED') {
      const uid = podUID(obj) ?? this.byKey.get(podKey(obj) ?? '');
      if (uid) this.forget(uid);
    } else {
      const accepted = this.accept(obj);
      if (accepted) {
        this.store.set(accepted.uid, accepted.entry);
        this.byKey.set(accepted.entry.key, accepted.uid);
      } else {
        // A pod that no longer passes (another node, a broken object) is not this node's to run.
        const uid = podUID(obj);
        if (uid && this.store.has(uid)) this.forget(uid);
      }
    }
    this.scheduleEmit();
  }

  private forget(uid: string): void {
    const entry = this.store.get(uid);
    if (!entry) return;
    this.store.delete(uid);
    if (this.byKey.get(entry.key) === uid) this.byKey.delete(entry.key);
  }

  /** Checks a pod from the server; returns its annotated copy, or undefined (logged once) when it is not acceptable. */
  private accept(raw: unknown): { uid: string; entry: StoredPod } | undefined {
    const problem = this.problemOf(raw);
    if (problem) {
      const id = podUID(raw) ?? podKey(raw) ?? '(unnamed)';
      const key = `${id}|${problem}`;
      if (!this.skipped.has(key)) {
        this.skipped.add(key);
        this.log.warn({ pod: id, problem }, 'skipping a pod from the API server');
      }
      return undefined;
    }
    const { resourceVersion: _rv, managedFields: _mf, ...rest } = (raw as V1Pod).metadata!;
    const view = { metadata: rest, spec: (raw as V1Pod).spec, gates: readinessGateStates(raw as V1Pod) };
    const uid = rest.uid!;
    const stored = this.store.get(uid);
    if (stored && jsonEqual(stored.view, view)) return { uid, entry: stored };
    const pod = structuredClone(raw) as V1Pod;
    const meta = pod.metadata!;
    let seen = this.seen.get(uid);
    if (!seen) {
      seen = new Date().toISOString();
      this.seen.set(uid, seen);
    }
    pod.apiVersion = 'v1';
    pod.kind = 'Pod';
    meta.annotations = { ...(meta.annotations ?? {}), [CONFIG_SOURCE_ANNOTATION]: 'api', [CONFIG_SEEN_ANNOTATION]: seen };
    return { uid, entry: { pod, view, version: ++this.versions, key: `${meta.namespace}/${meta.name}` } };
  }

  private problemOf(raw: unknown): string | undefined {
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) return 'not an object';
    const { metadata, spec } = raw as { metadata?: unknown; spec?: unknown };
    if (!metadata || typeof metadata !== 'object') return 'no metadata';
    const m = metadata as Record<string, unknown>;
    for (const field of ['uid', 'name', 'namespace'] as const) {
      if (typeof m[field] !== 'string' || !m[field]) return `no metadata.${field}`;
    }
    if (m.annotations !== undefined && (typeof m.annotations !== 'object' || m.annotations === null || Array.isArray(m.annotations))) return 'metadata.annotations is not a map';
    if (!spec || typeof spec !== 'object' || Array.isArray(spec)) return 'no spec';
    const s = spec as Record<string, unknown>;
    if (s.nodeName !== this.opts.nodeName) return `spec.nodeName is ${JSON.stringify(s.nodeName)}, not this node`;
    if (!Array.isArray(s.containers) || s.containers.length === 0) return 'no spec.containers';
    return undefined;
  }

  /** Emits after the current batch of events (one network chunk may carry many). */
  private scheduleEmit(): void {
    if (this.emitScheduled || !this.reflector.synced) return;
    this.emitScheduled = true;
    setImmediate(() => {
      this.emitScheduled = false;
      this.emitNow();
    });
  }

  /**
   * Gives the kubelet the current set, unless it is the set last given: the same UIDs with the
   * same metadata and spec. A change of status alone (most watch events once pods run: the
   * kubelet's own status updates) is not given again; the kubelet keeps its own pod status.
   */
  private emitNow(): void {
    if (this.stopped || !this.onSet) return;
    const entries = [...this.store.entries()].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    const fingerprint = entries.map(([uid, e]) => `${uid}@${e.version}`).join(',');
    if (fingerprint === this.lastEmitted) return;
    this.lastEmitted = fingerprint;
    // Forget first-seen times and skip notes of pods that are gone (UIDs never come back).
    for (const uid of this.seen.keys()) if (!this.store.has(uid)) this.seen.delete(uid);
    if (this.skipped.size > 1000) this.skipped.clear();
    try {
      this.onSet(entries.map(([, e]) => e.pod));
    } catch (err) {
      this.log.error({ err: errorMessage(err) }, 'the kubelet failed to take the pod set');
    }
  }

  private logFailure(what: string, err: unknown, retryInMs: number): void {
    const message = errorMessage(err);
    const fields = { err: message, retryInMs: Math.round(retryInMs) };
    if (isUnavailableError(err) || message === this.lastError) this.log.debug(fields, what);
    else {
      this.log.warn(fields, what);
      this.warned = true;
    }
    this.lastError = message;
  }
}

function podUID(obj: unknown): string | undefined {
  const uid = (obj as { metadata?: { uid?: unknown } } | undefined)?.metadata?.uid;
  return typeof uid === 'string' && uid ? uid : undefined;
}

function podKey(obj: unknown): string | undefined {
  const m = (obj as { metadata?: { namespace?: unknown; name?: unknown } } | undefined)?.metadata;
  return typeof m?.namespace === 'string' && typeof m?.name === 'string' ? `${m.namespace}/${m.name}` : undefined;
}
