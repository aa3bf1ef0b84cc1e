/**
 * The main port's TLS: the serving pair (tlsCertFile / tlsPrivateKeyFile, or a self-signed pair
 * made once in certDirectory as upstream's kubelet does: `kubelet.crt`, `kubelet.key`; with
 * serverTLSBootstrap the pair the cluster signed, or none yet), the CA client certificates are
 * checked against, and the protocol limits (tlsMinVersion, tlsCipherSuites with upstream's names).
 */
import { X509Certificate, createPrivateKey } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import type { KubeletConfig } from '../config/types.ts';
import { TLS_VERSIONS, opensslCiphers } from '../config/tls-names.ts';
import { ConfigError, errorMessage } from '../errors.ts';
import type { Logger } from '../logger.ts';
import { generateSelfSigned } from './self-signed.ts';

export interface ServingTls {
  /** The serving pair; undefined while a serverTLSBootstrap certificate waits for approval (handshakes fail, as upstream's). */
  key: Buffer | undefined;
  cert: Buffer | undefined;
  /** Where the certificate came from (for the start log). */
  certFile: string | undefined;
  /** The client CA bundle, when client certificates authenticate. */
  clientCA: Buffer | undefined;
  /** Where the client CA came from. */
  clientCAFrom: string | undefined;
  minVersion: tls.SecureVersion | undefined;
  ciphers: string | undefined;
}

/** The node's names and addresses for a self-signed certificate. */
export function servingHosts(config: Pick<KubeletConfig, 'nodeName' | 'nodeIP' | 'address'>): string[] {
  const hosts = [config.nodeName, os.hostname().toLowerCase(), 'localhost', config.nodeIP, '127.0.0.1'];
  if (config.address && config.address !== '0.0.0.0' && config.address !== '::') hosts.push(config.address);
  return [...new Set(hosts.filter(Boolean))];
}

async function readPem(file: string, field: string): Promise<Buffer> {
  try {
    return await fs.readFile(file);
  } catch (err) {
    throw new ConfigError(`${field} ${file}: cannot read it: ${errorMessage(err)}`);
  }
}

/** The configured pair, or the self-signed one in certDirectory (made on first use, kept after). */
async function servingPair(config: KubeletConfig, logger: Logger): Promise<{ key: Buffer; cert: Buffer; certFile: string }> {
  if (config.tlsCertFile && config.tlsPrivateKeyFile) {
    // One after the other: when both are missing, the error names the certificate every time.
    const cert = await readPem(config.tlsCertFile, 'tlsCertFile');
    const key = await readPem(config.tlsPrivateKeyFile, 'tlsPrivateKeyFile');
    try {
      tls.createSecureContext({ cert, key });
    } catch (err) {
      throw new ConfigError(`tlsCertFile ${config.tlsCertFile} and tlsPrivateKeyFile ${config.tlsPrivateKeyFile}: not a usable certificate and key: ${errorMessage(err)}`);
    }
    return { cert, key, certFile: config.tlsCertFile };
  }
  const certFile = path.join(config.certDirectory, 'kubelet.crt');
  const keyFile = path.join(config.certDirectory, 'kubelet.key');
  try {
    const [cert, key] = await Promise.all([fs.readFile(certFile), fs.readFile(keyFile)]);
    tls.createSecureContext({ cert, key });
    new X509Certificate(cert);
    createPrivateKey(key);
    return { cert, key, certFile };
  } catch {
    // Missing or unusable: made (again) below.
  }
  const hosts = servingHosts(config);
  const pair = await generateSelfSigned(hosts);
  await fs.mkdir(config.certDirectory, { recursive: true, mode: 0o755 });
  // The key first and never readable by others; each file appears whole (rename).
  await writeAtomic(keyFile, pair.key, 0o600);
  await writeAtomic(certFile, pair.cert, 0o644);
  logger.info({ cert: certFile, hosts }, 'made a self-signed serving certificate for the main port');
  return { cert: Buffer.from(pair.cert), key: Buffer.from(pair.key), certFile };
}

async function writeAtomic(file: string, data: string, mode: number): Promise<void> {
  const tmp = `${file}.tmp-${process.pid}`;
  await fs.writeFile(tmp, data, { mode });
  await fs.chmod(tmp, mode);
  await fs.rename(tmp, file);
}

/** The CA client certificates must chain to: clientCAFile, else the kubeconfig's CA in API-server mode. */
async function clientCA(config: KubeletConfig): Promise<{ ca: Buffer; from: string } | undefined> {
  const file = config.authentication.x509ClientCAFile;
  if (file) {
    const ca = await readPem(file, 'authentication.x509.clientCAFile');
    try {
      tls.createSecureContext({ ca });
    } catch (err) {
      throw new ConfigError(`authentication.x509.clientCAFile ${file}: not a PEM CA bundle: ${errorMessage(err)}`);
    }
    return { ca, from: file };
  }
  if (!config.kubeconfig) return undefined;
  // Loaded here, not at the top: a static-only node never needs the API side.
  const { loadKubeconfig } = await import('../apiserver/kubeconfig.ts');
  const cluster = loadKubeconfig(config.kubeconfig).cluster;
  if (cluster?.caData) return { ca: Buffer.from(cluster.caData, 'base64'), from: `the certificate authority of kubeconfig ${config.kubeconfig}` };
  if (cluster?.caFile) return { ca: await readPem(cluster.caFile, 'the kubeconfig certificate-authority'), from: cluster.caFile };
  return undefined;
}

/**
 * Everything the main port's TLS server needs, read (or made) from the config. `clusterSigned`:
 * serverTLSBootstrap's pair at start (from the certificate store), which replaces the configured
 * or self-signed one; undefined inside it while none was issued yet.
 */
export async function loadServingTls(config: KubeletConfig, logger: Logger, clusterSigned?: { pair: { certPem: string; keyPem: string; source: string } | undefined }): Promise<ServingTls> {
  const signed = clusterSigned && { cert: clusterSigned.pair && Buffer.from(clusterSigned.pair.certPem), key: clusterSigned.pair && Buffer.from(clusterSigned.pair.keyPem), certFile: clusterSigned.pair?.source };
  const [pair, ca] = await Promise.all([signed ?? servingPair(config, logger), clientCA(config)]);
  return {
    ...pair,
    clientCA: ca?.ca,
    clientCAFrom: ca?.from,
    minVersion: config.tlsMinVersion ? TLS_VERSIONS[config.tlsMinVersion] : undefined,
    ciphers: config.tlsCipherSuites.length ? opensslCiphers(config.tlsCipherSuites) : undefined,
  };
}
