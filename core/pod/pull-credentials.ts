/**
 * Registry credentials for an image from the pod's `imagePullSecrets` (which ServiceAccount
 * admission fills from the pod's service account), as upstream's credential keyring finds
 * them: each secret's docker config (`kubernetes.io/dockerconfigjson`: `.dockerconfigjson` with
 * `auths`; `kubernetes.io/dockercfg`: `.dockercfg`) maps registry keys to credentials, and a
 * key matches an image when its host matches (`*` globs one DNS label), its port is the same
 * and its path is a prefix of the image's repository. Every matching credential is returned,
 * the most specific first; the puller tries them in order.
 */
import type { V1Pod, V1Secret } from '@kubernetes/client-node';
import type { ObjectSource } from '../objects/object-source.ts';
import type { PullAuth } from '../runtime/types.ts';

/** A credential for one registry, and the secret it came from (for messages). */
export interface RegistryCredential extends PullAuth { from: string }

/** The registry host (with port) and repository path of an image reference, as docker resolves them. */
export function imageRegistry(image: string): { host: string; path: string } {
  const ref = image.split('@')[0]!;
  const slash = ref.indexOf('/');
  const first = slash < 0 ? '' : ref.slice(0, slash);
  // The first component is a registry when it looks like a host: a dot, a port, or localhost.
  const isHost = first !== '' && (first.includes('.') || first.includes(':') || first === 'localhost');
  const host = isHost ? first : 'docker.io';
  let repo = isHost ? ref.slice(slash + 1) : ref;
  const colon = repo.lastIndexOf(':');
  if (colon > repo.lastIndexOf('/')) repo = repo.slice(0, colon);
  if (!isHost && !repo.includes('/')) repo = `library/${repo}`;
  return { host: normalizeHost(host), path: `/${repo}` };
}

/** docker.io and its aliases are one registry. */
function normalizeHost(host: string): string {
  const h = host.toLowerCase();
  return h === 'index.docker.io' || h === 'registry-1.docker.io' ? 'docker.io' : h;
}

/** A docker config key (`https://host:port/path`, `host`, `*.host`) as host, port and path. */
function parseKey(key: string): { labels: string[]; port: string; path: string } | undefined {
  let k = key.trim().replace(/^[a-z]+:\/\//i, '');
  if (!k) return undefined;
  const slash = k.indexOf('/');
  let path = slash < 0 ? '' : k.slice(slash);
  k = slash < 0 ? k : k.slice(0, slash);
  // The old Docker Hub key names the v1 API, not a repository path.
  if (path === '/v1/' || path === '/v1') path = '';
  const colon = k.lastIndexOf(':');
  const port = colon >= 0 ? k.slice(colon + 1) : '';
  const host = normalizeHost(colon >= 0 ? k.slice(0, colon) : k);
  return { labels: host.split('.'), port, path: path.replace(/\/+$/, '') };
}

function keyMatches(key: string, image: { host: string; path: string }): number {
  const k = parseKey(key);
  if (!k) return -1;
  const colon = image.host.lastIndexOf(':');
  const ihost = colon >= 0 && !image.host.startsWith('[') ? image.host.slice(0, colon) : image.host;
  const iport = colon >= 0 && !image.host.startsWith('[') ? image.host.slice(colon + 1) : '';
  const labels = ihost.split('.');
  if (labels.length !== k.labels.length) return -1;
  for (let i = 0; i < labels.length; i++) {
    const pattern = k.labels[i]!;
    if (pattern !== '*' && pattern !== labels[i]) return -1;
  }
  if (k.port !== iport) return -1;
  if (k.path && !(image.path === k.path || image.path.startsWith(`${k.path}/`))) return -1;
  // More specific keys first: longer paths, then fewer wildcards (a match ranks 0 or more).
  return k.path.length * 100 + (k.labels.length - k.labels.filter((l) => l === '*').length);
}

/** The docker config of a pull secret, or an error naming the secret and what is wrong. */
function dockerConfigOf(secret: V1Secret, name: string): Record<string, Record<string, unknown>> {
  const data = secret.data ?? {};
  const raw = data['.dockerconfigjson'] ?? data['.dockercfg'];
  const fromString = secret.stringData?.['.dockerconfigjson'] ?? secret.stringData?.['.dockercfg'];
  if (raw === undefined && fromString === undefined) throw new Error(`image pull secret "${name}" has no .dockerconfigjson or .dockercfg key`);
  let parsed: unknown;
  try {
    parsed = JSON.parse(fromString ?? Buffer.from(raw!, 'base64').toString('utf8'));
  } catch (err) {
    throw new Error(`image pull secret "${name}" holds a docker config that is not JSON: ${(err as Error).message}`);
  }
  const isObj = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
  if (!isObj(parsed)) throw new Error(`image pull secret "${name}": the docker config is not an object`);
  const auths = '.dockerconfigjson' in data || secret.stringData?.['.dockerconfigjson'] !== undefined ? parsed.auths : parsed;
  if (!isObj(auths)) throw new Error(`image pull secret "${name}": the docker config has no "auths" map`);
  const out: Record<string, Record<string, unknown>> = {};
  for (const [k, v] of Object.entries(auths)) {
    if (!isObj(v)) throw new Error(`image pull secret "${name}": the entry for ${JSON.stringify(k)} is not an object`);
    out[k] = v;
  }
  return out;
}

/** One docker config entry as CRI auth: `auth` (base64 user:password) split as the runtime expects it. */
function toAuth(entry: Record<string, unknown>, serverAddress: string, from: string): RegistryCredential {
  const str = (k: string) => (typeof entry[k] === 'string' ? (entry[k] as string) : undefined);
  let username = str('username');
  let password = str('password');
  const auth = str('auth');
  if (auth && (username === undefined || password === undefined)) {
    const decoded = Buffer.from(auth, 'base64').toString('utf8');
    const sep = decoded.indexOf(':');
    if (sep > 0) {
      username = decoded.slice(0, sep);
      password = decoded.slice(sep + 1);
    }
  }
  const identityToken = str('identitytoken');
  const registryToken = str('registrytoken');
  return {
    from,
    serverAddress,
    ...(username !== undefined ? { username } : {}),
    ...(password !== undefined ? { password } : {}),
    ...(identityToken ? { identityToken } : {}),
    ...(registryToken ? { registryToken } : {}),
  };
}

/**
 * The credentials of the pod's pull secrets that match `image`, most specific first, and the
 * problems with secrets that could not be used (missing, malformed: each a message naming it).
 */
export async function pullCredentials(pod: V1Pod, image: string, objects: ObjectSource | undefined): Promise<{ credentials: RegistryCredential[]; problems: string[] }> {
  const names = (pod.spec?.imagePullSecrets ?? []).map((s) => s.name).filter((n): n is string => !!n);
  if (names.length === 0 || !objects) return { credentials: [], problems: [] };
  const ns = pod.metadata?.namespace ?? 'default';
  const target = imageRegistry(image);
  const found: Array<{ rank: number; cred: RegistryCredential }> = [];
  const problems: string[] = [];
  for (const name of names) {
    let secret: V1Secret | undefined;
    try {
      secret = await objects.secret(ns, name);
    } catch (err) {
      problems.push(`image pull secret "${name}": ${(err as Error).message}`);
      continue;
    }
    if (!secret) {
      problems.push(`image pull secret "${name}" not found`);
      continue;
    }
    let config: Record<string, Record<string, unknown>>;
    try {
      config = dockerConfigOf(secret, name);
    } catch (err) {
      problems.push((err as Error).message);
      continue;
    }
    for (const [key, entry] of Object.entries(config)) {
      const rank = keyMatches(key, target);
      // A URL, as containerd parses it and compares its host with the image's (a bare host:port does not parse).
      if (rank >= 0) found.push({ rank, cred: toAuth(entry, `https://${target.host}`, name) });
    }
  }
  found.sort((a, b) => b.rank - a.rank);
  return { credentials: found.map((f) => f.cred), problems };
}
