import path from 'node:path';
import type { V1ISCSIPersistentVolumeSource, V1ISCSIVolumeSource } from '@kubernetes/client-node';

/** One iSCSI LUN as the plugin logs in to it and mounts it. */
export interface IscsiDisk {
  /** `host:port` of each portal, the target portal first (3260 added where no port is given, as upstream). */
  portals: string[];
  iqn: string;
  lun: number;
  /** The open-iscsi interface (`default`: the TCP transport). */
  iface: string;
  fsType: string;
  readOnly: boolean;
  chapDiscovery: boolean;
  chapSession: boolean;
  /** The Secret with the CHAP keys (`node.session.auth.username`, ...), when CHAP is on. */
  secret?: { namespace: string; name: string };
}

/** The target name forms iSCSI allows (RFC 3720 3.2.6.3), as the API server checks them. */
const IQN = /^iqn\.\d{4}-\d{2}\.[a-z0-9][a-z0-9.-]*(:[^\s,/]+)?$/i;
const EUI = /^eui\.[0-9a-f]{16}$/i;
const NAA = /^naa\.[0-9a-f]{16}([0-9a-f]{16})?$/i;

/**
 * The disk of an `iscsi` volume source (a pod's, or a PersistentVolume's), checked as hostile
 * input: every value ends up an argument of iscsiadm or a path under the kubelet's root dir.
 * `field` names the source in errors; `podNamespace` is where an inline source's CHAP Secret is.
 */
export function iscsiDisk(src: V1ISCSIVolumeSource | V1ISCSIPersistentVolumeSource | undefined, readOnly: boolean, podNamespace: string, field: string): IscsiDisk {
  if (!src) throw new Error(`${field} is missing`);
  const portals = [src.targetPortal, ...(src.portals ?? [])].map((p, i) => portal(p, i === 0 ? `${field}.targetPortal` : `${field}.portals[${i - 1}]`));
  const iqn = src.iqn;
  if (typeof iqn !== 'string' || !(IQN.test(iqn) || EUI.test(iqn) || NAA.test(iqn)) || iqn.length > 223) throw new Error(`${field}.iqn ${JSON.stringify(iqn)} is not an iSCSI name (iqn.YYYY-MM.reversed.domain[:id], eui.<16 hex> or naa.<16 or 32 hex>)`);
  const lun = src.lun;
  if (!Number.isInteger(lun) || lun < 0 || lun > 255) throw new Error(`${field}.lun ${JSON.stringify(lun)} must be an integer from 0 to 255`);
  const iface = src.iscsiInterface || 'default';
  if (!/^[A-Za-z0-9][A-Za-z0-9._:-]{0,63}$/.test(iface)) throw new Error(`${field}.iscsiInterface ${JSON.stringify(iface)} is not an interface name`);
  const fsType = src.fsType || 'ext4';
  if (!/^[a-z0-9]{1,16}$/.test(fsType)) throw new Error(`${field}.fsType ${JSON.stringify(fsType)} is not a file system type name (such as ext4 or xfs)`);
  if (src.initiatorName) throw new Error(`${field}.initiatorName is not supported by kubelet-ts's iscsi plugin (the node's initiator name is used only): remove it, or set the node's in /etc/iscsi/initiatorname.iscsi`);
  const chapDiscovery = src.chapAuthDiscovery === true;
  const chapSession = src.chapAuthSession === true;
  let secret: IscsiDisk['secret'];
  if (chapDiscovery || chapSession) {
    const ref = src.secretRef as { name?: string; namespace?: string } | undefined;
    if (!ref?.name) throw new Error(`${field}.secretRef is required with chapAuthDiscovery or chapAuthSession`);
    secret = { namespace: ref.namespace || podNamespace, name: ref.name };
  }
  return { portals, iqn, lun: lun!, iface, fsType, readOnly: readOnly || src.readOnly === true, chapDiscovery, chapSession, ...(secret ? { secret } : {}) };
}

function portal(p: string | undefined, field: string): string {
  if (typeof p !== 'string' || !p || p.startsWith('-') || /[\s\0/,]/.test(p) || p.length > 261) throw new Error(`${field} ${JSON.stringify(p)} is not host[:port]`);
  return p.includes(':') ? p : `${p}:3260`;
}

/** The LUN's device link as udev names it for the TCP transport (upstream's devicePath). */
export function byPathDevice(disk: IscsiDisk, portal: string): string {
  return `/dev/disk/by-path/ip-${portal}-iscsi-${disk.iqn}-lun-${disk.lun}`;
}

/** The per-node mount of the LUN, shared by the pods that use it: upstream's global PD dir. */
export function globalMountDir(rootDir: string, disk: IscsiDisk): string {
  return path.join(rootDir, 'plugins', 'kubernetes.io', 'iscsi', `iface-${disk.iface}`, `${disk.portals[0]}-${disk.iqn}-lun-${disk.lun}`);
}

/** The CHAP keys upstream copies from the Secret into iscsiadm's records. */
export const CHAP_DISCOVERY_KEYS = ['discovery.sendtargets.auth.username', 'discovery.sendtargets.auth.password', 'discovery.sendtargets.auth.username_in', 'discovery.sendtargets.auth.password_in'];
export const CHAP_SESSION_KEYS = ['node.session.auth.username', 'node.session.auth.password', 'node.session.auth.username_in', 'node.session.auth.password_in'];
