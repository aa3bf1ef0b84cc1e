import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CoordinationV1Api, CoreV1Api, RbacAuthorizationV1Api, type V1Container, type V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { freePort } from '../../tools/node-env/util.ts';
import { controlPlaneOrSkip, type ControlPlane } from '../support/control-plane.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { httpGet } from '../support/http.ts';
import { kubectl, kubectlOrSkip, type Kubectl, type RunningCommand } from '../support/kubectl.ts';
import { kubeletRequest, websocketChannels } from '../support/kubelet-https.ts';
import { startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import type { Summary } from '../../core/stats/summary-types.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * The kubelet's main port as a cluster uses it: the real API server (../shared/k8s) calls it for
 * `kubectl logs`, `exec`, `attach`, `port-forward` and `cp` with its client certificate, and
 * tokens the API server knows read /stats/summary and /metrics/resource directly; real kubectl
 * (1.32: WebSocket first, SPDY when the runtime refuses it) and real containerd behind.
 */
describe('the main port: kubectl logs, exec, attach, port-forward, cp; stats; authentication and authorization', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let cp: ControlPlane;
  let k: Kubectl;
  let core: CoreV1Api;
  let rbac: RbacAuthorizationV1Api;
  let t: TestKubelet;
  let dir: string;
  let port: number;
  let admin: { cert: Buffer; key: Buffer };
  const tag = `${process.pid}`;
  const node = `mp-node-${tag}`;
  const ns = `mp-${tag}`;
  const reader = 'mp-reader';
  const nobody = 'mp-nobody';
  const role = `mp-stats-reader-${tag}`;
  const running = new Set<RunningCommand>();

  const pod = (name: string, containers: object[], spec: object = {}): V1Pod => ({
    metadata: { name },
    spec: { nodeName: node, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: containers as V1Container[], ...spec },
  });
  const readPod = (name: string) => core.readNamespacedPod({ name, namespace: ns });
  const isRunning = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running);
  const tokenOf = async (sa: string) => (await core.createNamespacedServiceAccountToken({ name: sa, namespace: ns, body: { spec: { audiences: [], expirationSeconds: 600 } } })).status!.token;
  const started = (c: RunningCommand) => {
    running.add(c);
    return c;
  };

  before(async function () {
    this.timeout(300_000);
    env = await nodeEnvOrSkip(this);
    cp = await controlPlaneOrSkip(this);
    k = kubectl(kubectlOrSkip(this), cp.adminKubeconfig);
    core = cp.admin.makeApiClient(CoreV1Api);
    rbac = cp.admin.makeApiClient(RbacAuthorizationV1Api);
    admin = { cert: await fs.readFile(path.join(cp.dir, 'pki', 'admin.crt')), key: await fs.readFile(path.join(cp.dir, 'pki', 'admin.key')) };
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-mp-'));
    // The API server reaches the kubelet at the Node's InternalIP and daemonEndpoints port:
    // loopback and a free port. Client certificates chain to the kubeconfig's CA (the cluster CA).
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      config: {
        kubeconfig: await cp.nodeKubeconfig(node), nodeName: node, nodeIP: '127.0.0.1', readOnlyPort: await freePort(),
        syncFrequencyMs: 10_000, nodeStatusUpdateFrequencyMs: 2000, crashLoopBackOff: { initialMs: 300, maxMs: 1000 },
      },
      dir: path.join(dir, 'kubelet'),
    });
    port = t.kubelet.port;
    await core.createNamespace({ body: { metadata: { name: ns } } });
    await waitFor(`ServiceAccount ${ns}/default`, async () => (await core.readNamespacedServiceAccount({ name: 'default', namespace: ns }).catch(() => undefined)) !== undefined, 30_000);
    for (const sa of [reader, nobody]) await core.createNamespacedServiceAccount({ namespace: ns, body: { metadata: { name: sa } } });
    await rbac.createClusterRole({ body: { metadata: { name: role }, rules: [{ apiGroups: [''], resources: ['nodes/stats', 'nodes/metrics', 'nodes/proxy'], verbs: ['get'] }] } });
    await rbac.createClusterRoleBinding({
      body: { metadata: { name: role }, roleRef: { apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: role }, subjects: [{ kind: 'ServiceAccount', name: reader, namespace: ns }] },
    });
    await waitFor('Node Ready', async () => (await core.readNode({ name: node })).status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'));
    const image = env.images.busybox;
    await core.createNamespacedPod({
      namespace: ns,
      body: pod('mp-web', [{
        name: 'web', image,
        command: ['sh', '-c', 'mkdir -p /www; echo hello-from-httpd > /www/index.html; dd if=/dev/zero of=/scratch/blob bs=1024 count=1024 2>/dev/null; httpd -f -p 8080 -h /www & i=0; while true; do echo "tick $i"; i=$((i+1)); sleep 1; done'],
        volumeMounts: [{ name: 'scratch', mountPath: '/scratch' }],
      }], { volumes: [{ name: 'scratch', emptyDir: {} }] }),
    });
    await core.createNamespacedPod({
      namespace: ns,
      body: pod('mp-logs', [
        { name: 'ticker', image, command: ['sh', '-c', 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 0.2; done'] },
        { name: 'crash', image, command: ['sh', '-c', 'echo "run $(cat /proc/sys/kernel/random/uuid)"; sleep 2; exit 1'] },
      ]),
    });
    await core.createNamespacedPod({ namespace: ns, body: pod('mp-attach', [{ name: 'cat', image, command: ['cat'], stdin: true }]) });
    for (const name of ['mp-web', 'mp-attach']) await waitFor(`${name} Running`, async () => isRunning(await readPod(name)), 90_000);
  });

  afterEach(async function () {
    for (const c of running) await c.stop('SIGKILL');
    running.clear();
  });

  after(async function () {
    this.timeout(180_000);
    if (!cp) return;
    await core.deleteNamespace({ name: ns }).catch(() => {});
    // Its pods at once, not ~5 s later through the namespace controller: the wait below is for them.
    await core.deleteCollectionNamespacedPod({ namespace: ns }).catch(() => {});
    if (t) {
      await waitFor('the namespace\'s pods gone from the kubelet', () => t.kubelet.pods().every((p) => p.metadata?.namespace !== ns), 90_000).catch(() => {});
      await t.dispose();
    }
    await rbac.deleteClusterRoleBinding({ name: role }).catch(() => {});
    await rbac.deleteClusterRole({ name: role }).catch(() => {});
    await core.deleteNode({ name: node }).catch(() => {});
    await cp.admin.makeApiClient(CoordinationV1Api).deleteNamespacedLease({ name: node, namespace: 'kube-node-lease' }).catch(() => {});
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  it('the Node reports the port the main server bound', async function () {
    const n = await core.readNode({ name: node });
    assert.equal(n.status?.daemonEndpoints?.kubeletEndpoint?.Port, port);
    assert.ok(port > 0);
  });

  it('kubectl logs: --tail, -c, -f and --previous', async function () {
    await waitFor('mp-logs ticker running', async () => (await readPod('mp-logs')).status?.containerStatuses?.find((c) => c.name === 'ticker')?.state?.running);
    await waitFor('some lines', async () => ((await k.run(['logs', '-n', ns, 'mp-logs', '-c', 'ticker'])).stdout.match(/\n/g)?.length ?? 0) >= 3, 30_000);
    const tail = await k.run(['logs', '-n', ns, 'mp-logs', '-c', 'ticker', '--tail=2']);
    assert.equal(tail.code, 0, tail.stderr);
    assert.match(tail.stdout, /^line \d+\nline \d+\n$/);

    // -f: new lines as they are written, until kubectl is stopped.
    const follow = started(k.start(['logs', '-f', '-n', ns, 'mp-logs', '-c', 'ticker', '--tail=1']));
    await follow.waitFor('six followed lines', (out) => out.split('\n').length > 6);
    const nums = follow.stdout().split('\n').slice(0, 6).map((l) => Number(/^line (\d+)$/.exec(l)?.[1]));
    assert.deepEqual(nums, nums.map((_, i) => nums[0]! + i), 'consecutive lines');
    await follow.stop();

    // --previous: the instance before the current one of a crashing container.
    await waitFor('crash restarted', async () => ((await readPod('mp-logs')).status?.containerStatuses?.find((c) => c.name === 'crash')?.restartCount ?? 0) >= 1, 60_000);
    const prev = await waitFor('previous log', async () => {
      const r = await k.run(['logs', '-n', ns, 'mp-logs', '-c', 'crash', '--previous']);
      return r.code === 0 && /^run [0-9a-f-]{36}\n$/.test(r.stdout) && r;
    }, 30_000);
    assert.match(prev.stdout, /^run [0-9a-f-]{36}\n$/);
    const missing = await k.run(['logs', '-n', ns, 'mp-web', '-c', 'web', '--previous']);
    assert.notEqual(missing.code, 0);
    assert.match(missing.stderr, /previous terminated container "web" in pod "mp-web" not found/);
  });

  it('kubectl exec: output, exit codes, a command that does not exist', async function () {
    const r = await k.run(['exec', '-n', ns, 'mp-web', '--', 'sh', '-c', 'echo out; echo err >&2']);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'out\n');
    assert.equal(r.stderr, 'err\n');
    const seven = await k.run(['exec', '-n', ns, 'mp-web', '--', 'sh', '-c', 'exit 7']);
    assert.equal(seven.code, 7);
    assert.match(seven.stderr, /command terminated with exit code 7/);
    const input = await k.run(['exec', '-i', '-n', ns, 'mp-web', '--', 'sh', '-c', 'tr a-z A-Z'], { input: 'through stdin\n' });
    assert.equal(input.stdout, 'THROUGH STDIN\n');
    const nope = await k.run(['exec', '-n', ns, 'mp-web', '--', 'no-such-command']);
    assert.notEqual(nope.code, 0);
    assert.match(nope.stderr, /exec: "no-such-command": executable file not found in \$PATH/);
  });

  it('kubectl exec -it: a terminal (tty answers /dev/pts/N) and the shell\'s exit code', async function () {
    const session = started(k.startWithTty(['exec', '-it', '-n', ns, 'mp-web', '--', 'sh']));
    await session.waitFor('the prompt', (out) => out.includes('# '));
    session.child.stdin!.write('tty; echo "sum $((40+2))"; exit 3\n');
    assert.equal(await session.exited, 3);
    assert.match(session.stdout(), /\/dev\/pts\/\d+/);
    assert.match(session.stdout(), /sum 42/);
  });

  it('kubectl attach: a container\'s output, and its stdin with -i', async function () {
    const watch = started(k.start(['attach', '-n', ns, 'mp-web', '-c', 'web']));
    await watch.waitFor('ticks', (out) => (out.match(/tick \d+\n/g)?.length ?? 0) >= 2);
    await watch.stop();
    const interactive = started(k.start(['attach', '-i', '-n', ns, 'mp-attach', '-c', 'cat']));
    await interactive.waitFor('attached', (_out, err) => /If you don't see a command prompt/.test(err));
    interactive.child.stdin!.write('hello through attach\n');
    await interactive.waitFor('the echo', (out) => out.includes('hello through attach\n'));
  });

  it('kubectl port-forward to the pod\'s httpd, and a request through it', async function () {
    const pf = started(k.start(['port-forward', '-n', ns, 'pod/mp-web', ':8080']));
    await pf.waitFor('Forwarding from', (out) => /Forwarding from 127\.0\.0\.1:\d+ -> 8080/.test(out));
    const local = Number(/Forwarding from 127\.0\.0\.1:(\d+)/.exec(pf.stdout())![1]);
    for (let i = 0; i < 3; i++) {
      const r = await httpGet(`http://127.0.0.1:${local}/`, 10_000);
      assert.equal(r.status, 200);
      assert.equal(r.body, 'hello-from-httpd\n');
    }
  });

  it('kubectl cp into the pod and out of it', async function () {
    const src = path.join(dir, 'in.txt');
    const content = `copied ${Date.now()}\n${'x'.repeat(10_000)}\n`;
    await fs.writeFile(src, content);
    const up = await k.run(['cp', src, `${ns}/mp-web:/tmp/mp-in.txt`, '-c', 'web']);
    assert.equal(up.code, 0, up.stderr);
    assert.equal((await k.run(['exec', '-n', ns, 'mp-web', '--', 'cat', '/tmp/mp-in.txt'])).stdout, content);
    const dst = path.join(dir, 'out.txt');
    const down = await k.run(['cp', `${ns}/mp-web:/tmp/mp-in.txt`, dst, '-c', 'web']);
    assert.equal(down.code, 0, down.stderr);
    assert.equal(await fs.readFile(dst, 'utf8'), content);
  });

  it('a client that goes away mid-stream: the exec\'d process and the stream are released', async function () {
    const session = started(k.start(['exec', '-i', '-n', ns, 'mp-web', '--', 'sh', '-c', 'echo $$ > /tmp/mp-cat.pid; echo ready; exec cat']));
    await session.waitFor('ready', (out) => out.includes('ready'));
    const pid = (await k.run(['exec', '-n', ns, 'mp-web', '--', 'cat', '/tmp/mp-cat.pid'])).stdout.trim();
    assert.match(pid, /^\d+$/);
    const alive = async () => (await k.run(['exec', '-n', ns, 'mp-web', '--', 'sh', '-c', `kill -0 ${pid} 2>/dev/null && echo alive || echo gone`])).stdout.trim();
    assert.equal(await alive(), 'alive');
    await session.stop('SIGKILL');
    await waitFor('the exec\'d process gone', async () => (await alive()) === 'gone', 30_000);
    await waitFor('no stream left on the kubelet', () => t.kubelet.mainServer!.activeStreams === 0, 10_000);
  });

  it('direct WebSocket (v4.channel.k8s.io) exec with a client certificate: stdout, stderr and the exit status by channel', async function () {
    const q = new URLSearchParams([['command', 'sh'], ['command', '-c'], ['command', 'echo ws-out; echo ws-err >&2; exit 0'], ['output', '1'], ['error', '1']]);
    const s = await websocketChannels(port, `/exec/${ns}/mp-web/web?${q}`, { ...admin, protocols: ['v4.channel.k8s.io'] });
    assert.equal(s.status, 101, s.refusal);
    assert.equal(s.protocol, 'v4.channel.k8s.io');
    assert.equal(s.stdout, 'ws-out\n');
    assert.equal(s.stderr, 'ws-err\n');
    assert.equal(JSON.parse(s.error).status, 'Success');
    // A subprotocol the runtime does not speak: its refusal reaches the client (kubectl then falls back to SPDY).
    const refused = await websocketChannels(port, `/exec/${ns}/mp-web/web?${q}`, { ...admin, protocols: ['v9.channel.k8s.io'] });
    assert.notEqual(refused.status, 101);
  });

  it('bad requests: unknown pod or container 404, bad query values 400 naming the parameter, /run', async function () {
    const up = { connection: 'Upgrade', upgrade: 'SPDY/3.1', 'x-stream-protocol-version': 'v4.channel.k8s.io' };
    const post = (p: string) => kubeletRequest(port, p, { ...admin, method: 'POST', headers: up });
    assert.deepEqual(await post(`/exec/${ns}/ghost/web?command=true&output=1`).then((r) => [r.status, r.body]), [404, 'pod does not exist\n']);
    assert.deepEqual(await post(`/exec/${ns}/mp-web/ghost?command=true&output=1`).then((r) => [r.status, r.body]), [404, 'container not found ("ghost")\n']);
    const badFlag = await post(`/exec/${ns}/mp-web/web?command=true&output=maybe`);
    assert.equal(badFlag.status, 400);
    assert.match(badFlag.body, /query parameter "output": "maybe"/);
    assert.equal((await post(`/exec/${ns}/mp-web/web?output=1`)).status, 400);
    const badPort = await post(`/portForward/${ns}/mp-web?port=http`);
    assert.equal(badPort.status, 400);
    assert.match(badPort.body, /query parameter "port": "http"/);
    const plain = await kubeletRequest(port, `/exec/${ns}/mp-web/web?command=true&output=1`, { ...admin, method: 'POST' });
    assert.deepEqual([plain.status, plain.body], [400, 'Upgrade request required\n']);
    const badStats = await kubeletRequest(port, '/stats/summary?only_cpu_and_memory=perhaps', admin);
    assert.equal(badStats.status, 400);
    assert.match(badStats.body, /"only_cpu_and_memory"/);
    const ran = await kubeletRequest(port, `/run/${ns}/mp-web/web?cmd=cat%20/www/index.html`, { ...admin, method: 'POST' });
    assert.deepEqual([ran.status, ran.body], [200, 'hello-from-httpd\n']);
    const failed = await kubeletRequest(port, `/run/${ns}/mp-web/web?cmd=cat%20/nope`, { ...admin, method: 'POST' });
    assert.equal(failed.status, 500);
    assert.match(failed.body, /^command 'cat \/nope' exited with 1: cat: can't open '\/nope': No such file or directory/);
  });

  it('401 without credentials, 403 naming the user and the attributes without RBAC on nodes/...', async function () {
    assert.deepEqual(await kubeletRequest(port, '/pods').then((r) => [r.status, r.body]), [401, 'Unauthorized\n']);
    assert.equal((await kubeletRequest(port, '/healthz')).status, 401);
    assert.equal((await kubeletRequest(port, '/pods', { token: 'not-a-token' })).status, 401);
    const token = await tokenOf(nobody);
    const stats = await kubeletRequest(port, '/stats/summary', { token });
    assert.deepEqual([stats.status, stats.body], [403, `Forbidden (user=system:serviceaccount:${ns}:${nobody}, verb=get, resource=nodes, subresource(s)=[stats])\n`]);
    const pods = await kubeletRequest(port, '/pods', { token });
    assert.deepEqual([pods.status, pods.body], [403, `Forbidden (user=system:serviceaccount:${ns}:${nobody}, verb=get, resource=nodes, subresource(s)=[pods proxy])\n`]);
    const exec = await kubeletRequest(port, `/exec/${ns}/mp-web/web?command=id&output=1`, { token, method: 'POST', headers: { connection: 'Upgrade', upgrade: 'SPDY/3.1' } });
    assert.deepEqual([exec.status, exec.body], [403, `Forbidden (user=system:serviceaccount:${ns}:${nobody}, verb=create, resource=nodes, subresource(s)=[proxy])\n`]);
    // Unknown paths are 404 only for someone allowed to ask.
    assert.equal((await kubeletRequest(port, '/no/such/path', { token })).status, 403);
    assert.equal((await kubeletRequest(port, '/no/such/path', admin)).status, 404);
  });

  it('/stats/summary and /metrics/resource with a ServiceAccount token allowed nodes/stats and nodes/metrics', async function () {
    const token = await tokenOf(reader);
    // Two reads a second apart: CPU rates need two samples.
    await kubeletRequest(port, '/stats/summary', { token });
    await sleep(1500);
    const r = await kubeletRequest(port, '/stats/summary', { token });
    assert.equal(r.status, 200, r.body);
    const s = JSON.parse(r.body) as Summary;
    assert.equal(s.node.nodeName, node);
    assert.ok(s.node.cpu!.usageCoreNanoSeconds! > 0 && s.node.cpu!.usageNanoCores !== undefined);
    assert.ok(s.node.memory!.workingSetBytes! > 0 && s.node.memory!.availableBytes! > 0);
    assert.ok(s.node.fs!.capacityBytes! > 0 && s.node.fs!.availableBytes! > 0 && s.node.fs!.inodesFree! > 0);
    assert.ok(s.node.runtime!.imageFs!.capacityBytes! > 0);
    assert.ok(s.node.rlimit!.maxpid! > 0 && s.node.rlimit!.curproc! > 0);
    assert.deepEqual(s.node.systemContainers!.map((c) => c.name).sort(), ['kubelet']);
    const web = s.pods.find((p) => p.podRef.name === 'mp-web' && p.podRef.namespace === ns)!;
    assert.ok(web, `pods: ${s.pods.map((p) => p.podRef.name).join(', ')}`);
    assert.equal(web.podRef.uid, (await readPod('mp-web')).metadata!.uid);
    assert.deepEqual(web.containers.map((c) => c.name), ['web']);
    const c = web.containers[0]!;
    assert.ok(c.cpu!.usageCoreNanoSeconds! > 0 && c.memory!.workingSetBytes! > 0);
    assert.ok(c.rootfs!.capacityBytes! > 0 && c.logs!.usedBytes! > 0);
    assert.ok(web.cpu!.usageCoreNanoSeconds! > 0 && web.memory!.workingSetBytes! > 0);
    const scratch = web.volume!.find((v) => v.name === 'scratch')!;
    assert.ok(scratch.usedBytes! >= 1024 * 1024, `the 1 MiB file in emptyDir scratch: ${JSON.stringify(scratch)}`);
    assert.ok(web['ephemeral-storage']!.usedBytes! >= scratch.usedBytes!);
    const only = JSON.parse((await kubeletRequest(port, '/stats/summary?only_cpu_and_memory=true', { token })).body) as Summary;
    assert.equal(only.node.fs, undefined);
    assert.ok(only.pods.find((p) => p.podRef.name === 'mp-web')!.memory!.workingSetBytes! > 0);

    const m = await kubeletRequest(port, '/metrics/resource', { token });
    assert.equal(m.status, 200);
    assert.match(m.headers['content-type'] as string, /^text\/plain; version=0\.0\.4/);
    assert.match(m.body, /^node_cpu_usage_seconds_total [\d.e+]+ \d+$/m);
    assert.match(m.body, /^node_memory_working_set_bytes \d+ \d+$/m);
    assert.match(m.body, new RegExp(`^container_cpu_usage_seconds_total\\{container="web",namespace="${ns}",pod="mp-web"\\} [\\d.e+-]+ \\d+$`, 'm'));
    assert.match(m.body, new RegExp(`^container_memory_working_set_bytes\\{container="web",namespace="${ns}",pod="mp-web"\\} \\d+ \\d+$`, 'm'));
    assert.match(m.body, new RegExp(`^pod_cpu_usage_seconds_total\\{namespace="${ns}",pod="mp-web"\\} [\\d.e+-]+ \\d+$`, 'm'));
    assert.match(m.body, new RegExp(`^pod_memory_working_set_bytes\\{namespace="${ns}",pod="mp-web"\\} \\d+ \\d+$`, 'm'));
    assert.match(m.body, /^scrape_error 0$/m);
    const probes = await kubeletRequest(port, '/metrics/probes', { token });
    assert.equal(probes.status, 200);
    assert.match(probes.body, /# TYPE prober_probe_total counter/);
    // nodes/proxy covers /pods (its fine-grained `pods` is not granted: the fallback is).
    assert.equal((await kubeletRequest(port, '/pods', { token })).status, 200);
  });

  it('the read-only port serves only what upstream\'s does: no logs, exec, run, config or debugging views', async function () {
    const base = `http://127.0.0.1:${t.kubelet.readOnlyPort}`;
    for (const p of [`/containerLogs/${ns}/mp-web/web`, `/exec/${ns}/mp-web/web`, `/run/${ns}/mp-web/web`, '/configz', '/runningpods/', '/debug/events', `/debug/pods/${ns}/mp-web/timeline`]) {
      assert.equal((await httpGet(`${base}${p}`)).status, 404, p);
    }
    assert.equal((await httpGet(`${base}/healthz`)).body, 'ok');
    assert.equal((await httpGet(`${base}/stats/summary`)).status, 200);
    // The main port has them, for whoever may use them.
    const configz = JSON.parse((await kubeletRequest(port, '/configz', admin)).body) as { kubeletconfig: { port: number; authorization: { mode: string } } };
    assert.equal(configz.kubeletconfig.authorization.mode, 'Webhook');
    const runningPods = JSON.parse((await kubeletRequest(port, '/runningpods/', admin)).body) as { items: V1Pod[] };
    assert.ok(runningPods.items.some((p) => p.metadata?.name === 'mp-web' && p.spec?.containers[0]?.name === 'web'));
  });
});
