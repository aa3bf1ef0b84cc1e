import { readFile, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { run } from '../../tools/node-env/util.ts';

/**
 * The counting proxy's own certificates, made with openssl in the run's directory: a CA,
 * and a serving certificate for 127.0.0.1 signed by it. The kubelet's kubeconfig names the CA
 * as its `certificate-authority`, so the kubelet verifies the proxy as it would verify the API
 * server (nothing runs with verification off).
 */
export interface ProxyPki {
  caFile: string;
  cert: Buffer;
  key: Buffer;
}

export async function makeProxyPki(dir: string): Promise<ProxyPki> {
  const f = (name: string) => path.join(dir, name);
  const ssl = (args: string[]) => run('openssl', args, { timeoutMs: 30_000 });
  await writeFile(f('server.ext'), [
    'basicConstraints = CA:FALSE',
    'keyUsage = critical,digitalSignature,keyEncipherment',
    'extendedKeyUsage = serverAuth',
    'subjectAltName = IP:127.0.0.1,DNS:localhost',
    '',
  ].join('\n'));
  // EC keys: quick to make and to handshake with; both kubelets' TLS stacks take P-256.
  await ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('ca.key')]);
  await ssl(['req', '-x509', '-new', '-key', f('ca.key'), '-subj', '/CN=kts-bench-api-proxy-ca', '-days', '2', '-out', f('ca.crt'),
    '-addext', 'basicConstraints=critical,CA:TRUE', '-addext', 'keyUsage=critical,keyCertSign,cRLSign']);
  await ssl(['ecparam', '-name', 'prime256v1', '-genkey', '-noout', '-out', f('server.key')]);
  await ssl(['req', '-new', '-key', f('server.key'), '-subj', '/CN=kts-bench-api-proxy', '-out', f('server.csr')]);
  await ssl(['x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-days', '2', '-extfile', f('server.ext'), '-out', f('server.crt')]);
  return { caFile: f('ca.crt'), cert: await readFile(f('server.crt')), key: await readFile(f('server.key')) };
}
