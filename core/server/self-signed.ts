/**
 * A self-signed X.509 serving certificate, as upstream's kubelet makes one when it has no
 * tlsCertFile (certutil.GenerateSelfSignedCertKey: RSA 2048, SHA-256, the node's names and IPs
 * as subject alternative names, `<host>@<unix time>` as the name). Node can sign but not build
 * certificates, so the DER is written here: only the few ASN.1 forms a certificate needs.
 */
import crypto from 'node:crypto';
import net from 'node:net';

// ---------------------------------------------------------------- DER encoding

function derLength(n: number): Buffer {
  if (n < 0x80) return Buffer.from([n]);
  const bytes: number[] = [];
  for (let v = n; v > 0; v = Math.floor(v / 256)) bytes.unshift(v & 0xff);
  return Buffer.from([0x80 | bytes.length, ...bytes]);
}

function tlv(tag: number, content: Buffer): Buffer {
  return Buffer.concat([Buffer.from([tag]), derLength(content.length), content]);
}

const seq = (...items: Buffer[]) => tlv(0x30, Buffer.concat(items));
const set = (...items: Buffer[]) => tlv(0x31, Buffer.concat(items));
const explicit = (n: number, inner: Buffer) => tlv(0xa0 + n, inner);
const octets = (b: Buffer) => tlv(0x04, b);
const bitString = (b: Buffer) => tlv(0x03, Buffer.concat([Buffer.from([0]), b]));
const utf8 = (s: string) => tlv(0x0c, Buffer.from(s, 'utf8'));
const boolTrue = () => tlv(0x01, Buffer.from([0xff]));
const nul = () => Buffer.from([0x05, 0x00]);

/** A non-negative INTEGER from big-endian bytes (a leading zero keeps it positive). */
function integer(bytes: Buffer): Buffer {
  let b = bytes;
  while (b.length > 1 && b[0] === 0 && b[1]! < 0x80) b = b.subarray(1);
  if (b[0]! >= 0x80) b = Buffer.concat([Buffer.from([0]), b]);
  return tlv(0x02, b);
}

function oid(dotted: string): Buffer {
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
function time(d: Date): Buffer {
  const iso = d.toISOString().replace(/\.\d+Z$/, 'Z').replace(/[-:T]/g, '');
  return d.getUTCFullYear() < 2050 ? tlv(0x17, Buffer.from(iso.slice(2), 'ascii')) : tlv(0x18, Buffer.from(iso, 'ascii'));
}

const OID = {
  commonName: '2.5.4.3',
  sha256WithRSA: '1.2.840.113549.1.1.11',
  basicConstraints: '2.5.29.19',
  keyUsage: '2.5.29.15',
  extKeyUsage: '2.5.29.37',
  subjectAltName: '2.5.29.17',
  serverAuth: '1.3.6.1.5.5.7.3.1',
};

function name(cn: string): Buffer {
  return seq(set(seq(oid(OID.commonName), utf8(cn))));
}

function extension(id: string, critical: boolean, value: Buffer): Buffer {
  return seq(oid(id), ...(critical ? [boolTrue()] : []), octets(value));
}

/** subjectAltName: dNSName [2] and iPAddress [7] entries. */
function altNames(dns: string[], ips: string[]): Buffer {
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

// ---------------------------------------------------------------- the certificate

export interface SelfSignedPair {
  /** PEM certificate. */
  cert: string;
  /** PEM private key (PKCS#8). */
  key: string;
}

/**
 * A self-signed serving certificate for `hosts` (DNS names and IP addresses, the first one is
 * the subject's common name), valid from an hour ago (clock skew) for `days` days.
 */
export async function generateSelfSigned(hosts: string[], days = 365): Promise<SelfSignedPair> {
  const { publicKey, privateKey } = await new Promise<crypto.KeyPairKeyObjectResult>((resolve, reject) =>
    crypto.generateKeyPair('rsa', { modulusLength: 2048 }, (err, pub, priv) => (err ? reject(err) : resolve({ publicKey: pub, privateKey: priv }))),
  );
  const unique = [...new Set(hosts.filter(Boolean))];
  const ips = unique.filter((h) => net.isIP(h) !== 0);
  const dns = unique.filter((h) => net.isIP(h) === 0);
  const now = Date.now();
  const cn = `${unique[0] ?? 'kubelet'}@${Math.floor(now / 1000)}`;
  const signatureAlgorithm = seq(oid(OID.sha256WithRSA), nul());
  // digitalSignature | keyEncipherment (bits 0 and 2 of the first byte; 5 unused bits).
  const keyUsage = tlv(0x03, Buffer.from([0x05, 0xa0]));
  const tbs = seq(
    explicit(0, integer(Buffer.from([2]))), // v3
    integer(crypto.randomBytes(16)),
    signatureAlgorithm,
    name(cn),
    seq(time(new Date(now - 3600_000)), time(new Date(now + days * 86400_000))),
    name(cn),
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(
      extension(OID.keyUsage, true, keyUsage),
      extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
      extension(OID.basicConstraints, true, seq()),
      extension(OID.subjectAltName, false, altNames(dns, ips)),
    )),
  );
  const signature = crypto.sign('sha256', tbs, privateKey);
  const der = seq(tbs, signatureAlgorithm, bitString(signature));
  const body = der.toString('base64').replace(/.{64}/g, '$&\n').replace(/\n$/, '');
  return {
    cert: `-----BEGIN CERTIFICATE-----\n${body}\n-----END CERTIFICATE-----\n`,
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}
