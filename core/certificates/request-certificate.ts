/**
 * One certificate from the cluster, start to end: a key (the waiting request's, kept in the
 * store, or a new one), a PKCS#10 request for the template, the CertificateSigningRequest,
 * the wait for its certificate, a check that the certificate is for this key, and the pair
 * stored and made current. The TLS bootstrap and both rotations go through here.
 */
import type { ApiClient } from '../apiserver/api-client.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import type { CertificateStore } from './certificate-store.ts';
import { CertificateRequestError, SIGNER, USAGES, submitCsr, waitForCertificate } from './csr-api.ts';
import { createCsr, digestedCsrName, keyToPem, type CsrTemplate } from './csr.ts';
import { expiresAt, parsePair, type CertificatePair } from './pem-pair.ts';

/** A kind of certificate the kubelet asks for: its signer, usages and how its wait is reported. */
export interface CertificateKind {
  /** For messages: 'client certificate', 'serving certificate'. */
  what: string;
  signerName: string;
  usages: readonly string[];
  /** When to say the request waits for approval (0: at once). */
  pendingNoticeMs: number;
}

export const CLIENT_CERTIFICATE: CertificateKind = { what: 'client certificate', signerName: SIGNER.client, usages: USAGES.client, pendingNoticeMs: 30_000 };
export const SERVING_CERTIFICATE: CertificateKind = { what: 'serving certificate', signerName: SIGNER.serving, usages: USAGES.serving, pendingNoticeMs: 0 };

/** The subject of a node's certificates: `O=system:nodes, CN=system:node:<name>` (what the Node authorizer and the signers expect). */
export function nodeSubject(nodeName: string): Pick<CsrTemplate, 'commonName' | 'organizations'> {
  return { commonName: `system:node:${nodeName}`, organizations: ['system:nodes'] };
}

export interface RequestCertificateOptions {
  client: ApiClient;
  store: CertificateStore;
  kind: CertificateKind;
  template: CsrTemplate;
  /** The wait's bound (upstream: 15 minutes; the TLS bootstrap an hour). */
  timeoutMs: number;
  signal?: AbortSignal;
  logger: Logger;
  pollMs?: { initial: number; max: number };
}

/**
 * Asks for a certificate and stores it. A request that can never give one for this key (denied,
 * failed, deleted, or a certificate for another key) drops the key, so the next attempt is a new
 * request; a timeout keeps it, so the next attempt waits for the same request.
 */
export async function requestCertificate(opts: RequestCertificateOptions): Promise<CertificatePair> {
  const { store, kind, logger } = opts;
  const key = await store.pendingKey();
  const keyPem = keyToPem(key);
  const name = digestedCsrName(key, opts.template, [...kind.usages]);
  const submitted = await submitCsr(opts.client, { name, csrPem: createCsr(key, opts.template), signerName: kind.signerName, usages: kind.usages });
  logger.info({ csr: submitted.name, signer: kind.signerName, as: opts.client.describeIdentity() }, submitted.existed ? `waiting again for certificate signing request ${submitted.name} (made before a restart)` : `asked for a ${kind.what}: certificate signing request ${submitted.name}`);
  let certPem: string;
  try {
    certPem = await waitForCertificate(opts.client, submitted, {
      timeoutMs: opts.timeoutMs,
      logger,
      what: kind.what,
      pendingNoticeMs: kind.pendingNoticeMs,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
    });
  } catch (err) {
    if (err instanceof CertificateRequestError && err.needsNewKey) await store.dropPendingKey();
    throw err;
  }
  try {
    parsePair(certPem, keyPem, `certificate signing request ${submitted.name}`);
  } catch (err) {
    await store.dropPendingKey();
    throw new CertificateRequestError('incompatible', `the certificate issued for certificate signing request ${submitted.name} is not usable with its key: ${errorMessage(err)}`);
  }
  const pair = await store.update(certPem, keyPem);
  await store.dropPendingKey();
  logger.info({ csr: submitted.name, file: pair.source, subject: pair.cert.subject.replace(/\n/g, ', '), notAfter: expiresAt(pair) }, `got a ${kind.what} from certificate signing request ${submitted.name}, valid until ${expiresAt(pair)}`);
  return pair;
}
