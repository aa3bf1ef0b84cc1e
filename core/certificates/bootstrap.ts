/**
 * The TLS bootstrap, as upstream's kubelet does it at start (pkg/kubelet/certificate/bootstrap,
 * LoadClientCert): with a bootstrap kubeconfig, and a kubeconfig that is missing, unusable, or
 * whose client certificate expired, the kubelet asks the cluster for a client certificate with
 * the bootstrap kubeconfig's credentials (a bootstrap token, as `kubeadm join` writes it), stores
 * it in certDirectory and writes the kubeconfig pointing at it. A valid kubeconfig is used as it
 * is (the bootstrap kubeconfig is not even read: kubeadm deletes it after the join), and a valid
 * stored certificate is reused with no new request.
 *
 * Nothing but a bootstrap kubeconfig that cannot work at all stops the start (a
 * KubeconfigError naming the file, as for the kubeconfig): a refused token, a denied request, a
 * signer or an API server that does not answer are one line each, retried with back-off until
 * the certificate comes or the kubelet is stopped. The file is read again on each attempt, so
 * an operator can put a new token in it while the kubelet waits.
 */
import fs from 'node:fs';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../apiserver/api-client.ts';
import { ConnectivityTracker } from '../apiserver/connectivity.ts';
import { KubeconfigError, loadKubeconfig, type LoadedKubeconfig } from '../apiserver/kubeconfig.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { formatDuration } from '../util/duration.ts';
import { CertificateStore } from './certificate-store.ts';
import { writeNodeKubeconfig } from './node-kubeconfig.ts';
import { expiresAt } from './pem-pair.ts';
import { CLIENT_CERTIFICATE, nodeSubject, requestCertificate } from './request-certificate.ts';
import { describeRequestFailure } from './request-failure.ts';
import { RetryDelay } from './retry-delay.ts';

/** Upstream's bound on one bootstrap request's wait (an hour); after it the request is waited for again. */
const BOOTSTRAP_WAIT_MS = 3600_000;

export interface BootstrapOptions {
  kubeconfig: string;
  bootstrapKubeconfig: string;
  certDirectory: string;
  nodeName: string;
  logger: Logger;
  /** Aborted when the kubelet stops while it waits. */
  signal?: AbortSignal;
  /** Tests: the wait's bound, the back-off and the poll intervals. */
  waitTimeoutMs?: number;
  retry?: RetryDelay;
  pollMs?: { initial: number; max: number };
}

/** What the bootstrap found or did. */
export type BootstrapResult = 'kubeconfig valid' | 'stored certificate reused' | 'new certificate';

/**
 * Why the kubeconfig needs a bootstrap, or undefined when it is usable as it is: it exists,
 * loads, and has a client certificate that has not expired (upstream isClientConfigStillValid;
 * a kubeconfig without a client certificate is replaced too, as upstream does).
 */
export function kubeconfigNeedsBootstrap(file: string, now = Date.now()): string | undefined {
  if (!fs.existsSync(file)) return 'it does not exist';
  let loaded: LoadedKubeconfig;
  try {
    loaded = loadKubeconfig(file);
  } catch (err) {
    // Without the error's own `kubeconfig FILE: `: the bootstrap's line names the file already.
    return errorMessage(err).replace(`kubeconfig ${path.resolve(file)}: `, '');
  }
  if (loaded.identity.method !== 'client certificate') return `it has no client certificate (it authenticates with ${loaded.identity.method === 'none' ? 'nothing' : `a ${loaded.identity.method}`})`;
  if (loaded.identity.certNotAfter !== undefined && loaded.identity.certNotAfter <= now) return `its client certificate expired at ${new Date(loaded.identity.certNotAfter).toISOString()}`;
  return undefined;
}

export async function bootstrapClientCertificate(opts: BootstrapOptions): Promise<BootstrapResult> {
  const log = opts.logger.child({ component: 'tls-bootstrap' });
  const why = kubeconfigNeedsBootstrap(opts.kubeconfig);
  if (why === undefined) {
    log.debug({ kubeconfig: opts.kubeconfig }, 'the kubeconfig is valid: no TLS bootstrap');
    return 'kubeconfig valid';
  }
  // The only failure that stops the start: a bootstrap kubeconfig that cannot work at all.
  const bootstrap = loadKubeconfig(opts.bootstrapKubeconfig);
  const cluster = bootstrap.cluster;
  const store = new CertificateStore(opts.certDirectory, 'kubelet-client');
  const stored = await store.current().catch((err: unknown) => {
    log.warn({ err: errorMessage(err) }, 'the stored client certificate is not usable; asking for a new one');
    return undefined;
  });
  const subject = nodeSubject(opts.nodeName);
  if (stored && stored.notAfter > Date.now() && stored.commonName === subject.commonName) {
    await writeNodeKubeconfig(opts.kubeconfig, cluster, store.currentPath).catch((err: unknown) => {
      throw new KubeconfigError(opts.kubeconfig, `cannot write it: ${errorMessage(err)}`, { cause: err });
    });
    log.info({ kubeconfig: opts.kubeconfig, why, cert: store.currentPath, notAfter: expiresAt(stored) }, `TLS bootstrap: kubeconfig ${opts.kubeconfig} ${why.startsWith('it does not exist') ? 'was missing' : 'was not usable'}; wrote it with the stored client certificate (valid until ${expiresAt(stored)}), no new request`);
    return 'stored certificate reused';
  }
  log.info({ kubeconfig: opts.kubeconfig, why, bootstrapKubeconfig: bootstrap.file, server: bootstrap.server }, `TLS bootstrap: kubeconfig ${opts.kubeconfig}: ${why}; asking ${bootstrap.server} for a client certificate for node ${opts.nodeName} with ${bootstrap.file}`);
  const retry = opts.retry ?? new RetryDelay();
  // One outage line per server for all attempts, not one per attempt's client.
  const trackers = new Map<string, ConnectivityTracker>();
  for (;;) {
    let client: ApiClient | undefined;
    try {
      // Read again on every attempt: a new token written into the file is used at once.
      const current = loadKubeconfig(opts.bootstrapKubeconfig);
      const connectivity = trackers.get(current.server) ?? new ConnectivityTracker(current.server, log);
      trackers.set(current.server, connectivity);
      client = new ApiClient(current, { logger: log, requestTimeoutMs: 30_000, connectivity });
      await client.resolveIdentity();
      const pair = await requestCertificate({
        client,
        store,
        kind: CLIENT_CERTIFICATE,
        template: subject,
        timeoutMs: opts.waitTimeoutMs ?? BOOTSTRAP_WAIT_MS,
        logger: log,
        ...(opts.signal ? { signal: opts.signal } : {}),
        ...(opts.pollMs ? { pollMs: opts.pollMs } : {}),
      });
      await writeNodeKubeconfig(opts.kubeconfig, client.kubeconfig.cluster, store.currentPath);
      log.info({ kubeconfig: opts.kubeconfig, cert: store.currentPath, notAfter: expiresAt(pair) }, `TLS bootstrap done: wrote kubeconfig ${opts.kubeconfig} with client certificate ${store.currentPath}`);
      return 'new certificate';
    } catch (err) {
      if (opts.signal?.aborted) throw opts.signal.reason ?? err;
      const delay = retry.next();
      log.warn({ bootstrapKubeconfig: opts.bootstrapKubeconfig, retryInMs: delay }, `TLS bootstrap: ${describeRequestFailure(err, { file: opts.bootstrapKubeconfig, bootstrap: true })}; retrying in ${formatDuration(delay)}`);
      await sleep(delay, undefined, opts.signal ? { signal: opts.signal } : {});
    } finally {
      client?.close();
    }
  }
}
