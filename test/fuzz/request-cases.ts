/**
 * Hostile requests to the kubelet's main-port handlers, as raw bytes (so nothing of an HTTP
 * client tidies them): every route, with and without the running pod's real names, random
 * query parameters, headers (huge, many, duplicated, non-ASCII bytes, lying Content-Length,
 * broken chunked encoding), upgrade protocols (SPDY, WebSocket, h2c, made-up ones), random
 * bodies, pipelined requests, plain garbage, and connections left half-open (the write side
 * ended mid-request) or held open after the request.
 *
 * The commands exec, attach and run may reach a real container with are harmless ones
 * (`true`, `echo`, `ls`, a missing binary): the fuzz is of the kubelet, not of the pod.
 */
import { Rng } from './prng.ts';

/** The pod the requests aim at when they use real names. */
export interface RequestTarget {
  namespace: string;
  pod: string;
  container: string;
}

export interface RequestCase {
  index: number;
  /** What the case is, for reports. */
  kind: string;
  /** The bytes written on the connection. */
  bytes: Buffer;
  /** End the write side after the bytes (a half-open connection when the request is incomplete). */
  endWrite: boolean;
  /** How long the connection is held after the bytes at most (ms), whatever the kubelet answers. */
  holdMs: number;
}

const ROUTES = [
  '/healthz', '/pods', '/stats/summary', '/metrics', '/metrics/resource', '/metrics/cadvisor', '/metrics/probes',
  '/runningpods/', '/configz', '/containerLogs/', '/run/', '/debug/pods/', '/debug/events', '/exec/', '/attach/', '/portForward/',
  '/logs/', '/spec/', '/stats/', '/cri/', '/checkpoint/', '/',
] as const;
const METHODS = ['GET', 'GET', 'GET', 'POST', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH', 'CONNECT', 'TRACE', 'PRI', 'G\u00c9T', 'get', ''];
const SAFE_COMMANDS: ReadonlyArray<readonly string[]> = [['true'], ['echo', 'fuzz'], ['ls', '/'], ['/no/such/binary'], ['date'], ['echo', '\u00e9\u{1F600}\u202e'], ['']];
const QUERY_KEYS = ['follow', 'tailLines', 'sinceSeconds', 'sinceTime', 'limitBytes', 'timestamps', 'previous', 'container', 'command', 'cmd', 'stdin', 'stdout', 'stderr', 'tty', 'input', 'output', 'port', 'ports', 'namespace', 'pod', 'name', 'watch', 'format', 'only_cpu_and_memory', 'fieldSelector', 'x', '', '\u00e9', '%00'];
const UPGRADES = ['SPDY/3.1', 'websocket', 'h2c', 'HTTP/2.0', 'TLS/1.0', 'spdy/2', 'v4.channel.k8s.io', 'fuzz/1', 'SPDY/3.1, websocket', ''];
const STREAM_PROTOCOLS = ['v4.channel.k8s.io', 'v3.channel.k8s.io', 'v2.channel.k8s.io', 'channel.k8s.io', 'portforward.k8s.io', 'base64.channel.k8s.io', 'v5.channel.k8s.io', 'nonsense'];

/** A random string from pieces that break parsers: unicode, percent escapes, dots, huge numbers. */
function token(rng: Rng, target: RequestTarget): string {
  switch (rng.int(0, 11)) {
    case 0: return target.namespace;
    case 1: return target.pod;
    case 2: return target.container;
    case 3: return '..';
    case 4: return '%2e%2e%2f%2e%2e';
    case 5: return '\u00e9\u{1F600}\u202e\u0000'.slice(0, rng.int(1, 5));
    case 6: return 'a'.repeat(rng.int(64, 5000));
    case 7: return String(rng.pick([-1, 0, 1, 2 ** 31, 2 ** 53, 1e308, -1e308]));
    case 8: return rng.pick(['NaN', 'Infinity', 'true', 'false', '', ' ', '%', '%zz', '%ff%fe', '\\', '//', '?', '#']);
    case 9: return rng.bytes(rng.int(1, 16)).toString('latin1');
    case 10: return String(rng.int(0, 70_000));
    default: return `x${rng.next().toString(36)}`;
  }
}

function pathFor(rng: Rng, target: RequestTarget): string {
  const route = rng.pick(ROUTES);
  const real = rng.chance(0.6);
  let p: string = route;
  if (route.endsWith('/') && route !== '/') {
    const segs = real ? [target.namespace, target.pod, target.container] : [];
    const n = real ? rng.int(0, 4) : rng.int(0, 6);
    const parts: string[] = [];
    // Random segments percent-encoded mostly (raw bytes and spaces stop at the HTTP parser).
    for (let i = 0; i < n; i++) parts.push(real && i < 3 && rng.chance(0.8) ? segs[i]! : rng.chance(0.85) ? percentEncode(token(rng, target)) : token(rng, target));
    p += parts.join('/');
    if (rng.chance(0.1)) p += '/';
  } else if (rng.chance(0.15)) p += `/${percentEncode(token(rng, target))}`;
  if (rng.chance(0.05)) p = p.replace(/\//g, rng.pick(['//', '/./', '\\']));
  return p;
}

/** encodeURIComponent that takes lone surrogates too (as their UTF-8 replacement). */
function percentEncode(s: string): string {
  let out = '';
  for (const b of Buffer.from(s, 'utf8')) out += /[A-Za-z0-9\-_.~]/.test(String.fromCharCode(b)) ? String.fromCharCode(b) : `%${b.toString(16).toUpperCase().padStart(2, '0')}`;
  return out;
}

function queryFor(rng: Rng, route: string, target: RequestTarget): string {
  const params: string[] = [];
  const enc = (s: string) => (rng.chance(0.8) ? percentEncode(s) : s.replace(/[\s\r\n]/g, '+'));
  if (/^\/(exec|attach|run)\//.test(route) || rng.chance(0.05)) {
    for (const part of rng.pick(SAFE_COMMANDS)) params.push(`${rng.chance(0.9) ? (route.startsWith('/run/') ? 'cmd' : 'command') : 'command'}=${enc(part)}`);
  }
  const n = rng.int(0, 8);
  for (let i = 0; i < n; i++) {
    const key = rng.pick(QUERY_KEYS);
    const value = rng.chance(0.5) ? rng.pick(['true', 'false', '1', '0', '-5', '99999999999999999999', '2024-01-01T00:00:00Z', 'yesterday', target.container, '8080', '0,65536', '1e3']) : token(rng, target);
    params.push(rng.chance(0.1) ? enc(key) : `${enc(key)}=${enc(value)}`);
  }
  if (rng.chance(0.02)) params.push(`x=${'y'.repeat(rng.int(10_000, 40_000))}`);
  return params.length ? `?${params.join('&')}` : rng.chance(0.05) ? '?' : '';
}

/** Header lines (without CRLF), some of them hostile. */
function headersFor(rng: Rng, bodyLength: number, upgrade: string | undefined): { lines: string[]; chunked: boolean } {
  const lines: string[] = [];
  if (rng.chance(0.95)) lines.push('Host: kubelet');
  let chunked = false;
  switch (rng.int(0, 9)) {
    case 0: lines.push(`Content-Length: ${bodyLength + rng.int(1, 1000)}`); break; // promises more than comes
    case 1: lines.push(`Content-Length: ${rng.pick(['-1', 'abc', '99999999999999999999', '1, 2', ''])}`); break;
    case 2: lines.push('Transfer-Encoding: chunked'); chunked = true; break;
    case 3: lines.push('Transfer-Encoding: chunked', `Content-Length: ${bodyLength}`); chunked = true; break;
    case 4: lines.push(`Transfer-Encoding: ${rng.pick(['gzip', 'identity', 'chunked, gzip', 'x'])}`); break;
    default: if (bodyLength > 0) lines.push(`Content-Length: ${bodyLength}`);
  }
  if (upgrade !== undefined) {
    lines.push(`Connection: ${rng.pick(['Upgrade', 'upgrade', 'keep-alive, Upgrade', 'close'])}`, `Upgrade: ${upgrade}`);
    for (let i = rng.int(0, 3); i > 0; i--) lines.push(`X-Stream-Protocol-Version: ${rng.pick(STREAM_PROTOCOLS)}`);
    if (rng.chance(0.5)) lines.push('Sec-WebSocket-Version: 13', `Sec-WebSocket-Key: ${rng.bytes(16).toString('base64')}`, `Sec-WebSocket-Protocol: ${rng.pick(STREAM_PROTOCOLS)}`);
    if (upgrade === 'h2c') lines.push('HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA');
  } else if (rng.chance(0.3)) lines.push(`Connection: ${rng.pick(['close', 'keep-alive', 'Upgrade', 'x'])}`);
  const extra = rng.int(0, 4);
  for (let i = 0; i < extra; i++) {
    switch (rng.int(0, 7)) {
      case 0: lines.push(`X-Big: ${'b'.repeat(rng.int(1000, 40_000))}`); break; // past the 32 KiB limit sometimes
      case 1: for (let j = rng.int(50, 400); j > 0; j--) lines.push(`X-Many-${j}: v`); break;
      case 2: lines.push(`X-Bytes: ${rng.bytes(rng.int(1, 64)).toString('latin1').replace(/[\r\n]/g, '')}`); break;
      case 3: lines.push(`Authorization: Bearer ${rng.bytes(rng.int(10, 3000)).toString('base64')}`); break;
      case 4: lines.push(`Accept: ${rng.pick(['application/json', 'text/plain', 'application/vnd.kubernetes.protobuf', '*/*', 'application/openmetrics-text; version=1.0.0', '\u00e9'])}`); break;
      case 5: lines.push(`Accept-Encoding: ${rng.pick(['gzip', 'deflate, br', 'identity;q=0', 'x'])}`); break;
      case 6: lines.push('no colon here'); break;
      default: lines.push(` folded: ${token(rng, { namespace: 'n', pod: 'p', container: 'c' })}`); break;
    }
  }
  return { lines, chunked };
}

function chunkedBody(rng: Rng, body: Buffer): Buffer {
  const parts: Buffer[] = [];
  let at = 0;
  while (at < body.length) {
    const n = Math.min(body.length - at, rng.int(1, 4096));
    // A chunk size that lies now and then, or an extension the parser must skip.
    const size = rng.chance(0.05) ? rng.pick(['zz', 'fffffffffffffffff', '-1']) : n.toString(16);
    parts.push(Buffer.from(`${size}${rng.chance(0.05) ? `;ext=${'e'.repeat(rng.int(1, 20_000))}` : ''}\r\n`), body.subarray(at, at + n), Buffer.from('\r\n'));
    at += n;
  }
  if (rng.chance(0.8)) parts.push(Buffer.from('0\r\n\r\n'));
  return Buffer.concat(parts);
}

function oneRequest(rng: Rng, target: RequestTarget): { kind: string; bytes: Buffer } {
  // Well-formed in most cases (so the request reaches a handler with its odd path, query and
  // body); hostile in its method, version, headers or framing in the rest.
  const wellFormed = rng.chance(0.6);
  const method = wellFormed ? rng.pick(['GET', 'GET', 'GET', 'POST', 'PUT', 'DELETE', 'HEAD', 'OPTIONS', 'PATCH']) : rng.pick(METHODS);
  const route = pathFor(rng, target);
  const streaming = /^\/(exec|attach|portForward)\//.test(route);
  const upgrade = (streaming && rng.chance(0.7)) || rng.chance(0.05) ? rng.pick(UPGRADES) : undefined;
  const body = rng.chance(0.3) ? (rng.chance(0.5) ? rng.bytes(rng.int(0, 65_536)) : Buffer.from(JSON.stringify({ kind: 'Pod', spec: token(rng, target) }))) : Buffer.alloc(0);
  const { lines, chunked } = wellFormed ? { lines: ['Host: kubelet', ...(body.length ? [`Content-Length: ${body.length}`] : []), ...(upgrade !== undefined ? [`Connection: Upgrade`, `Upgrade: ${upgrade}`, `X-Stream-Protocol-Version: ${rng.pick(STREAM_PROTOCOLS)}`] : [])], chunked: false } : headersFor(rng, body.length, upgrade);
  const version = wellFormed || rng.chance(0.9) ? 'HTTP/1.1' : rng.pick(['HTTP/1.0', 'HTTP/2.0', 'HTTP/9.9', 'HTTP/1.1 extra', '']);
  const head = Buffer.from(`${method} ${route}${queryFor(rng, route, target)} ${version}\r\n${lines.join('\r\n')}\r\n\r\n`, wellFormed || rng.chance(0.9) ? 'utf8' : 'latin1');
  const payload = chunked ? chunkedBody(rng, body) : body;
  // After an upgrade: bytes of the would-be stream protocol (random frames).
  const after = upgrade !== undefined && rng.chance(0.5) ? rng.bytes(rng.int(1, 2048)) : Buffer.alloc(0);
  return { kind: `${wellFormed ? '' : 'hostile '}${method || '(no method)'} ${route.split('/').slice(0, 2).join('/')}${upgrade !== undefined ? ` upgrade ${upgrade || '(empty)'}` : ''}${chunked ? ' chunked' : ''}`, bytes: Buffer.concat([head, payload, after]) };
}

/** Case `index` of the run with `seed`: reproducible alone. */
export function requestCase(seed: number, index: number, target: RequestTarget): RequestCase {
  const rng = new Rng(seed, index);
  const shape = rng.int(0, 19);
  if (shape === 0) {
    // Garbage: random bytes, a TLS ClientHello on the plain socket, an HTTP/2 preface.
    const bytes = rng.pick([rng.bytes(rng.int(1, 8192)), Buffer.from('16030100a5010000a10303', 'hex'), Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n')]);
    return { index, kind: 'garbage', bytes, endWrite: rng.chance(0.5), holdMs: rng.int(0, 1500) };
  }
  if (shape === 1) {
    // Pipelined: several requests on one connection, written at once.
    const reqs = Array.from({ length: rng.int(2, 6) }, () => oneRequest(rng, target));
    return { index, kind: `pipelined ${reqs.length}: ${reqs[0]!.kind}`, bytes: Buffer.concat(reqs.map((r) => r.bytes)), endWrite: rng.chance(0.5), holdMs: rng.int(200, 2000) };
  }
  const r = oneRequest(rng, target);
  if (shape === 2) {
    // Half-open: the write side ends mid-request (the head, or the body, cut).
    const cut = rng.int(1, Math.max(1, r.bytes.length - 1));
    return { index, kind: `half-open at ${cut}/${r.bytes.length}: ${r.kind}`, bytes: r.bytes.subarray(0, cut), endWrite: true, holdMs: rng.int(0, 3000) };
  }
  if (shape === 3) {
    // Cut and held: the rest never comes, the socket stays open until the hold ends.
    const cut = rng.int(1, Math.max(1, r.bytes.length - 1));
    return { index, kind: `stalled at ${cut}/${r.bytes.length}: ${r.kind}`, bytes: r.bytes.subarray(0, cut), endWrite: false, holdMs: rng.int(500, 3000) };
  }
  return { index, kind: r.kind, bytes: r.bytes, endWrite: rng.chance(0.3), holdMs: rng.int(100, 2000) };
}
