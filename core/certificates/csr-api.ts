/**
 * The certificates.k8s.io/v1 CertificateSigningRequest exchange, as client-go's csr package does
 * it for the kubelet: create the request (a name that exists already is the same request made
 * before a restart, and is taken up again), then wait until it is approved and signed, denied or
 * failed. The wait polls the one object, with a growing interval, bounded in time; a request
 * approved but not signed for a while, or pending with no approver, is said once, in one line.
 */
import { setTimeout as sleep } from 'node:timers/promises';
import type { ApiClient } from '../apiserver/api-client.ts';
import { isAlreadyExistsError, isNotFoundError, isUnavailableError } from '../apiserver/api-errors.ts';
import type { Logger } from '../logger.ts';
import { formatDuration } from '../util/duration.ts';

/** The signers a kubelet asks (certificates.k8s.io/v1 well-known signers). */
export const SIGNER = {
  /** Client certificates of kubelets for the API server; kube-controller-manager approves them for nodes. */
  client: 'kubernetes.io/kube-apiserver-client-kubelet',
  /** Serving certificates of kubelets; nothing approves them by default (kubeadm: an admin). */
  serving: 'kubernetes.io/kubelet-serving',
} as const;

/**
 * Key usages, as upstream's DefaultKubeletClientGetUsages / DefaultKubeletServingGetUsages give
 * them for an ECDSA key (key encipherment only for RSA keys).
 */
export const USAGES = {
  client: ['digital signature', 'client auth'],
  serving: ['digital signature', 'server auth'],
} as const;

const CSR_PATH = '/apis/certificates.k8s.io/v1/certificatesigningrequests';

interface CsrObject {
  metadata?: { name?: string; uid?: string };
  spec?: { signerName?: string; usages?: string[]; username?: string };
  status?: { certificate?: string; conditions?: Array<{ type?: string; status?: string; reason?: string; message?: string }> };
}

/** Why a request gave no certificate; `kind` tells whether asking again with the same key can help. */
export class CertificateRequestError extends Error {
  constructor(
    readonly kind: 'denied' | 'failed' | 'deleted' | 'timeout' | 'incompatible',
    message: string,
  ) {
    super(message);
    this.name = 'CertificateRequestError';
  }

  /** The request can never give a certificate for this key: the next attempt needs a new key (a new request). */
  get needsNewKey(): boolean {
    return this.kind !== 'timeout';
  }
}

export interface SubmittedRequest {
  name: string;
  uid: string;
  /** True when a request of that name existed already (made before a restart). */
  existed: boolean;
}

/**
 * Creates the request: `name`, or a generated `csr-xxxxx`. A request of the same name that
 * exists already is used if it asks the same signer for the same usages (client-go's
 * ensureCompatible; the name is a digest of the key, so it is this key's request).
 */
export async function submitCsr(client: ApiClient, req: { name?: string; csrPem: string; signerName: string; usages: readonly string[] }): Promise<SubmittedRequest> {
  const body = {
    apiVersion: 'certificates.k8s.io/v1',
    kind: 'CertificateSigningRequest',
    metadata: req.name ? { name: req.name } : { generateName: 'csr-' },
    spec: { request: Buffer.from(req.csrPem).toString('base64'), signerName: req.signerName, usages: [...req.usages] },
  };
  try {
    const created = await client.request<CsrObject>('POST', CSR_PATH, { body });
    return { name: created.metadata!.name!, uid: created.metadata!.uid!, existed: false };
  } catch (err) {
    if (!req.name || !isAlreadyExistsError(err)) throw err;
  }
  const existing = await client.request<CsrObject>('GET', `${CSR_PATH}/${encodeURIComponent(req.name)}`);
  const usages = existing.spec?.usages ?? [];
  if (existing.spec?.signerName !== req.signerName || usages.length !== req.usages.length || !req.usages.every((u) => usages.includes(u))) {
    throw new CertificateRequestError('incompatible', `certificate signing request ${req.name} exists but asks ${existing.spec?.signerName} for ${usages.join(', ')}, not ${req.signerName} for ${req.usages.join(', ')}`);
  }
  return { name: req.name, uid: existing.metadata!.uid!, existed: true };
}

export interface WaitOptions {
  /** Give up after this long (upstream: 15 minutes per attempt, an hour for the TLS bootstrap). */
  timeoutMs: number;
  signal?: AbortSignal;
  logger: Logger;
  /** What the certificate is for, in messages ('client certificate', 'serving certificate'). */
  what: string;
  /** Say once that the request waits for approval after this long (0: at once, for serving certificates nobody approves automatically). */
  pendingNoticeMs: number;
  /** Poll intervals: the first, growing by half each time to the last. Default 250 ms to 5 s. */
  pollMs?: { initial: number; max: number };
}

/** How long an approved request may stay unsigned before the signer is suspected (one line). */
const SIGNER_NOTICE_MS = 30_000;

/**
 * Waits for the request's certificate (PEM): approved and signed. Denied, failed or deleted
 * requests, and the timeout, are CertificateRequestErrors; an API server that does not answer
 * is waited for (within the timeout); other API errors (401, 403) are thrown as they are.
 */
export async function waitForCertificate(client: ApiClient, ref: { name: string; uid: string }, opts: WaitOptions): Promise<string> {
  const start = Date.now();
  const poll = opts.pollMs ?? { initial: 250, max: 5000 };
  let interval = poll.initial;
  let saidPending = false;
  let saidUnsigned = false;
  for (;;) {
    opts.signal?.throwIfAborted();
    let csr: CsrObject | undefined;
    try {
      csr = await client.request<CsrObject>('GET', `${CSR_PATH}/${encodeURIComponent(ref.name)}`);
    } catch (err) {
      if (isNotFoundError(err)) throw new CertificateRequestError('deleted', `certificate signing request ${ref.name} was deleted before it was signed`);
      if (!isUnavailableError(err)) throw err;
      // The server is away: the connectivity tracker says so; keep waiting within the timeout.
    }
    if (csr) {
      if (csr.metadata?.uid && csr.metadata.uid !== ref.uid) throw new CertificateRequestError('deleted', `certificate signing request ${ref.name} was deleted and made again by someone else`);
      const conditions = csr.status?.conditions ?? [];
      const cond = (type: string) => conditions.find((c) => c.type === type && c.status !== 'False');
      const denied = cond('Denied');
      if (denied) throw new CertificateRequestError('denied', `certificate signing request ${ref.name} was denied${because(denied)}`);
      const failed = cond('Failed');
      if (failed) throw new CertificateRequestError('failed', `certificate signing request ${ref.name} failed${because(failed)}`);
      const approved = cond('Approved');
      if (approved && csr.status?.certificate) return Buffer.from(csr.status.certificate, 'base64').toString('utf8');
      const waited = Date.now() - start;
      if (!approved && !saidPending && waited >= opts.pendingNoticeMs) {
        saidPending = true;
        opts.logger.info({ csr: ref.name, signer: csr.spec?.signerName }, `the ${opts.what} waits for approval of certificate signing request ${ref.name}${opts.pendingNoticeMs > 0 ? ` (pending for ${formatDuration(waited)})` : ''}: approve it with kubectl certificate approve ${ref.name}`);
      }
      if (approved && !saidUnsigned && waited >= SIGNER_NOTICE_MS) {
        saidUnsigned = true;
        opts.logger.warn({ csr: ref.name, signer: csr.spec?.signerName }, `certificate signing request ${ref.name} is approved but not signed after ${formatDuration(waited)}: is a signer for ${csr.spec?.signerName} running (kube-controller-manager's csrsigning controller with --cluster-signing-cert-file)?`);
      }
    }
    if (Date.now() - start >= opts.timeoutMs) {
      throw new CertificateRequestError('timeout', `certificate signing request ${ref.name} got no certificate within ${formatDuration(opts.timeoutMs)}${csr ? (csr.status?.conditions?.some((c) => c.type === 'Approved') ? ' (approved, not signed)' : ' (not approved)') : ' (the API server did not answer)'}`);
    }
    await sleep(interval, undefined, opts.signal ? { signal: opts.signal } : {});
    interval = Math.min(poll.max, Math.round(interval * 1.5));
  }
}

function because(c: { reason?: string; message?: string }): string {
  const parts = [c.reason, c.message].filter((s): s is string => !!s);
  return parts.length ? `: ${parts.join(': ')}` : '';
}
