import type { RouteHandler } from '../server.ts';
import { httpError } from '../server.ts';
import type { PodTimelines } from './pod-timeline.ts';

/** `GET /debug/pods/{namespace}/{name}/timeline`: the pod's start timeline as JSON. */
export function timelineRouteHandler(timelines: PodTimelines): RouteHandler {
  return (_req, url) => {
    const m = /^\/debug\/pods\/([^/]+)\/([^/]+)\/timeline$/.exec(url.pathname);
    if (!m) throw httpError(404, `not found: ${url.pathname} (use /debug/pods/{namespace}/{name}/timeline)`);
    const [ns, name] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)];
    const t = timelines.find(ns, name);
    if (!t) throw httpError(404, `pod "${name}" in namespace "${ns}" has no start timeline on this kubelet`);
    return t;
  };
}
