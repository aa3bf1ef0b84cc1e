/**
 * Keeps one of the kubelet's certificates current, as upstream's certificate manager
 * (client-go util/certificate) does: it renews the certificate at a random point between 70 %
 * and 90 % of its lifetime (so nodes that joined together do not all renew together), at once
 * when there is none or it no longer fits the template (a serving certificate whose node address
 * changed), with a new key each time. A renewal that fails is one log line and is tried again
 * with back-off (2 s doubling to 32 s, upstream's); a request that waits is waited for (15
 * minutes per attempt, upstream's), and a restart takes up the same request. Each new pair is
 * stored (certificate-store.ts) and handed to `onRotated`, which makes the users take it up.
 */
import type { ApiClient } from '../apiserver/api-client.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { formatDuration } from '../util/duration.ts';
import { InterruptibleSleep } from '../util/interruptible-sleep.ts';
import type { CertificateStore } from './certificate-store.ts';
import type { CsrTemplate } from './csr.ts';
import { expiresAt, type CertificatePair } from './pem-pair.ts';
import { requestCertificate, type CertificateKind } from './request-certificate.ts';
import { describeRequestFailure } from './request-failure.ts';
import { RetryDelay } from './retry-delay.ts';

/** Upstream's certificateWaitTimeout: how long one renewal waits for its certificate. */
const WAIT_TIMEOUT_MS = 15 * 60_000;
/**
 * How often a manager waiting for its deadline looks again: whether the certificate still fits
 * its template (the node's addresses changed) and at the clock (a deadline months away is
 * reached in steps: timers cap at ~24.8 days, and the clock may jump).
 */
const CHECK_MS = 10_000;

/**
 * When to renew a certificate valid from notBefore to notAfter: notBefore plus 70 % to 90 % of
 * its lifetime, `random` (0..1) choosing where (upstream's jitteryDuration).
 */
export function rotationDeadline(notBefore: number, notAfter: number, random: number): number {
  const total = notAfter - notBefore;
  return notBefore + total * (0.7 + 0.2 * random);
}

/** The client a renewal is asked with, and how to let it go afterwards. */
export interface RenewalClient {
  client: ApiClient;
  /** What `describeRequestFailure` names as the credentials. */
  credentials: { file: string; bootstrap: boolean };
  close?(): void;
}

export interface CertificateManagerOptions {
  kind: CertificateKind;
  store: CertificateStore;
  /** What to ask for; undefined: nothing yet (a serving certificate before the node's addresses are known). */
  template: () => CsrTemplate | undefined;
  /** The client to ask with, given the current pair (undefined when there is none or it expired); may throw (a failed attempt). */
  client: (current: CertificatePair | undefined) => RenewalClient;
  /** The pair to start from (the store's current one, or a configured pair). */
  initial: CertificatePair | undefined;
  /** Takes up a new pair (swaps the serving context, refreshes the API clients). Must not throw. */
  onRotated: (pair: CertificatePair) => void;
  logger: Logger;
  /** Tests: the randomness of the deadline, the wait's bound, the back-off and poll intervals. */
  random?: () => number;
  waitTimeoutMs?: number;
  retry?: RetryDelay;
  pollMs?: { initial: number; max: number };
  now?: () => number;
}

export class CertificateManager {
  private pair: CertificatePair | undefined;
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly pause = new InterruptibleSleep();
  private readonly abort = new AbortController();
  private running: Promise<void> | undefined;
  /** Renewals done (for tests and the log). */
  rotations = 0;

  constructor(private readonly opts: CertificateManagerOptions) {
    this.pair = opts.initial;
    this.now = opts.now ?? Date.now;
    this.log = opts.logger.child({ component: 'certificate-manager', certificate: opts.kind.what });
  }

  /** The pair in use; undefined when there is none yet or it expired (as upstream's Current()). */
  current(): CertificatePair | undefined {
    return this.pair && this.pair.notAfter > this.now() ? this.pair : undefined;
  }

  /** The pair in use even when it expired (for the kubelet's own messages). */
  latest(): CertificatePair | undefined {
    return this.pair;
  }

  start(): void {
    this.running ??= this.run().catch((err: unknown) => {
      if (!this.abort.signal.aborted) this.log.error({ err: errorMessage(err) }, `${this.opts.kind.what} rotation stopped (a bug: please report it)`);
    });
  }

  async stop(): Promise<void> {
    this.abort.abort();
    this.pause.wake();
    await this.running;
  }

  /** When the current pair is renewed: at once when there is none or it does not fit the template. */
  private deadline(): number {
    const pair = this.pair;
    if (!pair || !fitsTemplate(pair, this.opts.template())) return this.now();
    return rotationDeadline(pair.notBefore, pair.notAfter, (this.opts.random ?? Math.random)());
  }

  private async run(): Promise<void> {
    const { kind } = this.opts;
    const signal = this.abort.signal;
    while (!signal.aborted) {
      const deadline = this.deadline();
      if (this.pair && deadline > this.now()) {
        this.log.info({ notAfter: expiresAt(this.pair), rotationAt: new Date(deadline).toISOString(), cert: this.pair.source }, `${kind.what} valid until ${expiresAt(this.pair)}; renewal at ${new Date(deadline).toISOString()}`);
      }
      // Asleep until the deadline, in steps; a template that stops fitting (new addresses) cuts it short.
      while (!signal.aborted && this.now() < deadline) {
        await this.pause.sleep(Math.min(CHECK_MS, Math.max(0, deadline - this.now())));
        if (this.pair && !fitsTemplate(this.pair, this.opts.template())) break;
      }
      if (signal.aborted) return;
      const template = this.opts.template();
      if (!template) {
        // Nothing to ask for yet: look again shortly.
        await this.pause.sleep(1000);
        continue;
      }
      await this.renew(template);
    }
  }

  /** Renews until it succeeds or the manager stops. */
  private async renew(template: CsrTemplate): Promise<void> {
    const { kind } = this.opts;
    const signal = this.abort.signal;
    const retry = this.opts.retry ?? new RetryDelay();
    while (!signal.aborted) {
      let renewal: RenewalClient | undefined;
      try {
        renewal = this.opts.client(this.current());
        const pair = await requestCertificate({
          client: renewal.client,
          store: this.opts.store,
          kind,
          template,
          timeoutMs: this.opts.waitTimeoutMs ?? WAIT_TIMEOUT_MS,
          signal,
          logger: this.log,
          ...(this.opts.pollMs ? { pollMs: this.opts.pollMs } : {}),
        });
        this.pair = pair;
        this.rotations++;
        try {
          this.opts.onRotated(pair);
        } catch (err) {
          this.log.error({ err: errorMessage(err) }, `taking up the new ${kind.what} failed (a bug: please report it)`);
        }
        return;
      } catch (err) {
        if (signal.aborted) return;
        const delay = retry.next();
        const failure = renewal ? describeRequestFailure(err, renewal.credentials) : errorMessage(err);
        this.log.warn({ retryInMs: delay }, `${kind.what} renewal failed: ${failure}; retrying in ${formatDuration(delay)}`);
        await this.pause.sleep(delay);
      } finally {
        renewal?.close?.();
      }
    }
  }
}

/** The pair has the template's common name, organizations and every name and address it asks for (upstream certSatisfiesTemplate). */
export function fitsTemplate(pair: CertificatePair, template: CsrTemplate | undefined): boolean {
  if (!template) return true;
  if (pair.commonName !== template.commonName) return false;
  if (!template.organizations.every((o) => pair.organizations.includes(o))) return false;
  const sans = (pair.cert.subjectAltName ?? '').split(', ');
  const dns = new Set(sans.filter((s) => s.startsWith('DNS:')).map((s) => s.slice(4)));
  const ips = new Set(sans.filter((s) => s.startsWith('IP Address:')).map((s) => normalizeIp(s.slice(11))));
  return (template.dnsNames ?? []).every((d) => dns.has(d)) && (template.ipAddresses ?? []).every((ip) => ips.has(normalizeIp(ip)));
}

/** IPv6 addresses as Node prints them in subjectAltName (upper case, no zero compression) compared by value. */
function normalizeIp(ip: string): string {
  if (!ip.includes(':')) return ip;
  const [head = '', tail = ''] = ip.split('::');
  const h = head ? head.split(':') : [];
  const t = ip.includes('::') ? (tail ? tail.split(':') : []) : [];
  return [...h, ...Array(8 - h.length - t.length).fill('0'), ...t].map((g) => parseInt(g, 16).toString(16)).join(':');
}
