import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { AppsV1Api, PatchStrategy, setHeaderOptions, type V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { startRegistryAuthProxy } from '../support/registry-auth-proxy.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Pods from the API run as they do under upstream: the service account volume every pod gets
 * (a bound token, the cluster CA, the namespace), ConfigMaps and Secrets as files and env,
 * watched so that an edit reaches the pod, and image pull secrets — against the real control
 * plane and real containerd.
 */
describe('API pods: configMaps, secrets, tokens, pull secrets', function () {
  this.timeout(240_000);
  const suite = clusterSuite('kts-apipods-');
  let apps: AppsV1Api;
  before(function () {
    if (suite.cp) apps = suite.cp.admin.makeApiClient(AppsV1Api);
  });

  /** A node of this test with its kubelet (API-server mode), removed after the test. */
  async function node(what: string, testHooks?: Parameters<typeof startTestKubelet>[0]['testHooks'], config?: Parameters<typeof startTestKubelet>[0]['config']): Promise<{ name: string; kubelet: TestKubelet }> {
    const n = suite.node(what);
    const kubelet = await suite.kubelet(n, { ...(testHooks ? { testHooks } : {}), ...(config ? { config } : {}) });
    await suite.nodeReady(n.name);
    return { name: n.name, kubelet };
  }

  const namespace = (what: string) => suite.namespace(what, { rootCA: true });

  const readPod = (name: string, ns: string) => suite.core.readNamespacedPod({ name, namespace: ns });
  const running = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running);

  async function exec(p: V1Pod, script: string, container?: string): Promise<{ out: string; code: number }> {
    const cs = (p.status?.containerStatuses ?? []).find((c) => !container || c.name === container)!;
    const r = await suite.runtime.execSync(cs.containerID!.replace(/^.*:\/\//, ''), ['sh', '-c', script], 20);
    return { out: Buffer.concat([r.stdout, r.stderr]).toString().trim(), code: r.exitCode };
  }

  const sleeper = (extra: object = {}) => ({ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"], ...extra });

  it('a Deployment of 3 replicas runs on the node, each with its service account volume (token, ca.crt, namespace)', async function () {
    const { name } = await node('deploy');
    const ns = await namespace('deploy');
    // `kubectl create deployment web --image=... --replicas=3 -- sleep 3600`, pinned to this test's node.
    await apps.createNamespacedDeployment({
      namespace: ns,
      body: {
        metadata: { name: 'web' },
        spec: {
          replicas: 3,
          selector: { matchLabels: { app: 'web' } },
          template: {
            metadata: { labels: { app: 'web' } },
            spec: { nodeSelector: { 'kubernetes.io/hostname': name }, terminationGracePeriodSeconds: 2, containers: [sleeper()] },
          },
        },
      },
    });
    const pods = await waitFor('3 replicas Running', async () => {
      const list = (await suite.core.listNamespacedPod({ namespace: ns, labelSelector: 'app=web' })).items;
      return list.length === 3 && list.every(running) && list;
    }, 120_000);
    const ca = await fs.readFile(path.join(suite.cp.dir, 'pki', 'ca.crt'), 'utf8');
    for (const p of pods) {
      assert.equal(p.spec?.nodeName, name);
      const vol = p.spec?.volumes?.find((v) => v.name.startsWith('kube-api-access-'));
      assert.ok(vol?.projected, 'ServiceAccount admission added the kube-api-access volume');
      const dirOut = await exec(p, 'ls /var/run/secrets/kubernetes.io/serviceaccount && cat /var/run/secrets/kubernetes.io/serviceaccount/namespace');
      assert.equal(dirOut.code, 0, dirOut.out);
      assert.deepEqual(dirOut.out.split('\n'), ['ca.crt', 'namespace', 'token', ns]);
      assert.equal((await exec(p, 'cat /var/run/secrets/kubernetes.io/serviceaccount/ca.crt')).out, ca.trim());
      const token = (await exec(p, 'cat /var/run/secrets/kubernetes.io/serviceaccount/token')).out;
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString('utf8'));
      assert.equal(claims['kubernetes.io']?.pod?.name, p.metadata?.name, 'the token is bound to its pod');
      assert.equal(claims['kubernetes.io']?.serviceaccount?.name, 'default');
    }
    await apps.deleteNamespacedDeployment({ name: 'web', namespace: ns });
  });

  it('ConfigMap and Secret as files and env (valueFrom, envFrom with prefix); an edited ConfigMap reaches its file', async function () {
    const { name } = await node('objects');
    const ns = await namespace('objects');
    await suite.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'conf' }, data: { 'app.conf': 'level=info', MODE: 'fast' } } });
    await suite.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'creds' }, stringData: { password: 's3cret', user: 'admin' } } });
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'reader' },
        spec: {
          nodeName: name,
          automountServiceAccountToken: false,
          terminationGracePeriodSeconds: 1,
          volumes: [{ name: 'conf', configMap: { name: 'conf' } }, { name: 'creds', secret: { secretName: 'creds' } }],
          containers: [sleeper({
            volumeMounts: [{ name: 'conf', mountPath: '/etc/app' }, { name: 'creds', mountPath: '/etc/creds' }],
            env: [{ name: 'DB_PASSWORD', valueFrom: { secretKeyRef: { name: 'creds', key: 'password' } } }, { name: 'MODE_COPY', valueFrom: { configMapKeyRef: { name: 'conf', key: 'MODE' } } }],
            envFrom: [{ prefix: 'CFG_', configMapRef: { name: 'conf' } }],
          })],
        },
      },
    });
    const p = await waitFor('Running', async () => { const x = await readPod('reader', ns); return running(x) && x; });
    const envOut = (await exec(p, 'env')).out.split('\n');
    for (const want of ['DB_PASSWORD=s3cret', 'MODE_COPY=fast', 'CFG_MODE=fast']) assert.ok(envOut.includes(want), `${want} in ${envOut.join(' ')}`);
    assert.equal((await exec(p, 'cat /etc/app/app.conf')).out, 'level=info');
    assert.equal((await exec(p, 'cat /etc/creds/user')).out, 'admin');
    assert.match((await exec(p, 'grep " /etc/creds " /proc/mounts')).out, /tmpfs .*\bro\b/, 'the secret is on tmpfs, read-only');
    const t0 = Date.now();
    await suite.core.patchNamespacedConfigMap({ name: 'conf', namespace: ns, body: [{ op: 'replace', path: '/data/app.conf', value: 'level=debug' }] });
    await waitFor('the edit reaches the file', async () => (await exec(p, 'cat /etc/app/app.conf')).out === 'level=debug', 20_000);
    assert.ok(Date.now() - t0 < 20_000);
  });

  it('service links: the namespace\'s services and the API server\'s `kubernetes` service as env, as upstream injects them', async function () {
    const { name } = await node('links');
    const ns = await namespace('links');
    const svc = await suite.core.createNamespacedService({ namespace: ns, body: { metadata: { name: 'foo-service' }, spec: { ports: [{ name: 'http', port: 8765, protocol: 'TCP', targetPort: 8080 as never }], selector: { app: 'x' } } } });
    const ip = svc.spec!.clusterIP!;
    const master = await suite.core.readNamespacedService({ name: 'kubernetes', namespace: 'default' });
    const pod = (podName: string, spec: Partial<V1Pod["spec"]>) => suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: podName }, spec: { nodeName: name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [], ...spec } },
    });
    await pod('linked', { containers: [sleeper({ env: [{ name: 'LINK', value: 'http://$(FOO_SERVICE_SERVICE_HOST):$(FOO_SERVICE_SERVICE_PORT_HTTP)' }, { name: 'FOO_SERVICE_PORT', value: 'mine' }] })] });
    await pod('unlinked', { enableServiceLinks: false, containers: [sleeper()] });
    const envOf = async (podName: string) => {
      const p = await waitFor(`${podName} Running`, async () => { const x = await readPod(podName, ns); return running(x) && x; });
      return (await exec(p, 'env')).out.split('\n');
    };
    const linked = await envOf('linked');
    for (const want of [
      `FOO_SERVICE_SERVICE_HOST=${ip}`, 'FOO_SERVICE_SERVICE_PORT=8765', 'FOO_SERVICE_SERVICE_PORT_HTTP=8765',
      `FOO_SERVICE_PORT_8765_TCP=tcp://${ip}:8765`, 'FOO_SERVICE_PORT_8765_TCP_PROTO=tcp', 'FOO_SERVICE_PORT_8765_TCP_PORT=8765', `FOO_SERVICE_PORT_8765_TCP_ADDR=${ip}`,
      `LINK=http://${ip}:8765`, 'FOO_SERVICE_PORT=mine',
      `KUBERNETES_SERVICE_HOST=${master.spec!.clusterIP}`, 'KUBERNETES_SERVICE_PORT=443', 'KUBERNETES_SERVICE_PORT_HTTPS=443',
    ]) assert.ok(linked.includes(want), `${want} in ${linked.join(' ')}`);
    const unlinked = await envOf('unlinked');
    assert.ok(unlinked.includes(`KUBERNETES_SERVICE_HOST=${master.spec!.clusterIP}`), 'the API server\'s service is always linked');
    assert.ok(!unlinked.some((l) => l.startsWith('FOO_SERVICE_')), unlinked.join(' '));
  });

  it('a pod whose ConfigMap is missing waits with CreateContainerConfigError naming it, and starts once it is created', async function () {
    const { name } = await node('missing');
    const ns = await namespace('missing');
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'waiter' }, spec: { nodeName: name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [sleeper({ env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'later', key: 'x' } } }] })] } },
    });
    const waiting = await waitFor('CreateContainerConfigError', async () => {
      const x = await readPod('waiter', ns);
      return x.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError' && x;
    });
    assert.equal(waiting.status!.containerStatuses![0]!.state!.waiting!.message, 'configmap "later" not found');
    await suite.core.createNamespacedConfigMap({ namespace: ns, body: { metadata: { name: 'later' }, data: { x: 'here' } } });
    const p = await waitFor('Running once the ConfigMap exists', async () => { const x = await readPod('waiter', ns); return running(x) && x; }, 30_000);
    assert.ok((await exec(p, 'env')).out.split('\n').includes('X=here'));
  });

  it('a process in the pod calls the API server with its projected token; the token file rotates', async function () {
    // Refresh at 0.3 % of the token's lifetime (~11 s of 3607 s) instead of 80 %, so rotation happens within the test.
    const { name } = await node('token', { tokens: { refreshFraction: 0.003 } });
    const ns = await namespace('token');
    await suite.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: 'caller' }, spec: { nodeName: name, hostNetwork: true, terminationGracePeriodSeconds: 1, containers: [sleeper()] } } });
    const p = await waitFor('Running', async () => { const x = await readPod('caller', ns); return running(x) && x; });
    const sa = '/var/run/secrets/kubernetes.io/serviceaccount';
    const answer = await exec(p, `wget -q -O - --no-check-certificate --header "Authorization: Bearer $(cat ${sa}/token)" ${suite.cp.server}/api`);
    assert.equal(answer.code, 0, answer.out);
    assert.match(answer.out, /"kind":\s*"APIVersions"/);
    const first = (await exec(p, `cat ${sa}/token`)).out;
    const rotated = await waitFor('a new token in the file', async () => { const t = (await exec(p, `cat ${sa}/token`)).out; return t !== first && t; }, 45_000);
    const again = await exec(p, `wget -q -O - --no-check-certificate --header "Authorization: Bearer ${rotated}" ${suite.cp.server}/api`);
    assert.match(again.out, /APIVersions/, 'the new token works');
  });

  it('a pod that needs more CPU than the node has is Failed/OutOfcpu, never gets a sandbox, and stays so across resyncs and a restart', async function () {
    // Resyncs every 2 s (not 10 s): the waits below cover some.
    const { name, kubelet } = await node('admit', undefined, { syncFrequencyMs: 2000 });
    const ns = await namespace('admit');
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'greedy' }, spec: { nodeName: name, automountServiceAccountToken: false, containers: [sleeper({ resources: { requests: { cpu: '64' } } })] } },
    });
    const failed = await waitFor('Failed', async () => { const x = await readPod('greedy', ns); return x.status?.phase === 'Failed' && x; });
    assert.equal(failed.status?.reason, 'OutOfcpu');
    assert.match(failed.status?.message ?? '', /^Node didn't have enough resource: cpu, requested: 64000, used: 0, capacity: \d+$/);
    const uid = failed.metadata!.uid!;
    const sandboxes = () => suite.runtime.listPodSandboxes({ labelSelector: { 'io.kubernetes.pod.uid': uid } });
    assert.deepEqual(await sandboxes(), []);
    // Resyncs (syncFrequency 2 s) and a restart of the kubelet do not undo it.
    await sleep(5000);
    await kubelet.stop();
    const again = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: suite.env.containerdEndpoint }]],
      config: { kubeconfig: await suite.cp.nodeKubeconfig(name), nodeName: name, nodeIP: '127.0.0.1', syncFrequencyMs: 2000 },
      dir: kubelet.dir,
    });
    suite.onCleanup(async () => {
      // The Failed pod stays on the node until it is deleted in the API; the namespace goes only
      // after this cleanup (it was made before this kubelet), so delete the pod first.
      await suite.core.deleteNamespacedPod({ name: 'greedy', namespace: ns }).catch(() => {});
      await again.dispose();
    });
    await sleep(3000);
    assert.deepEqual(await sandboxes(), [], 'still no sandbox');
    assert.equal((await readPod('greedy', ns)).status?.phase, 'Failed');
  });

  it('a pod for another OS is Failed at admission: spec.os.name windows is PodOSNotSupported, a kubernetes.io/os: windows label PodOSSelectorNodeLabelDoesNotMatch; neither gets a sandbox', async function () {
    const { name } = await node('os');
    const ns = await namespace('os');
    const create = (pod: string, meta: object, spec: object) => suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: pod, ...meta }, spec: { nodeName: name, automountServiceAccountToken: false, containers: [sleeper()], ...spec } },
    });
    // As upstream's PodOSRejection e2e test: the API server accepts it (bound by nodeName, no scheduler), the kubelet refuses it.
    await create('wrong-pod-os', {}, { os: { name: 'windows' } });
    await create('wrong-os-label', { labels: { 'kubernetes.io/os': 'windows' } }, {});
    const failed = async (pod: string) => waitFor(`${pod} Failed`, async () => { const x = await readPod(pod, ns); return x.status?.phase === 'Failed' && x; });
    const byField = await failed('wrong-pod-os');
    assert.equal(byField.status?.reason, 'PodOSNotSupported');
    assert.equal(byField.status?.message, "Failed to admit pod as the OS field doesn't match node OS");
    const byLabel = await failed('wrong-os-label');
    assert.equal(byLabel.status?.reason, 'PodOSSelectorNodeLabelDoesNotMatch');
    assert.equal(byLabel.status?.message, "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label");
    for (const p of [byField, byLabel]) {
      assert.deepEqual(await suite.runtime.listPodSandboxes({ labelSelector: { 'io.kubernetes.pod.uid': p.metadata!.uid! } }), [], `${p.metadata!.name}: no sandbox`);
    }
  });

  it('a static pod (critical) that does not fit preempts an API pod, as upstream: the API pod Failed/Preempting with DisruptionTarget and a Warning event, the static pod runs', async function () {
    // Room for two pods: two API pods take it.
    const { name, kubelet } = await node('preempt', undefined, { maxPods: 2 });
    const ns = await namespace('preempt');
    for (const p of ['api-1', 'api-2']) {
      await suite.core.createNamespacedPod({ namespace: ns, body: { metadata: { name: p }, spec: { nodeName: name, terminationGracePeriodSeconds: 1, automountServiceAccountToken: false, containers: [sleeper()] } } });
    }
    await waitFor('both API pods Running', async () => running(await readPod('api-1', ns)) && running(await readPod('api-2', ns)), 60_000);
    // A static pod is critical (upstream IsCriticalPod): it is not rejected OutOfpods, an API pod makes room.
    await kubelet.writeManifest('critical.json', { apiVersion: 'v1', kind: 'Pod', metadata: { name: 'critical', namespace: ns }, spec: { terminationGracePeriodSeconds: 1, containers: [sleeper()] } });
    const victim = await waitFor('an API pod preempted', async () => (await suite.core.listNamespacedPod({ namespace: ns })).items.find((p) => p.status?.reason === 'Preempting'), 60_000);
    assert.equal(victim.status?.phase, 'Failed');
    assert.equal(victim.status?.message, 'Preempted in order to admit critical pod');
    const disruption = victim.status?.conditions?.find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual([disruption?.status, disruption?.reason, disruption?.message], ['True', 'TerminationByKubelet', 'Pod was preempted by Kubelet to accommodate a critical pod.']);
    const spared = victim.metadata!.name === 'api-1' ? 'api-2' : 'api-1';
    assert.ok(running(await readPod(spared, ns)), 'one pod is enough: the other runs on');
    await kubelet.waitForPod('critical', running, 60_000, 'the static pod Running');
    const event = await waitFor('the Preempting event', async () => (await suite.core.listNamespacedEvent({ namespace: ns })).items.find((e) => e.involvedObject?.name === victim.metadata!.name && e.reason === 'Preempting'), 30_000, 300);
    assert.deepEqual([event.type, event.message], ['Warning', 'Preempted in order to admit critical pod']);
    assert.match(await kubelet.kubelet.metrics.registry.metrics(), /^kubelet_preemptions\{preemption_signal="pods"\} 1$/m);
    await kubelet.removeManifest('critical.json');
  });

  it('a label an admin adds to the Node admits a pod selecting it at once (the kubelet watches its Node, no wait for the status period)', async function () {
    const { name } = await node('label');
    const ns = await namespace('label');
    await suite.core.patchNode({ name, body: { metadata: { labels: { 'example.com/pool': 'blue' } } } }, setHeaderOptions('Content-Type', PatchStrategy.MergePatch));
    // Well within nodeStatusUpdateFrequency (10 s), when a kubelet reading its Node each period may not have it yet.
    await sleep(1000);
    await suite.core.createNamespacedPod({
      namespace: ns,
      body: { metadata: { name: 'blue' }, spec: { nodeName: name, nodeSelector: { 'example.com/pool': 'blue' }, automountServiceAccountToken: false, terminationGracePeriodSeconds: 2, containers: [sleeper()] } },
    });
    const p = await waitFor('Running or Failed', async () => { const x = await readPod('blue', ns); return (running(x) || x.status?.phase === 'Failed') && x; });
    assert.equal(p.status?.phase, 'Running', `${p.status?.reason}: ${p.status?.message}`);
  });

  it('image pull secrets: a registry that requires credentials pulls with the pod\'s secret; without or with a wrong one, ErrImagePull with the registry\'s reason', async function () {
    const { name } = await node('pull');
    const ns = await namespace('pull');
    const proxy = await startRegistryAuthProxy(suite.env.registry, 'puller', 'p4ss');
    suite.onCleanup(() => proxy.close());
    // The image through the authenticating registry (a host of its own, so always pulled there).
    const image = `${proxy.host}/kubelet-ts/busybox:1.35`;
    const dockerConfig = (user: string, pass: string) => Buffer.from(JSON.stringify({ auths: { [proxy.host]: { auth: Buffer.from(`${user}:${pass}`).toString('base64') } } })).toString('base64');
    await suite.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'good' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': dockerConfig('puller', 'p4ss') } } });
    await suite.core.createNamespacedSecret({ namespace: ns, body: { metadata: { name: 'bad' }, type: 'kubernetes.io/dockerconfigjson', data: { '.dockerconfigjson': dockerConfig('puller', 'wrong') } } });
    const pod = (podName: string, secret?: string): V1Pod => ({
      metadata: { name: podName },
      spec: { nodeName: name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, ...(secret ? { imagePullSecrets: [{ name: secret }] } : {}), containers: [{ ...sleeper(), image, imagePullPolicy: 'Always' }] },
    });
    for (const [podName, secret] of [['anonymous', undefined], ['wrong', 'bad']] as const) {
      await suite.core.createNamespacedPod({ namespace: ns, body: pod(podName, secret) });
      const failed = await waitFor(`${podName}: ErrImagePull`, async () => {
        const w = (await readPod(podName, ns)).status?.containerStatuses?.[0]?.state?.waiting;
        return (w?.reason === 'ErrImagePull' || w?.reason === 'ImagePullBackOff') && w;
      });
      if (failed.reason === 'ErrImagePull') assert.match(failed.message ?? '', /401 Unauthorized|unauthorized|authorization failed/i);
    }
    await suite.core.createNamespacedPod({ namespace: ns, body: pod('private', 'good') });
    await waitFor('Running with the pull secret', async () => running(await readPod('private', ns)), 60_000);
    assert.ok(proxy.refused > 0, 'the registry refused the pulls without credentials');
  });
});
