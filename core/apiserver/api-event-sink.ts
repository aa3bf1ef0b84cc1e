/**
 * Events to the API server: a new event is created (`POST .../events`), a repeated one
 * patched (count, lastTimestamp, message), as client-go's recorder writes them. Writing is
 * best effort and never holds the kubelet up: a bounded queue (the oldest dropped first, and
 * counted), one write at a time through the API client's rate limiter, retried with back-off
 * while the server is away; an event the server refuses (403, 422) is dropped and logged once
 * per reason.
 */
import type { Logger } from '../logger.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from './api-client.ts';
import { PATCH } from './patch-types.ts';
import { isAlreadyExistsError, isNotFoundError, isUnavailableError } from './api-errors.ts';
import type { EventSink, KubeletEvent } from '../events/event-recorder.ts';

const MAX_QUEUE = 1000;
const RETRY_INITIAL_MS = 1000;
const RETRY_MAX_MS = 30_000;

interface Item { event: KubeletEvent; create: boolean }

export class ApiEventSink implements EventSink {
  private readonly queue: Item[] = [];
  private busy = false;
  private retryMs = 0;
  private timer: NodeJS.Timeout | undefined;
  private stopped = false;
  private readonly refused = new Set<string>();
  /** Events dropped because the queue was full (the server was away for long). */
  dropped = 0;
  /** Events written (created or patched). */
  written = 0;

  private readonly offRecovered: () => void;

  constructor(private readonly deps: { client: ApiClient; logger: Logger }) {
    // Back-off ends when the server answers again (the status posts and the Lease see it first).
    this.offRecovered = deps.client.connectivity.onRecovered(() => {
      if (!this.timer) return;
      clearTimeout(this.timer);
      this.timer = undefined;
      this.retryMs = 0;
      this.pump();
    });
  }

  write(event: KubeletEvent, isNew: boolean): void {
    if (this.stopped) return;
    // One entry per event: the recorder updates the object in place, so the queued entry
    // sends its latest count and message; a create still queued stays a create.
    const queued = this.queue.find((i) => i.event === event);
    if (queued) queued.create ||= isNew;
    else {
      this.queue.push({ event, create: isNew || !event.sent });
      if (this.queue.length > MAX_QUEUE) {
        this.queue.shift();
        this.dropped++;
      }
    }
    this.pump();
  }

  stop(): void {
    this.stopped = true;
    this.offRecovered();
    clearTimeout(this.timer);
  }

  private pump(): void {
    if (this.busy || this.stopped || this.timer || this.queue.length === 0) return;
    this.busy = true;
    const item = this.queue[0]!;
    void this.send(item).then(
      () => {
        this.queue.shift();
        this.retryMs = 0;
        this.busy = false;
        this.pump();
      },
      (err) => {
        this.busy = false;
        if (isUnavailableError(err)) {
          // The server is away (the client logs the outage once): try the same event again later.
          this.retryMs = Math.min(RETRY_MAX_MS, this.retryMs ? this.retryMs * 2 : RETRY_INITIAL_MS);
          this.timer = setTimeout(() => {
            this.timer = undefined;
            this.pump();
          }, this.retryMs);
          this.timer.unref();
          return;
        }
        this.queue.shift();
        const why = errorMessage(err);
        const key = `${item.event.reason}\0${why.slice(0, 200)}`;
        if (!this.refused.has(key)) {
          this.refused.add(key);
          this.deps.logger.warn({ reason: item.event.reason, namespace: item.event.namespace, err: why }, 'the API server refused an event; dropping it');
        }
        this.pump();
      },
    );
  }

  private async send(item: Item): Promise<void> {
    const e = item.event;
    const base = `/api/v1/namespaces/${encodeURIComponent(e.namespace)}/events`;
    if (!item.create) {
      try {
        await this.deps.client.request('PATCH', `${base}/${encodeURIComponent(e.name)}`, { body: { count: e.count, lastTimestamp: e.lastTimestamp, message: e.message }, contentType: PATCH.merge });
        this.written++;
        return;
      } catch (err) {
        // Expired or never written (created while the queue dropped it): create it whole.
        if (!isNotFoundError(err)) throw err;
      }
    }
    await this.deps.client.request('POST', base, {
      body: {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: { name: e.name, namespace: e.namespace },
        involvedObject: e.involvedObject,
        reason: e.reason,
        message: e.message,
        type: e.type,
        count: e.count,
        firstTimestamp: e.firstTimestamp,
        lastTimestamp: e.lastTimestamp,
        source: e.source,
        reportingComponent: e.source.component,
        reportingInstance: e.source.host,
      },
    }).catch(async (err) => {
      // Written before (an answer lost): make it the latest version instead.
      if (!isAlreadyExistsError(err)) throw err;
      await this.deps.client.request('PATCH', `${base}/${encodeURIComponent(e.name)}`, { body: { count: e.count, lastTimestamp: e.lastTimestamp, message: e.message }, contentType: PATCH.merge });
    });
    e.sent = true;
    this.written++;
  }
}
