import type { RouteHandler } from '../util/http-route.ts';
import { httpError } from '../util/http-route.ts';
import type { EventRecorder, KubeletEvent } from './event-recorder.ts';

/**
 * `GET /debug/events` (kubelet-ts): the events this kubelet recorded, oldest first, as JSON
 * (`{ items: [...] }`); `?since=SEQ` gives only those after a sequence number; `?watch=true`
 * streams them as JSON lines (the recent ones first) until the client goes away.
 */
export function eventsRouteHandler(events: EventRecorder): RouteHandler {
  return (req, url, res) => {
    const sinceRaw = url.searchParams.get('since');
    if (sinceRaw !== null && !/^\d+$/.test(sinceRaw)) throw httpError(400, `invalid since "${sinceRaw}": a non-negative integer (an event's seq)`);
    const since = Number(sinceRaw ?? 0);
    const watch = url.searchParams.get('watch');
    if (watch !== null && watch !== 'true' && watch !== 'false' && watch !== '1' && watch !== '0') throw httpError(400, `invalid watch "${watch}": true or false`);
    if (watch !== 'true' && watch !== '1') return { kind: 'EventList', items: events.list(since) };

    res.writeHead(200, { 'content-type': 'application/x-ndjson', 'cache-control': 'no-cache' });
    // A watch may stay quiet for long: exempt it from the server's idle timeout.
    req.socket.setTimeout(0);
    const send = (e: KubeletEvent) => {
      if (!res.writableEnded) res.write(`${JSON.stringify(e)}\n`);
    };
    for (const e of events.list(since)) send(e);
    const off = events.subscribe(send);
    return new Promise<void>((resolve) => {
      res.on('close', () => {
        off();
        resolve();
      });
    });
  };
}
