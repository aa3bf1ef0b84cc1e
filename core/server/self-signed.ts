/**
 * A self-signed X.509 serving certificate, as upstream's kubelet makes one when it has no
 * tlsCertFile (certutil.GenerateSelfSignedCertKey: RSA 2048, SHA-256, the node's names and IPs
 * as subject alternative names, `<host>@<unix time>` as the name). Node can sign but not build
 * certificates: the DER forms come from core/certificates/der.ts.
 */
import crypto from 'node:crypto';
import net from 'node:net';
import { OID, altNames, bitString, explicit, extension, integer, name as derName, nul, oid, pem, seq, time, tlv } from '../certificates/der.ts';

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
    derName({ commonName: cn }),
    seq(time(new Date(now - 3600_000)), time(new Date(now + days * 86400_000))),
    derName({ commonName: cn }),
    publicKey.export({ type: 'spki', format: 'der' }),
    explicit(3, seq(
      extension(OID.keyUsage, true, keyUsage),
      extension(OID.extKeyUsage, false, seq(oid(OID.serverAuth))),
      extension(OID.basicConstraints, true, seq()),
      extension(OID.subjectAltName, false, altNames(dns, ips)),
    )),
  );
  const signature = crypto.sign('sha256', tbs, privateKey);
  return {
    cert: pem('CERTIFICATE', seq(tbs, signatureAlgorithm, bitString(signature))),
    key: privateKey.export({ type: 'pkcs8', format: 'pem' }) as string,
  };
}
