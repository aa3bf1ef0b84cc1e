import assert from 'node:assert/strict';
import { X509Certificate } from 'node:crypto';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import { CertificatesV1Api, type V1CertificateSigningRequest, type V1Pod } from '@kubernetes/client-node';
import { TEST_SIGNING_DURATION_MS } from '../support/control-plane.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { KUBELET_BIN, startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { kubectl, kubectlOrSkip, type Kubectl } from '../support/kubectl.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * TLS bootstrap and certificate rotation against the real control plane (../shared/k8s), as a
 * kubeadm node does them: kubelet-ts processes started with a bootstrap token kubeconfig
 * (kubeadm's RBAC: the controller-manager approves and signs node client CSRs) and no
 * kubeconfig. The run's controller-manager signs for 150 s (TEST_SIGNING_DURATION_MS), so
 * a node renews its certificates while the test watches. Serving certificates are approved by
 * the test with the admin kubeconfig, as an admin of a kubeadm cluster does by hand.
 */
describe('TLS bootstrap and certificate rotation on the real control plane', function () {
  this.timeout(120_000);
  const suite = clusterSuite('kts-tlsb-');
  let csrs: CertificatesV1Api;
  let caCert: X509Certificate;

  before(async function () {
    if (!suite.cp) return;
    csrs = suite.cp.admin.makeApiClient(CertificatesV1Api);
    caCert = new X509Certificate(await fs.readFile(path.join(suite.cp.dir, 'pki', 'ca.crt')));
  });

  /** The CSRs made by these users, oldest first. */
  const csrsBy = async (users: string[]) => (await csrs.listCertificateSigningRequest()).items
    .filter((c) => users.includes(c.spec.username ?? ''))
    .sort((a, b) => (a.metadata?.creationTimestamp?.getTime() ?? 0) - (b.metadata?.creationTimestamp?.getTime() ?? 0));
  const condition = (c: V1CertificateSigningRequest, type: string) => c.status?.conditions?.find((x) => x.type === type && x.status === 'True');
  const ready = async (node: string) => (await suite.core.readNode({ name: node })).status?.conditions?.find((c) => c.type === 'Ready')?.status;
  /** The certificate the main port presents, or the handshake's error code. */
  const served = (port: number) => new Promise<X509Certificate | string>((resolve) => {
    const s = tls.connect({ host: '127.0.0.1', port, rejectUnauthorized: false }, () => {
      const raw = s.getPeerCertificate().raw;
      s.destroy();
      resolve(new X509Certificate(raw));
    });
    s.setTimeout(5000, () => s.destroy(new Error('timeout')));
    s.on('error', (err: NodeJS.ErrnoException) => resolve(err.code ?? err.message));
  });
  const currentPair = async (dir: string, prefix: string) => {
    const link = path.join(dir, 'root', 'pki', `${prefix}-current.pem`);
    return { target: await fs.readlink(link), cert: new X509Certificate(await fs.readFile(link)) };
  };
  /** Removes what a node leaves in the cluster: its CSRs and its bootstrap token's Secret (Node and Lease: suite.node). */
  const forgetNode = async (node: string, tokenId: string) => {
    for (const c of await csrsBy([`system:node:${node}`, `system:bootstrap:${tokenId}`]).catch(() => [])) await csrs.deleteCertificateSigningRequest({ name: c.metadata!.name! }).catch(() => {});
    await suite.core.deleteNamespacedSecret({ name: `bootstrap-token-${tokenId}`, namespace: 'kube-system' }).catch(() => {});
  };
  /** The kubelet process of a node: `--kubeconfig FILE --bootstrap-kubeconfig FILE [--rotate-certificates]` and a config file, as kubeadm starts upstream's. */
  const startNode = (opts: { node: string; dir?: string; kubeconfig: string; bootstrap: string; rotate: boolean; config?: Record<string, unknown> }) =>
    startKubeletProcess(suite.env, {
      command: [KUBELET_BIN, '--kubeconfig', opts.kubeconfig, '--bootstrap-kubeconfig', opts.bootstrap, ...(opts.rotate ? ['--rotate-certificates'] : [])],
      ...(opts.dir ? { dir: opts.dir } : {}),
      config: { nodeName: opts.node, nodeIP: '127.0.0.1', ...opts.config },
    });
  const logLines = async (k: KubeletProcess) => (await fs.readFile(k.logFile, 'utf8')).split('\n').filter(Boolean).map((l) => { try { return JSON.parse(l) as { level: number; msg: string; time: string }; } catch { return { level: 0, msg: l, time: '' }; } });

  // A node that joins with a bootstrap token, rotates its client certificate and bootstraps its
  // serving certificate: it joins first, and its renewal is watched last, so the tests of other
  // nodes run while its first certificate ages (the renewal waits out the certificate's life,
  // TEST_SIGNING_DURATION_MS from the join).
  let node: string;
  let tokenId: string;
  let k: KubeletProcess;
  let kc: Kubectl;
  let firstClient: X509Certificate;
  let firstServing: X509Certificate;
  let ns: string;
  let approving = false;

  before(async function () {
    this.timeout(60_000);
    if (!suite.cp) return;
    node = suite.uniqueName('join');
    await fs.mkdir(path.join(suite.dir, node), { recursive: true });
    tokenId = (await suite.cp.bootstrapKubeconfig(path.join(suite.dir, node, 'bootstrap-kubelet.conf'))).tokenId;
  });
  after(async function () {
    this.timeout(120_000);
    approving = false;
    if (ns) await suite.core.deleteNamespace({ name: ns }).catch(() => {});
    await k?.stop();
    if (!node) return;
    await suite.core.deleteNode({ name: node }).catch(() => {});
    await suite.coordination.deleteNamespacedLease({ name: node, namespace: 'kube-node-lease' }).catch(() => {});
    await forgetNode(node, tokenId);
  });

  it('joins by TLS bootstrap: the controller-manager approves its client CSR, it writes the kubeconfig, the Node is Ready', async function () {
    const kubeconfig = path.join(suite.dir, node, 'kubelet.conf');
    await assert.rejects(fs.access(kubeconfig), 'no kubeconfig before the join');
    k = await startNode({ node, kubeconfig, bootstrap: path.join(suite.dir, node, 'bootstrap-kubelet.conf'), rotate: true, config: { serverTLSBootstrap: true } });
    await waitFor(`Node ${node} Ready`, async () => (await ready(node).catch(() => undefined)) === 'True', 60_000);

    const [csr, ...more] = await csrsBy([`system:bootstrap:${tokenId}`]);
    assert.equal(more.length, 0, 'one request with the bootstrap token');
    assert.match(csr!.metadata!.name!, /^node-csr-/);
    assert.equal(csr!.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.deepEqual(csr!.spec.usages, ['digital signature', 'client auth']);
    assert.equal(condition(csr!, 'Approved')?.reason, 'AutoApproved', 'approved by the controller-manager');
    assert.ok(csr!.status?.certificate, 'signed');

    const pair = await currentPair(k.dir, 'kubelet-client');
    assert.match(path.basename(pair.target), /^kubelet-client-\d{4}(-\d\d){5}\.pem$/);
    assert.equal(pair.cert.subject, `O=system:nodes\nCN=system:node:${node}`);
    assert.ok(pair.cert.verify(caCert.publicKey), 'signed by the cluster CA');
    assert.ok(Date.parse(pair.cert.validTo) - Date.now() <= TEST_SIGNING_DURATION_MS, 'a short-lived certificate from this run\'s signer');
    firstClient = pair.cert;
    const written = await fs.readFile(kubeconfig, 'utf8');
    assert.match(written, new RegExp(`client-certificate: ${path.join(k.dir, 'root', 'pki', 'kubelet-client-current.pem').replace(/[.]/g, '\\.')}`));
    assert.match(written, new RegExp(`server: ${suite.cp.server.replace(/[.]/g, '\\.')}`));
    assert.equal((await fs.stat(kubeconfig)).mode & 0o777, 0o600);
  });

  it('serverTLSBootstrap: the main port refuses TLS until an admin approves its serving CSR, then serves the cluster-signed certificate; kubectl logs goes through it', async function () {
    assert.ok(k, 'the node joined');
    kc = kubectl(kubectlOrSkip(this), suite.cp.adminKubeconfig);
    const pending = await waitFor('a serving CSR', async () => (await csrsBy([`system:node:${node}`])).find((c) => c.spec.signerName === 'kubernetes.io/kubelet-serving'), 30_000);
    assert.deepEqual(pending.spec.usages, ['digital signature', 'server auth']);
    assert.equal(condition(pending, 'Approved'), undefined, 'nobody approves serving certificates on their own');
    // OpenSSL 3.0 (Node 20, 22) names the alert SSLV3_ALERT_..., OpenSSL 3.5 (Node 24) SSL/TLS_ALERT_...
    assert.match(String(await served(k.mainPort)), /^ERR_SSL_(SSLV3|SSL\/TLS)_ALERT_HANDSHAKE_FAILURE$/, 'no serving certificate: no handshake');

    const approved = await kc.run(['certificate', 'approve', pending.metadata!.name!]);
    assert.equal(approved.code, 0, approved.stderr);
    const cert = await waitFor('the main port serves the signed certificate', async () => { const c = await served(k.mainPort); return typeof c !== 'string' && c; }, 30_000);
    assert.equal(cert.subject, `O=system:nodes\nCN=system:node:${node}`);
    assert.ok(cert.verify(caCert.publicKey), 'signed by the cluster CA');
    assert.match(cert.subjectAltName ?? '', /IP Address:127\.0\.0\.1/);
    assert.match(cert.subjectAltName ?? '', new RegExp(`DNS:${node}`));
    const stored = await currentPair(k.dir, 'kubelet-server');
    assert.equal(stored.cert.serialNumber, cert.serialNumber, 'kubelet-server-current.pem is what it serves');
    firstServing = cert;

    // The namespace outlives this test (the next one reads the logs again): made here, deleted in after().
    ns = suite.uniqueName('tlsb');
    await suite.core.createNamespace({ body: { metadata: { name: ns } } });
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await suite.core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 30_000);
    const pod: V1Pod = {
      metadata: { name: 'talker' },
      spec: { nodeName: node, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; echo hello-through-the-signed-port; while true; do sleep 1; done"] }] },
    };
    await suite.core.createNamespacedPod({ namespace: ns, body: pod });
    const logs = await waitFor('kubectl logs', async () => { const r = await kc.run(['logs', '-n', ns, 'talker']); return r.code === 0 && r.stdout; }, 90_000);
    assert.equal(logs, 'hello-through-the-signed-port\n');
  });

  it('a restart makes no new CSR: a valid kubeconfig is used as it is, and without it the stored certificate is reused', async function () {
    const node = suite.node('restart');
    await fs.mkdir(node.dir, { recursive: true });
    const { file: bootstrap, tokenId } = await suite.cp.bootstrapKubeconfig(path.join(node.dir, 'bootstrap-kubelet.conf'));
    suite.onCleanup(() => forgetNode(node.name, tokenId));
    const kubeconfig = path.join(node.dir, 'kubelet.conf');
    let k = await startNode({ node: node.name, kubeconfig, bootstrap, rotate: false });
    suite.onCleanup(() => k.stop());
    await waitFor('Node Ready', async () => (await ready(node.name).catch(() => undefined)) === 'True', 60_000);
    const made = await csrsBy([`system:bootstrap:${tokenId}`, `system:node:${node.name}`]);
    assert.equal(made.length, 1);

    await k.stop({ keepDir: true });
    k = await startNode({ node: node.name, dir: k.dir, kubeconfig, bootstrap, rotate: false });
    assert.deepEqual((await csrsBy([`system:bootstrap:${tokenId}`, `system:node:${node.name}`])).map((c) => c.metadata?.name), made.map((c) => c.metadata?.name), 'no new request');

    // kubeadm deletes nothing of the store; an operator who removes the kubeconfig gets it written again from it.
    await k.stop({ keepDir: true });
    await fs.rm(kubeconfig);
    k = await startNode({ node: node.name, dir: k.dir, kubeconfig, bootstrap, rotate: false });
    assert.ok((await logLines(k)).some((l) => /wrote it with the stored client certificate .*no new request/.test(l.msg)));
    await fs.access(kubeconfig);
    await waitFor('Node Ready', async () => (await ready(node.name)) === 'True', 60_000);
    assert.deepEqual((await csrsBy([`system:bootstrap:${tokenId}`, `system:node:${node.name}`])).map((c) => c.metadata?.name), made.map((c) => c.metadata?.name), 'still no new request');
  });

  it('a refused bootstrap token is one line naming the file, retried; a new token written into the file is used without a restart', async function () {
    const node = suite.node('token');
    await fs.mkdir(node.dir, { recursive: true });
    const good = await suite.cp.bootstrapKubeconfig(path.join(node.dir, 'good.conf'));
    suite.onCleanup(() => forgetNode(node.name, good.tokenId));
    const bootstrap = path.join(node.dir, 'bootstrap-kubelet.conf');
    // A token the cluster does not have (its Secret was never made, or it expired and was cleaned up).
    await fs.writeFile(bootstrap, (await fs.readFile(good.file, 'utf8')).replace(/token: \S+/, 'token: zzzzzz.0123456789abcdef'));
    const dir = path.join(node.dir, 'kubelet');
    await fs.mkdir(dir, { recursive: true });
    // Started in the background: it says it started only once the bootstrap got its certificate.
    const starting = startNode({ node: node.name, dir, kubeconfig: path.join(node.dir, 'kubelet.conf'), bootstrap, rotate: true });
    starting.catch(() => {});
    const refused = await waitFor('two refusals in the log', async () => {
      const lines = (await fs.readFile(path.join(dir, 'kubelet.log'), 'utf8').catch(() => '')).split('\n').filter((l) => l.includes('refused the credentials'));
      return lines.length >= 2 && lines;
    }, 30_000);
    const line = JSON.parse(refused[0]!) as { level: number; msg: string };
    assert.equal(line.level, 40);
    assert.match(line.msg, new RegExp(`^TLS bootstrap: the API server ${suite.cp.server.replace(/[.]/g, '\\.')} refused the credentials of the kubeconfig's token \\(401 Unauthorized\\): Unauthorized \\(is the bootstrap token in ${bootstrap.replace(/[.]/g, '\\.')} invalid, expired or deleted\\? kubeadm token create makes a new one\\); retrying in \\d`));
    await fs.copyFile(good.file, bootstrap);
    const k = await starting;
    suite.onCleanup(() => k.stop());
    await waitFor('Node Ready', async () => (await ready(node.name).catch(() => undefined)) === 'True', 60_000);
    assert.equal((await csrsBy([`system:bootstrap:${good.tokenId}`])).length, 1);
  });

  it('a bootstrap kubeconfig that cannot work stops the start with one line naming it', async function () {
    const node = suite.node('broken');
    await fs.mkdir(node.dir, { recursive: true });
    const bootstrap = path.join(node.dir, 'bootstrap-kubelet.conf');
    await fs.writeFile(bootstrap, 'apiVersion: v1\nkind: Config\nclusters: []\n');
    const err = await startNode({ node: node.name, kubeconfig: path.join(node.dir, 'kubelet.conf'), bootstrap, rotate: false }).then(() => undefined, (e: Error & { output?: string }) => e);
    assert.ok(err, 'the start failed');
    assert.match(err.message, new RegExp(`kubelet-ts: kubeconfig ${bootstrap.replace(/[.]/g, '\\.')}: no current-context is set`));
  });

  it('renews both certificates without a restart: the Lease is renewed and Ready stays True past the first client certificate\'s expiry; the port serves the renewed serving certificate', async function () {
    this.timeout(TEST_SIGNING_DURATION_MS + 150_000);
    assert.ok(firstClient && firstServing, 'joined and serving (and kubectl found)');
    // The admin's part: approve the node's serving renewals as they come (bounded by the test).
    approving = true;
    const approver = (async () => {
      while (approving) {
        for (const c of await csrsBy([`system:node:${node}`]).catch(() => [])) {
          if (c.spec.signerName !== 'kubernetes.io/kubelet-serving' || condition(c, 'Approved') || condition(c, 'Denied')) continue;
          await csrs.replaceCertificateSigningRequestApproval({
            name: c.metadata!.name!,
            body: { ...c, status: { conditions: [{ type: 'Approved', status: 'True', reason: 'TestApproved', message: 'approved by the TLS bootstrap test' }] } },
          }).catch(() => {});
        }
        await sleep(2000);
      }
    })();
    const expiry = Date.parse(firstClient.validTo);
    const samples: Array<{ at: number; ready: string | undefined; renewTime: number }> = [];
    try {
      // Watch past the first client certificate's expiry: a node that kept using it would be
      // refused from then on. The watch ends once the Lease was renewed more than 5 s after the
      // expiry (every 10 s with its 40 s duration), or at the latest 25 s after it.
      while (Date.now() < expiry + 25_000) {
        const lease = await suite.coordination.readNamespacedLease({ name: node, namespace: 'kube-node-lease' });
        samples.push({ at: Date.now(), ready: await ready(node), renewTime: new Date(lease.spec?.renewTime as unknown as string).getTime() });
        if (samples.at(-1)!.renewTime > expiry + 5000) break;
        await sleep(2000);
      }
    } finally {
      approving = false;
      await approver;
    }
    const notReady = samples.filter((s) => s.ready !== 'True');
    assert.deepEqual(notReady, [], 'Ready stayed True throughout');
    const renewedAfterExpiry = samples.filter((s) => s.renewTime > expiry + 5000);
    assert.ok(renewedAfterExpiry.length > 0, `the Lease was renewed after the first certificate expired at ${firstClient.validTo} (last renewal ${new Date(Math.max(...samples.map((s) => s.renewTime))).toISOString()})`);
    const gaps = samples.slice(1).map((s, i) => s.renewTime - samples[i]!.renewTime);
    assert.ok(Math.max(0, ...samples.map((s) => s.at - s.renewTime)) < 40_000, `the Lease was never older than its 40 s duration (gaps: ${gaps.join(', ')})`);

    const client = await currentPair(k.dir, 'kubelet-client');
    assert.notEqual(client.cert.serialNumber, firstClient.serialNumber, 'a new client certificate');
    assert.equal(client.cert.subject, `O=system:nodes\nCN=system:node:${node}`);
    const renewals = (await csrsBy([`system:node:${node}`])).filter((c) => c.spec.signerName === 'kubernetes.io/kube-apiserver-client-kubelet');
    assert.ok(renewals.length >= 1, 'the renewal was asked with the node\'s own identity');
    assert.ok(renewals.every((c) => condition(c, 'Approved')?.reason === 'AutoApproved'), 'and approved by the controller-manager');
    assert.equal((await csrsBy([`system:bootstrap:${tokenId}`])).length, 1, 'the bootstrap token was not used again');

    const servingNow = await served(k.mainPort);
    assert.ok(typeof servingNow !== 'string', `the port serves (${String(servingNow)})`);
    assert.notEqual(servingNow.serialNumber, firstServing.serialNumber, 'a renewed serving certificate, served without a restart');
    assert.ok(servingNow.verify(caCert.publicKey));
    const lines = await logLines(k);
    assert.deepEqual(lines.filter((l) => /401 Unauthorized/.test(l.msg)).map((l) => l.msg), [], 'no request was refused for its credentials');
    assert.equal(await ready(node), 'True');
    const logs = await kc.run(['logs', '-n', ns, 'talker']);
    assert.equal(logs.stdout, 'hello-through-the-signed-port\n', logs.stderr);
    // The pod watch, pod status and events, after the first certificate expired: a new pod runs, its status and events arrive.
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'after-expiry' }, spec: { nodeName: node, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }] } },
    });
    await waitFor('the new pod Running in the API', async () => (await suite.core.readNamespacedPod({ name: 'after-expiry', namespace: ns })).status?.phase === 'Running', 60_000);
    await waitFor('its Started event from the kubelet', async () => (await suite.core.listNamespacedEvent({ namespace: ns })).items.some((e) => e.involvedObject?.name === 'after-expiry' && e.reason === 'Started' && e.source?.host === node), 30_000);
  });
});
