import type { ProxiedRequest } from './counting-proxy.ts';

/**
 * The counting proxy's records grouped the way the API server's own metrics group requests:
 * by verb and resource (with API group and subresource), e.g. `patch pods/status`,
 * `update leases.coordination.k8s.io`, `watch pods`, `get /version` (non-resource URLs by path).
 * A watch counts once, when it was asked for; the bytes of its stream count to it.
 */

export interface RequestRow {
  /** `verb resource[.group][/subresource]`. */
  key: string;
  count: number;
  perMinute: number;
  /** Responses by status code. */
  statuses: Record<string, number>;
  bytesIn: number;
  bytesOut: number;
}

export interface RequestWindow {
  /** Window length in seconds. */
  seconds: number;
  total: number;
  totalPerMinute: number;
  rows: RequestRow[];
  /** Watches established before the window and still open at its start, by key (they made no request in it). */
  openWatchesAtStart: Record<string, number>;
}

export function requestKey(r: Pick<ProxiedRequest, 'verb' | 'resource' | 'group' | 'subresource'>): string {
  if (r.resource.startsWith('/')) return `${r.verb} ${r.resource}`;
  return `${r.verb} ${r.resource}${r.group ? `.${r.group}` : ''}${r.subresource ? `/${r.subresource}` : ''}`;
}

/** Requests that arrived in [from, to) (performance.now() times), grouped. */
export function countWindow(records: readonly ProxiedRequest[], from: number, to: number): RequestWindow {
  const minutes = (to - from) / 60_000;
  const rows = new Map<string, RequestRow>();
  const openWatchesAtStart: Record<string, number> = {};
  let total = 0;
  for (const r of records) {
    if (r.watch && r.at < from && (r.endAt === undefined || r.endAt > from)) {
      const k = requestKey(r);
      openWatchesAtStart[k] = (openWatchesAtStart[k] ?? 0) + 1;
    }
    if (r.at < from || r.at >= to) continue;
    total++;
    const key = requestKey(r);
    let row = rows.get(key);
    if (!row) rows.set(key, (row = { key, count: 0, perMinute: 0, statuses: {}, bytesIn: 0, bytesOut: 0 }));
    row.count++;
    const status = String(r.status ?? 'pending');
    row.statuses[status] = (row.statuses[status] ?? 0) + 1;
    row.bytesIn += r.bytesIn;
    row.bytesOut += r.bytesOut;
  }
  for (const row of rows.values()) row.perMinute = row.count / minutes;
  return {
    seconds: (to - from) / 1000,
    total,
    totalPerMinute: total / minutes,
    rows: [...rows.values()].sort((a, b) => b.count - a.count || a.key.localeCompare(b.key)),
    openWatchesAtStart,
  };
}
