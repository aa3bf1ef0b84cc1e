/**
 * Image references as upstream's credential lookup reads them (pkg/credentialprovider): the
 * repository a provider is asked about, and the scheme-less URL patterns of `matchImages` and of
 * the keys of a provider's `auth` map. Upstream's rules, carried over as they are:
 *
 * - a pattern and an image are read as `https://` + the text, as Go's url.Parse reads them (so a
 *   `?` starts a query and a `#` a fragment; a host with a space or a bad port is an error);
 * - the ports must be equal (both none, or the same number);
 * - the hosts must have the same number of dot-separated labels, each label matching as Go's
 *   filepath.Match matches (`*` any run of characters, `?` one, `[a-z]` a class, `\` escapes):
 *   `*.example.com` matches `a.example.com`, not `example.com` nor `a.b.example.com`;
 * - the pattern's path must be a prefix of the image's, as a string (`host/ab` matches `host/abc`).
 * Matching is case-sensitive, as upstream's.
 */

/** A scheme-less URL as upstream's ParseSchemelessURL yields it: the host (with its port) and the unescaped path. */
interface SchemelessUrl { host: string; path: string }

/** Characters Go's url.Parse accepts unescaped in a host besides letters and digits. */
const HOST_CHARS = new Set("!$&'()*+,;=:[]<>\"-_.~");

/** Go's validOptionalPort: empty, or `:` and digits. */
function validOptionalPort(port: string): boolean {
  return port === '' || /^:\d*$/.test(port);
}

/** Decodes %XX escapes; undefined for a malformed one. */
function unescapePath(s: string): string | undefined {
  if (!s.includes('%')) return s;
  if (/%(?![0-9a-fA-F]{2})/.test(s)) return undefined;
  try {
    return decodeURIComponent(s);
  } catch {
    // A valid escape of bytes that are not UTF-8: Go keeps the bytes; a prefix compare of the escapes is as good.
    return s;
  }
}

/** `https://` + text, parsed as Go's url.Parse does what upstream needs of it; a string is the error. */
function parseSchemeless(text: string): SchemelessUrl | string {
  // eslint-disable-next-line no-control-regex
  if (/[\x00-\x1f\x7f]/.test(text)) return 'invalid control character in URL';
  let rest = text;
  const hash = rest.indexOf('#');
  if (hash >= 0) rest = rest.slice(0, hash);
  const question = rest.indexOf('?');
  if (question >= 0) rest = rest.slice(0, question);
  const slash = rest.indexOf('/');
  const authority = slash < 0 ? rest : rest.slice(0, slash);
  const rawPath = slash < 0 ? '' : rest.slice(slash);
  const host = authority.slice(authority.lastIndexOf('@') + 1);
  if (host.startsWith('[')) {
    const end = host.lastIndexOf(']');
    if (end < 0) return "missing ']' in host";
    const colonPort = host.slice(end + 1);
    if (!validOptionalPort(colonPort)) return `invalid port ${JSON.stringify(colonPort)} after host`;
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !validOptionalPort(host.slice(colon))) return `invalid port ${JSON.stringify(host.slice(colon))} after host`;
  }
  for (let i = 0; i < host.length; i++) {
    const c = host[i]!;
    if (c === '%') {
      // Go allows an escape in a host only for a non-ASCII byte (or %25, the zone separator).
      const hex = host.slice(i + 1, i + 3);
      if (!/^[0-9a-fA-F]{2}$/.test(hex) || (parseInt(hex, 16) < 0x80 && hex !== '25')) return `invalid URL escape ${JSON.stringify(host.slice(i, i + 3))}`;
      i += 2;
      continue;
    }
    if (c.charCodeAt(0) < 0x80 && !/[A-Za-z0-9]/.test(c) && !HOST_CHARS.has(c)) return `invalid character ${JSON.stringify(c)} in host name`;
  }
  const path = unescapePath(rawPath);
  if (path === undefined) return 'invalid URL escape in path';
  return { host, path };
}

/** Go's net.SplitHostPort as upstream's splitURL uses it: a host without a (parseable) port has port "". */
function splitHostPort(host: string): { labels: string[]; port: string } {
  let name = host;
  let port = '';
  if (host.startsWith('[')) {
    const end = host.indexOf(']');
    if (end > 0 && host[end + 1] === ':') {
      name = host.slice(1, end);
      port = host.slice(end + 2);
    }
  } else {
    const colon = host.lastIndexOf(':');
    if (colon >= 0 && !host.slice(0, colon).includes(':') && !/[[\]]/.test(host.slice(0, colon))) {
      name = host.slice(0, colon);
      port = host.slice(colon + 1);
    }
  }
  return { labels: name.split('.'), port };
}

/**
 * Go's filepath.Match for one label (no separators in it), as a regular expression; undefined for
 * a malformed pattern (an unclosed or empty class, a class starting with `-` or `]`, a trailing `\`),
 * which upstream's match treats as no match.
 */
function globRegExp(pattern: string): RegExp | undefined {
  // Escapes for a literal outside a class, and inside one (the `u` flag refuses needless escapes).
  const esc = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/]/g, '\\$&');
  const escIn = (c: string) => c.replace(/[\\\]\[^-]/g, '\\$&');
  let out = '';
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i]!;
    if (c === '*') out += '[^/]*';
    else if (c === '?') out += '[^/]';
    else if (c === '\\') {
      if (i + 1 >= pattern.length) return undefined;
      out += esc(pattern[++i]!);
    } else if (c === '[') {
      let j = i + 1;
      let negate = false;
      if (pattern[j] === '^') {
        negate = true;
        j++;
      }
      const ranges: string[] = [];
      let closed = false;
      // One character of a class, escapes resolved; undefined when the class is malformed there.
      const classChar = (): string | undefined => {
        const ch = pattern[j];
        if (ch === undefined || ch === '-' || ch === ']') return undefined;
        if (ch === '\\') {
          j++;
          if (j >= pattern.length) return undefined;
        }
        return pattern[j++];
      };
      for (let first = true; ; first = false) {
        if (pattern[j] === ']' && !first) {
          closed = true;
          j++;
          break;
        }
        const lo = classChar();
        if (lo === undefined) return undefined;
        let hi = lo;
        if (pattern[j] === '-') {
          j++;
          const h = classChar();
          if (h === undefined) return undefined;
          hi = h;
        }
        // Go matches lo <= c <= hi; a reversed range matches nothing (not an error).
        ranges.push(lo <= hi ? (lo === hi ? escIn(lo) : `${escIn(lo)}-${escIn(hi)}`) : '');
      }
      if (!closed) return undefined;
      const body = ranges.join('');
      out += negate ? `[^/${body}]` : body ? `[${body}]` : '(?!)';
      i = j - 1;
    } else out += esc(c);
  }
  return new RegExp(`^${out}$`, 'u');
}

/**
 * Why `pattern` cannot be a `matchImages` entry (upstream validates them with
 * ParseSchemelessURL), or undefined when it can.
 */
export function imagePatternProblem(pattern: string): string | undefined {
  const parsed = parseSchemeless(pattern);
  return typeof parsed === 'string' ? parsed : undefined;
}

/**
 * Whether `pattern` (a `matchImages` entry, or a key of a provider's `auth` map once its scheme
 * is stripped) matches `image` (a repository as {@link imageRepository} gives it): upstream's
 * URLsMatchStr. A pattern or image that does not parse matches nothing.
 */
export function imageMatches(pattern: string, image: string): boolean {
  const glob = parseSchemeless(pattern);
  const target = parseSchemeless(image);
  if (typeof glob === 'string' || typeof target === 'string') return false;
  const g = splitHostPort(glob.host);
  const t = splitHostPort(target.host);
  if (g.port !== t.port) return false;
  if (g.labels.length !== t.labels.length) return false;
  if (!target.path.startsWith(glob.path)) return false;
  return g.labels.every((label, i) => globRegExp(label)?.test(t.labels[i]!) ?? false);
}

/** Docker Hub's names, as docker's reference parsing normalizes them. */
const DEFAULT_DOMAIN = 'docker.io';
const LEGACY_DEFAULT_DOMAIN = 'index.docker.io';

/**
 * The repository of an image reference as upstream hands it to credential providers and matches
 * it against credentials (ParseImageName: docker's normalized name): the registry host, with
 * `docker.io` for a name without one, `library/` before a Docker Hub name of one part, and no tag
 * or digest. `busybox:1.36` → `docker.io/library/busybox`; `127.0.0.1:5000/app@sha256:…` →
 * `127.0.0.1:5000/app`.
 */
export function imageRepository(image: string): string {
  let name = image.trim();
  const at = name.indexOf('@');
  if (at >= 0) name = name.slice(0, at);
  const colon = name.lastIndexOf(':');
  if (colon > name.lastIndexOf('/')) name = name.slice(0, colon);
  const slash = name.indexOf('/');
  const first = slash < 0 ? '' : name.slice(0, slash);
  // The first component names a registry when it has a dot or a port, is localhost, or has capitals.
  const isDomain = slash >= 0 && (/[.:]/.test(first) || first === 'localhost' || first.toLowerCase() !== first);
  let domain = isDomain ? first : DEFAULT_DOMAIN;
  let remainder = isDomain ? name.slice(slash + 1) : name;
  if (domain === LEGACY_DEFAULT_DOMAIN) domain = DEFAULT_DOMAIN;
  if (domain === DEFAULT_DOMAIN && !remainder.includes('/')) remainder = `library/${remainder}`;
  return `${domain}/${remainder}`;
}

/** The registry of a repository: its first component (upstream's cache key for `cacheKeyType: Registry`). */
export function repositoryRegistry(repository: string): string {
  return repository.split('/')[0]!;
}
