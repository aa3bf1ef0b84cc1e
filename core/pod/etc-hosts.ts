import type { V1HostAlias } from '@kubernetes/client-node';

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
