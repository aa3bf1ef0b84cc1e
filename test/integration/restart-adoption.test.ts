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
      BIN, '--config', path.join(dir, 'kubelet.config.json'),
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
