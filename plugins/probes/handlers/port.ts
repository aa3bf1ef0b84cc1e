import type { V1Container } from '@kubernetes/client-node';
import { resolvePort } from 'kubelet-ts';

/**
 * A probe's port by number or by the name of one of the container's ports (upstream
 * probe.ResolveContainerPort); throws with a message naming the port and the container when the
 * container does not declare that name, or when the number is out of range.
 */
export function resolveProbePort(port: number | string, container: V1Container): number {
  const n = resolvePort(port, container);
  if (!(Number.isInteger(n) && n > 0 && n < 65536)) throw new Error(`invalid port number: ${n}`);
  return n;
}
