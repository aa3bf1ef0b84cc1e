import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { run, which } from '../../tools/node-env/util.ts';
import { loadKubeconfig } from '../../core/apiserver/kubeconfig.ts';
import { CertificateStore, fileTime } from '../../core/certificates/certificate-store.ts';
import { fitsTemplate, rotationDeadline } from '../../core/certificates/certificate-manager.ts';
import { createCsr, digestedCsrName, generateKey, keyToPem } from '../../core/certificates/csr.ts';
import { servingTemplate } from '../../core/certificates/kubelet-certificates.ts';
import { writeNodeKubeconfig } from '../../core/certificates/node-kubeconfig.ts';
import { parsePair } from '../../core/certificates/pem-pair.ts';
import { realPartMissing } from '../support/real-part.ts';

/** openssl for a test that needs it (it checks what the kubelet encodes); CI fails without it. */
function opensslOrSkip(ctx: Mocha.Context): void {
  if (!which('openssl')) realPartMissing(ctx, 'no openssl', 'install the Debian package openssl');
}

/** Signs `csrPem` with a throwaway CA (openssl, copying the request's SANs): a pair the store takes. */
async function signed(dir: string, csrPem: string, days = 1): Promise<string> {
  const ca = path.join(dir, 'ca');
  try {
    await fs.access(`${ca}.crt`);
  } catch {
    await run('openssl', ['req', '-x509', '-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:P-256', '-nodes', '-keyout', `${ca}.key`, '-out', `${ca}.crt`, '-subj', '/CN=test-ca', '-days', '2']);
  }
  const n = `${Date.now()}-${Math.random().toString(36).slice(2)}`;
  await fs.writeFile(path.join(dir, `${n}.csr`), csrPem);
  await run('openssl', ['x509', '-req', '-in', path.join(dir, `${n}.csr`), '-CA', `${ca}.crt`, '-CAkey', `${ca}.key`, '-set_serial', String(Math.floor(Math.random() * 1e9)), '-days', String(days), '-copy_extensions', 'copyall', '-out', path.join(dir, `${n}.crt`)]);
  return fs.readFile(path.join(dir, `${n}.crt`), 'utf8');
}

describe('certificates: requests, the store, the rotation schedule, the written kubeconfig', function () {
  let dir: string;
  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-certs-'));
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  describe('PKCS#10 requests', function () {
    it('a client request: ECDSA P-256, O=system:nodes, CN=system:node:<name>, a self-signature openssl verifies', async function () {
      opensslOrSkip(this);
      const key = await generateKey();
      assert.equal(key.asymmetricKeyType, 'ec');
      assert.equal(key.asymmetricKeyDetails?.namedCurve, 'prime256v1');
      const file = path.join(dir, 'client.csr');
      await fs.writeFile(file, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'] }));
      const out = await run('openssl', ['req', '-in', file, '-verify', '-noout', '-text']);
      assert.match(out.stdout + out.stderr, /verify OK/);
      assert.match(out.stdout, /Subject: O = system:nodes, CN = system:node:n1/);
      assert.match(out.stdout, /Signature Algorithm: ecdsa-with-SHA256/);
      assert.match(out.stdout, /NIST CURVE: P-256/);
      assert.match(out.stdout, /Attributes:\s+\(none\)/, 'a client request has no attribute (no extensions)');
      assert.doesNotMatch(out.stdout, /Subject Alternative Name/);
      // The key as upstream writes it: SEC 1 "EC PRIVATE KEY".
      assert.match(keyToPem(key), /^-----BEGIN EC PRIVATE KEY-----\n/);
    });

    it('a serving request carries the node\'s DNS names and IP addresses (v4 and v6) in an extensionRequest', async function () {
      opensslOrSkip(this);
      const key = await generateKey();
      const file = path.join(dir, 'serving.csr');
      await fs.writeFile(file, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'], dnsNames: ['n1', 'n1.example.com'], ipAddresses: ['10.0.0.5', 'fd00::5'] }));
      const out = await run('openssl', ['req', '-in', file, '-verify', '-noout', '-text']);
      assert.match(out.stdout + out.stderr, /verify OK/);
      assert.match(out.stdout, /DNS:n1, DNS:n1\.example\.com, IP Address:10\.0\.0\.5, IP Address:FD00:0:0:0:0:0:0:5/i);
    });

    it('an RSA key signs with sha256WithRSAEncryption', async function () {
      opensslOrSkip(this);
      const { privateKey } = (await import('node:crypto')).generateKeyPairSync('rsa', { modulusLength: 2048 });
      const file = path.join(dir, 'rsa.csr');
      await fs.writeFile(file, createCsr(privateKey, { commonName: 'system:node:n1', organizations: ['system:nodes'] }));
      const out = await run('openssl', ['req', '-in', file, '-verify', '-noout', '-text']);
      assert.match(out.stdout + out.stderr, /verify OK/);
      assert.match(out.stdout, /sha256WithRSAEncryption/);
    });

    it('the digested name is upstream\'s form, the same for the same key, another for another key or other usages', async function () {
      const a = await generateKey();
      const b = await generateKey();
      const subject = { commonName: 'system:node:n1', organizations: ['system:nodes'] };
      const name = digestedCsrName(a, subject, ['digital signature', 'client auth']);
      assert.match(name, /^node-csr-[A-Za-z0-9_-]{43}$/);
      assert.equal(digestedCsrName(a, subject, ['digital signature', 'client auth']), name);
      assert.notEqual(digestedCsrName(b, subject, ['digital signature', 'client auth']), name);
      assert.notEqual(digestedCsrName(a, subject, ['digital signature', 'key encipherment', 'client auth']), name);
      assert.notEqual(digestedCsrName(a, { ...subject, commonName: 'system:node:n2' }, ['digital signature', 'client auth']), name);
    });
  });

  describe('the certificate store', function () {
    it('stores each pair as kubelet-client-<time>.pem (certificate, then key; mode 0600) and links kubelet-client-current.pem to it', async function () {
      opensslOrSkip(this);
      const store = new CertificateStore(path.join(dir, 'pki'), 'kubelet-client');
      assert.equal(await store.current(), undefined, 'empty at first');
      const key = await generateKey();
      const cert = await signed(dir, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'] }));
      const when = new Date(2026, 0, 2, 3, 4, 5);
      const pair = await store.update(cert, keyToPem(key), when);
      const file = path.join(dir, 'pki', 'kubelet-client-2026-01-02-03-04-05.pem');
      assert.equal(fileTime(when), '2026-01-02-03-04-05');
      assert.equal(await fs.readlink(store.currentPath), file, 'the link names the file by its absolute path');
      assert.equal(store.currentPath, path.join(dir, 'pki', 'kubelet-client-current.pem'));
      assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
      const text = await fs.readFile(file, 'utf8');
      assert.match(text, /^-----BEGIN CERTIFICATE-----[\s\S]+-----END CERTIFICATE-----\n-----BEGIN EC PRIVATE KEY-----[\s\S]+-----END EC PRIVATE KEY-----\n$/);
      assert.equal(pair.commonName, 'system:node:n1');
      assert.deepEqual(pair.organizations, ['system:nodes']);
      assert.equal((await store.current())?.cert.serialNumber, pair.cert.serialNumber);

      // A second pair: a new file, the link moved, the first file kept.
      const key2 = await generateKey();
      const pair2 = await store.update(await signed(dir, createCsr(key2, { commonName: 'system:node:n1', organizations: ['system:nodes'] })), keyToPem(key2), new Date(2026, 0, 2, 3, 4, 6));
      assert.equal(await fs.readlink(store.currentPath), path.join(dir, 'pki', 'kubelet-client-2026-01-02-03-04-06.pem'));
      assert.equal((await store.current())?.cert.serialNumber, pair2.cert.serialNumber);
      assert.deepEqual((await fs.readdir(path.join(dir, 'pki'))).sort(), ['kubelet-client-2026-01-02-03-04-05.pem', 'kubelet-client-2026-01-02-03-04-06.pem', 'kubelet-client-current.pem']);
    });

    it('refuses a certificate that is not for the key, and a current file that does not hold a matching pair', async function () {
      opensslOrSkip(this);
      const store = new CertificateStore(path.join(dir, 'pki'), 'kubelet-client');
      const key = await generateKey();
      const other = await generateKey();
      const cert = await signed(dir, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'] }));
      await assert.rejects(store.update(cert, keyToPem(other)), /the private key does not belong to the certificate/);
      await fs.mkdir(path.join(dir, 'pki'), { recursive: true });
      await fs.writeFile(path.join(dir, 'pki', 'broken.pem'), cert);
      await fs.symlink(path.join(dir, 'pki', 'broken.pem'), store.currentPath);
      await assert.rejects(store.current(), /kubelet-client-current\.pem: no PEM private key in it/);
    });

    it('takes a link left by an interrupted update as current, and falls back to configured files', async function () {
      opensslOrSkip(this);
      const pki = path.join(dir, 'pki');
      const key = await generateKey();
      const cert = await signed(dir, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'] }));
      await fs.mkdir(pki, { recursive: true });
      await fs.writeFile(path.join(pki, 'kubelet-server-x.pem'), cert + keyToPem(key));
      await fs.symlink(path.join(pki, 'kubelet-server-x.pem'), path.join(pki, 'kubelet-server-updated.pem'));
      const store = new CertificateStore(pki, 'kubelet-server');
      assert.equal((await store.current())?.commonName, 'system:node:n1');
      assert.equal(await fs.readlink(store.currentPath), path.join(pki, 'kubelet-server-x.pem'));

      await fs.writeFile(path.join(dir, 'tls.crt'), cert);
      await fs.writeFile(path.join(dir, 'tls.key'), keyToPem(key));
      const fallback = new CertificateStore(path.join(dir, 'other'), 'kubelet-server', { certFile: path.join(dir, 'tls.crt'), keyFile: path.join(dir, 'tls.key') });
      assert.equal((await fallback.current())?.source, `${path.join(dir, 'tls.crt')} and ${path.join(dir, 'tls.key')}`);
    });

    it('keeps the key of a waiting request across restarts (0600), and forgets it on request', async function () {
      const store = new CertificateStore(path.join(dir, 'pki'), 'kubelet-client');
      const a = await store.pendingKey();
      assert.equal(store.pendingKeyPath, path.join(dir, 'pki', 'kubelet-client.key.tmp'));
      assert.equal((await fs.stat(store.pendingKeyPath)).mode & 0o777, 0o600);
      const again = await new CertificateStore(path.join(dir, 'pki'), 'kubelet-client').pendingKey();
      assert.equal(keyToPem(again), keyToPem(a), 'a restart asks with the same key');
      await store.dropPendingKey();
      assert.notEqual(keyToPem(await store.pendingKey()), keyToPem(a));
    });
  });

  describe('the rotation schedule', function () {
    it('renews at 70 % to 90 % of the lifetime, measured from notBefore', function () {
      const nb = Date.parse('2026-01-01T00:00:00Z');
      const na = nb + 1000 * 3600_000;
      assert.equal(rotationDeadline(nb, na, 0), nb + 700 * 3600_000);
      assert.equal(rotationDeadline(nb, na, 1), nb + 900 * 3600_000);
      assert.equal(rotationDeadline(nb, na, 0.5), nb + 800 * 3600_000);
      // The controller-manager backdates notBefore 5 minutes: a 3-minute certificate lives 8 minutes,
      // and is renewed 36 s to 2 min 12 s after it was signed.
      const signedAt = nb + 5 * 60_000;
      assert.equal(rotationDeadline(nb, signedAt + 3 * 60_000, 0) - signedAt, 36_000);
      assert.equal(rotationDeadline(nb, signedAt + 3 * 60_000, 1) - signedAt, 132_000);
    });

    it('a certificate that does not fit what the kubelet asks for (another name, a missing address) is renewed at once', async function () {
      opensslOrSkip(this);
      const key = await generateKey();
      const template = servingTemplate('n1', [{ type: 'InternalIP', address: '10.0.0.5' }, { type: 'Hostname', address: 'n1' }])!;
      assert.deepEqual(template, { commonName: 'system:node:n1', organizations: ['system:nodes'], dnsNames: ['n1'], ipAddresses: ['10.0.0.5'] });
      const pair = parsePair(await signed(dir, createCsr(key, template)), keyToPem(key), 'test');
      assert.equal(fitsTemplate(pair, template), true);
      assert.equal(fitsTemplate(pair, { ...template, ipAddresses: ['10.0.0.6'] }), false);
      assert.equal(fitsTemplate(pair, { ...template, commonName: 'system:node:n2' }), false);
      assert.equal(fitsTemplate(pair, { ...template, dnsNames: ['n1', 'n1.example.com'] }), false);
      assert.equal(servingTemplate('n1', []), undefined, 'no address yet: nothing to ask for');
    });
  });

  describe('the kubeconfig a TLS bootstrap writes', function () {
    it('has the bootstrap cluster and the store\'s current link as certificate and key, mode 0600, and loads as the node', async function () {
      opensslOrSkip(this);
      const store = new CertificateStore(path.join(dir, 'pki'), 'kubelet-client');
      const key = await generateKey();
      await store.update(await signed(dir, createCsr(key, { commonName: 'system:node:n1', organizations: ['system:nodes'] })), keyToPem(key));
      const caData = Buffer.from(await fs.readFile(path.join(dir, 'ca.crt'))).toString('base64');
      const file = path.join(dir, 'etc', 'kubelet.conf');
      await writeNodeKubeconfig(file, { name: 'x', server: 'https://10.0.0.1:6443', caData, skipTLSVerify: false }, store.currentPath);
      assert.equal((await fs.stat(file)).mode & 0o777, 0o600);
      const loaded = loadKubeconfig(file);
      assert.equal(loaded.server, 'https://10.0.0.1:6443');
      assert.equal(loaded.identity.user, 'system:node:n1');
      assert.deepEqual(loaded.identity.groups, ['system:nodes']);
      const user = loaded.user!;
      assert.equal(user.certFile, store.currentPath);
      assert.equal(user.keyFile, store.currentPath);
      assert.equal(loaded.cluster.caData, caData);
      assert.equal(loaded.context, 'default-context');
      new X509Certificate(Buffer.from(caData, 'base64'));
    });
  });
});
