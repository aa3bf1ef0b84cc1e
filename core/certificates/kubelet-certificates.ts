/**
 * The kubelet's certificates from the cluster, wired as upstream's kubelet wires them:
 *
 * - at start, before anything else, the TLS bootstrap (bootstrapKubeconfig) makes sure the
 *   kubeconfig works; with rotateCertificates, the API clients then take their client
 *   certificate from the store's `kubelet-client-current.pem` (a kubeconfig with a certificate
 *   of its own seeds the store with it), so every later rotation reaches them;
 * - once the API clients exist, the client certificate manager renews that certificate with
 *   the node's own identity (the bootstrap kubeconfig only when it expired), and each new pair is
 *   taken up by the three API clients without a restart;
 * - with serverTLSBootstrap, the main port's serving certificate comes from the store
 *   (`kubelet-server-current.pem`) or is asked for (signer kubernetes.io/kubelet-serving, for the
 *   Node's addresses) and renewed likewise; each new pair is swapped into the running server.
 */
import fs from 'node:fs/promises';
import net from 'node:net';
import { createApiClient, type ApiClient } from '../apiserver/api-client.ts';
import { loadKubeconfig, type KubeconfigOverrides } from '../apiserver/kubeconfig.ts';
import type { KubeletConfig } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { bootstrapClientCertificate } from './bootstrap.ts';
import { CertificateManager, type RenewalClient } from './certificate-manager.ts';
import { CertificateStore } from './certificate-store.ts';
import type { CsrTemplate } from './csr.ts';
import type { CertificatePair } from './pem-pair.ts';
import { CLIENT_CERTIFICATE, SERVING_CERTIFICATE, nodeSubject } from './request-certificate.ts';

type ApiConfig = KubeletConfig & { kubeconfig: string };

/** What the API clients are built with, and what client rotation starts from. */
export interface ClientCredentials {
  /** The clients' kubeconfig overrides (the store's current pair, with rotateCertificates). */
  overrides: KubeconfigOverrides;
  /** With rotateCertificates and a client certificate to rotate. */
  rotation: { store: CertificateStore; initial: CertificatePair } | undefined;
}

/**
 * The TLS bootstrap (when configured), then what rotation needs. Throws KubeconfigError only
 * for a bootstrap kubeconfig that cannot work at all; the AbortError of `signal` when the
 * kubelet is stopped while it waits.
 */
export async function prepareClientCredentials(config: ApiConfig, logger: Logger, signal?: AbortSignal): Promise<ClientCredentials> {
  if (config.bootstrapKubeconfig) {
    await bootstrapClientCertificate({
      kubeconfig: config.kubeconfig,
      bootstrapKubeconfig: config.bootstrapKubeconfig,
      certDirectory: config.certDirectory,
      nodeName: config.nodeName,
      logger,
      ...(signal ? { signal } : {}),
    });
  }
  if (!config.rotateCertificates) return { overrides: {}, rotation: undefined };
  const log = logger.child({ component: 'certificate-manager', certificate: CLIENT_CERTIFICATE.what });
  const store = new CertificateStore(config.certDirectory, 'kubelet-client');
  let pair = await store.current().catch((err: unknown) => {
    log.warn({ err: errorMessage(err) }, 'the stored client certificate is not usable; rotation starts from the kubeconfig\'s');
    return undefined;
  });
  pair ??= await seedFromKubeconfig(config.kubeconfig, store, log).catch((err: unknown) => {
    log.warn({ err: errorMessage(err), certDirectory: config.certDirectory }, `rotateCertificates: cannot store the kubeconfig's client certificate in ${config.certDirectory}: ${errorMessage(err)}; the client certificate is not rotated`);
    return undefined;
  });
  if (!pair) return { overrides: {}, rotation: undefined };
  return { overrides: { clientCertificateFile: store.currentPath }, rotation: { store, initial: pair } };
}

/**
 * A kubeconfig with a client certificate of its own (not the store's link) becomes the store's
 * first pair, as upstream's manager stores its bootstrap pair; a kubeconfig with a token has
 * no certificate to rotate (one line says so).
 */
async function seedFromKubeconfig(kubeconfig: string, store: CertificateStore, log: Logger): Promise<CertificatePair | undefined> {
  // A kubeconfig that does not load fails the start right after, with its own message.
  let loaded;
  try {
    loaded = loadKubeconfig(kubeconfig);
  } catch {
    return undefined;
  }
  const user = loaded.user;
  if (loaded.identity.method !== 'client certificate' || !user) {
    log.info({ kubeconfig }, `rotateCertificates: kubeconfig ${kubeconfig} authenticates with ${loaded.identity.method === 'none' ? 'nothing' : `a ${loaded.identity.method}`}, not a client certificate: nothing to rotate`);
    return undefined;
  }
  const read = async (file: string | undefined, data: string | undefined) => (file ? fs.readFile(file, 'utf8') : Buffer.from(data ?? '', 'base64').toString('utf8'));
  const pair = await store.update(await read(user.certFile, user.certData), await read(user.keyFile, user.keyData));
  log.info({ kubeconfig, cert: store.currentPath }, `rotateCertificates: the client certificate of kubeconfig ${kubeconfig} is now ${store.currentPath}, from where it is renewed`);
  return pair;
}

/** Starts renewing the client certificate; each new pair is taken up by `clients`. */
export function startClientRotation(opts: {
  config: ApiConfig;
  rotation: NonNullable<ClientCredentials['rotation']>;
  /** The node's API clients (main first: renewals are asked with it). */
  clients: ApiClient[];
  logger: Logger;
}): CertificateManager {
  const { config, logger } = opts;
  const main = opts.clients[0]!;
  const manager = new CertificateManager({
    kind: CLIENT_CERTIFICATE,
    store: opts.rotation.store,
    template: () => nodeSubject(config.nodeName),
    initial: opts.rotation.initial,
    logger,
    // The node's own identity while its certificate is valid; once it expired, the bootstrap
    // kubeconfig's credentials if there are any (upstream's newClientsetFn).
    client: (current): RenewalClient => {
      if (current || !config.bootstrapKubeconfig) return { client: main, credentials: { file: config.kubeconfig, bootstrap: false } };
      const bootstrap = createApiClient({ kubeconfig: config.bootstrapKubeconfig, logger, requestTimeoutMs: 30_000, connectivity: main.connectivity });
      return { client: bootstrap, credentials: { file: config.bootstrapKubeconfig, bootstrap: true }, close: () => bootstrap.close() };
    },
    onRotated: (pair) => {
      for (const client of opts.clients) client.clientCertificateRotated({ user: pair.commonName, groups: pair.organizations, certNotAfter: pair.notAfter });
    },
  });
  manager.start();
  return manager;
}

/** serverTLSBootstrap: the store of serving pairs and its current pair, if one is valid (an expired one is never served). */
export async function servingCertificateAtStart(config: KubeletConfig, logger: Logger): Promise<{ store: CertificateStore; pair: CertificatePair | undefined }> {
  // tlsCertFile/tlsPrivateKeyFile serve until the first signed pair, as upstream's store falls back to them.
  const fallback = config.tlsCertFile && config.tlsPrivateKeyFile ? { certFile: config.tlsCertFile, keyFile: config.tlsPrivateKeyFile } : undefined;
  const store = new CertificateStore(config.certDirectory, 'kubelet-server', fallback);
  const pair = await store.current().catch((err: unknown) => {
    logger.warn({ err: errorMessage(err) }, 'the stored serving certificate is not usable; asking for a new one');
    return undefined;
  });
  return { store, pair: pair && pair.notAfter > Date.now() ? pair : undefined };
}

/** Starts getting and renewing the serving certificate, for the Node's addresses; each new pair goes to `onRotated`. */
export function startServingRotation(opts: {
  config: KubeletConfig;
  store: CertificateStore;
  initial: CertificatePair | undefined;
  client: ApiClient;
  /** The Node's addresses (InternalIP, Hostname, ...), as its status reports them. */
  addresses: () => Array<{ type: string; address: string }>;
  onRotated: (pair: CertificatePair) => void;
  logger: Logger;
}): CertificateManager {
  const manager = new CertificateManager({
    kind: SERVING_CERTIFICATE,
    store: opts.store,
    template: () => servingTemplate(opts.config.nodeName, opts.addresses()),
    initial: opts.initial,
    logger: opts.logger,
    client: () => ({ client: opts.client, credentials: { file: opts.config.kubeconfig ?? 'the kubeconfig', bootstrap: false } }),
    onRotated: opts.onRotated,
  });
  manager.start();
  return manager;
}

/**
 * A serving certificate's request: the node's subject, the host names (Hostname, InternalDNS,
 * ExternalDNS addresses) as DNS names and the IP addresses; none while the node has no address
 * (upstream's getTemplate answers nil then).
 */
export function servingTemplate(nodeName: string, addresses: Array<{ type: string; address: string }>): CsrTemplate | undefined {
  const dnsNames = new Set<string>();
  const ipAddresses = new Set<string>();
  for (const { type, address } of addresses) {
    if (!address) continue;
    if ((type === 'InternalIP' || type === 'ExternalIP') && net.isIP(address)) ipAddresses.add(address);
    else if (type === 'Hostname' || type === 'InternalDNS' || type === 'ExternalDNS') dnsNames.add(address);
  }
  if (dnsNames.size + ipAddresses.size === 0) return undefined;
  return { ...nodeSubject(nodeName), dnsNames: [...dnsNames], ipAddresses: [...ipAddresses] };
}
