/**
 * The kubeconfig a TLS bootstrap leaves behind (upstream writeKubeconfigFromBootstrapping): the
 * bootstrap kubeconfig's cluster (server, CA file or data, TLS options), and as the user the
 * certificate store's current pair, named by its link, for both the certificate and the key, so a
 * rotated pair is used without touching the file again.
 */
import type { Cluster } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import fs from 'node:fs/promises';
import path from 'node:path';

/** Writes `file` whole (a temporary file renamed), mode 0600: it names the node's private key. */
export async function writeNodeKubeconfig(file: string, cluster: Cluster, pemPath: string): Promise<void> {
  const doc = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{
      name: 'default-cluster',
      cluster: {
        server: cluster.server,
        ...(cluster.caFile ? { 'certificate-authority': cluster.caFile } : cluster.caData ? { 'certificate-authority-data': cluster.caData } : {}),
        ...(cluster.skipTLSVerify ? { 'insecure-skip-tls-verify': true } : {}),
        ...(cluster.tlsServerName ? { 'tls-server-name': cluster.tlsServerName } : {}),
      },
    }],
    contexts: [{ name: 'default-context', context: { cluster: 'default-cluster', namespace: 'default', user: 'default-auth' } }],
    'current-context': 'default-context',
    preferences: {},
    users: [{ name: 'default-auth', user: { 'client-certificate': pemPath, 'client-key': pemPath } }],
  };
  await fs.mkdir(path.dirname(file), { recursive: true });
  const tmp = `${file}.tmp-${process.pid}`;
  await fs.writeFile(tmp, yaml.dump(doc, { lineWidth: -1 }), { mode: 0o600 });
  await fs.chmod(tmp, 0o600);
  await fs.rename(tmp, file);
}
