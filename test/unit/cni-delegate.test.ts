import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import type { Server } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { silentLogger } from '../../core/logger.ts';
import { CniRuntime } from '../../plugins/cni-exec/cni/runtime.ts';
import { installDelegate, isDelegateConf, shimSource, writeIfChanged, type ShimKind } from '../../plugins/cni-exec/delegate/install.ts';
import { serveDelegate } from '../../plugins/cni-exec/delegate/protocol.ts';
import { isolateTaps } from '../../core/plugins/tap-isolation.ts';
import { CniNetwork, type CniNetworkSetUpEvent, type CniNetworkTearDownEvent } from '../../plugins/cni-exec/network-service.ts';

const FAKE = path.join(path.dirname(fileURLToPath(import.meta.url)), '..', 'fakes', 'cni', 'fake-plugin');

function runShim(file: string, env: Record<string, string>, stdin: string): Promise<{ code: number; stdout: string; ms: number }> {
  const t0 = performance.now();
  return new Promise((resolve) => {
    const child = execFile(file, [], { env: { PATH: process.env.PATH ?? '', ...env }, timeout: 20_000 }, (err, stdout) => {
      resolve({ code: err ? Number((err as { code?: number }).code ?? 1) : 0, stdout, ms: performance.now() - t0 });
    });
    child.stdin!.end(stdin);
  });
}

const pod = (name: string, extra: Partial<V1Pod['spec']> = {}, annotations: Record<string, string> = {}): V1Pod => ({
  metadata: { name, namespace: 'ns1', uid: `uid-${name}`, annotations },
  spec: { containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 53, protocol: 'UDP' }] }], ...extra },
});

/**
 * The delegate path without a container runtime: the shim (Perl and Node) run as containerd
 * runs a CNI plugin, forwarding to a CniNetwork served on a unix socket, which runs a chain
 * of fake plugins.
 */
describe('cni-exec: delegate shim and kubelet side', function () {
  this.timeout(30_000);
  let dir: string;
  let server: Server;
  let network: CniNetwork;
  let pods: V1Pod[];
  let socket: string;
  const setUps: CniNetworkSetUpEvent[] = [];
  const tearDowns: CniNetworkTearDownEvent[] = [];

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cni-dlg-'));
    for (const d of ['bin', 'net.d', 'log', 'runtime-net.d', 'runtime-bin']) await fs.mkdir(path.join(dir, d));
    await fs.symlink(FAKE, path.join(dir, 'bin', 'fake-a'));
    await fs.writeFile(path.join(dir, 'net.d', '10-chain.conflist'), JSON.stringify({
      cniVersion: '1.0.0', name: 'chain',
      plugins: [{ type: 'fake-a', fakeTag: 'a', fakeLogDir: path.join(dir, 'log'), fakeAddress: '10.99.0.5/24', capabilities: { portMappings: true } }],
    }));
    socket = path.join(dir, 'cni.sock');
    const cni = new CniRuntime({ confDir: path.join(dir, 'net.d'), binDirs: [path.join(dir, 'bin')], cacheDir: path.join(dir, 'cache'), execTimeoutMs: 5000 });
    pods = [pod('web'), pod('host', { hostNetwork: true })];
    network = new CniNetwork(cni, { pods: () => pods, logger: silentLogger(), isolateHooks: (hooks) => isolateTaps(hooks, silentLogger(), { timeoutMs: 5000 }) });
    network.hooks.networkSetUp.tapPromise('recorder', async (e) => void setUps.push(e));
    network.hooks.networkTearDown.tap('recorder', (e) => void tearDowns.push(e));
    server = await serveDelegate(socket, (req) => network.handle(req), () => {});
  });

  after(async () => {
    await new Promise<void>((r) => server.close(() => r()));
    await fs.rm(dir, { recursive: true, force: true });
  });

  const delegateConf = () => JSON.stringify({ cniVersion: '1.0.0', name: 'kubelet-ts', type: 'kubelet-ts-cni-shim', socket, timeoutSeconds: 10 });
  const env = (command: string, id: string, extra: Record<string, string> = {}) => ({
    CNI_COMMAND: command, CNI_CONTAINERID: id, CNI_NETNS: `/var/run/netns/cni-${id}`, CNI_IFNAME: 'eth0', CNI_PATH: '/usr/lib/cni',
    // containerd 1.6: K8S_POD_UID is present but empty.
    CNI_ARGS: `K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=`,
    ...extra,
  });

  for (const kind of ['perl', 'node'] as ShimKind[]) {
    describe(`${kind} shim`, () => {
      let shim: string;
      before(() => {
        shim = path.join(dir, 'runtime-bin', `shim-${kind}`);
        writeIfChanged(shim, shimSource(kind), 0o755);
      });

      it('ADD: resolves the pod by namespace/name, runs the chain with its port mappings and answers with the result', async () => {
        const id = `sb-${kind}`;
        const r = await runShim(shim, env('ADD', id), delegateConf());
        assert.equal(r.code, 0, r.stdout);
        const result = JSON.parse(r.stdout);
        assert.equal(result.cniVersion, '1.0.0');
        assert.deepEqual(result.interfaces, [{ name: 'eth0', sandbox: `/var/run/netns/cni-${id}` }]);
        assert.deepEqual(result.ips, [{ address: '10.99.0.5/24', gateway: '10.99.0.1', interface: 0 }]);
        const logged = (await fs.readdir(path.join(dir, 'log'))).filter((f) => f.includes(`ADD`) && f.endsWith('.env'));
        const envText = await fs.readFile(path.join(dir, 'log', logged[logged.length - 1]!), 'utf8');
        assert.match(envText, new RegExp(`CNI_ARGS=IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=uid-web\n`));
        const stdinText = await fs.readFile(path.join(dir, 'log', logged[logged.length - 1]!.replace(/\.env$/, '.json')), 'utf8');
        assert.deepEqual(JSON.parse(stdinText).runtimeConfig, { portMappings: [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }] });
        const ev = setUps.find((e) => e.sandboxId === id)!;
        assert.equal(ev.pod.metadata!.uid, 'uid-web');
        assert.deepEqual(ev.ips, ['10.99.0.5']);
        assert.equal(ev.network, 'chain');
        assert.deepEqual((await network.attachment(id))?.ips, ['10.99.0.5']);
        console.log(`      (${kind} shim round trip: ${r.ms.toFixed(0)} ms)`);
      });

      it('ADD answers in the version the runtime asked for', async () => {
        const r = await runShim(shim, env('ADD', `sb-${kind}-04`), delegateConf().replace('"1.0.0"', '"0.4.0"'));
        assert.equal(r.code, 0, r.stdout);
        assert.deepEqual(JSON.parse(r.stdout).ips, [{ address: '10.99.0.5/24', gateway: '10.99.0.1', interface: 0, version: '4' }]);
      });

      it('DEL with an empty netns and IgnoreUnknown, twice, succeeds and fires networkTearDown once', async () => {
        const id = `sb-${kind}`;
        const delEnv = env('DEL', id, { CNI_NETNS: '', CNI_ARGS: `IgnoreUnknown=1;K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=web;K8S_POD_INFRA_CONTAINER_ID=${id};K8S_POD_UID=` });
        const before = tearDowns.length;
        for (let i = 0; i < 2; i++) {
          const r = await runShim(shim, delEnv, delegateConf());
          assert.equal(r.code, 0, r.stdout);
          assert.equal(r.stdout, '');
        }
        assert.equal(tearDowns.length, before + 1);
        assert.equal(tearDowns[tearDowns.length - 1]!.podRef?.uid, 'uid-web');
        assert.equal(await network.attachment(id), undefined);
      });

      it('VERSION is answered by the shim itself', async () => {
        const r = await runShim(shim, { CNI_COMMAND: 'VERSION' }, '{"cniVersion":"1.0.0"}');
        assert.equal(r.code, 0);
        assert.deepEqual(JSON.parse(r.stdout), { cniVersion: '1.0.0', supportedVersions: ['0.3.0', '0.3.1', '0.4.0', '1.0.0'] });
      });

      it('an unknown pod, and a hostNetwork pod, get a CNI error naming them', async () => {
        const r = await runShim(shim, env('ADD', 'sb-x', { CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=ghost;K8S_POD_INFRA_CONTAINER_ID=sb-x;K8S_POD_UID=' }), delegateConf());
        assert.equal(r.code, 1);
        assert.deepEqual(JSON.parse(r.stdout), { cniVersion: '1.0.0', code: 101, msg: 'pod ns1/ghost is not known to this kubelet: cni-exec networks only the pods it runs' });
        const h = await runShim(shim, env('ADD', 'sb-h', { CNI_ARGS: 'K8S_POD_NAMESPACE=ns1;K8S_POD_NAME=host;K8S_POD_INFRA_CONTAINER_ID=sb-h;K8S_POD_UID=' }), delegateConf());
        assert.equal(h.code, 1);
        assert.match(JSON.parse(h.stdout).msg, /uses the host network and gets no CNI network/);
      });

      it('fails fast with a CNI error saying the kubelet is unreachable', async () => {
        const conf = delegateConf().replace(socket, path.join(dir, 'nobody-listens.sock'));
        const r = await runShim(shim, env('ADD', 'sb-u'), conf);
        assert.equal(r.code, 1);
        const e = JSON.parse(r.stdout);
        assert.equal(e.code, 11);
        assert.match(e.msg, /^kubelet-ts is not reachable on .*nobody-listens\.sock \(.*\): the kubelet that runs pod networking \(plugin cni-exec\) is not running/);
        assert.ok(r.ms < 2000, `took ${r.ms} ms`);
      });
    });
  }

  it('a failing networkSetUp tap fails the ADD, names the plugin and rolls the chain back', async () => {
    const n2 = new CniNetwork(network.cni, { pods: () => pods, logger: silentLogger(), isolateHooks: (hooks) => isolateTaps(hooks, silentLogger(), { timeoutMs: 5000 }) });
    n2.hooks.networkSetUp.tapPromise('route-adder', async () => {
      throw new Error('cannot add route');
    });
    const a = await n2.handle({ env: env('ADD', 'sb-hook'), stdin: delegateConf() });
    assert.equal(a.exitCode, 1);
    assert.deepEqual(JSON.parse(a.stdout), { cniVersion: '1.0.0', code: 102, msg: `network "chain": plugin 'route-adder' (hook networkSetUp): cannot add route` });
    assert.equal(await n2.attachment('sb-hook'), undefined, 'rolled back');
  });

  it('installs the shim and the delegate config, refusing a config dir where another file sorts first', async () => {
    const confDir = path.join(dir, 'runtime-net.d');
    const binDir = path.join(dir, 'runtime-bin');
    const conf = { name: 'kubelet-ts', type: 'kubelet-ts-cni-shim', socket, timeoutSeconds: 30 };
    const { shimPath, confPath } = await installDelegate({ runtimeConfDir: confDir, runtimeBinDir: binDir, confFile: '00-kubelet-ts.conflist', shim: 'perl', conf });
    assert.equal((await fs.stat(shimPath)).mode & 0o777, 0o755);
    const text = await fs.readFile(confPath, 'utf8');
    assert.deepEqual(JSON.parse(text), { cniVersion: '1.0.0', name: 'kubelet-ts', plugins: [{ type: 'kubelet-ts-cni-shim', socket, timeoutSeconds: 30 }] });
    assert.ok(isDelegateConf(text, 'kubelet-ts-cni-shim'));
    await fs.writeFile(path.join(confDir, '00-aaa.conflist'), '{}');
    await assert.rejects(installDelegate({ runtimeConfDir: confDir, runtimeBinDir: binDir, confFile: '00-kubelet-ts.conflist', shim: 'perl', conf }), /00-aaa\.conflist sorts before .*00-kubelet-ts\.conflist/);
  });
});
