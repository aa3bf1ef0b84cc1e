import { isIPv6 } from 'node:net';
import type { V1NFSVolumeSource } from '@kubernetes/client-node';

/** What `mount -t nfs` is given for one volume. */
export interface NfsMountSpec {
  /** `server:/path`, an IPv6 server in brackets (`[fd00::1]:/export`), as upstream writes it. */
  source: string;
  /** `ro` when the volume is read-only, then the PersistentVolume's `mountOptions`. */
  options: string[];
  readOnly: boolean;
}

/**
 * The mount of an `nfs` volume source, checked as hostile input (a static pod's manifest is
 * not validated by an API server): a server name that could read as a mount option, a
 * relative or multi-line path, are refused with the field named.
 *
 * `readOnly`: the pod's (its `persistentVolumeClaim.readOnly`, or the inline source's
 * `readOnly`). A PersistentVolume's own `nfs.readOnly` makes it read-only too, where upstream
 * reads only the claim's: kubelet-ts never mounts writable what its owner marked read-only.
 */
export function nfsMountSpec(src: V1NFSVolumeSource | undefined, readOnly: boolean, mountOptions: readonly string[] = [], field = 'nfs'): NfsMountSpec {
  const server = src?.server;
  const exportPath = src?.path;
  if (typeof server !== 'string' || server.length === 0) throw new Error(`${field}.server is required`);
  if (server.startsWith('-') || /[\s\0/]/.test(server) || server.length > 253) throw new Error(`${field}.server ${JSON.stringify(server)} is not a host name or address`);
  if (typeof exportPath !== 'string' || !exportPath.startsWith('/')) throw new Error(`${field}.path ${JSON.stringify(exportPath)} must be an absolute path on the server`);
  if (/[\0\n]/.test(exportPath)) throw new Error(`${field}.path holds a NUL or newline`);
  const ro = readOnly || src?.readOnly === true;
  const host = isIPv6(server) ? `[${server}]` : server;
  return { source: `${host}:${exportPath}`, options: [...(ro ? ['ro'] : []), ...mountOptions], readOnly: ro };
}
