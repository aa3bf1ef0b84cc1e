/**
 * The ConfigMaps and Secrets the pods of this node refer to (volumes, env, envFrom, image pull
 * secrets), each watched by name while a pod refers to it: upstream's Watch change-detection
 * strategy (watchBasedManager). A changed object reaches its volumes at once (the kubelet
 * resyncs the pods that use it), a created one lets a waiting pod start, and reads cost no
 * request once the first list arrived. Under the Node authorizer a node may read only the
 * objects of pods bound to it, and only by name: one watch per object, with a `metadata.name`
 * field selector, is what it allows.
 *
 * Objects are hostile input too: a key that is not a valid file name, or an object larger
 * than the API server would store (1 MiB), makes every read of it fail with a message naming it.
 */
import type { V1ConfigMap, V1Secret } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from './api-client.ts';
import { isUnavailableError } from './api-errors.ts';
import { Reflector } from './reflector.ts';
import type { ObjectSource } from '../objects/object-source.ts';
import type { ObjectKind, ObjectRef } from '../objects/object-refs.ts';

export type { ObjectSource } from '../objects/object-source.ts';

export { objectRefsOf, type ObjectKind, type ObjectRef } from '../objects/object-refs.ts';


/** The API server's limit on a ConfigMap or Secret (etcd's request limit). */
const MAX_OBJECT_BYTES = 1024 * 1024;
/** Upstream IsConfigMapKey: what a key (a file name in a volume) may be. */
const KEY = /^[-._a-zA-Z0-9]+$/;
/** How long a read waits for the first list of a newly referenced object. */
const FIRST_LIST_WAIT_MS = 10_000;

interface Entry {
  ref: ObjectRef;
  /** UIDs of the pods that refer to it. */
  pods: Set<string>;
  reflector: Reflector;
  object: unknown;
  /** Set once a list answered (present or absent); waiters resolve then. */
  synced: boolean;
  waiters: Array<() => void>;
  lastError: string;
}

const keyOf = (r: ObjectRef) => `${r.kind}/${r.namespace}/${r.name}`;
const singular = (kind: ObjectKind) => (kind === 'configmaps' ? 'configmap' : 'secret');

export class ApiObjectCache implements ObjectSource {
  private readonly entries = new Map<string, Entry>();
  /** Each pod's references, by pod UID. */
  private readonly byPod = new Map<string, Set<string>>();

  constructor(
    private readonly deps: {
      client: ApiClient;
      logger: Logger;
      /** Objects changed: the pods that refer to them (the kubelet resyncs them). */
      onChange: (podUids: Set<string>) => void;
    },
  ) {}

  /** The objects a pod refers to now (its previous references not in the list are dropped). */
  setPodRefs(podUid: string, refs: ObjectRef[]): void {
    const want = new Set(refs.map(keyOf));
    const had = this.byPod.get(podUid) ?? new Set<string>();
    for (const key of had) if (!want.has(key)) this.release(podUid, key);
    for (const ref of refs) {
      const key = keyOf(ref);
      let e = this.entries.get(key);
      if (!e) {
        e = this.watch(ref);
        this.entries.set(key, e);
      }
      e.pods.add(podUid);
    }
    if (want.size > 0) this.byPod.set(podUid, want);
    else this.byPod.delete(podUid);
  }

  /** The pod is gone: its objects are no longer watched for it. */
  forgetPod(podUid: string): void {
    for (const key of this.byPod.get(podUid) ?? []) this.release(podUid, key);
    this.byPod.delete(podUid);
  }

  configMap(namespace: string, name: string): Promise<V1ConfigMap | undefined> {
    return this.get({ kind: 'configmaps', namespace, name }) as Promise<V1ConfigMap | undefined>;
  }

  secret(namespace: string, name: string): Promise<V1Secret | undefined> {
    return this.get({ kind: 'secrets', namespace, name }) as Promise<V1Secret | undefined>;
  }

  /** Objects watched now (for tests and metrics). */
  get watched(): number {
    return this.entries.size;
  }

  async stop(): Promise<void> {
    const all = [...this.entries.values()];
    this.entries.clear();
    this.byPod.clear();
    await Promise.all(all.map((e) => e.reflector.stop()));
  }

  /**
   * The object, or undefined when it does not exist. Waits (bounded) for the first list of an
   * object referenced just now; a read of one no pod refers to (yet) is a GET of its own.
   */
  private async get(ref: ObjectRef): Promise<unknown> {
    const e = this.entries.get(keyOf(ref));
    if (!e) return this.checked(ref, await this.getOnce(ref));
    if (!e.synced) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, FIRST_LIST_WAIT_MS);
        timer.unref();
        e.waiters.push(() => {
          clearTimeout(timer);
          resolve();
        });
      });
      if (!e.synced) throw new Error(`${singular(ref.kind)} "${ref.name}" could not be read from the API server yet${e.lastError ? `: ${e.lastError}` : ''}`);
    }
    return this.checked(ref, e.object);
  }

  private async getOnce(ref: ObjectRef): Promise<unknown> {
    try {
      return await this.deps.client.request('GET', `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${ref.kind}/${encodeURIComponent(ref.name)}`);
    } catch (err) {
      if ((err as { statusCode?: number }).statusCode === 404) return undefined;
      throw err;
    }
  }

  /** Hostile objects are refused whole, naming them: a key that is no file name, or an object too large. */
  private checked(ref: ObjectRef, obj: unknown): unknown {
    if (obj === undefined || obj === null) return undefined;
    const o = obj as { data?: unknown; binaryData?: unknown; stringData?: unknown };
    const what = `${singular(ref.kind)} "${ref.namespace}/${ref.name}"`;
    let size = 0;
    for (const field of ['data', 'binaryData', 'stringData'] as const) {
      const m = o[field];
      if (m === undefined || m === null) continue;
      if (typeof m !== 'object' || Array.isArray(m)) throw new Error(`${what}: ${field} is not a map`);
      for (const [k, v] of Object.entries(m as Record<string, unknown>)) {
        if (k.length > 253 || !KEY.test(k) || k === '.' || k === '..') throw new Error(`${what}: key ${JSON.stringify(k.slice(0, 64))} is not a valid file name (upstream: [-._a-zA-Z0-9]+, at most 253 characters, not . or ..)`);
        if (typeof v !== 'string') throw new Error(`${what}: ${field}[${k}] is not a string`);
        size += k.length + v.length;
      }
    }
    if (size > MAX_OBJECT_BYTES) throw new Error(`${what} is larger than ${MAX_OBJECT_BYTES} bytes`);
    return obj;
  }

  private watch(ref: ObjectRef): Entry {
    const log = this.deps.logger.child({ object: keyOf(ref) });
    const entry: Entry = {
      ref,
      pods: new Set(),
      object: undefined,
      synced: false,
      waiters: [],
      lastError: '',
      reflector: undefined as unknown as Reflector,
    };
    const changed = () => {
      if (this.entries.get(keyOf(ref)) === entry && entry.pods.size > 0) this.deps.onChange(new Set(entry.pods));
    };
    entry.reflector = new Reflector({
      client: this.deps.client,
      path: `/api/v1/namespaces/${encodeURIComponent(ref.namespace)}/${ref.kind}`,
      query: { fieldSelector: `metadata.name=${ref.name}` },
      // The node's watch-cache read of a just-bound pod's object may be denied until the Node
      // authorizer's graph has the binding: read etcd, and retry soon.
      firstListFromCache: false,
      backoff: { initialMs: 500, maxMs: 30_000 },
      logger: log,
      handler: {
        replace: (items) => {
          const first = !entry.synced;
          const next = items.find((i) => (i as { metadata?: { name?: string } }).metadata?.name === ref.name);
          const differs = JSON.stringify(next) !== JSON.stringify(entry.object);
          entry.object = next;
          entry.synced = true;
          entry.lastError = '';
          for (const w of entry.waiters.splice(0)) w();
          if (!first && differs) changed();
        },
        event: (type, obj) => {
          if ((obj as { metadata?: { name?: string } })?.metadata?.name !== ref.name) return;
          entry.object = type === 'DELETED' ? undefined : obj;
          changed();
        },
        failed: (what, err) => {
          entry.lastError = errorMessage(err);
          if (!isUnavailableError(err)) log.debug({ err: entry.lastError }, `${what} failed; retrying`);
        },
      },
    });
    entry.reflector.start();
    return entry;
  }

  private release(podUid: string, key: string): void {
    const e = this.entries.get(key);
    if (!e) return;
    e.pods.delete(podUid);
    if (e.pods.size > 0) return;
    this.entries.delete(key);
    for (const w of e.waiters.splice(0)) w();
    void e.reflector.stop();
  }
}
