/**
 * PKCS#10 certificate requests (RFC 2986) as a kubelet sends them in a CertificateSigningRequest:
 * the subject (`O=system:nodes, CN=system:node:<name>`), the public key, and for a serving
 * certificate the subject alternative names in an extensionRequest attribute; signed with the
 * key (ECDSA P-256 with SHA-256, as upstream's certificate manager makes them).
 */
import crypto, { type KeyObject } from 'node:crypto';
import { OID, altNames, bitString, extension, implicitSet, integer, name, nul, oid, pem, seq, set } from './der.ts';

/** What a request asks for. */
export interface CsrTemplate {
  commonName: string;
  organizations: string[];
  /** Subject alternative names (a serving certificate's). */
  dnsNames?: string[];
  ipAddresses?: string[];
}

/** A new private key as upstream's certificate manager makes one: ECDSA on P-256. */
export function generateKey(): Promise<KeyObject> {
  return new Promise((resolve, reject) =>
    crypto.generateKeyPair('ec', { namedCurve: 'prime256v1' }, (err, _pub, priv) => (err ? reject(err) : resolve(priv))),
  );
}

/** The key as PEM, `EC PRIVATE KEY` (SEC 1) for an EC key as upstream writes it, PKCS#8 otherwise. */
export function keyToPem(key: KeyObject): string {
  return (key.asymmetricKeyType === 'ec' ? key.export({ type: 'sec1', format: 'pem' }) : key.export({ type: 'pkcs8', format: 'pem' })) as string;
}

/** A signed PKCS#10 request for `key`, as PEM (`CERTIFICATE REQUEST`). */
export function createCsr(key: KeyObject, template: CsrTemplate): string {
  const publicKey = crypto.createPublicKey(key);
  const dns = template.dnsNames ?? [];
  const ips = template.ipAddresses ?? [];
  // Attributes: the extensionRequest, only when there are extensions to ask for.
  const attributes = dns.length + ips.length > 0
    ? [seq(oid(OID.extensionRequest), set(seq(extension(OID.subjectAltName, false, altNames(dns, ips)))))]
    : [];
  const info = seq(
    integer(Buffer.from([0])), // version 1
    name({ commonName: template.commonName, organizations: template.organizations }),
    publicKey.export({ type: 'spki', format: 'der' }),
    implicitSet(0, ...attributes),
  );
  const { algorithm, signature } = sign(key, info);
  return pem('CERTIFICATE REQUEST', seq(info, algorithm, bitString(signature)));
}

function sign(key: KeyObject, data: Buffer): { algorithm: Buffer; signature: Buffer } {
  switch (key.asymmetricKeyType) {
    case 'ec':
      // ECDSA signatures are DER SEQUENCE {r, s}, Node's default dsaEncoding; the identifier has no parameters.
      return { algorithm: seq(oid(OID.ecdsaWithSHA256)), signature: crypto.sign('sha256', data, key) };
    case 'rsa':
      return { algorithm: seq(oid(OID.sha256WithRSA), nul()), signature: crypto.sign('sha256', data, key) };
    default:
      throw new Error(`cannot sign a certificate request with a ${key.asymmetricKeyType ?? 'unknown'} key`);
  }
}

/**
 * The name upstream's TLS bootstrap gives its request, `node-csr-<digest>`: a digest of the
 * public key, the subject and the usages. The same key asks under the same name, so a restart
 * while the request waits for approval finds it again instead of making another one.
 */
export function digestedCsrName(key: KeyObject, template: Pick<CsrTemplate, 'commonName' | 'organizations'>, usages: string[]): string {
  const hash = crypto.createHash('sha512-256');
  // Each part base64url'd and ended with '|' (not in that alphabet): no two inputs hash alike.
  const write = (data: Buffer) => hash.update(data.toString('base64url')).update('|');
  write(crypto.createPublicKey(key).export({ type: 'spki', format: 'der' }));
  write(Buffer.from(template.commonName));
  for (const o of template.organizations) write(Buffer.from(o));
  for (const u of usages) write(Buffer.from(u));
  return `node-csr-${hash.digest('base64url')}`;
}
