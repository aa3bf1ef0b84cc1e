/**
 * Upstream's docker keyring (pkg/credentialprovider BasicDockerKeyring, as the 1.28 kubelet has
 * it), for providers that answer with an `auth` map (registry key → credential), as exec
 * credential providers do: which of the credentials a set of maps holds apply to one image, and
 * in which order the puller tries them.
 *
 * - A key may have a scheme (`https://`, `http://`: dropped) and a path; a path starting with
 *   `/v1/` or `/v2/` names the registry API, not a repository, and counts from after it.
 * - Every key that matches the image as {@link imageMatches} does contributes its credentials,
 *   the keys in reverse lexical order (so `quay.io/team` comes before `quay.io`), the credentials
 *   of one key in the order the maps were given.
 * - When no key matches, a Docker Hub image gets the credentials of the legacy key `index.docker.io`.
 */
import type { ImageCredential } from '../hooks.ts';
import { imageMatches, imagePatternProblem } from './image-match.ts';

/** One provider's answer: its name (for messages) and its `auth` map. */
export interface ProvidedAuth { from: string; auth: ReadonlyMap<string, { username?: string; password?: string }> }

/** A key of an auth map as the keyring indexes it (host, and path unless it is the API root); undefined for one that does not parse. */
function indexKey(loc: string): string | undefined {
  const rest = loc.startsWith('https://') ? loc.slice(8) : loc.startsWith('http://') ? loc.slice(7) : loc;
  if (imagePatternProblem(rest) !== undefined) return undefined;
  // Host (with userinfo, port) up to the first slash; the path as it is, without query or fragment.
  const bare = rest.split('#')[0]!.split('?')[0]!;
  const slash = bare.indexOf('/');
  const host = (slash < 0 ? bare : bare.slice(0, slash)).replace(/^.*@/, '');
  let path = slash < 0 ? '' : bare.slice(slash);
  if (path.startsWith('/v2/') || path.startsWith('/v1/')) path = path.slice(3);
  return path && path !== '/' ? host + path : host;
}

/** Go's isDefaultRegistryMatch: an image that Docker pulls from Docker Hub. */
function isDefaultRegistryMatch(image: string): boolean {
  const slash = image.indexOf('/');
  const first = slash < 0 ? image : image.slice(0, slash);
  if (!first) return false;
  if (slash < 0) return true;
  if (first === 'docker.io' || first === 'index.docker.io') return true;
  return !/[.:]/.test(first);
}

/**
 * The credentials the maps of `provided` hold for `repository` (as {@link imageRepository}
 * gives it), in upstream's order; `from` of each is its provider's. Keys that do not parse are
 * left out, as upstream leaves them out.
 */
export function keyringLookup(repository: string, provided: readonly ProvidedAuth[]): ImageCredential[] {
  const byKey = new Map<string, ImageCredential[]>();
  for (const { from, auth } of provided) {
    for (const [loc, entry] of auth) {
      const key = indexKey(loc);
      if (key === undefined) continue;
      const list = byKey.get(key) ?? [];
      list.push({ from, ...(entry.username !== undefined ? { username: entry.username } : {}), ...(entry.password !== undefined ? { password: entry.password } : {}) });
      byKey.set(key, list);
    }
  }
  // Reverse lexical order, as Go's sort.Reverse(sort.StringSlice) orders the index (by bytes).
  const index = [...byKey.keys()].sort((a, b) => Buffer.compare(Buffer.from(b), Buffer.from(a)));
  const out = index.filter((k) => imageMatches(k, repository)).flatMap((k) => byKey.get(k)!);
  if (out.length === 0 && isDefaultRegistryMatch(repository)) return byKey.get('index.docker.io') ?? [];
  return out;
}
