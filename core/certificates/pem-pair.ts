/**
 * A certificate with its private key, read from PEM: one file holding both (the certificate
 * store's `kubelet-client-current.pem`) or two. The pair is checked whole: the certificate parses,
 * the key parses and belongs to it, so nothing half-written or mismatched is ever served or
 * presented.
 */
import { X509Certificate, createPrivateKey, type KeyObject } from 'node:crypto';

export interface CertificatePair {
  /** The certificate chain, PEM (the leaf first). */
  certPem: string;
  /** The private key, PEM. */
  keyPem: string;
  /** The leaf certificate. */
  cert: X509Certificate;
  key: KeyObject;
  /** Validity, ms since the epoch. */
  notBefore: number;
  notAfter: number;
  /** The subject's common name and organizations (a client certificate's user and groups). */
  commonName: string | undefined;
  organizations: string[];
  /** Where it was read from (for messages). */
  source: string;
}

const BLOCK = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n[\s\S]*?\r?\n-----END \1-----\r?\n?/g;

/** The PEM blocks of a text, by label. */
export function pemBlocks(text: string): Array<{ label: string; pem: string }> {
  return [...text.matchAll(BLOCK)].map((m) => ({ label: m[1]!, pem: m[0].endsWith('\n') ? m[0] : `${m[0]}\n` }));
}

/**
 * Parses a pair: the CERTIFICATE blocks of `certText` (leaf first) and the one PRIVATE KEY block
 * of `keyText` (which may be the same text). Throws an Error saying what is wrong.
 */
export function parsePair(certText: string, keyText: string, source: string): CertificatePair {
  const certs = pemBlocks(certText).filter((b) => b.label === 'CERTIFICATE');
  if (certs.length === 0) throw new Error('no PEM certificate in it');
  const keys = pemBlocks(keyText).filter((b) => b.label.endsWith('PRIVATE KEY'));
  if (keys.length === 0) throw new Error('no PEM private key in it');
  if (keys.length > 1) throw new Error('more than one private key in it');
  let cert: X509Certificate;
  try {
    cert = new X509Certificate(certs[0]!.pem);
  } catch (err) {
    throw new Error(`the certificate does not parse: ${(err as Error).message}`);
  }
  let key: KeyObject;
  try {
    key = createPrivateKey(keys[0]!.pem);
  } catch (err) {
    throw new Error(`the private key does not parse: ${(err as Error).message}`);
  }
  if (!cert.checkPrivateKey(key)) throw new Error(`the private key does not belong to the certificate (subject ${cert.subject.replace(/\n/g, ', ')})`);
  const fields = cert.subject.split('\n').map((line) => [line.slice(0, line.indexOf('=')), line.slice(line.indexOf('=') + 1)] as const);
  return {
    certPem: certs.map((c) => c.pem).join(''),
    keyPem: keys[0]!.pem,
    cert,
    key,
    notBefore: Date.parse(cert.validFrom),
    notAfter: Date.parse(cert.validTo),
    commonName: fields.find(([k]) => k === 'CN')?.[1],
    organizations: fields.filter(([k]) => k === 'O').map(([, v]) => v),
    source,
  };
}

/** The pair's expiry as an ISO date (for messages). */
export function expiresAt(pair: Pick<CertificatePair, 'notAfter'>): string {
  return new Date(pair.notAfter).toISOString();
}
