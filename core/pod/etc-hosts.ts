import type { V1Container, V1HostAlias, V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { Mount } from '../runtime/types.ts';
import { podHostnameAndDomain } from './pod-dns.ts';

/**
 * The pod's managed /etc/hosts, byte for byte as upstream's kubelet writes it
 * (pkg/kubelet/kubelet_pods.go managedHostsFileContent): localhost entries, the pod's IPs
 * with its host name (and FQDN when it has a domain), then the `hostAliases`.
 */
export function managedHostsFile(podIPs: string[], hostname: string, domain: string, aliases: V1HostAlias[] | undefined): string {
  let s = '# Kubernetes-managed hosts file.\n';
  s += '127.0.0.1\tlocalhost\n';
  s += '::1\tlocalhost ip6-localhost ip6-loopback\n';
  s += 'fe00::0\tip6-localnet\n';
  s += 'fe00::0\tip6-mcastprefix\n';
  s += 'fe00::1\tip6-allnodes\n';
  s += 'fe00::2\tip6-allrouters\n';
  for (const ip of podIPs) s += domain ? `${ip}\t${hostname}.${domain}\t${hostname}\n` : `${ip}\t${hostname}\n`;
  return s + hostAliasEntries(aliases);
}

/** A hostNetwork pod's /etc/hosts: the node's own file, then the `hostAliases`. */
export function nodeHostsFile(nodeHosts: string, aliases: V1HostAlias[] | undefined): string {
  return `# Kubernetes-managed hosts file (host network).\n${nodeHosts}${hostAliasEntries(aliases)}`;
}

function hostAliasEntries(aliases: V1HostAlias[] | undefined): string {
  if (!aliases?.length) return '';
  let s = '\n# Entries added by HostAliases.\n';
  for (const a of aliases) s += `${a.ip}\t${(a.hostnames ?? []).join('\t')}\n`;
  return s;
}

/** The node's hosts file: the base of a host-network pod's /etc/hosts (upstream reads this path). */
export const NODE_HOSTS_FILE = '/etc/hosts';
const ETC_HOSTS = '/etc/hosts';

/** What the managed hosts file of a pod is written from. */
export interface EtcHostsInputs {
  /** `<rootDir>/pods/<uid>`: the file is `etc-hosts` in it, as upstream's. */
  podDir: string;
  /** The pod's IPs (the node's for a host-network pod); none: no managed file, as upstream. */
  podIPs: string[];
  /** The cluster domain, for the FQDN of a pod with a subdomain. */
  clusterDomain: string;
  /** The node's hosts file (tests give another). */
  nodeHostsFile?: string;
}

/**
 * The kubelet-managed /etc/hosts of one container, as upstream's makeHostsMount: the file is
 * written (again, at every container start: the pod's IP may have changed with a new sandbox)
 * to `<pod dir>/etc-hosts` and bind-mounted read-write. None while the pod has no IP, and none
 * for a container that mounts a volume of its own at /etc/hosts.
 */
export async function etcHostsMount(pod: V1Pod, container: V1Container, inputs: EtcHostsInputs): Promise<Mount | undefined> {
  if (!inputs.podIPs.length) return undefined;
  if ((container.volumeMounts ?? []).some((m) => path.posix.normalize(m.mountPath) === ETC_HOSTS || path.posix.normalize(m.mountPath) === `${ETC_HOSTS}/`)) return undefined;
  let content: string;
  if (pod.spec?.hostNetwork) {
    content = nodeHostsFile(await fs.readFile(inputs.nodeHostsFile ?? NODE_HOSTS_FILE, 'utf8'), pod.spec.hostAliases);
  } else {
    const { hostname, domain } = podHostnameAndDomain(pod, inputs.clusterDomain);
    content = managedHostsFile(inputs.podIPs, hostname, domain, pod.spec?.hostAliases);
  }
  const file = path.join(inputs.podDir, 'etc-hosts');
  await fs.mkdir(inputs.podDir, { recursive: true });
  await fs.writeFile(file, content, { mode: 0o644 });
  return { containerPath: ETC_HOSTS, hostPath: file, readonly: false };
}
