import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import { LABEL } from '../../core/runtime/labels.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import { freePort } from '../../tools/node-env/util.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { httpGet } from '../support/http.ts';
import { removeCgroupRoot, testCgroupRoot } from '../support/cgroups.ts';
import { podManifest } from '../support/test-kubelet.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { waitFor } from '../support/wait-for.ts';
import type { V1Pod } from '@kubernetes/client-node';
import { shebangNodeFlags } from '../support/shebang-flags.ts';

const BIN = fileURLToPath(new URL('../../bin/kubelet-ts.mjs', import.meta.url));

const getJSON = async (url: string): Promise<any> => JSON.parse((await httpGet(url, 2000)).body);

/**
 * The kubelet as operators run it: the CLI with upstream flags. `kill -9` and a fresh start
 * adopt the running pods: no container restarted, no sandbox duplicated, restartCount kept.
 */
describe('kubelet-ts CLI: kill -9 and restart adopt running pods', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let dir: string;
  let port: number;
  let mainPort: number;
  let cri: CriRuntime;
  let proc: ChildProcess | undefined;
  let logFile: string;
  // The product default (cgroupsPerQOS) under a cgroup root of this test's own.
  const cgroupRoot = testCgroupRoot('adopt');

  const start = async () => {
    const log = await fs.open(logFile, 'a');
    proc = spawn(process.execPath, [
      ...shebangNodeFlags(BIN), BIN, '--config', path.join(dir, 'kubelet.config.json'),
      '--pod-manifest-path', path.join(dir, 'manifests'),
      '--container-runtime-endpoint', env.containerdEndpoint,
      '--root-dir', path.join(dir, 'root'),
      '--read-only-port', String(port),
      // The main port: a free one (the default 10250 may be taken, by another test run too).
      '--port', String(mainPort),
      '--node-ip', '127.0.0.1',
      '--node-name', 'adopt-node',
    ], { stdio: ['ignore', log.fd, log.fd] });
    proc.once('exit', () => void log.close());
  };
  const pods = async (): Promise<any[]> => {
    try {
      return (await getJSON(`http://127.0.0.1:${port}/pods`)).items;
    } catch {
      return [];
    }
  };
  const waitFor = async (what: string, check: (items: any[]) => boolean, timeoutMs = 30_000) => {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const items = await pods();
      if (check(items)) return items;
      if (Date.now() > deadline) throw new Error(`${what} not reached in ${timeoutMs} ms; pods: ${JSON.stringify(items.map((p) => p.status))}\nkubelet log tail: ${(await fs.readFile(logFile, 'utf8')).slice(-2000)}`);
      await sleep(200);
    }
  };
  const byName = (items: any[], name: string) => items.find((p) => p.metadata.name === `${name}-adopt-node`);
  const running = (p: any) => p?.status?.phase === 'Running' && p.status.containerStatuses?.every((c: any) => c.state?.running);

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-adopt-'));
    logFile = path.join(dir, 'kubelet.log');
    port = await freePort();
    mainPort = await freePort();
    cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
    await fs.mkdir(path.join(dir, 'manifests'));
    // The file sets what has no flag; the flags above override the rest, as upstream's do.
    await fs.writeFile(path.join(dir, 'kubelet.config.json'), JSON.stringify({
      podLogsDir: path.join(dir, 'logs'),
      plegRelistPeriod: '300ms',
      cgroupRoot,
      address: '127.0.0.1',
      crashLoopBackOff: { initialContainerRestartPeriod: '500ms', maxContainerRestartPeriod: '1s' },
      plugins: [['cri-containerd']],
    }));
  });

  after(async () => {
    for (const f of ['steady.json', 'crasher.json']) await fs.rm(path.join(dir, 'manifests', f), { force: true });
    if (proc && proc.exitCode === null) {
      await waitFor('pods removed', (items) => items.length === 0, 30_000).catch(() => {});
      proc.kill('SIGTERM');
      await new Promise((r) => proc!.once('exit', r));
    }
    await cri.close();
    await fs.rm(dir, { recursive: true, force: true });
    await removeCgroupRoot(cgroupRoot);
  });

  it('keeps containers, sandboxes and restart counts across kill -9', async () => {
    const steady = podManifest('steady', [{ name: 'main', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: 'adopt-test' });
    const crasher = podManifest('crasher', [{ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'sleep 0.3; exit 1'] }], { terminationGracePeriodSeconds: 1 }, { namespace: 'adopt-test' });
    await fs.writeFile(path.join(dir, 'manifests', 'steady.json'), JSON.stringify(steady));
    await fs.writeFile(path.join(dir, 'manifests', 'crasher.json'), JSON.stringify(crasher));
    await start();

    let items = await waitFor('steady Running and crasher restarted twice', (it) => running(byName(it, 'steady')) && byName(it, 'crasher')?.status?.containerStatuses?.[0]?.restartCount >= 2);
    const steadyBefore = byName(items, 'steady');
    const steadyUid = steadyBefore.metadata.uid;
    const crasherUid = byName(items, 'crasher').metadata.uid;
    const steadyContainer = steadyBefore.status.containerStatuses[0].containerID;
    const sandboxesBefore = (await cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: steadyUid } })).map((s) => s.id);
    assert.equal(sandboxesBefore.length, 1);

    proc!.kill('SIGKILL');
    await new Promise((r) => proc!.once('exit', r));
    const crasherCountAtKill = Math.max(...(await cri.listContainers({ labelSelector: { [LABEL.podUID]: crasherUid } })).map((c) => Number(c.annotations['io.kubernetes.container.restartCount'])));
    const steadyStill = await cri.containerStatus(steadyContainer.replace('containerd://', ''));
    assert.equal(steadyStill.state, 'CONTAINER_RUNNING', 'pods keep running while the kubelet is down');

    await start();
    items = await waitFor('both pods reported again', (it) => running(byName(it, 'steady')) && byName(it, 'crasher')?.status?.containerStatuses?.[0]?.restartCount >= crasherCountAtKill);
    await sleep(2000); // a few relists and resyncs: long enough for a wrong decision to show
    items = await pods();
    const steadyAfter = byName(items, 'steady');
    assert.equal(steadyAfter.metadata.uid, steadyUid, 'same deterministic UID');
    assert.equal(steadyAfter.status.containerStatuses[0].containerID, steadyContainer, 'not restarted');
    assert.equal(steadyAfter.status.containerStatuses[0].restartCount, 0);
    const sandboxesAfter = (await cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: steadyUid } })).map((s) => s.id);
    assert.deepEqual(sandboxesAfter, sandboxesBefore, 'no sandbox duplicated');
    const running_ = (await cri.listContainers({ labelSelector: { [LABEL.podUID]: steadyUid } })).filter((c) => c.state === 'CONTAINER_RUNNING');
    assert.equal(running_.length, 1, 'no second container');
    assert.ok(byName(items, 'crasher').status.containerStatuses[0].restartCount >= crasherCountAtKill, 'restartCount kept, not reset');
  });
});

/**
 * Crash-only (issue 24 item 3), on real containerd: a plugin's bug (a throw from a bare
 * setTimeout) ends the kubelet process with code 70, the log naming the plugin; the pods keep
 * running, and the kubelet started again on the same state adopts them: no container
 * restarted, restart counts kept.
 */
describe('kubelet-ts process: a plugin bug ends it, and the kubelet started again adopts its pods', function () {
  this.timeout(150_000);
  let env: NodeEnv;
  let dir: string;
  let kubelet: KubeletProcess | undefined;
  let trigger: string;
  const plugins = () => [[path.join(dir, 'crash-on-demand'), { trigger }]];

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-crash-adopt-'));
    trigger = path.join(dir, 'crash-now');
    await fs.mkdir(path.join(dir, 'crash-on-demand'));
    // A plugin with a bug on demand: once the trigger file exists, a bare timer throws.
    await fs.writeFile(path.join(dir, 'crash-on-demand', 'index.mjs'), `import fs from 'node:fs';
export default {
  name: 'crash-on-demand',
  apply(ctx, options) {
    ctx.onStart(() => {
      const poll = setInterval(() => {
        if (!fs.existsSync(options.trigger)) return;
        fs.rmSync(options.trigger);
        setTimeout(() => { throw new Error('a bug in a bare timer'); }, 0);
      }, 100);
      poll.unref();
      ctx.onClose(() => clearInterval(poll));
    });
  },
};
`);
  });

  after(async () => {
    if (kubelet && kubelet.pid && (await kubelet.pods()) !== undefined) {
      for (const f of ['steady.json', 'crasher.json']) await kubelet.removeManifest(f);
      for (let i = 0; i < 150 && ((await kubelet.pods()) ?? []).length > 0; i++) await sleep(200);
    }
    await kubelet?.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  const byName = (items: V1Pod[] | undefined, name: string) => items?.find((p) => p.metadata?.name === `${name}-bench-node`);
  const running = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && !!p.status.containerStatuses?.every((c) => c.state?.running);
  const restarts = (p: V1Pod | undefined) => p?.status?.containerStatuses?.[0]?.restartCount ?? -1;

  it('exits with code 70 naming the plugin; the restarted kubelet keeps containers and restart counts', async function () {
    const config = { plegRelistPeriod: '300ms', crashLoopBackOff: { initialContainerRestartPeriod: '500ms', maxContainerRestartPeriod: '1s' } };
    kubelet = await startKubeletProcess(env, { config, plugins: plugins(), cgroupPrefix: 'kts-crash-adopt' });
    const steady = podManifest('steady', [{ name: 'main', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: 'crash-adopt' });
    const crasher = podManifest('crasher', [{ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'sleep 0.3; exit 1'] }], { terminationGracePeriodSeconds: 1 }, { namespace: 'crash-adopt' });
    await kubelet.writeManifest('steady.json', steady as V1Pod);
    await kubelet.writeManifest('crasher.json', crasher as V1Pod);
    const before = await waitFor('steady Running, crasher restarted twice', async () => {
      const items = await kubelet!.pods();
      return running(byName(items, 'steady')) && restarts(byName(items, 'crasher')) >= 2 ? items : undefined;
    }, 60_000, 200);
    const steadyContainer = byName(before, 'steady')!.status!.containerStatuses![0]!.containerID;
    const crasherUid = byName(before, 'crasher')!.metadata!.uid!;

    await fs.writeFile(trigger, '');
    const code = await Promise.race([kubelet.exited, sleep(20_000).then(() => 'still running')]);
    assert.equal(code, 70, 'the kubelet ends on the bug');
    const fatal = (await fs.readFile(kubelet.logFile, 'utf8')).split('\n').filter(Boolean).map((l) => JSON.parse(l) as { level: number; plugin?: string; msg: string }).find((l) => l.level === 60);
    assert.equal(fatal?.plugin, 'crash-on-demand');
    assert.match(fatal!.msg, /^uncaught exception in plugin 'crash-on-demand'/);
    const cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
    try {
      const st = await cri.containerStatus(steadyContainer!.replace(/^[^:]+:\/\//, ''));
      assert.equal(st.state, 'CONTAINER_RUNNING', 'pods keep running while the kubelet is down');
      const countAtCrash = Math.max(...(await cri.listContainers({ labelSelector: { [LABEL.podUID]: crasherUid } })).map((c) => Number(c.annotations['io.kubernetes.container.restartCount'])));

      await kubelet.stop({ keepDir: true });
      kubelet = await startKubeletProcess(env, { config, plugins: plugins(), dir: kubelet.dir });
      const after = await waitFor('both pods reported again', async () => {
        const items = await kubelet!.pods();
        return running(byName(items, 'steady')) && restarts(byName(items, 'crasher')) >= countAtCrash ? items : undefined;
      }, 60_000, 200);
      const steadyAfter = byName(after, 'steady')!;
      assert.equal(steadyAfter.status!.containerStatuses![0]!.containerID, steadyContainer, 'the steady container was not restarted');
      assert.equal(steadyAfter.status!.containerStatuses![0]!.restartCount, 0);
      assert.ok(restarts(byName(after, 'crasher')) >= countAtCrash, 'the restart count is kept, not reset');
    } finally {
      await cri.close();
    }
  });
});
