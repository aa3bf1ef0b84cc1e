import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import type { KubeletPlugin } from '../../core/plugins/plugin-api.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { freePort } from '../../tools/node-env/util.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { isRunning, podManifest, startTestKubelet } from '../support/test-kubelet.ts';

/**
 * Bad input and faults that used to stop the kubelet or strand pods, on real containerd:
 * huge grace periods, a pod deleted while the runtime is away, an edited static pod across
 * a restart, plugin taps that throw or never answer, a taken port, idle sockets.
 */
describe('hardening: bad input and faults never stop the kubelet or strand a pod', function () {
  this.timeout(240_000);
  let env: NodeEnv;
  let dir: string;
  let runtime: CriRuntime;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-hardening-'));
    runtime = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
  });

  after(async function () {
    await runtime?.close();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  /** A container that stops at once on SIGTERM (a shell as PID 1 ignores TERM without a trap). */
  const polite = (name = 'c') => ({ name, image: env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] });
  const podsNamed = async (name: string) => (await runtime.listPodSandboxes({ labelSelector: { [LABEL.podName]: name } }));

  async function waitUntil<T>(what: string, check: () => Promise<T | undefined | false> | T | undefined | false, timeoutMs: number): Promise<T> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const v = await check();
      if (v) return v;
      if (Date.now() > deadline) throw new Error(`${what}: not reached within ${timeoutMs} ms`);
      await sleep(200);
    }
  }

  const runningIn = (k: KubeletProcess, name: string) => async () => (await k.pods())?.find((p) => p.metadata?.name === name && isRunning(p));

  it('a terminationGracePeriodSeconds of 999999999999 neither stops the process nor misfires, before and after a restart', async function () {
    const k = await startKubeletProcess(env, { config: { nodeName: 'grace-node' } });
    let k2: KubeletProcess | undefined;
    try {
      const pod = podManifest('huge-grace', [{ ...polite(), lifecycle: { preStop: { exec: { command: ['sh', '-c', 'true'] } } } }], { terminationGracePeriodSeconds: 999999999999, hostNetwork: true }) as V1Pod;
      await k.writeManifest('huge.json', pod);
      await waitUntil('pod Running', runningIn(k, 'huge-grace-grace-node'), 60_000);
      // Restart on the same state: the adopted pod carries the grace period in its annotations.
      await k.stop({ signal: 'SIGKILL', keepDir: true });
      k2 = await startKubeletProcess(env, { dir: k.dir, config: { nodeName: 'grace-node' } });
      await waitUntil('pod adopted and Running', runningIn(k2, 'huge-grace-grace-node'), 30_000);
      await k2.removeManifest('huge.json');
      // The container leaves on SIGTERM: removal takes seconds, not the clamped 24.8 days, and not 0 (a misfired timer).
      await waitUntil('pod removed', async () => (await k2!.pods())?.length === 0 && (await podsNamed('huge-grace-grace-node')).length === 0, 60_000);
      assert.equal(await Promise.race([k2.exited.then(() => 'exited'), sleep(500).then(() => 'alive')]), 'alive');
    } finally {
      await (k2 ?? k).stop();
    }
  });

  it('a pod deleted while containerd is frozen is terminated once it answers again (failed terminations are retried)', async function () {
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { runtimeRequestTimeoutMs: 1500, nodeName: 'frozen-node' }, dir: path.join(dir, 'frozen') });
    const pid = env.containerd.pid!;
    let frozen = false;
    try {
      await t.writeManifest('p.json', podManifest('frozen', [polite()], { hostNetwork: true, terminationGracePeriodSeconds: 2 }));
      await t.waitForPod('frozen', isRunning, 60_000, 'Running');
      process.kill(pid, 'SIGSTOP');
      frozen = true;
      await t.removeManifest('p.json');
      // Termination fails while containerd is frozen (every call hits its deadline).
      await sleep(5000);
      assert.ok(t.pod('frozen'), 'the pod is still listed (terminating) while its termination fails');
      process.kill(pid, 'SIGCONT');
      frozen = false;
      await t.waitForPod('frozen', (p) => p === undefined, 60_000, 'pod terminated after containerd came back');
      assert.deepEqual(await podsNamed('frozen-frozen-node'), [], 'no sandbox left in the runtime');
    } finally {
      if (frozen) process.kill(pid, 'SIGCONT');
      await t.dispose();
    }
  });

  it('an edited static pod never runs beside its old version, across a kubelet restart and with an in-place write', async function () {
    const k = await startKubeletProcess(env, { config: { nodeName: 'edit-node' } });
    let k2: KubeletProcess | undefined;
    try {
      const v1 = podManifest('edited', [{ ...polite(), env: [{ name: 'V', value: '1' }] }], { hostNetwork: true, terminationGracePeriodSeconds: 3 }) as V1Pod;
      await k.writeManifest('edited.json', v1);
      await waitUntil('v1 Running', runningIn(k, 'edited-edit-node'), 60_000);
      await k.stop({ signal: 'SIGKILL', keepDir: true });
      // Edited while the kubelet is down, written in place (not renamed into place).
      const v2 = podManifest('edited', [{ ...polite(), env: [{ name: 'V', value: '2' }] }], { hostNetwork: true, terminationGracePeriodSeconds: 3 });
      await fs.writeFile(path.join(k.manifestDir, 'edited.json'), JSON.stringify(v2));
      k2 = await startKubeletProcess(env, { dir: k.dir, config: { nodeName: 'edit-node' } });
      const deadline = Date.now() + 60_000;
      let overlap = 0;
      let samples = 0;
      for (;;) {
        const ready = (await podsNamed('edited-edit-node')).filter((s) => s.state === 'SANDBOX_READY');
        samples++;
        if (ready.length > 1) overlap++;
        const pods = (await k2.pods()) ?? [];
        const running = pods.find((p) => p.metadata?.name === 'edited-edit-node' && isRunning(p) && p.spec?.containers[0]?.env?.[0]?.value === '2');
        if (running && pods.length === 1) break;
        assert.ok(Date.now() < deadline, 'v2 did not take over');
        await sleep(100);
      }
      assert.equal(overlap, 0, `two READY sandboxes of the pod at once in ${overlap} of ${samples} samples`);
      // An in-place write in chunks while it runs: the half-written file never becomes a pod.
      const v3 = JSON.stringify(podManifest('edited', [{ ...polite(), env: [{ name: 'V', value: '3' }] }], { hostNetwork: true, terminationGracePeriodSeconds: 3 }), null, 1);
      const fh = await fs.open(path.join(k.manifestDir, 'edited.json'), 'w');
      for (let i = 0; i < v3.length; i += 64) {
        await fh.write(v3.slice(i, i + 64));
        await sleep(5);
      }
      await fh.close();
      await waitUntil('v3 Running', async () => ((await k2!.pods()) ?? []).find((p) => isRunning(p) && p.spec?.containers[0]?.env?.[0]?.value === '3'), 60_000);
      const log = await fs.readFile(k2.logFile, 'utf8');
      assert.ok(!/invalid static pod manifest/.test(log), 'a half-written file was read');
      await k2.removeManifest('edited.json');
      await waitUntil('pods removed', async () => (await podsNamed('edited-edit-node')).length === 0, 60_000);
    } finally {
      await (k2 ?? k).stop();
    }
  });

  it('a plugin tap that throws or never calls back leaves a reason on the pod, and the pod goes on', async function () {
    let hang = true;
    const plugin: KubeletPlugin = {
      name: 'misbehaving',
      apply(ctx) {
        ctx.hooks.beforeContainerCreate.tapPromise('misbehaving', async (config, c) => {
          if (c.container.name === 'refused') throw new Error('policy says no');
          return config;
        });
        // A callback that never comes, the first time only.
        ctx.hooks.afterStart.tapAsync('misbehaving', (e, _ctx, cb) => {
          if (e.container.name === 'slow' && hang) {
            hang = false;
            return;
          }
          cb();
        });
      },
    };
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], plugin], config: { hookTimeoutMs: 4000, nodeName: 'tap-node' }, dir: path.join(dir, 'taps') });
    try {
      await t.writeManifest('p.json', podManifest('taps', [{ ...polite('refused') }, polite('slow')], { hostNetwork: true, terminationGracePeriodSeconds: 1 }));
      const refused = await t.waitForPod('taps', (p) => p?.status?.containerStatuses?.find((c) => c.name === 'refused')?.state?.waiting?.reason === 'CreateContainerError', 30_000, 'CreateContainerError');
      assert.match(refused!.status!.containerStatuses!.find((c) => c.name === 'refused')!.state!.waiting!.message!, /plugin 'misbehaving' \(hook beforeContainerCreate\): policy says no/);
      // While afterStart hangs, the container shows as running (the worker is busy; status follows the runtime).
      await t.waitForPod('taps', (p) => p?.status?.containerStatuses?.find((c) => c.name === 'slow')?.state?.running !== undefined, 3000, 'slow shown running while its afterStart hangs');
      // The tap times out (hookTimeout 4 s) as a failed postStart: the container is restarted and runs.
      await t.waitForPod('taps', (p) => { const s = p?.status?.containerStatuses?.find((c) => c.name === 'slow'); return (s?.restartCount ?? 0) >= 1 && s?.state?.running !== undefined; }, 30_000, 'slow restarted after the hung tap');
    } finally {
      await t.dispose().catch(() => {});
    }
  });

  it('a pod removed while its volume set-up hangs is terminated at once: the sync is given up on and the set-up\'s signal aborts', async function () {
    // As upstream cancels a pod sync's context when the pod is to be terminated: the kubelet
    // does not wait out hookTimeout (60 s here) for a set-up nobody needs any more.
    let setUps = 0;
    let abortedWith: unknown;
    const plugin: KubeletPlugin = {
      name: 'hanging-volume',
      kind: 'storage',
      apply(ctx) {
        ctx.hooks.mountVolume.for('flexVolume').tapPromise('hanging-volume', (_r, hook) => {
          setUps++;
          return new Promise((_, reject) => hook.signal.addEventListener('abort', () => {
            abortedWith = hook.signal.reason;
            reject(hook.signal.reason);
          }, { once: true }));
        });
      },
    };
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], plugin], config: { hookTimeoutMs: 60_000, nodeName: 'cancel-node' }, dir: path.join(dir, 'cancel') });
    try {
      await t.writeManifest('hang.json', podManifest('hang', [{ ...polite(), volumeMounts: [{ name: 'v', mountPath: '/v' }] }], { hostNetwork: true, terminationGracePeriodSeconds: 1, volumes: [{ name: 'v', flexVolume: { driver: 'test/hang' } }] }));
      await waitUntil('the volume set-up began', () => setUps > 0, 30_000);
      const t0 = Date.now();
      await t.removeManifest('hang.json');
      await t.waitForPod('hang', (p) => p === undefined, 20_000, 'the pod gone');
      const took = Date.now() - t0;
      assert.ok(took < 20_000, `removed after ${took} ms`);
      assert.match(String((abortedWith as Error | undefined)?.message), /the pod is to be terminated/, 'the set-up\'s signal did not abort with the sync');
      assert.equal((await podsNamed('hang-cancel-node')).length, 0, 'a sandbox of the pod is left');
    } finally {
      await t.dispose().catch(() => {});
    }
  });

  it('SIGTERM stops the kubelet within bounds even when a plugin never answers its shutdown tap', async function () {
    const pluginFile = path.join(dir, 'hang-shutdown.mjs');
    await fs.writeFile(pluginFile, `export default { name: 'hang-shutdown', apply(ctx) { ctx.hooks.shutdown.tapAsync('hang-shutdown', () => {}); ctx.onClose(() => new Promise(() => {})); } };\n`);
    const k = await startKubeletProcess(env, { plugins: [pluginFile], config: { nodeName: 'term-node' } });
    const t0 = Date.now();
    process.kill(k.pid, 'SIGTERM');
    const code = await Promise.race([k.exited, sleep(40_000).then(() => 'still running')]);
    const took = Date.now() - t0;
    await k.stop();
    assert.equal(code, 0, `exit: ${code}`);
    assert.ok(took < 30_000, `stopped after ${took} ms`);
  });

  it('a pod in the host\'s PID and network namespaces cannot open the kubelet\'s Node inspector with SIGUSR1', async function () {
    // Root in such a pod holds CAP_KILL (in containerd's default set) over the kubelet's PID.
    // Node's default answer to SIGUSR1 is an inspector on 127.0.0.1:9229, which runs any code
    // it is sent as the kubelet: root on the host, far beyond what hostPID and hostNetwork grant.
    const k = await startKubeletProcess(env, { config: { nodeName: 'usr1-node' } });
    try {
      const script = [
        `kill -USR1 ${k.pid} || exit 3`,
        'sleep 3',
        // Not just the port: /json/version is the inspector's own answer.
        "if printf 'GET /json/version HTTP/1.0\\r\\n\\r\\n' | nc -w 3 127.0.0.1 9229 | grep -q Browser; then exit 4; fi",
        'exit 0',
      ].join('\n');
      await k.writeManifest('usr1.json', podManifest('usr1', [{ name: 'c', image: env.images.busybox, command: ['sh', '-c', script] }], { hostPID: true, hostNetwork: true, restartPolicy: 'Never', terminationGracePeriodSeconds: 0 }));
      const done = await waitUntil('the pod finished', async () => (await k.pods())?.find((p) => p.metadata?.name === 'usr1-usr1-node' && ['Succeeded', 'Failed'].includes(p.status?.phase ?? '')), 60_000);
      const exitCode = done.status?.containerStatuses?.[0]?.state?.terminated?.exitCode;
      assert.equal(exitCode, 0, exitCode === 3 ? 'the pod could not signal the kubelet: the test proves nothing' : exitCode === 4 ? 'the pod reached the Node inspector' : `exit ${exitCode}`);
      const log = await fs.readFile(k.logFile, 'utf8');
      assert.ok(!/Debugger listening/.test(log), `the kubelet opened an inspector: ${log.split('\n').filter((l) => /Debugger|inspector/i.test(l)).join(' | ')}`);
      assert.equal(await Promise.race([k.exited.then(() => 'exited'), sleep(200).then(() => 'alive')]), 'alive', 'SIGUSR1 stopped the kubelet');
      await k.removeManifest('usr1.json');
      await waitUntil('pod removed', async () => (await k.pods())?.length === 0, 60_000);
    } finally {
      await k.stop();
    }
  });

  it('YAML octal modes are octal: defaultMode 0400 and mode 0600 are the files\' modes in the container', async function () {
    const objects = path.join(dir, 'octal-objects');
    await fs.mkdir(path.join(objects, 'secrets', 'default'), { recursive: true });
    await fs.writeFile(path.join(objects, 'secrets', 'default', 'keys.yaml'), 'apiVersion: v1\nkind: Secret\nmetadata: {name: keys}\nstringData: {a: one, b: two}\n');
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { localObjectsDir: objects, nodeName: 'octal-node' }, dir: path.join(dir, 'octal') });
    try {
      await t.writeManifest('octal.yaml', `apiVersion: v1
kind: Pod
metadata: {name: octal}
spec:
  hostNetwork: true
  terminationGracePeriodSeconds: 0
  containers:
  - name: c
    image: ${env.images.busybox}
    command: [sleep, "3600"]
    volumeMounts: [{name: keys, mountPath: /keys}]
  volumes:
  - name: keys
    secret:
      secretName: keys
      defaultMode: 0400
      items: [{key: a, path: a}, {key: b, path: b, mode: 0600}]
`);
      const p = await t.waitForPod('octal', isRunning, 60_000, 'Running');
      const id = p!.status!.containerStatuses![0]!.containerID!.replace(/^.*:\/\//, '');
      const r = await t.kubelet.runtime.execSync(id, ['sh', '-c', 'stat -L -c %a /keys/a /keys/b'], 10);
      assert.deepEqual(r.stdout.toString().trim().split('\n'), ['400', '600']);
    } finally {
      await t.dispose();
    }
  });

  it('a taken read-only port gives one clear line naming the address and the field, not a stack trace', async function () {
    const port = await freePort();
    const blocker = net.createServer().listen(port, '127.0.0.1');
    await new Promise((r) => blocker.once('listening', r));
    try {
      await assert.rejects(startKubeletProcess(env, { config: { readOnlyPort: port, nodeName: 'port-node' }, expectExit: true }), (err: Error & { output?: string }) => {
        assert.match(err.output ?? '', new RegExp(`kubelet-ts: cannot listen on 127\\.0\\.0\\.1:${port} \\(readOnlyPort\\): address already in use`));
        assert.ok(!/\n\s+at /.test(err.output ?? ''), `a stack trace was printed:\n${err.output}`);
        return true;
      });
    } finally {
      blocker.close();
    }
  });

  it('the read-only server closes idle connections and keeps answering', async function () {
    const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { readOnlyPort: await freePort(), nodeName: 'idle-node' }, dir: path.join(dir, 'idle') });
    const sockets: net.Socket[] = [];
    try {
      let closed = 0;
      for (let i = 0; i < 300; i++) {
        const s = net.connect(t.kubelet.readOnlyPort, '127.0.0.1');
        s.on('error', () => {});
        s.on('close', () => closed++);
        sockets.push(s);
      }
      await sleep(500);
      // Idle connections (no request) are closed by the server after its idle timeout (15 s).
      await waitUntil('idle connections closed', () => closed === sockets.length, 25_000);
      const res = await fetch(`http://127.0.0.1:${t.kubelet.readOnlyPort}/healthz`, { signal: AbortSignal.timeout(5000) });
      assert.equal(await res.text(), 'ok');
    } finally {
      for (const s of sockets) s.destroy();
      await t.dispose();
    }
  });
});
