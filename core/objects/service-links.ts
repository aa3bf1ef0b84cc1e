/**
 * Service links: the `<SVC>_SERVICE_HOST`, `_SERVICE_PORT` and Docker-link variables upstream's
 * kubelet puts in every container's environment (pkg/kubelet/envvars, getServiceEnvVarMap): for
 * the services of the pod's namespace when `enableServiceLinks` (the default), and always for
 * the `kubernetes` service of `default`, so in-cluster clients find the API server.
 */

/** What a service contributes to links: the kubelet keeps only this of each Service. */
export interface ServiceLink {
  namespace: string;
  name: string;
  /** "" or "None" (headless): no variables. */
  clusterIP: string;
  ports: Array<{ name?: string; port: number; protocol?: string }>;
}

/** Services always linked, from `default`, whatever enableServiceLinks says. */
const MASTER_SERVICES = new Set(['kubernetes']);

/** Upstream's makeEnvVariableName: upper case, `-` as `_`. */
const envName = (s: string) => s.replace(/-/g, '_').toUpperCase();

/** `host:port`, with brackets for IPv6 as Go's net.JoinHostPort. */
const joinHostPort = (host: string, port: number) => (host.includes(':') ? `[${host}]:${port}` : `${host}:${port}`);

/** The variables of one service, in upstream's order (FromServices, makeLinkVariables). */
function serviceVars(s: ServiceLink): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  const prefix = envName(s.name);
  const first = s.ports[0];
  if (!first) return out;
  out.push([`${prefix}_SERVICE_HOST`, s.clusterIP]);
  out.push([`${prefix}_SERVICE_PORT`, String(first.port)]);
  for (const p of s.ports) if (p.name) out.push([`${prefix}_SERVICE_PORT_${envName(p.name)}`, String(p.port)]);
  s.ports.forEach((p, i) => {
    const protocol = p.protocol || 'TCP';
    const url = `${protocol.toLowerCase()}://${joinHostPort(s.clusterIP, p.port)}`;
    if (i === 0) out.push([`${prefix}_PORT`, url]);
    const portPrefix = `${prefix}_PORT_${p.port}_${protocol.toUpperCase()}`;
    out.push([portPrefix, url], [`${portPrefix}_PROTO`, protocol.toLowerCase()], [`${portPrefix}_PORT`, String(p.port)], [`${portPrefix}_ADDR`, s.clusterIP]);
  });
  return out;
}

/**
 * The service link variables of a pod in `namespace`: the master services of `default`, and
 * with `enableServiceLinks` every service of the namespace with a cluster IP (the namespace's
 * own service of a master service's name wins, as upstream's map ends up, whatever the order).
 * Sorted by service name.
 */
export function serviceLinkEnv(services: Iterable<ServiceLink>, namespace: string, enableServiceLinks: boolean): Map<string, string> {
  const own = new Map<string, ServiceLink>();
  const master = new Map<string, ServiceLink>();
  for (const s of services) {
    if (!s.clusterIP || s.clusterIP === 'None') continue;
    if (s.namespace === namespace && enableServiceLinks) own.set(s.name, s);
    else if (s.namespace === 'default' && MASTER_SERVICES.has(s.name)) master.set(s.name, s);
  }
  const chosen = new Map([...master, ...own]);
  const env = new Map<string, string>();
  for (const name of [...chosen.keys()].sort()) for (const [k, v] of serviceVars(chosen.get(name)!)) env.set(k, v);
  return env;
}

/** What the kubelet knows of the cluster's services (API-server mode). */
export interface ServiceLinkSource {
  /** True once the services were listed at least once. */
  readonly synced: boolean;
  list(): Iterable<ServiceLink>;
}
