import type { V1Pod } from '@kubernetes/client-node';
import { readFile } from 'node:fs/promises';
import type { DnsConfig } from '../runtime/types.ts';

/** Upstream limits (k8s.io/kubernetes pkg/apis/core/validation, ExpandedDNSConfig). */
export const DNS_LIMITS = Object.freeze({ nameservers: 3, searchPaths: 32, searchChars: 2048, searchPathChars: 253 });

/** The node-side DNS settings the pod's config is built from. */
export interface DnsSettings {
  /** The cluster DNS servers (KubeletConfiguration `clusterDNS`). */
  clusterDNS: string[];
  /** The cluster domain (`clusterDomain`), e.g. `cluster.local`; empty for none. */
  clusterDomain: string;
  /** The host's resolv.conf content (`resolvConf`), or undefined when `resolvConf` is "". */
  hostResolvConf: string | undefined;
}

/** Parses resolv.conf as upstream: nameservers accumulate, the last `search` and `options` lines win. */
export function parseResolvConf(text: string): DnsConfig {
  const servers: string[] = [];
  let searches: string[] = [];
  let options: string[] = [];
  for (const line of text.split('\n')) {
    const t = line.trim();
    if (t.startsWith('#') || t.startsWith(';')) continue;
    const f = t.split(/\s+/).filter(Boolean);
    if (f[0] === 'nameserver' && f[1]) servers.push(f[1]);
    else if (f[0] === 'search') searches = f.slice(1).map((s) => s.replace(/\.$/, ''));
    else if (f[0] === 'options') options = f.slice(1);
  }
  return { servers, searches, options };
}

const unique = (xs: string[]) => [...new Set(xs)];

/** Upstream's effective policy: ClusterFirst on the host network means Default unless ClusterFirstWithHostNet. */
export function dnsType(pod: V1Pod): 'cluster' | 'host' | 'none' {
  const policy = pod.spec?.dnsPolicy ?? 'ClusterFirst';
  switch (policy) {
    case 'None': return 'none';
    case 'ClusterFirstWithHostNet': return 'cluster';
    case 'Default': return 'host';
    case 'ClusterFirst':
    default:
      return pod.spec?.hostNetwork ? 'host' : 'cluster';
  }
}

/** A Warning event about a pod's DNS, with upstream's reason: MissingClusterDNS (no cluster DNS, ClusterFirst fell back to Default) or DNSConfigForming (limits cut the config). */
export interface DnsWarning {
  reason: 'MissingClusterDNS' | 'DNSConfigForming';
  message: string;
}

/**
 * The sandbox's DNS config, as upstream's GetPodDNS builds it: `Default` uses the host's
 * resolv.conf; `ClusterFirst` the cluster DNS servers, the search list
 * `<ns>.svc.<domain> svc.<domain> <domain>` + the host's, and `ndots:5` (falling back to
 * Default without cluster DNS); `None` starts empty. `dnsConfig` is then appended
 * (duplicates dropped, options merged by name with the pod's winning) and the result cut
 * to the limits. `warnings` says what was cut or fell back, as upstream's events do.
 */
export function podDnsConfig(pod: V1Pod, s: DnsSettings): { config: DnsConfig; warnings: DnsWarning[] } {
  const warnings: DnsWarning[] = [];
  const host: DnsConfig = s.hostResolvConf !== undefined ? parseResolvConf(s.hostResolvConf) : { servers: [], searches: [], options: [] };
  let cfg: DnsConfig;
  let type = dnsType(pod);
  if (type === 'cluster' && s.clusterDNS.length === 0) {
    // Upstream's reason and wording, the pod named as format.Pod names it (name_namespace(uid)).
    const m = pod.metadata;
    const who = `${m?.name ?? ''}_${m?.namespace ?? ''}(${m?.uid ?? ''})`;
    warnings.push({ reason: 'MissingClusterDNS', message: `pod: ${JSON.stringify(who)}. kubelet does not have ClusterDNS IP configured and cannot create Pod using "ClusterFirst" policy. Falling back to "Default" policy.` });
    type = 'host';
  }
  if (type === 'none') cfg = { servers: [], searches: [], options: [] };
  else if (type === 'cluster') {
    const ns = pod.metadata?.namespace ?? 'default';
    const d = s.clusterDomain;
    const searches = d ? unique([`${ns}.svc.${d}`, `svc.${d}`, d, ...host.searches]) : host.searches;
    cfg = { servers: [...s.clusterDNS], searches, options: ['ndots:5'] };
  } else {
    cfg = { ...host };
    if (s.hostResolvConf === undefined) {
      // resolvConf "" disables DNS lookups beyond the local machine, as upstream.
      cfg = { servers: ['127.0.0.1'], searches: ['.'], options: [] };
    }
  }
  const extra = pod.spec?.dnsConfig;
  if (extra) {
    cfg = {
      servers: unique([...cfg.servers, ...(extra.nameservers ?? [])]),
      searches: unique([...cfg.searches, ...(extra.searches ?? [])]),
      options: mergeOptions(cfg.options, extra.options ?? []),
    };
  }
  if (cfg.servers.length > DNS_LIMITS.nameservers) {
    cfg.servers = cfg.servers.slice(0, DNS_LIMITS.nameservers);
    warnings.push({ reason: 'DNSConfigForming', message: `Nameserver limits were exceeded, some nameservers have been omitted, the applied nameserver line is: ${cfg.servers.join(' ')}` });
  }
  const searches = fitSearch(cfg.searches);
  if (searches.length !== cfg.searches.length) warnings.push({ reason: 'DNSConfigForming', message: `Search Line limits were exceeded, some search paths have been omitted, the applied search line is: ${searches.join(' ')}` });
  cfg.searches = searches;
  return { config: cfg, warnings };
}

function mergeOptions(existing: string[], extra: Array<{ name?: string; value?: string }>): string[] {
  const m = new Map<string, string>();
  for (const op of existing) {
    const i = op.indexOf(':');
    if (i >= 0) m.set(op.slice(0, i), op.slice(i + 1));
    else m.set(op, '');
  }
  for (const op of extra) if (op.name) m.set(op.name, op.value ?? '');
  return [...m].map(([k, v]) => (v ? `${k}:${v}` : k));
}

function fitSearch(list: string[]): string[] {
  let out = list.slice(0, DNS_LIMITS.searchPaths).filter((s) => s.length <= DNS_LIMITS.searchPathChars);
  while (out.length && out.join(' ').length > DNS_LIMITS.searchChars) out = out.slice(0, -1);
  return out;
}

/**
 * The pod's host name and domain, as upstream's GeneratePodHostNameAndDomain: `hostname` or
 * the pod name cut to 63 characters (trailing `-` and `.` removed), and
 * `<subdomain>.<ns>.svc.<clusterDomain>` when a subdomain is set.
 */
export function podHostnameAndDomain(pod: V1Pod, clusterDomain: string): { hostname: string; domain: string } {
  const raw = pod.spec?.hostname || pod.metadata?.name || '';
  const hostname = raw.length > 63 ? raw.slice(0, 63).replace(/[-.]+$/, '') : raw;
  const sub = pod.spec?.subdomain;
  const domain = sub && clusterDomain ? `${sub}.${pod.metadata?.namespace ?? 'default'}.svc.${clusterDomain}` : '';
  return { hostname, domain };
}

/** The node's resolv.conf for pod DNS: "" means none (upstream's resolvConf ""); a file that cannot be read fails the sandbox, as upstream. */
export async function readHostResolvConf(file: string): Promise<string | undefined> {
  if (file === '') return undefined;
  try {
    return await readFile(file, 'utf8');
  } catch (err) {
    throw new Error(`could not read the node's resolv.conf ${file} (resolvConf) for the pod's DNS: ${(err as Error).message}`, { cause: err });
  }
}

/**
 * The sandbox's host name and DNS config, as upstream's GeneratePodHostNameAndDomain and
 * GetPodDNS: a host-network pod keeps the node's host name (""); `setHostnameAsFQDN` makes the
 * host name the FQDN, refused over 64 characters as upstream refuses it. `warnings` are
 * upstream's Warning events about the pod's DNS (MissingClusterDNS, DNSConfigForming).
 */
export function sandboxHostnameAndDns(pod: V1Pod, s: DnsSettings): { hostname: string; dnsConfig: DnsConfig; warnings: DnsWarning[] } {
  const { config: dnsConfig, warnings } = podDnsConfig(pod, s);
  let hostname = '';
  if (!pod.spec?.hostNetwork) {
    const hd = podHostnameAndDomain(pod, s.clusterDomain);
    hostname = hd.hostname;
    if (pod.spec?.setHostnameAsFQDN && hd.domain) {
      const fqdn = `${hd.hostname}.${hd.domain}`;
      if (fqdn.length > 64) throw new Error(`failed to construct FQDN from pod hostname and cluster domain, FQDN ${fqdn} is too long (64 characters is the max, ${fqdn.length} characters requested)`);
      hostname = fqdn;
    }
  }
  return { hostname, dnsConfig, warnings };
}
