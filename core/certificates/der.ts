/**
 * The few ASN.1 DER forms the kubelet writes itself: a self-signed serving certificate
 * (core/server/self-signed.ts) and a PKCS#10 certificate request (csr.ts). Node can sign with a
 * key and parse a certificate, but it cannot build either, so the encoding is here; nothing in
 * it parses.
 */
import net from 'node:net';

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

/** A tag, its length and its content. */
export function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

export const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
export const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
/** An explicitly tagged [n] (constructed, context-specific). */
export const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);
/** An implicitly tagged [n] SET OF or SEQUENCE OF: the same constructed tag, the items as content. */
export const implicitSet = (n: number, ...items: Buffer[]) => tlv(0xa0 + n, Buffer.concat(items));
export const octets = (b: Buffer) => tlv(0x04, b);
/** A BIT STRING of whole bytes (no unused bits). */
export const bitString = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
export const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
export const boolTrue = () => tlv(0x01, Buffer.from([0xff]));
export const nul = () => Buffer.from([0x05, 0x00]);

/** A non-negative INTEGER from big-endian bytes (a leading zero keeps it positive). */
export function integer(bytes: Buffer): Buffer {
  let b = bytes;
  while (b.length > 1 && b[0] === 0 && b[1]! < 0x80) b = b.subarray(1);
  if (b[0]! >= 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

export function oid(dotted: string): Buffer {
  const parts = dotted.split('.').map(Number);
  const out: number[] = [40 * parts[0]! + parts[1]!];
  for (const p of parts.slice(2)) {
    const chunk: number[] = [];
    let v = p;
    do {
      chunk.unshift(v & 0x7f);
      v = Math.floor(v / 128);
    } while (v > 0);
    for (let i = 0; i < chunk.length - 1; i++) chunk[i]! |= 0x80;
    out.push(...chunk);
  }
  return tlv(0x06, Buffer.from(out));
}

/** UTCTime through 2049, GeneralizedTime after (RFC 5280 4.1.2.5). */
export function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:T]/g, '');
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2), 'ascii')) : tlv(0x18, Buffer.from(iso, 'ascii'));
}

export const OID = {
  commonName: '2.5.4.3',
  organization: '2.5.4.10',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  ecdsaWithSHA256: '1.2.840.10045.4.3.2',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
  /** PKCS#9 extensionRequest: the extensions a certificate request asks for. */
  extensionRequest: '1.2.840.113549.1.9.14',
};

/**
 * A distinguished name: the organizations, then the common name (the order Go's pkix.Name
 * writes them in, so a request reads as upstream's `O=system:nodes, CN=system:node:n1`).
 */
export function name(subject: { commonName: string; organizations?: string[] }): Buffer {
  const rdn = (type: string, value: string) => set(seq(oid(type), utf8(value)));
  return seq(...(subject.organizations ?? []).map((o) => rdn(OID.organization, o)), rdn(OID.commonName, subject.commonName));
}

export function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [boolTrue()] : []), octets(value));
}

/** subjectAltName: dNSName [2] and iPAddress [7] entries. */
export function altNames(dns: string[], ips: string[]): Buffer {
  const entries = [
    ...dns.map((d) => tlv(0x82, Buffer.from(d, 'ascii'))),
    ...ips.map((ip) => tlv(0x87, ipBytes(ip))),
  ];
  return seq(...entries);
}

function ipBytes(ip: string): Buffer {
  if (net.isIPv4(ip)) return Buffer.from(ip.split('.').map(Number));
  // IPv6: expand '::' and write 8 groups of 16 bits.
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
  const groups = [...h, ...Array(8 - h.length - t.length).fill('0'), ...t];
  const out = Buffer.alloc(16);
  groups.forEach((g, i) => out.writeUInt16BE(parseInt(g, 16), i * 2));
  return out;
}

/** DER as PEM with the given label, 64 characters a line. */
export function pem(label: string, der: Buffer): string {
  const body = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return `-----BEGIN ${label}-----\n${body}\n-----END ${label}-----\n`;
}
