/**
 * Events: what happened to a pod or the node, for `kubectl describe`, `kubectl get events` and
 * `kubelet-ts events`. Recorded with upstream's reasons and wording, correlated as upstream's
 * client-go EventCorrelator does, then handed to a sink (the API server in API-server mode)
 * and kept in a bounded local view (what standalone nodes have instead).
 *
 * Correlation, per the upstream defaults:
 *  - dedup: the same event again (same object, type, reason, message) within the cache is one
 *    event with a higher `count` and a new `lastTimestamp` (an update, not a new object);
 *  - aggregation: more than 10 events of one object, type and reason with different messages
 *    within 10 minutes become one event "(combined from similar events): <latest message>";
 *  - spam filter: each object may emit 25 events at once, then one per 5 minutes (a token
 *    bucket per source and object); what it drops is counted, not sent.
 */
import type { Logger } from '../logger.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { containerKind, type ContainerKind } from '../objects/pod-util.ts';

export type EventType = 'Normal' | 'Warning';

/** The object an event is about (a v1 ObjectReference), and the container's field path when about one. */
export interface EventObjectRef {
  kind: string;
  name: string;
  namespace?: string;
  uid?: string;
  apiVersion?: string;
  /** `spec.containers{name}` for an event about one container of a pod, as upstream. */
  fieldPath?: string;
}

/** One event as the recorder keeps and sinks receive it: a v1 Event's fields. */
export interface KubeletEvent {
  /** Local sequence number (the local view and `kubelet-ts events -w` page by it). */
  seq: number;
  /** The API object's name: `<object name>.<first time in hex nanoseconds>`, as upstream names it. */
  name: string;
  namespace: string;
  involvedObject: EventObjectRef;
  type: EventType;
  reason: string;
  message: string;
  count: number;
  firstTimestamp: string;
  lastTimestamp: string;
  source: { component: string; host: string };
  /** True once a sink has created it (later records of it are updates). */
  sent?: boolean;
}

/** Where correlated events go: the API server in API-server mode. Must not throw synchronously. */
export interface EventSink {
  /** A new event (`isNew`) or an update of one already written (count, lastTimestamp, message). */
  write(event: KubeletEvent, isNew: boolean): void;
}

/** How many events the local view keeps. */
const LOCAL_VIEW = 1000;
/** How many distinct events dedup and aggregation remember (upstream's LRU size). */
const CACHE_SIZE = 4096;
const AGGREGATE_WINDOW_MS = 10 * 60_000;
const AGGREGATE_MAX = 10;
const SPAM_BURST = 25;
const SPAM_REFILL_MS = 5 * 60_000;

interface Bucket { tokens: number; at: number }

/** Records events: correlates them, logs them, keeps the local view and feeds the sink. */
export class EventRecorder {
  private seq = 0;
  private readonly view: KubeletEvent[] = [];
  /** Dedup cache: exact event key → the event written for it. */
  private readonly dedup = new Map<string, KubeletEvent>();
  /** Aggregation cache: object+type+reason → the messages seen in the window. */
  private readonly similar = new Map<string, { messages: Set<string>; since: number }>();
  private readonly spam = new Map<string, Bucket>();
  private readonly listeners = new Set<(e: KubeletEvent) => void>();
  private sink: EventSink | undefined;
  /** Events the spam filter dropped, by object (logged, not sent). */
  dropped = 0;

  constructor(private readonly deps: { nodeName: string; logger: Logger; now?: () => number }) {}

  private now(): number {
    return this.deps.now?.() ?? Date.now();
  }

  /** Sends events to `sink` from now on (API-server mode); undefined stops sending. */
  setSink(sink: EventSink | undefined): void {
    this.sink = sink;
  }

  /** Records one event. Never throws: an event is a report, never a reason to fail. */
  record(object: EventObjectRef, type: EventType, reason: string, message: string): void {
    try {
      this.correlate(object, type, reason, message);
    } catch (err) {
      this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err), reason }, 'could not record an event');
    }
  }

  /** Events in the local view after `afterSeq`, oldest first. */
  list(afterSeq = 0): KubeletEvent[] {
    return this.view.filter((e) => e.seq > afterSeq);
  }

  /** Calls `fn` with each event recorded from now on (new or updated); returns the unsubscribe. */
  subscribe(fn: (e: KubeletEvent) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }

  private correlate(object: EventObjectRef, type: EventType, reason: string, message: string): void {
    const now = this.now();
    const objKey = `${object.kind}/${object.namespace ?? ''}/${object.name}/${object.uid ?? ''}/${object.fieldPath ?? ''}`;
    if (!this.allow(objKey, now)) {
      this.dropped++;
      return;
    }
    // Aggregation: many different messages for one reason become one combined event.
    const aggKey = `${objKey}\0${type}\0${reason}`;
    let agg = this.similar.get(aggKey);
    if (!agg || now - agg.since > AGGREGATE_WINDOW_MS) {
      agg = { messages: new Set(), since: now };
      this.remember(this.similar, aggKey, agg);
    }
    agg.messages.add(message);
    const aggregated = agg.messages.size > AGGREGATE_MAX;
    const text = aggregated ? `(combined from similar events): ${message}` : message;
    const key = aggregated ? `${aggKey}\0(combined)` : `${aggKey}\0${message}`;

    const stamp = new Date(now).toISOString();
    const existing = this.dedup.get(key);
    let event: KubeletEvent;
    let isNew: boolean;
    if (existing) {
      existing.count++;
      existing.lastTimestamp = stamp;
      existing.message = text;
      existing.seq = ++this.seq;
      event = existing;
      isNew = false;
    } else {
      event = {
        seq: ++this.seq,
        name: `${object.name}.${(BigInt(now) * 1_000_000n + BigInt(this.seq % 1_000_000)).toString(16)}`,
        namespace: object.namespace || 'default',
        involvedObject: { apiVersion: 'v1', ...object },
        type,
        reason,
        message: text,
        count: 1,
        firstTimestamp: stamp,
        lastTimestamp: stamp,
        source: { component: 'kubelet', host: this.deps.nodeName },
      };
      this.remember(this.dedup, key, event);
      isNew = true;
    }
    // The local view holds each event once, at its latest position.
    const at = this.view.indexOf(event);
    if (at >= 0) this.view.splice(at, 1);
    this.view.push(event);
    if (this.view.length > LOCAL_VIEW) this.view.splice(0, this.view.length - LOCAL_VIEW);

    const where = object.namespace ? `${object.kind.toLowerCase()}/${object.namespace}/${object.name}` : `${object.kind.toLowerCase()}/${object.name}`;
    this.deps.logger[type === 'Warning' ? 'warn' : 'info']({ event: reason, object: where, ...(object.fieldPath ? { fieldPath: object.fieldPath } : {}), count: event.count }, text);
    try {
      this.sink?.write(event, isNew);
    } catch (err) {
      this.deps.logger.warn({ err: err instanceof Error ? err.message : String(err), reason }, 'event sink failed');
    }
    for (const fn of this.listeners) {
      try {
        fn(event);
      } catch {
        // A listener's failure (a closed watch) is its own.
      }
    }
  }

  /** The spam filter: a token bucket per object, SPAM_BURST deep, one token per SPAM_REFILL_MS. */
  private allow(key: string, now: number): boolean {
    let b = this.spam.get(key);
    if (!b) {
      b = { tokens: SPAM_BURST, at: now };
      this.remember(this.spam, key, b);
    }
    b.tokens = Math.min(SPAM_BURST, b.tokens + (now - b.at) / SPAM_REFILL_MS);
    b.at = now;
    if (b.tokens < 1) return false;
    b.tokens -= 1;
    return true;
  }

  /** Map insert with LRU-ish eviction of the oldest entry beyond CACHE_SIZE. */
  private remember<V>(map: Map<string, V>, key: string, value: V): void {
    map.delete(key);
    map.set(key, value);
    if (map.size > CACHE_SIZE) map.delete(map.keys().next().value!);
  }
}

/** The reference of a pod, or of one of its containers (`fieldPath`), for an event. */
export function podRef(pod: V1Pod, container?: string): EventObjectRef {
  return {
    kind: 'Pod',
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? 'default',
    ...(pod.metadata?.uid ? { uid: pod.metadata.uid } : {}),
    apiVersion: 'v1',
    ...(container ? { fieldPath: `${FIELD_OF_KIND[containerKind(pod, container)]}{${container}}` } : {}),
  };
}

/** The spec field a container's events point at (upstream's fieldPath), by where the container is declared. */
const FIELD_OF_KIND: Record<ContainerKind, string> = { init: 'spec.initContainers', app: 'spec.containers', ephemeral: 'spec.ephemeralContainers' };

/** The reference of this node, for node events (upstream gives the node's name as its UID). */
export function nodeRef(nodeName: string): EventObjectRef {
  return { kind: 'Node', name: nodeName, uid: nodeName, apiVersion: 'v1' };
}
