import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { TLSSocket } from 'node:tls';
import { run } from '../../tools/node-env/util.ts';
import { PKI_DIR, sendJSON, startFakeApiServer, status, type FakeApiServer } from './fake-apiserver.ts';

/**
 * A scripted certificates.k8s.io/v1 API for unit tests of the TLS bootstrap and rotation: it
 * keeps the CertificateSigningRequests it is sent, answers AlreadyExists for a name it has, and
 * approves and signs each new request, leaves it pending, denies it or refuses the credentials,
 * as `mode` says. The signer is real: openssl signs with a CA made for the test, copying the
 * request's extensions (its SANs). Who asked is recorded: the bearer token or the client
 * certificate's CN. The real flow runs against the real control plane in the integration tests.
 */
export interface FakeCsrApi {
  server: FakeApiServer;
  url: string;
  /** The signer's CA certificate (the fake server's own chains to the test PKI's CA: fakeApiKubeconfig trusts that). */
  caFile: string;
  /** What happens to a request: signed at once, left pending, denied, every request refused (401), or taken for system:anonymous's (403). */
  mode: 'approve' | 'pending' | 'deny' | 'unauthorized' | 'anonymous';
  /** Each POST: the name asked for, who asked, and the request PEM. */
  posts: Array<{ name: string; token: string | undefined; clientCN: string | undefined; csrPem: string; signerName: string; usages: string[] }>;
  /** Every request: its path and the serial number of the client certificate presented (none: undefined). */
  seen: Array<{ method: string; path: string; clientSerial: string | undefined }>;
  /** The objects, by name. */
  csrs: Map<string, Record<string, any>>;
  /** Approves and signs a pending request (for `pending`). */
  approve(name: string): Promise<void>;
  /** Validity of what the signer signs, in days. */
  days: number;
  close(): Promise<void>;
}

export async function startFakeCsrApi(): Promise<FakeCsrApi> {
  const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-fake-csr-'));
  const caKey = path.join(dir, 'ca.key');
  const caFile = path.join(dir, 'ca.crt');
  await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', caKey, '-out', caFile, '-subj', '/CN=fake-cluster-ca', '-days', '2']);
  let serial = 0;
  const sign = async (csrPem: string): Promise<string> => {
    const n = ++serial;
    const csrFile = path.join(dir, `${n}.csr`);
    const certFile = path.join(dir, `${n}.crt`);
    await fs.writeFile(csrFile, csrPem);
    await run('openssl', ['x509', '-req', '-in', csrFile, '-CA', caFile, '-CAkey', caKey, '-set_serial', String(1000 + n), '-days', String(api.days), '-copy_extensions', 'copyall', '-out', certFile]);
    return fs.readFile(certFile, 'utf8');
  };
  const condition = (type: string, reason: string) => ({ type, status: 'True', reason, message: `${type.toLowerCase()} by the fake API`, lastUpdateTime: new Date().toISOString() });
  let uid = 0;
  const api: FakeCsrApi = {
    server: undefined as unknown as FakeApiServer,
    url: '',
    caFile,
    mode: 'approve',
    posts: [],
    seen: [],
    csrs: new Map(),
    days: 1,
    async approve(name) {
      const obj = api.csrs.get(name)!;
      const cert = await sign(Buffer.from(obj.spec.request, 'base64').toString('utf8'));
      obj.status = { conditions: [condition('Approved', 'AdminApproved')], certificate: Buffer.from(cert).toString('base64') };
    },
    async close() {
      await api.server.close();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
  api.server = await startFakeApiServer(async (req, res) => {
    const token = /^Bearer (.+)$/.exec(req.headers.authorization ?? '')?.[1];
    const peer = (req.socket as TLSSocket).getPeerCertificate?.();
    const clientCN = peer && Object.keys(peer).length ? (peer.subject?.CN as string | undefined) : undefined;
    api.seen.push({ method: req.method ?? '', path: req.url, clientSerial: peer && Object.keys(peer).length ? peer.serialNumber : undefined });
    if (api.mode === 'unauthorized') return sendJSON(res, 401, status(401, 'Unauthorized', 'Unauthorized'));
    if (api.mode === 'anonymous' && req.method === 'POST') return sendJSON(res, 403, status(403, 'Forbidden', 'certificatesigningrequests.certificates.k8s.io is forbidden: User "system:anonymous" cannot create resource "certificatesigningrequests" in API group "certificates.k8s.io" at the cluster scope'));
    const base = '/apis/certificates.k8s.io/v1/certificatesigningrequests';
    const url = new URL(req.url, 'https://fake');
    if (req.method === 'POST' && url.pathname === '/apis/authentication.k8s.io/v1/selfsubjectreviews') {
      return sendJSON(res, 201, { apiVersion: 'authentication.k8s.io/v1', kind: 'SelfSubjectReview', status: { userInfo: { username: token ? `system:bootstrap:${token.split('.')[0]}` : clientCN, groups: [] } } });
    }
    if (req.method === 'POST' && url.pathname === base) {
      const obj = JSON.parse(req.body) as Record<string, any>;
      const name: string = obj.metadata.name ?? `csr-${Math.random().toString(36).slice(2, 7)}`;
      const csrPem = Buffer.from(obj.spec.request, 'base64').toString('utf8');
      api.posts.push({ name, token, clientCN, csrPem, signerName: obj.spec.signerName, usages: obj.spec.usages });
      if (api.csrs.has(name)) return sendJSON(res, 409, status(409, 'AlreadyExists', `certificatesigningrequests.certificates.k8s.io "${name}" already exists`, { name, kind: 'certificatesigningrequests' }));
      const stored = { ...obj, metadata: { name, uid: `uid-${++uid}` }, spec: { ...obj.spec, username: token ? `system:bootstrap:${token.split('.')[0]}` : clientCN }, status: {} };
      api.csrs.set(name, stored);
      if (api.mode === 'approve') await api.approve(name);
      if (api.mode === 'deny') stored.status = { conditions: [condition('Denied', 'NotMyNode')] };
      return sendJSON(res, 201, stored);
    }
    const m = new RegExp(`^${base}/([^/]+)$`).exec(url.pathname);
    if (req.method === 'GET' && m) {
      const obj = api.csrs.get(decodeURIComponent(m[1]!));
      return obj ? sendJSON(res, 200, obj) : sendJSON(res, 404, status(404, 'NotFound', `certificatesigningrequests.certificates.k8s.io "${m[1]}" not found`));
    }
    sendJSON(res, 404, status(404, 'NotFound', `the fake CSR API has no ${req.method} ${url.pathname}`));
  });
  api.url = api.server.url;
  return api;
}

/**
 * A kubeconfig for the fake API: its server and CA (the fake server's certificate chains to the
 * test PKI's CA), with a bootstrap token or the given client certificate files.
 */
export async function fakeApiKubeconfig(dir: string, url: string, user: { token: string } | { certFile: string; keyFile: string }): Promise<string> {
  const caFile = path.join(PKI_DIR, 'ca.crt');
  const file = path.join(dir, 'token' in user ? 'bootstrap.kubeconfig' : 'node.kubeconfig');
  const u = 'token' in user ? `    token: ${user.token}\n` : `    client-certificate: ${user.certFile}\n    client-key: ${user.keyFile}\n`;
  await fs.writeFile(file, `apiVersion: v1
kind: Config
clusters:
- name: fake
  cluster:
    server: ${url}
    certificate-authority: ${caFile}
users:
- name: u
  user:
${u}contexts:
- name: c
  context: {cluster: fake, user: u}
current-context: c
`);
  return file;
}
