import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { CertificatesV1Api } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { startKubeletProcess } from '../support/kubelet-process.ts';
import { freePort } from '../../tools/node-env/util.ts';

const CASES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases');

/**
 * The files a kubeadm node has, laid out under `root` (which stands for `/`): every absolute
 * /etc and /var/lib path in them moved under it, so a test touches nothing of this machine.
 */
function relocate(text: string, root: string): string {
  return text.replace(/(?<=^|[\s="':-])\/(etc|var\/lib)\//gm, `${root}/$1/`);
}

/** An environment file as systemd reads it: KEY=value or KEY="value" lines. */
function envFile(text: string): Record<string, string> {
  const out: Record<string, string> = {};
  for (const line of text.split('\n')) {
    const m = /^\s*([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line);
    if (m) out[m[1]!] = m[2]!.replace(/^"(.*)"$/, '$1');
  }
  return out;
}

/**
 * The command line systemd runs for a unit's drop-in: its Environment= and EnvironmentFile=
 * (a leading `-`: optional), then the last ExecStart= with each unquoted $VAR split at
 * whitespace, as systemd expands it. The executable itself is left off.
 */
async function systemdCommandLine(dropIn: string): Promise<string[]> {
  const env: Record<string, string> = {};
  let exec = '';
  for (const line of dropIn.split('\n')) {
    const [key, ...rest] = line.split('=');
    const value = rest.join('=');
    if (key === 'Environment') Object.assign(env, envFile(value.replace(/^"(.*)"$/, '$1')));
    else if (key === 'EnvironmentFile') {
      const optional = value.startsWith('-');
      const text = await fs.readFile(optional ? value.slice(1) : value, 'utf8').catch((err: unknown) => {
        if (optional) return '';
        throw err;
      });
      Object.assign(env, envFile(text));
    } else if (key === 'ExecStart' && value !== '') exec = value;
  }
  const words = exec.split(/\s+/).filter(Boolean).flatMap((w) => (w.startsWith('$') ? (env[w.slice(1)] ?? '').split(/\s+/).filter(Boolean) : [w]));
  return words.slice(1);
}

interface LogLine { level: number; msg: string; ignored?: string[] }

/**
 * A kubeadm node with kubelet-ts in place of the kubelet: kubeadm's own config.yaml,
 * 10-kubeadm.conf and kubeadm-flags.env (test/cases/kubeadm-1.28, -1.36) start it unchanged on
 * the real control plane, and it joins as `kubeadm join` leaves it to: by TLS bootstrap with
 * a bootstrap token (bootstrap-kubelet.conf, kubeadm's RBAC; the controller-manager approves). What the test machine needs besides goes where an operator puts it, /etc/default/kubelet
 * (KUBELET_EXTRA_ARGS: this machine's containerd, free ports, the test's directories), plus
 * one line in config.yaml: podLogsDir (a 1.29 field), so pod logs stay out of /var/log/pods.
 */
describe('a kubeadm node: kubeadm\'s kubelet files start kubelet-ts unchanged', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-kubeadm-');

  for (const version of ['1.28', '1.36']) {
    it(`${version}: joins by TLS bootstrap; no warning, the Node Ready, /healthz on its port, kubeadm's settings in force`, async function () {
      const node = suite.node(`kubeadm${version.replace('.', '')}`);
      const cases = path.join(CASES, `kubeadm-${version}`);
      const healthzPort = await freePort();
      let tokenId = '';
      const k = await startKubeletProcess(suite.env, {
        startTimeoutMs: 60_000,
        argv: async ({ dir, mainPort, cgroupRoot }) => {
          const root = path.join(dir, 'node');
          const at = (p: string) => path.join(root, p);
          for (const d of ['/etc/kubernetes/pki', '/etc/kubernetes/manifests', '/etc/default', '/var/lib/kubelet', '/etc/systemd/system/kubelet.service.d']) await fs.mkdir(at(d), { recursive: true });
          // What kubeadm wrote, moved under the test's root.
          const config = relocate(await fs.readFile(path.join(cases, 'config.yaml'), 'utf8'), root);
          await fs.writeFile(at('/var/lib/kubelet/config.yaml'), `${config}# the test machine: pod logs under the test's directory\npodLogsDir: ${at('/var/log/pods')}\n`);
          await fs.writeFile(at('/var/lib/kubelet/kubeadm-flags.env'), relocate(await fs.readFile(path.join(cases, 'kubeadm-flags.env'), 'utf8'), root));
          const dropIn = relocate(await fs.readFile(path.join(cases, '10-kubeadm.conf'), 'utf8'), root);
          await fs.writeFile(at('/etc/systemd/system/kubelet.service.d/10-kubeadm.conf'), dropIn);
          // What `kubeadm join` gives the kubelet: a bootstrap kubeconfig with a bootstrap token
          // and kubeadm's RBAC, the cluster CA, and no kubelet.conf yet: the TLS bootstrap writes it.
          tokenId = (await suite.cp.bootstrapKubeconfig(at('/etc/kubernetes/bootstrap-kubelet.conf'))).tokenId;
          await fs.copyFile(path.join(suite.cp.dir, 'pki', 'ca.crt'), at('/etc/kubernetes/pki/ca.crt'));
          // The operator's file, in both flag forms. This machine has no systemd: its containerd's
          // runc uses cgroupfs, and so must the kubelet (kubeadm's pair, systemd with
          // SystemdCgroup = true, runs in the node VM suite, test/vm).
          const extra = [
            `--hostname-override=${node.name}`, '--node-ip', '127.0.0.1', `--root-dir=${at('/var/lib/kubelet')}`,
            '--container-runtime-endpoint', suite.env.containerdEndpoint, `--cgroup-root=${cgroupRoot}`, '--cgroup-driver=cgroupfs',
            '--port', String(mainPort), `--healthz-port=${healthzPort}`, '--node-status-update-frequency=2s', '-v', '2',
          ];
          await fs.writeFile(at('/etc/default/kubelet'), `KUBELET_EXTRA_ARGS="${extra.join(' ')}"\n`);
          return systemdCommandLine(dropIn);
        },
      });
      suite.onCleanup(() => k.stop());

      await suite.nodeReady(node.name);
      // Joined by TLS bootstrap: a CSR of the bootstrap token's identity, approved by the
      // controller-manager, and kubelet.conf written pointing at the stored certificate.
      const csrs = (await suite.cp.admin.makeApiClient(CertificatesV1Api).listCertificateSigningRequest()).items.filter((c) => c.spec.username === `system:bootstrap:${tokenId}`);
      assert.equal(csrs.length, 1, 'one CSR by the bootstrap token');
      assert.equal(csrs[0]!.spec.signerName, 'kubernetes.io/kube-apiserver-client-kubelet');
      assert.ok(csrs[0]!.status?.conditions?.some((c) => c.type === 'Approved' && c.status === 'True'), 'approved by the controller-manager');
      suite.onCleanup(() => suite.cp.admin.makeApiClient(CertificatesV1Api).deleteCertificateSigningRequest({ name: csrs[0]!.metadata!.name! }));
      const kubeletConf = await fs.readFile(path.join(k.dir, 'node', 'etc', 'kubernetes', 'kubelet.conf'), 'utf8');
      assert.match(kubeletConf, /kubelet-client-current\.pem/);
      const n = await suite.core.readNode({ name: node.name });
      assert.equal(n.status?.daemonEndpoints?.kubeletEndpoint?.Port, k.mainPort, 'the main port from KUBELET_EXTRA_ARGS');
      assert.ok(n.status?.addresses?.some((a) => a.type === 'InternalIP' && a.address === '127.0.0.1'), 'the node IP from KUBELET_EXTRA_ARGS');
      assert.match(n.status?.nodeInfo?.kubeletVersion ?? '', /^v1\.28\.\d+\+kubelet-ts\./);
      // kubeadm's kubelet-check: http://127.0.0.1:<healthzPort>/healthz.
      const healthz = await fetch(`http://127.0.0.1:${healthzPort}/healthz`, { signal: AbortSignal.timeout(5000) });
      assert.deepEqual([healthz.status, await healthz.text()], [200, 'ok']);

      // Up to Ready without a warning: nothing of kubeadm's files is ignored.
      const lines = (await fs.readFile(k.logFile, 'utf8')).split('\n').filter(Boolean).map((l) => {
        try {
          return JSON.parse(l) as LogLine;
        } catch {
          return { level: 50, msg: `not a log line: ${l}` };
        }
      });
      const warnings = lines.filter((l) => l.level >= 40);
      assert.equal(warnings.length, 0, `no warning line, got:\n${warnings.map((w) => JSON.stringify(w)).join("\n")}`);
      const started = lines.find((l) => l.msg === 'kubelet started') as (LogLine & { staticPodPath?: string }) | undefined;
      assert.equal(started?.staticPodPath, path.join(k.dir, 'node', 'etc', 'kubernetes', 'manifests'), "kubeadm's staticPodPath");
      const infos = lines.filter((l) => l.msg.startsWith('--pod-infra-container-image='));
      assert.equal(infos.length, version === '1.28' ? 1 : 0, '1.28 passes --pod-infra-container-image: one info line says it has no effect');
    });
  }
});
