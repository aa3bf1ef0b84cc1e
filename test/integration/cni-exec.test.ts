import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import { buildSandboxConfig } from '../../core/pod/sandbox-config.ts';
import type { NetworkSetUpEvent, NetworkTearDownEvent } from '../../core/sdk/index.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { freePort, run } from '../../tools/node-env/util.ts';
import { startCniExecEnv, type CniExecEnv, type CniExecPaths, type CniTestNetwork } from '../support/cni-exec-env.ts';
import { nodeEnvUsableOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { httpGet } from '../support/http.ts';
import { parsePrometheusText } from '../support/prometheus-text.ts';
import { waitFor } from '../support/wait-for.ts';

const get = (url: string, timeoutMs = 3000) => httpGet(url, timeoutMs);

/** Polls every 200 ms until `fn` answers something truthy (test/support/wait-for.ts). */
const eventually = <T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 20_000): Promise<T> => waitFor(what, fn, timeoutMs, 200);

/**
 * cni-exec on real containerd with the Debian CNI plugins: containerd's CNI config holds only
 * the delegate (the shim); the kubelet runs bridge + host-local + portmap + loopback itself.
 */
describe('cni-exec on containerd (delegate, real CNI plugins)', function () {
  this.timeout(120_000);
  const ns = 'cni-exec-test';
  let dir: string;
  let env: NodeEnv;
  let t: TestKubelet;
  let cri: CriRuntime;
  let cniEnv: CniExecEnv | undefined;
  let net: CniTestNetwork;
  let p: CniExecPaths;
  let hostportChainsBefore: boolean;
  let readOnlyPort: number;
  const setUps: NetworkSetUpEvent[] = [];
  const tearDowns: NetworkTearDownEvent[] = [];

  // A plugin of another vendor using the network service's hooks.
  const recorder = definePlugin({
    name: 'network-recorder',
    requires: ['cni-exec'],
    apply(ctx) {
      const network = ctx.use('network')!;
      network.hooks.networkSetUp.tapPromise('network-recorder', async (e) => void setUps.push(e));
      network.hooks.networkTearDown.tapPromise('network-recorder', async (e) => void tearDowns.push(e));
    },
  });

  const kubeletPlugins = () => [
    ['cri-containerd', { endpoint: env.containerdEndpoint }],
    ['cni-exec', cniEnv!.cniExecOptions({ execTimeoutSeconds: 20 })],
    recorder,
  ] as const;

  const startKubelet = (reuseDir?: string) => startTestKubelet({
    plugins: kubeletPlugins() as never,
    ...(reuseDir ? { dir: reuseDir } : {}),
    // Pod DNS and /etc/hosts are the core's; with cni-exec as the network owner they are the same.
    config: { readOnlyPort, crashLoopBackOff: { initialMs: 500, maxMs: 2000 }, imagePullBackOff: { initialMs: 500, maxMs: 2000 }, clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' },
  });

  /** Files host-local keeps per allocated IP (it also keeps `last_reserved_ip.0` and `lock`). */
  const leasedIPs = () => cniEnv!.leasedIPs();
  const natRules = async () => (await run('iptables-save', ['-t', 'nat'])).stdout;

  before(async function () {
    nodeEnvUsableOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cni-'));
    hostportChainsBefore = (await natRules()).includes(':CNI-HOSTPORT-DNAT');
    cniEnv = await startCniExecEnv(dir, 'kts-cni-test', (n, ipamDir) => [
      { type: 'bridge', bridge: n.bridge, isGateway: true, ipMasq: false, hairpinMode: true, ipam: { type: 'host-local', ranges: [[{ subnet: n.subnet }]], routes: [{ dst: '0.0.0.0/0' }], dataDir: ipamDir } },
      { type: 'portmap', capabilities: { portMappings: true }, snat: true },
      { type: 'loopback' },
    ]);
    ({ env, net, paths: p } = cniEnv);
    cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 20_000, pullTimeoutMs: 60_000 });
    readOnlyPort = await freePort();
    t = await startKubelet();
  });

  after(async function () {
    this.timeout(120_000);
    if (t) {
      await t.removeEveryPod(60_000);
      await t.stop();
      await fs.rm(t.dir, { recursive: true, force: true });
    }
    await cri?.close();
    // Only what the plugins added: the bridge (cniEnv.stop), and portmap's top-level chains if they were not there before.
    if (cniEnv) {
      await cniEnv.stop();
      if (!hostportChainsBefore) {
        // portmap's jumps to its top-level chains, exactly as it adds them.
        const jumps = [
          ['PREROUTING', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'CNI-HOSTPORT-DNAT'],
          ['OUTPUT', '-m', 'addrtype', '--dst-type', 'LOCAL', '-j', 'CNI-HOSTPORT-DNAT'],
          ['POSTROUTING', '-m', 'comment', '--comment', 'CNI portfwd requiring masquerade', '-j', 'CNI-HOSTPORT-MASQ'],
        ];
        for (const rule of jumps) {
          while ((await run('iptables', ['-t', 'nat', '-D', ...rule], { allowFailure: true })).code === 0);
        }
        for (const chain of ['CNI-HOSTPORT-DNAT', 'CNI-HOSTPORT-SETMARK', 'CNI-HOSTPORT-MASQ']) {
          await run('iptables', ['-t', 'nat', '-F', chain], { allowFailure: true });
          await run('iptables', ['-t', 'nat', '-X', chain], { allowFailure: true });
        }
      }
    }
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const containerOf = async (pod: V1Pod) => (await cri.listContainers({ labelSelector: { [LABEL.podUID]: pod.metadata!.uid! } })).find((c) => c.state === 'CONTAINER_RUNNING')!;
  const exec = async (pod: V1Pod, cmd: string[]) => {
    const r = await cri.execSync((await containerOf(pod)).id, cmd, 10);
    return { code: r.exitCode, out: r.stdout.toString() + r.stderr.toString() };
  };
  const sandboxOf = async (pod: V1Pod) => (await cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: pod.metadata!.uid! } }))[0]!;

  let web: V1Pod;
  let client: V1Pod;

  it('installs the delegate: containerd runs only the shim', async () => {
    const files = await fs.readdir(p.runtimeConfDir);
    assert.deepEqual(files, ['00-kubelet-ts.conflist']);
    const conf = JSON.parse(await fs.readFile(path.join(p.runtimeConfDir, files[0]!), 'utf8'));
    assert.deepEqual(conf.plugins.map((x: { type: string }) => x.type), ['kubelet-ts-cni-shim']);
    assert.ok(existsSync(path.join(p.runtimeBinDir, 'kubelet-ts-cni-shim')));
  });

  it('two pods get distinct IPs from the chain and reach each other over TCP; podIP is the CNI result', async () => {
    await t.writeManifest('web.json', podManifest('web', [{
      name: 'httpd', image: env.images.busybox,
      command: ['sh', '-c', 'mkdir -p /www && echo hello-from-web > /www/index.html && exec httpd -f -p 8080 -h /www'],
      ports: [{ containerPort: 8080, hostPort: 18080 + (process.pid % 1000) }],
    }], { terminationGracePeriodSeconds: 1, hostAliases: [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }], hostname: 'web-0', subdomain: 'websvc' }, { namespace: ns }));
    await t.writeManifest('client.json', podManifest('client', [{ name: 'sh', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    web = (await t.waitForPod('web', isRunning, 60_000, 'Running'))!;
    client = (await t.waitForPod('client', isRunning, 60_000, 'Running'))!;
    const ipWeb = web.status!.podIP!;
    const ipClient = client.status!.podIP!;
    assert.ok(ipWeb.startsWith(net.prefix), `web IP ${ipWeb} in ${net.subnet}`);
    assert.ok(ipClient.startsWith(net.prefix), `client IP ${ipClient} in ${net.subnet}`);
    assert.notEqual(ipWeb, ipClient);
    assert.deepEqual(web.status!.podIPs, [{ ip: ipWeb }]);

    // containerd reports the IP of the result the delegate returned: the one host-local leased to the sandbox.
    const sbWeb = await sandboxOf(web);
    assert.equal((await fs.readFile(path.join(p.ipamDir, 'kts-cni-test', ipWeb), 'utf8')).split(/\s/)[0], sbWeb.id);
    assert.deepEqual((await leasedIPs()).sort(), [ipWeb, ipClient].sort());

    // The hooks fired with the pod and its IP.
    const ev = setUps.find((e) => e.sandboxId === sbWeb.id)!;
    assert.equal(ev.pod.metadata!.uid, web.metadata!.uid);
    assert.deepEqual(ev.ips, [ipWeb]);
    assert.equal(ev.network, 'kts-cni-test');
    assert.match(ev.netns, /netns/);

    // Pod to pod over TCP, both ways, and the node to the pod.
    // (busybox wget crashes in this sandbox: nc speaks the HTTP request itself.)
    const fromClient = await exec(client, ['sh', '-c', `printf 'GET / HTTP/1.0\\r\\n\\r\\n' | nc -w 3 ${ipWeb} 8080`]);
    assert.match(fromClient.out, /^HTTP\/1\.[01] 200 OK\r\n[\s\S]*\r\n\r\nhello-from-web\n$/, JSON.stringify(fromClient));
    // The listener's exec may take longer than any fixed pause to start on a busy node: the
    // other side tries again (bounded) until something answers on the port.
    const ncListen = exec(client, ['sh', '-c', 'echo pong | nc -l -p 9090 -w 8']);
    const fromWeb = await exec(web, ['sh', '-c', `i=0; while [ $i -lt 50 ]; do out=$(nc -w 2 ${ipClient} 9090 </dev/null 2>/dev/null) && [ -n "$out" ] && { echo "$out"; exit 0; }; i=$((i+1)); sleep 0.1; done; echo "nothing answered on ${ipClient}:9090 in 50 tries"; exit 1`]);
    await ncListen;
    assert.equal(fromWeb.out.trim(), 'pong');
    assert.equal((await get(`http://${ipWeb}:8080/`)).body.trim(), 'hello-from-web');
  });

  it('/metrics/cadvisor: the running pods\' containers by pod, namespace, image and id, and their pod\'s network, in Prometheus text', async () => {
    assert.ok(web && client, 'runs after the pods of the previous test');
    const r = await get(`http://127.0.0.1:${readOnlyPort}/metrics/cadvisor`, 10_000);
    assert.equal(r.status, 200);
    assert.match(r.type, /^text\/plain; version=0\.0\.4/);
    const families = parsePrometheusText(r.body);
    const one = (name: string, labels: Record<string, string>) => {
      const found = (families.get(name)?.samples ?? []).filter((x) => Object.entries(labels).every(([k, v]) => x.labels[k] === v));
      assert.equal(found.length, 1, `one ${name} ${JSON.stringify(labels)}: ${JSON.stringify(found)}`);
      return found[0]!;
    };
    const webNow = t.kubelet.pods().find((x) => x.metadata?.uid === web.metadata?.uid)!;
    const status = webNow.status!.containerStatuses!.find((c) => c.name === 'httpd')!;
    const httpd = { namespace: ns, pod: web.metadata!.name!, container: 'httpd' };
    const cpu = one('container_cpu_usage_seconds_total', httpd);
    assert.deepEqual(cpu.labels, { ...httpd, image: status.image, name: status.containerID!.replace(/^containerd:\/\//, ''), cpu: 'total' });
    assert.ok(cpu.value > 0 && cpu.timestampMs! > Date.now() - 120_000, `httpd's CPU ${cpu.value} s at ${cpu.timestampMs}`);
    assert.equal(families.get('container_cpu_usage_seconds_total')!.type, 'counter');
    assert.ok(one('container_memory_working_set_bytes', httpd).value > 0);
    // The pod's own cgroup, with an empty container (what dashboards leave out with container!="").
    assert.ok(one('container_memory_working_set_bytes', { namespace: ns, pod: web.metadata!.name!, container: '' }).value > 0);
    // The pod served HTTP in the previous test: bytes on its eth0.
    assert.ok(one('container_network_receive_bytes_total', { namespace: ns, pod: web.metadata!.name!, interface: 'eth0' }).value > 0);
    assert.ok(one('container_network_transmit_bytes_total', { namespace: ns, pod: web.metadata!.name!, interface: 'eth0' }).value > 0);
    assert.equal(one('machine_cpu_cores', {}).value, os.cpus().length);
  });

  it('a hostPort answers on 127.0.0.1 (portmap with the pod\'s port mappings)', async () => {
    const port = 18080 + (process.pid % 1000);
    const page = await eventually('hostPort answers', async () => (await get(`http://127.0.0.1:${port}/`)).body);
    assert.equal(page.trim(), 'hello-from-web');
  });

  it('/etc/hosts has the pod\'s FQDN and hostAliases; resolv.conf the cluster DNS', async () => {
    const hosts = (await exec(web, ['cat', '/etc/hosts'])).out;
    assert.match(hosts, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.ok(hosts.includes(`${web.status!.podIP}\tweb-0.websvc.${ns}.svc.cluster.local\tweb-0\n`), hosts);
    assert.ok(hosts.endsWith('\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n'), hosts);
    const resolv = (await exec(web, ['cat', '/etc/resolv.conf'])).out;
    assert.match(resolv, /nameserver 10\.96\.0\.10/);
    assert.match(resolv, new RegExp(`search ${ns}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`));
    assert.match(resolv, /options ndots:5/);
    assert.equal((await exec(web, ['hostname'])).out.trim(), 'web-0');
  });

  it('a hostNetwork pod never reaches CNI and gets the node IP', async () => {
    const before = setUps.length;
    await t.writeManifest('hostnet.json', podManifest('hostnet', [{ name: 'sh', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1, hostNetwork: true, hostAliases: [{ ip: '192.0.2.11', hostnames: ['baz.local'] }] }, { namespace: ns }));
    const pod = (await t.waitForPod('hostnet', isRunning, 60_000, 'Running'))!;
    assert.equal(pod.status!.podIP, '127.0.0.1');
    assert.equal(setUps.length, before);
    const hosts = (await exec(pod, ['cat', '/etc/hosts'])).out;
    assert.match(hosts, /^# Kubernetes-managed hosts file \(host network\)\.\n/);
    assert.ok(hosts.endsWith('192.0.2.11\tbaz.local\n'));
    await t.removeManifest('hostnet.json');
    await t.waitForPod('hostnet', (x) => x === undefined, 60_000, 'removed');
  });

  it('deleting pods releases every IP, port mapping and cache entry', async () => {
    const sbIds = [(await sandboxOf(web)).id, (await sandboxOf(client)).id];
    await t.removeManifest('web.json');
    await t.removeManifest('client.json');
    await t.waitForPod('web', (x) => x === undefined, 60_000, 'removed');
    await t.waitForPod('client', (x) => x === undefined, 60_000, 'removed');
    assert.deepEqual(await leasedIPs(), [], 'host-local store empty');
    const nat = await natRules();
    for (const id of sbIds) assert.ok(!nat.includes(id), `no iptables rule of sandbox ${id.slice(0, 12)} left`);
    assert.deepEqual(await fs.readdir(path.join(t.config.rootDir, 'plugin-state', 'cni-exec', 'results')), []);
    // The managed hosts files go with the pods' dirs.
    for (const uid of [web.metadata!.uid!, client.metadata!.uid!]) {
      await eventually('pod dir with its etc-hosts removed', async () => !(await fs.stat(path.join(t.config.rootDir, 'pods', uid)).then(() => true, () => false)), 5000);
    }
    assert.ok(tearDowns.some((e) => e.sandboxId === sbIds[0] && e.podRef?.uid === web.metadata!.uid));
  });

  it('a kubelet restart between ADD and DEL leaks nothing', async () => {
    const port = 19080 + (process.pid % 1000);
    await t.writeManifest('survivor.json', podManifest('survivor', [{
      name: 'httpd', image: env.images.busybox, command: ['sh', '-c', 'echo survivor > /tmp/index.html && exec httpd -f -p 8080 -h /tmp'],
      ports: [{ containerPort: 8080, hostPort: port }],
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const first = (await t.waitForPod('survivor', isRunning, 60_000, 'Running'))!;
    const sb = await sandboxOf(first);
    await t.stop();
    // While the kubelet is down, containerd's CNI calls fail fast with a message that says why.
    const orphan = buildSandboxConfig({ metadata: { name: 'orphan', namespace: ns, uid: 'orphan-uid' }, spec: { containers: [] } }, 0, t.config);
    const t0 = Date.now();
    const down = await cri.runPodSandbox(orphan).then((id) => `created ${id}`, (err: Error) => err.message);
    assert.match(down, /kubelet-ts is not reachable on .*cni\.sock .*the kubelet that runs pod networking \(plugin cni-exec\) is not running/, down);
    assert.ok(Date.now() - t0 < 10_000, `failed within ${Date.now() - t0} ms`);
    t = await startKubelet(t.dir);
    const adopted = (await t.waitForPod('survivor', isRunning, 60_000, 'adopted'))!;
    assert.equal(adopted.status!.podIP, first.status!.podIP);
    assert.equal((await sandboxOf(adopted)).id, sb.id, 'same sandbox');
    assert.equal((await eventually('hostPort answers', async () => (await get(`http://127.0.0.1:${port}/`)).body)).trim(), 'survivor');
    await t.removeManifest('survivor.json');
    await t.waitForPod('survivor', (x) => x === undefined, 60_000, 'removed');
    assert.deepEqual(await leasedIPs(), []);
    assert.ok(!(await natRules()).includes(sb.id), 'portmap rules removed by the DEL of the restarted kubelet (from the cache)');
    assert.deepEqual(await fs.readdir(path.join(t.config.rootDir, 'plugin-state', 'cni-exec', 'results')), []);
  });

  it('a failing plugin leaves the sandbox failed with the CNI error in the status, and the pod starts once fixed', async () => {
    const broken = path.join(p.confDir, '05-broken.conflist');
    await fs.writeFile(broken, JSON.stringify({
      cniVersion: '1.0.0', name: 'kts-cni-broken',
      plugins: [{ type: 'bridge', bridge: net.bridge, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: 'not-a-subnet' }]], dataDir: p.ipamDir } }],
    }));
    await t.writeManifest('unlucky.json', podManifest('unlucky', [{ name: 'sh', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const failed = (await t.waitForPod('unlucky', (x) => /Failed to create pod sandbox/.test(x?.status?.containerStatuses?.[0]?.state?.waiting?.message ?? ''), 60_000, 'sandbox failure in status'))!;
    const message = failed.status!.containerStatuses![0]!.state!.waiting!.message!;
    assert.equal(failed.status!.containerStatuses![0]!.state!.waiting!.reason, 'ContainerCreating');
    assert.match(message, /network "kts-cni-broken" plugin "bridge" \(ADD\): invalid CIDR address: not-a-subnet/, message);
    assert.equal((await cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: failed.metadata!.uid! } })).filter((s) => s.state === 'SANDBOX_READY').length, 0);
    // Retried with back-off: once the config is fixed the pod starts, nothing of the failed attempts left.
    await fs.rm(broken);
    const ok = (await t.waitForPod('unlucky', isRunning, 90_000, 'Running after the fix'))!;
    assert.ok(ok.status!.podIP!.startsWith(net.prefix));
    const entries = await fs.readdir(path.join(t.config.rootDir, 'plugin-state', 'cni-exec', 'results'));
    assert.deepEqual(entries, [`${(await sandboxOf(ok)).id}-eth0.json`], 'only the live attachment is cached');
    await t.removeManifest('unlucky.json');
    await t.waitForPod('unlucky', (x) => x === undefined, 60_000, 'removed');
    assert.deepEqual(await leasedIPs(), []);
  });
});
