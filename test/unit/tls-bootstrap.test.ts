import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, which } from '../../tools/node-env/util.ts';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { KubeconfigError, loadKubeconfig } from '../../core/apiserver/kubeconfig.ts';
import { bootstrapClientCertificate, kubeconfigNeedsBootstrap } from '../../core/certificates/bootstrap.ts';
import { CertificateManager } from '../../core/certificates/certificate-manager.ts';
import { CertificateStore } from '../../core/certificates/certificate-store.ts';
import { prepareClientCredentials, startClientRotation } from '../../core/certificates/kubelet-certificates.ts';
import type { CertificatePair } from '../../core/certificates/pem-pair.ts';
import { CLIENT_CERTIFICATE, nodeSubject } from '../../core/certificates/request-certificate.ts';
import { RetryDelay } from '../../core/certificates/retry-delay.ts';
import { generateSelfSigned } from '../../core/server/self-signed.ts';
import { silentLogger } from '../../core/logger.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { fakeApiKubeconfig, startFakeCsrApi, type FakeCsrApi } from '../support/fake-csr-api.ts';
import { testConfig } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';
import { realPartMissing } from '../support/real-part.ts';

const TOKEN = 'abcdef.0123456789abcdef';
/** Fast polls and back-off: the flow is the same, only the waits are shorter. */
const FAST = { pollMs: { initial: 20, max: 50 }, retry: () => new RetryDelay(50, 200) };

/**
 * The TLS bootstrap and the client certificate's rotation against a scripted CSR API whose
 * signer is real (openssl): what is asked, with which credentials, what is stored and written,
 * and what happens on a restart, a denial or a refused token. The real control plane does the
 * same in test/integration/tls-bootstrap.test.ts.
 */
describe('TLS bootstrap and client certificate rotation (scripted CSR API)', function () {
  this.timeout(30_000);
  let api: FakeCsrApi;
  let dir: string;
  let bootstrapKubeconfig: string;
  const clients: ApiClient[] = [];
  const managers: CertificateManager[] = [];

  before(function () {
    if (!which('openssl')) realPartMissing(this, 'no openssl', 'the fake signer uses it: install the Debian package openssl');
  });
  beforeEach(async function () {
    api = await startFakeCsrApi();
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-tlsb-'));
    bootstrapKubeconfig = await fakeApiKubeconfig(dir, api.url, { token: TOKEN });
  });
  afterEach(async function () {
    for (const m of managers.splice(0)) await m.stop();
    for (const c of clients.splice(0)) c.close();
    await api.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const opts = (extra: Partial<Parameters<typeof bootstrapClientCertificate>[0]> = {}) => ({
    kubeconfig: path.join(dir, 'kubelet.conf'),
    bootstrapKubeconfig,
    certDirectory: path.join(dir, 'pki'),
    nodeName: 'n1',
    logger: silentLogger(),
    pollMs: FAST.pollMs,
    retry: FAST.retry(),
    ...extra,
  });

  it('asks with the bootstrap token for a client certificate, stores it and writes the kubeconfig', async function () {
    assert.equal(await bootstrapClientCertificate(opts()), 'new certificate');
    assert.equal(api.posts.length, 1);
    const post = api.posts[0]!;
    assert.equal(post.token, TOKEN, 'asked with the bootstrap token');
    assert.match(post.name, /^node-csr-/);
    assert.equal(post.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(post.usages, ['digital signature', 'client auth']);
    const csrFile = path.join(dir, 'sent.csr');
    await fs.writeFile(csrFile, post.csrPem);
    const text = await run('openssl', ['req', '-in', csrFile, '-verify', '-noout', '-subject']);
    assert.match(text.stdout, /subject=O = system:nodes, CN = system:node:n1/);

    const pki = await fs.readdir(path.join(dir, 'pki'));
    assert.deepEqual(pki.filter((f) => f !== 'kubelet-client-current.pem').map((f) => /^kubelet-client-\d{4}(-\d\d){5}\.pem$/.test(f)), [true], `files: ${pki.join(', ')}`);
    assert.ok(!pki.includes('kubelet-client.key.tmp'), 'the waiting key is gone once stored');
    const loaded = loadKubeconfig(path.join(dir, 'kubelet.conf'));
    assert.equal(loaded.identity.user, 'system:node:n1');
    assert.equal(loaded.server, api.url);
    assert.equal(loaded.user?.certFile, path.join(dir, 'pki', 'kubelet-client-current.pem'));
    assert.equal(loaded.cluster.caFile, loadKubeconfig(bootstrapKubeconfig).cluster.caFile, 'the bootstrap kubeconfig\'s CA');
  });

  it('a restart makes no new request: a valid kubeconfig is used as it is (the bootstrap kubeconfig may be gone), a valid stored certificate is reused', async function () {
    await bootstrapClientCertificate(opts());
    const written = await fs.readFile(path.join(dir, 'kubelet.conf'), 'utf8');
    await fs.rm(bootstrapKubeconfig);
    assert.equal(await bootstrapClientCertificate(opts()), 'kubeconfig valid');
    await fs.writeFile(bootstrapKubeconfig, await fs.readFile(path.join(dir, 'pki', 'kubelet-client-current.pem'), 'utf8').then(() => `apiVersion: v1\nkind: Config\nclusters:\n- name: fake\n  cluster: {server: '${api.url}', certificate-authority: '${loadKubeconfig(path.join(dir, 'kubelet.conf')).cluster.caFile}'}\nusers:\n- name: u\n  user: {token: '${TOKEN}'}\ncontexts:\n- name: c\n  context: {cluster: fake, user: u}\ncurrent-context: c\n`));
    await fs.rm(path.join(dir, 'kubelet.conf'));
    assert.equal(await bootstrapClientCertificate(opts()), 'stored certificate reused');
    assert.equal(await fs.readFile(path.join(dir, 'kubelet.conf'), 'utf8'), written, 'the same kubeconfig, written again');
    assert.equal(api.posts.length, 1, 'one request in all');
  });

  it('a restart while the request waits for approval takes the same request up again', async function () {
    api.mode = 'pending';
    const first = new AbortController();
    const waiting = bootstrapClientCertificate(opts({ signal: first.signal }));
    await waitFor('the first request', () => api.posts.length === 1, 5000, 20);
    first.abort();
    await assert.rejects(waiting, (err: Error) => err.name === 'AbortError');
    // "Restarted": the same key, so the same name; the API answers AlreadyExists and the kubelet waits on it.
    const again = bootstrapClientCertificate(opts());
    await waitFor('the second attempt', () => api.posts.length === 2, 5000, 20);
    assert.equal(api.posts[1]!.name, api.posts[0]!.name);
    assert.equal(api.csrs.size, 1, 'still one CertificateSigningRequest');
    await api.approve(api.posts[0]!.name);
    assert.equal(await again, 'new certificate');
  });

  it('a denied request is one line naming it and the reason; the next attempt is a new request with a new key', async function () {
    api.mode = 'deny';
    const { logger, lines } = captureLogger();
    const done = bootstrapClientCertificate(opts({ logger }));
    await waitFor('a denial', () => lines.some((l) => /denied/.test(String(l.msg))), 5000, 20);
    api.mode = 'approve';
    assert.equal(await done, 'new certificate');
    const denied = lines.find((l) => /denied/.test(String(l.msg)))!;
    assert.equal(denied.level, 40);
    assert.match(String(denied.msg), new RegExp(`^TLS bootstrap: certificate signing request ${api.posts[0]!.name} was denied: NotMyNode: denied by the fake API; retrying in \\d+ms$`));
    assert.ok(api.posts.length >= 2);
    assert.notEqual(api.posts.at(-1)!.name, api.posts[0]!.name, 'a new key asks under a new name');
  });

  it('a refused bootstrap token is one line with what to do, retried (the file is read again each time)', async function () {
    api.mode = 'unauthorized';
    const { logger, lines } = captureLogger();
    const done = bootstrapClientCertificate(opts({ logger }));
    await waitFor('two refusals', () => lines.filter((l) => /\(401 Unauthorized\)/.test(String(l.msg))).length >= 2, 5000, 20);
    api.mode = 'approve';
    assert.equal(await done, 'new certificate');
    const refused = lines.find((l) => /\(401 Unauthorized\)/.test(String(l.msg)))!;
    assert.match(String(refused.msg), new RegExp(`^TLS bootstrap: the API server ${api.url.replace(/[.]/g, '\\.')} refused the credentials of .* \\(401 Unauthorized\\): Unauthorized \\(is the bootstrap token in ${bootstrapKubeconfig.replace(/[.]/g, '\\.')} invalid, expired or deleted\\? kubeadm token create makes a new one\\); retrying in \\d+ms$`));
  });

  it('a bootstrap kubeconfig the API server takes for anonymous (403) says so', async function () {
    api.mode = 'anonymous';
    const { logger, lines } = captureLogger();
    const stop = new AbortController();
    const done = bootstrapClientCertificate(opts({ logger, signal: stop.signal }));
    await waitFor('a refusal', () => lines.some((l) => /system:anonymous/.test(String(l.msg))), 5000, 20);
    stop.abort();
    await assert.rejects(done, (err: Error) => err.name === 'AbortError');
    const line = String(lines.find((l) => /system:anonymous/.test(String(l.msg)))!.msg);
    assert.match(line, new RegExp(`may not create certificatesigningrequests\\.certificates\\.k8s\\.io: .* \\(the API server took the request as anonymous: ${bootstrapKubeconfig.replace(/[.]/g, '\\.')} presents no credentials it reads; it needs a bootstrap token, kubeadm token create makes one\\); retrying in \\d+ms$`));
  });

  it('an API server that does not answer is retried with back-off, one line each, until it does', async function () {
    const away = await fakeApiKubeconfig(path.join(dir), 'https://127.0.0.1:1', { token: TOKEN });
    const { logger, lines } = captureLogger();
    const stop = new AbortController();
    const done = bootstrapClientCertificate(opts({ bootstrapKubeconfig: away, logger, signal: stop.signal }));
    const mine = () => lines.filter((l) => String(l.msg).startsWith('TLS bootstrap: cannot reach'));
    await waitFor('three failures', () => mine().length >= 3, 5000, 20);
    stop.abort();
    await assert.rejects(done, (err: Error) => err.name === 'AbortError');
    assert.match(String(mine()[0]!.msg), /^TLS bootstrap: cannot reach the API server https:\/\/127\.0\.0\.1:1: .*ECONNREFUSED.*; retrying in \d+ms$/);
    assert.equal(mine()[0]!.level, 40);
    // Besides: the outage itself, once for all attempts.
    assert.equal(lines.filter((l) => /is unreachable; requests are retried/.test(String(l.msg))).length, 1);
  });

  it('a bootstrap kubeconfig that cannot work stops the start with a KubeconfigError naming it; a kubeconfig whose certificate expired or cannot be read is bootstrapped again', async function () {
    await assert.rejects(bootstrapClientCertificate(opts({ bootstrapKubeconfig: path.join(dir, 'nope.kubeconfig') })), (err: unknown) => err instanceof KubeconfigError && /^kubeconfig .*nope\.kubeconfig: cannot read the file/.test(err.message));
    const expired = await generateSelfSigned(['n1'], -1);
    await fs.writeFile(path.join(dir, 'old.crt'), expired.cert);
    await fs.writeFile(path.join(dir, 'old.key'), expired.key);
    await fs.writeFile(path.join(dir, 'kubelet.conf'), (await fs.readFile(await fakeApiKubeconfig(dir, api.url, { certFile: path.join(dir, 'old.crt'), keyFile: path.join(dir, 'old.key') }), 'utf8')));
    assert.match(kubeconfigNeedsBootstrap(path.join(dir, 'kubelet.conf')) ?? '', /^its client certificate expired at /);
    assert.equal(await bootstrapClientCertificate(opts()), 'new certificate');
    assert.equal(kubeconfigNeedsBootstrap(path.join(dir, 'kubelet.conf')), undefined);
    // An unreadable client certificate: bootstrapped again too.
    await fs.rm(path.join(dir, 'pki'), { recursive: true });
    assert.match(kubeconfigNeedsBootstrap(path.join(dir, 'kubelet.conf')) ?? '', /^user "default-auth": client-certificate .*kubelet-client-current\.pem: cannot read: ENOENT/);
    assert.equal(kubeconfigNeedsBootstrap(path.join(dir, 'none.conf')), 'it does not exist');
    assert.equal(await bootstrapClientCertificate(opts()), 'new certificate');
  });

  describe('rotation', function () {
    async function bootstrapped(): Promise<{ config: ReturnType<typeof testConfig>; clients: ApiClient[]; rotation: { store: CertificateStore; initial: CertificatePair } }> {
      const config = testConfig(dir, { nodeName: 'n1', kubeconfig: path.join(dir, 'kubelet.conf'), bootstrapKubeconfig, rotateCertificates: true, certDirectory: path.join(dir, 'pki') });
      const creds = await prepareClientCredentials({ ...config, kubeconfig: config.kubeconfig! }, silentLogger());
      assert.ok(creds.rotation, 'rotation prepared');
      assert.equal(creds.overrides.clientCertificateFile, path.join(dir, 'pki', 'kubelet-client-current.pem'));
      const main = createApiClient({ kubeconfig: config.kubeconfig!, logger: silentLogger() });
      const heartbeat = createApiClient({ kubeconfig: config.kubeconfig!, logger: silentLogger() });
      clients.push(main, heartbeat);
      return { config, clients: [main, heartbeat], rotation: creds.rotation };
    }

    it('renews with the node\'s own certificate (no bootstrap token), swaps the link, and the clients present the new certificate', async function () {
      const { config, clients: cs, rotation } = await bootstrapped();
      const first = rotation.initial;
      // The clients present the bootstrapped certificate, on kept-alive connections.
      for (const c of cs) await c.request('GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests/none').catch(() => {});
      assert.deepEqual(api.seen.slice(-2).map((s) => s.clientSerial), [first.cert.serialNumber, first.cert.serialNumber]);
      const manager = new CertificateManager({
        kind: CLIENT_CERTIFICATE,
        store: rotation.store,
        template: () => nodeSubject('n1'),
        initial: first,
        // The deadline has passed: 95 % of its lifetime.
        now: () => first.notBefore + 0.95 * (first.notAfter - first.notBefore),
        client: () => ({ client: cs[0]!, credentials: { file: config.kubeconfig!, bootstrap: false } }),
        onRotated: (pair) => cs.forEach((c) => c.clientCertificateRotated({ user: pair.commonName, groups: pair.organizations, certNotAfter: pair.notAfter })),
        logger: silentLogger(),
        pollMs: FAST.pollMs,
      });
      managers.push(manager);
      manager.start();
      await waitFor('a renewal', () => manager.rotations === 1, 10_000, 20);
      const renewal = api.posts[1]!;
      assert.equal(renewal.token, undefined, 'no bootstrap token');
      assert.equal(renewal.clientCN, 'system:node:n1', 'asked as the node, with its current certificate');
      const second = manager.latest()!;
      assert.notEqual(second.cert.serialNumber, first.cert.serialNumber);
      assert.equal((await new CertificateStore(path.join(dir, 'pki'), 'kubelet-client').current())?.cert.serialNumber, second.cert.serialNumber, 'the link names the new pair');
      assert.equal((await fs.readdir(path.join(dir, 'pki'))).filter((f) => /^kubelet-client-\d/.test(f)).length >= 1, true);
      // Every client now shakes hands with the new certificate (its kept-alive connection retired).
      for (const c of cs) await c.request('GET', '/apis/certificates.k8s.io/v1/certificatesigningrequests/none').catch(() => {});
      assert.deepEqual(api.seen.slice(-2).map((s) => s.clientSerial), [second.cert.serialNumber, second.cert.serialNumber]);
      for (const c of cs) assert.equal(c.identity.certNotAfter, second.notAfter, 'messages name the new expiry');
    });

    it('a kubeconfig with a certificate of its own seeds the store; the clients then read the store\'s link', async function () {
      await bootstrapClientCertificate(opts());
      // A kubeconfig naming a copy of the pair (as an operator's hand-made one would).
      const own = path.join(dir, 'own.pem');
      await fs.copyFile(path.join(dir, 'pki', 'kubelet-client-current.pem'), own);
      await fs.rm(path.join(dir, 'pki'), { recursive: true });
      const kubeconfig = await fakeApiKubeconfig(dir, api.url, { certFile: own, keyFile: own });
      const config = testConfig(dir, { nodeName: 'n1', kubeconfig, rotateCertificates: true, certDirectory: path.join(dir, 'pki') });
      const creds = await prepareClientCredentials({ ...config, kubeconfig }, silentLogger());
      assert.equal(creds.overrides.clientCertificateFile, path.join(dir, 'pki', 'kubelet-client-current.pem'));
      assert.equal(creds.rotation?.initial.commonName, 'system:node:n1');
      const loaded = loadKubeconfig(kubeconfig, creds.overrides);
      assert.equal(loaded.user?.certFile, path.join(dir, 'pki', 'kubelet-client-current.pem'));
      // A token kubeconfig has nothing to rotate: one line says so, the clients keep the token.
      const { logger, lines } = captureLogger();
      const none = await prepareClientCredentials({ ...config, kubeconfig: bootstrapKubeconfig, certDirectory: path.join(dir, 'pki2') }, logger);
      assert.deepEqual(none, { overrides: {}, rotation: undefined });
      assert.match(String(lines.at(-1)?.msg), /authenticates with a token, not a client certificate: nothing to rotate/);
    });

    it('a rotation lets a request in flight finish (the old connection is retired, not cut)', async function () {
      const { clients: cs, rotation } = await bootstrapped();
      api.server.handle(async (_req, res) => {
        await new Promise((r) => setTimeout(r, 500));
        res.statusCode = 404;
        res.setHeader('Content-Type', 'application/json');
        res.end('{"kind":"Status","apiVersion":"v1","status":"Failure","reason":"NotFound","code":404,"message":"not here"}');
      });
      const before = api.server.requests.length;
      // A POST: not retried on a new connection, so a cut one would fail it.
      const slow = cs[0]!.request('POST', '/apis/certificates.k8s.io/v1/certificatesigningrequests', { body: { kind: 'CertificateSigningRequest' } });
      await waitFor('the request at the server', () => api.server.requests.length > before, 5000, 10);
      cs[0]!.clientCertificateRotated({ user: 'system:node:n1', groups: ['system:nodes'], certNotAfter: rotation.initial.notAfter });
      await assert.rejects(slow, (err: Error) => /not here/.test(err.message), 'the answer arrives, not a reset');
    });

    it('with an expired certificate, renews through the bootstrap kubeconfig', async function () {
      const { config, clients: cs, rotation } = await bootstrapped();
      const manager = startClientRotation({ config: { ...config, kubeconfig: config.kubeconfig! }, rotation: { ...rotation, initial: { ...rotation.initial, notAfter: Date.now() - 1000, notBefore: Date.now() - 100_000 } }, clients: cs, logger: silentLogger() });
      managers.push(manager);
      await waitFor('a renewal', () => manager.rotations === 1, 15_000, 20);
      assert.equal(api.posts[1]!.token, TOKEN, 'the node\'s certificate expired: asked with the bootstrap token');
    });
  });
});
