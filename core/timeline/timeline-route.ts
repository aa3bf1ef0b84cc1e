import type { RouteHandler } from '../util/http-route.ts';
import { httpError } from '../util/http-route.ts';
import type { PodTimelines } from './pod-timeline.ts';

/**
 * `GET /debug/pods/{namespace}/{name}/timeline[?uid=UID]`: the pod's start timeline as JSON.
 * `uid` picks one of two pods sharing the name (an edited static pod and its predecessor).
 */
export function timelineRouteHandler(timelines: PodTimelines): RouteHandler {
  return (_req, url) => {
    const m = /^\/debug\/pods\/([^/]+)\/([^/]+)\/timeline$/.exec(url.pathname);
    if (!m) throw httpError(404, `not found: ${url.pathname} (use /debug/pods/{namespace}/{name}/timeline)`);
    const [ns, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const uid = url.searchParams.get('uid');
    const byUid = uid ? timelines.get(uid) : undefined;
    const t = uid ? (byUid?.namespace === ns && byUid.name === name ? byUid : undefined) : timelines.find(ns, name);
    if (!t) throw httpError(404, `pod "${name}" in namespace "${ns}" has no start timeline on this kubelet`);
    return t;
  };
}
