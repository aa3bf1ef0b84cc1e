import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ProbeRunResult } from '../probe-worker.ts';

/** What a handler probes: the container, the pod's current IP, and the probe's timeout. */
export interface ProbeTarget {
  pod: V1Pod;
  container: V1Container;
  containerId: string;
  /** The pod's IP (the node IP for hostNetwork pods); '' while the pod has none. */
  podIP: string;
  timeoutSeconds: number;
}

export type { ProbeRunResult };

/** upstream maxRespBodyLength / the exec prober's maxReadLength: outputs are cut at 10 KiB. */
export const MAX_OUTPUT_BYTES = 10 * 1024;

/** The User-Agent of HTTP and gRPC probes (upstream `kube-probe/<major>.<minor>`). */
export const PROBE_USER_AGENT = 'kube-probe/1.0';

/** `host:port`, with brackets around an IPv6 host (Go's net.JoinHostPort). */
export function joinHostPort(host: string, port: number): string {
  return host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`;
}

export function truncate(s: string, max = MAX_OUTPUT_BYTES): string {
  return s.length > max ? s.slice(0, max) : s;
}
