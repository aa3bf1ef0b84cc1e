import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { containerdSuite } from '../support/containerd-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';

/**
 * Container lifecycle on containerd: postStart and preStop handlers observed from what they
 * write or request, a failing postStart restarting the container, a container that ignores
 * SIGTERM killed at the end of its grace period, and env from pod fields with $(VAR) expansion.
 */
describe('container lifecycle on containerd', function () {
  this.timeout(90_000);
  const ns = 'lifecycle-test';

  // A short hookTimeout: lifecycle handlers are bounded by the pod's grace period, never by it.
  const suite = containerdSuite({ config: { crashLoopBackOff: { initialMs: 300, maxMs: 1000 }, hookTimeoutMs: 2000 } });

  const containerId = (name: string) => suite.t.pod(name)!.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');
  const removeAndTime = async (file: string, name: string) => {
    const started = Date.now();
    await suite.t.removeManifest(file);
    await suite.t.waitForPod(name, (p) => p === undefined, 30_000, 'removed');
    return Date.now() - started;
  };

  it('runs postStart exec in the container right after start', async () => {
    await suite.t.writeManifest('post.json', podManifest('post', [{
      name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'],
      lifecycle: { postStart: { exec: { command: ['sh', '-c', 'echo hello-from-poststart > /tmp/poststart'] } } },
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await suite.t.waitForPod('post', isRunning, 30_000, 'Running');
    const r = await suite.cri.execSync(containerId('post'), ['cat', '/tmp/poststart'], 5);
    assert.equal(r.stdout.toString().trim(), 'hello-from-poststart');
    assert.equal(suite.t.pod('post')!.status!.containerStatuses![0]!.restartCount, 0);
    await removeAndTime('post.json', 'post');
  });

  it('kills and restarts a container whose postStart fails', async () => {
    await suite.t.writeManifest('badpost.json', podManifest('badpost', [{
      name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'],
      lifecycle: { postStart: { exec: { command: ['sh', '-c', 'exit 7'] } } },
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = await suite.t.waitForPod('badpost', (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 30_000, 'restarted');
    const cs = pod!.status!.containerStatuses![0]!;
    const last = cs.lastState?.terminated ?? cs.state?.terminated;
    assert.ok(last, 'the killed instance is reported as terminated');
    await removeAndTime('badpost.json', 'badpost');
  });

  it('treats a postStart httpGet to a closed port as a failed hook: killed and restarted, the kubelet keeps going', async () => {
    await suite.t.writeManifest('closedport.json', podManifest('closedport', [{
      name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'],
      lifecycle: { postStart: { httpGet: { path: '/started', port: 9 } } },
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = await suite.t.waitForPod('closedport', (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 30_000, 'restarted');
    assert.ok(pod!.status!.containerStatuses![0]!.lastState?.terminated ?? pod!.status!.containerStatuses![0]!.state?.terminated);
    assert.equal(suite.t.kubelet.healthz(), 'ok');
    await removeAndTime('closedport.json', 'closedport');
  });

  it('calls a preStop httpGet handler before stopping the container', async () => {
    const hits: string[] = [];
    const server = http.createServer((req, res) => {
      hits.push(`${req.url} ${req.headers['x-test'] ?? ''}`);
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // hostNetwork: the handler's default host is the node IP (127.0.0.1 here), our server.
      await suite.t.writeManifest('prestop.json', podManifest('prestop', [{
        name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'],
        lifecycle: { preStop: { httpGet: { path: '/prestop', port, httpHeaders: [{ name: 'X-Test', value: 'yes' }] } } },
      }], { hostNetwork: true, terminationGracePeriodSeconds: 2 }, { namespace: ns }));
      await suite.t.waitForPod('prestop', isRunning, 30_000, 'Running');
      assert.deepEqual(hits, []);
      await removeAndTime('prestop.json', 'prestop');
      assert.deepEqual(hits, ['/prestop yes']);
    } finally {
      server.close();
    }
  });

  it('lets a preStop longer than hookTimeout finish within the grace period before the stop', async () => {
    const out = await fs.mkdtemp('/tmp/kts-prestop-');
    try {
      await suite.t.writeManifest('slowstop.json', podManifest('slowstop', [{
        name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"],
        volumeMounts: [{ name: 'out', mountPath: '/out' }],
        // 4 s: twice the kubelet's hookTimeout, well within the 20 s grace period.
        lifecycle: { preStop: { exec: { command: ['sh', '-c', 'echo started > /out/prestop; sleep 4; echo done >> /out/prestop'] } } },
      }], { hostNetwork: true, terminationGracePeriodSeconds: 20, volumes: [{ name: 'out', hostPath: { path: out, type: 'Directory' } }] }, { namespace: ns }));
      await suite.t.waitForPod('slowstop', isRunning, 30_000, 'Running');
      const took = await removeAndTime('slowstop.json', 'slowstop');
      assert.equal(await fs.readFile(path.join(out, 'prestop'), 'utf8'), 'started\ndone\n', 'the preStop handler ran to its end');
      assert.ok(took >= 4000 && took < 15_000, `the stop waited for the handler, then the container ended on SIGTERM (${took} ms)`);
    } finally {
      await fs.rm(out, { recursive: true, force: true });
    }
  });

  it('kills a container that ignores SIGTERM at the end of its grace period', async () => {
    // PID 1 without a TERM handler ignores SIGTERM: only SIGKILL after the grace period stops it.
    await suite.t.writeManifest('stubborn.json', podManifest('stubborn', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 3 }, { namespace: ns }));
    await suite.t.waitForPod('stubborn', isRunning, 30_000, 'Running');
    const took = await removeAndTime('stubborn.json', 'stubborn');
    assert.ok(took >= 2900, `stopped after ${took} ms, before the 3 s grace period ended`);
    assert.ok(took < 15_000, `took ${took} ms`);
  });

  it('stops at once a container that handles SIGTERM', async () => {
    await suite.t.writeManifest('polite.json', podManifest('polite', [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 0.2; done'] }], { terminationGracePeriodSeconds: 20 }, { namespace: ns }));
    await suite.t.waitForPod('polite', isRunning, 30_000, 'Running');
    const took = await removeAndTime('polite.json', 'polite');
    assert.ok(took < 10_000, `took ${took} ms with a 20 s grace period`);
  });

  it('fills env from pod fields and expands $(VAR) with $$ escaping', async () => {
    await suite.t.writeManifest('envs.json', podManifest('envs', [{
      name: 'main', image: suite.env.images.busybox,
      command: ['sh', '-c', 'echo "name=$POD_NAME ns=$POD_NS node=$NODE greeting=$GREETING literal=$(echo x)"; echo "arg=$0"; sleep 3600', '$(GREETING)-$$(GREETING)'],
      env: [
        { name: 'POD_NAME', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } },
        { name: 'POD_NS', valueFrom: { fieldRef: { fieldPath: 'metadata.namespace' } } },
        { name: 'NODE', valueFrom: { fieldRef: { fieldPath: 'spec.nodeName' } } },
        { name: 'WHO', value: 'world' },
        { name: 'GREETING', value: 'hello-$(WHO)-$(UNDEFINED)' },
        { name: 'MEM', valueFrom: { resourceFieldRef: { resource: 'limits.memory', divisor: '1Mi' } } },
      ],
      resources: { limits: { memory: '64Mi' } },
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('envs', isRunning, 30_000, 'Running'))!;
    const logFile = path.join(suite.t.config.podLogsDir, `${ns}_envs-test-node_${pod.metadata!.uid}`, 'main', '0.log');
    let log = '';
    for (let i = 0; i < 50 && !log.includes('arg='); i++) {
      log = await fs.readFile(logFile, 'utf8').catch(() => '');
      await sleep(100);
    }
    assert.match(log, /name=envs-test-node ns=lifecycle-test node=test-node greeting=hello-world-\$\(UNDEFINED\)/);
    assert.match(log, /arg=hello-world-\$\(UNDEFINED\)-\$\(GREETING\)/);
    const r = await suite.cri.execSync(containerId('envs'), ['sh', '-c', 'echo $MEM'], 5);
    assert.equal(r.stdout.toString().trim(), '64');
    await removeAndTime('envs.json', 'envs');
  });

  it('reports CreateContainerConfigError for an env that refers to an unknown container, and keeps going', async () => {
    // Valid for the API (an unknown fieldPath is not: the manifest itself is refused), but
    // only the kubelet can tell that the container is missing.
    await suite.t.writeManifest('badenv.json', podManifest('badenv', [{
      name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'],
      env: [{ name: 'X', valueFrom: { resourceFieldRef: { containerName: 'nosuchcontainer', resource: 'limits.cpu' } } }],
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = await suite.t.waitForPod('badenv', (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CreateContainerConfigError', 20_000, 'CreateContainerConfigError');
    assert.match(pod!.status!.containerStatuses![0]!.state!.waiting!.message!, /nosuchcontainer/);
    assert.equal(suite.t.kubelet.healthz(), 'ok');
    await removeAndTime('badenv.json', 'badenv');
  });
});
