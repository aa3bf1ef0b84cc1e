/**
 * Which pod a command line means, for `kubelet-ts logs` and `explain`. POD is a pod's name, a
 * static pod's manifest name (the kubelet names it `<name>-<node>`), or a prefix of its UID.
 * While an edited static pod replaces its predecessor, two pods share one name: the answer
 * then lists both with their UID prefixes and states, and a UID prefix (POD itself, or
 * `--uid PREFIX` next to the name) picks one.
 */
import type { V1Pod } from '@kubernetes/client-node';
import { podStatusColumns } from './pod-columns.ts';

/** The shortest UID prefix shown: long enough to be unique among a node's pods in practice. */
const UID_PREFIX_LENGTH = 8;
/** A POD argument this short is not taken for a UID prefix: it would match too much by chance. */
const MIN_UID_QUERY = 4;

export type PodLookup =
  | { pod: V1Pod }
  | { notFound: string }
  | { ambiguous: string };

const ns = (p: V1Pod) => p.metadata?.namespace ?? 'default';
const uidOf = (p: V1Pod) => p.metadata?.uid ?? '';

/** Finds the one pod `query` names; `namespace` and `uid` (a UID prefix) narrow the choice. */
export function lookupPod(pods: V1Pod[], query: string, opts: { namespace?: string; uid?: string; command: string }): PodLookup {
  const inNamespace = opts.namespace === undefined ? pods : pods.filter((p) => ns(p) === opts.namespace);
  const byUid = (prefix: string) => (p: V1Pod) => uidOf(p).startsWith(prefix.toLowerCase());

  let matches = inNamespace.filter((p) => {
    const n = p.metadata?.name;
    const node = p.spec?.nodeName?.toLowerCase();
    return n === query || (node !== undefined && n === `${query}-${node}`);
  });
  if (matches.length === 0 && query.length >= MIN_UID_QUERY && /^[0-9a-f-]+$/i.test(query)) matches = inNamespace.filter(byUid(query));
  if (opts.uid !== undefined) matches = matches.filter(byUid(opts.uid));
  if (matches.length === 0) {
    const where = opts.namespace ? ` in namespace "${opts.namespace}"` : '';
    return { notFound: `pods "${query}"${opts.uid ? ` with UID ${opts.uid}…` : ''} not found${where}` };
  }

  // Without -n, "default" first (kubectl's default namespace); then an exact name beats a
  // static-name match.
  if (opts.namespace === undefined) {
    const inDefault = matches.filter((p) => ns(p) === 'default');
    if (inDefault.length) matches = inDefault;
  }
  const exact = matches.filter((p) => p.metadata?.name === query);
  if (exact.length) matches = exact;
  if (matches.length === 1) return { pod: matches[0]! };

  const prefixes = uniquePrefixes(matches.map(uidOf));
  const list = matches.map((p, i) => `${ns(p)}/${p.metadata?.name} uid ${prefixes[i]} (${podStatusColumns(p).status})`).join(', ');
  const sameName = new Set(matches.map((p) => `${ns(p)}/${p.metadata?.name}`)).size === 1;
  const hint = sameName
    ? `give a UID prefix instead of the name, as in: kubelet-ts ${opts.command} ${prefixes[prefixes.length - 1]}`
    : 'choose one with -n NAMESPACE, or give a UID prefix instead of the name';
  return { ambiguous: `pod "${query}" is ambiguous: ${list}; ${hint}` };
}

/** The shortest prefixes (at least UID_PREFIX_LENGTH) that tell these UIDs apart. */
function uniquePrefixes(uids: string[]): string[] {
  return uids.map((uid) => {
    let n = Math.min(UID_PREFIX_LENGTH, uid.length);
    while (n < uid.length && uids.some((o) => o !== uid && o.startsWith(uid.slice(0, n)))) n++;
    return uid.slice(0, n);
  });
}
