import type { V1Pod } from '@kubernetes/client-node';
import { containersOf, parseQuantity } from 'kubelet-ts';

/** Pod annotations that feed `runtimeConfig`. */
export const ANNOTATIONS = Object.freeze({
  /** Upstream: the pod's ingress rate limit (bits per second, a quantity such as `10M`). */
  ingressBandwidth: 'kubernetes.io/ingress-bandwidth',
  /** Upstream: the pod's egress rate limit. */
  egressBandwidth: 'kubernetes.io/egress-bandwidth',
  /** kubelet-ts: IPs the pod asks its IPAM for (the `ips` capability), comma-separated. */
  ips: 'cni-exec.kubelet-ts.io/ips',
});

/** The CNI `portMappings` capability entry. */
export interface CniPortMapping { hostPort: number; containerPort: number; protocol: string; hostIP?: string }

/** The CNI `bandwidth` capability value (bits per second, as the bandwidth plugin reads it). */
export interface CniBandwidth { ingressRate?: number; ingressBurst?: number; egressRate?: number; egressBurst?: number }

/** The burst containerd and the upstream kubelet give with a rate: no burst limit of its own. */
const UNLIMITED_BURST = 2 ** 32 - 1;
const MIN_RATE = 1000;
const MAX_RATE = 1e15;

/** Port mappings of every container port with a hostPort, as containerd passes them to CNI (protocol lower case). */
export function portMappings(pod: V1Pod): CniPortMapping[] {
  const out: CniPortMapping[] = [];
  for (const c of containersOf(pod)) {
    for (const p of c.ports ?? []) {
      if (!p.hostPort) continue;
      out.push({ hostPort: p.hostPort, containerPort: p.containerPort, protocol: (p.protocol ?? 'TCP').toLowerCase(), ...(p.hostIP ? { hostIP: p.hostIP } : {}) });
    }
  }
  return out;
}

/** The bandwidth capability from the pod's annotations; throws on an unreadable or unreasonable value. */
export function bandwidth(pod: V1Pod): CniBandwidth | undefined {
  const a = pod.metadata?.annotations ?? {};
  const rate = (key: string): number | undefined => {
    const v = a[key];
    if (v === undefined) return undefined;
    let n: number;
    try {
      n = parseQuantity(v);
    } catch {
      throw new Error(`annotation ${key}: "${v}" is not a quantity (for example 10M)`);
    }
    if (n < MIN_RATE) throw new Error(`annotation ${key}: ${v} is unreasonably small (< 1kbit)`);
    if (n > MAX_RATE) throw new Error(`annotation ${key}: ${v} is unreasonably large (> 1Pbit)`);
    return Math.round(n);
  };
  const ingress = rate(ANNOTATIONS.ingressBandwidth);
  const egress = rate(ANNOTATIONS.egressBandwidth);
  if (ingress === undefined && egress === undefined) return undefined;
  return {
    ...(ingress !== undefined ? { ingressRate: ingress, ingressBurst: UNLIMITED_BURST } : {}),
    ...(egress !== undefined ? { egressRate: egress, egressBurst: UNLIMITED_BURST } : {}),
  };
}

/** Values for the capabilities a network's plugins may declare, from the pod (hostNetwork pods never get here). */
export function capabilityArgs(pod: V1Pod | undefined): Record<string, unknown> {
  if (!pod) return {};
  const out: Record<string, unknown> = {};
  const ports = portMappings(pod);
  if (ports.length) out.portMappings = ports;
  const bw = bandwidth(pod);
  if (bw) out.bandwidth = bw;
  const ips = pod.metadata?.annotations?.[ANNOTATIONS.ips];
  if (ips) out.ips = ips.split(',').map((s) => s.trim()).filter(Boolean);
  return out;
}
