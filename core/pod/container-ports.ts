import type { V1Container } from '@kubernetes/client-node';

/**
 * Resolves a port given by number, by a number in a string, or by the name of one of the
 * container's ports (an IntOrString of lifecycle handlers and probes), with upstream's message
 * when the name is not one of them.
 */
export function resolvePort(port: number | string | undefined, container: V1Container): number {
  if (typeof port === 'number') return port;
  if (port === undefined) throw new Error('no port given');
  if (/^\d+$/.test(port)) return Number(port);
  const named = container.ports?.find((p) => p.name === port);
  if (!named) throw new Error(`couldn't find port: ${port} in container ${container.name}`);
  return named.containerPort;
}
