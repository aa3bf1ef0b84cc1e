import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { LABEL } from '../../core/runtime/labels.ts';
import { containerdSuite } from '../support/containerd-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';

/** Parses CRI log lines (`<time> <stream> <tag> <text>`) into [time ms, text]. */
async function logLines(file: string): Promise<Array<[number, string]>> {
  const text = await fs.readFile(file, 'utf8').catch(() => '');
  return text.split('\n').filter(Boolean).map((l) => {
    const [ts, , , ...rest] = l.split(' ');
    return [Date.parse(ts!), rest.join(' ')] as [number, string];
  });
}

/**
 * Pod lifecycle on containerd, observed from the containers themselves: init containers in
 * order, a sidecar that outlives init and stops after the app, crash-loop delays as
 * configured, dead containers collected to the configured count, and the phase rules.
 */
describe('pod lifecycle on containerd', function () {
  this.timeout(120_000);
  const ns = 'pod-lifecycle-test';

  const suite = containerdSuite({ config: { crashLoopBackOff: { initialMs: 1000, maxMs: 4000 }, maxPerPodContainer: 1 } });

  const logOf = (pod: string, uid: string, container: string, n = 0) => path.join(suite.t.config.podLogsDir, `${ns}_${pod}-test-node_${uid}`, container, `${n}.log`);
  const remove = async (file: string, name: string) => {
    await suite.t.removeManifest(file);
    await suite.t.waitForPod(name, (p) => p === undefined, 30_000, 'removed');
  };

  it('runs init containers one at a time in order, then the app', async () => {
    const sh = (name: string, script: string) => ({ name, image: suite.env.images.busybox, command: ['sh', '-c', script] });
    await suite.t.writeManifest('inits.json', podManifest('inits', [sh('app', 'echo app-start; exec sleep 3600')], {
      initContainers: [sh('first', 'echo first-start; sleep 1; echo first-end'), sh('second', 'echo second-start; sleep 0.5; echo second-end')],
      terminationGracePeriodSeconds: 1,
    }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('inits', isRunning, 40_000, 'Running'))!;
    const uid = pod.metadata!.uid!;
    const first = await logLines(logOf('inits', uid, 'first'));
    const second = await logLines(logOf('inits', uid, 'second'));
    const app = await logLines(logOf('inits', uid, 'app'));
    const at = (lines: Array<[number, string]>, text: string) => lines.find(([, l]) => l === text)?.[0] ?? NaN;
    assert.ok(at(second, 'second-start') >= at(first, 'first-end'), 'second started after first ended');
    assert.ok(at(app, 'app-start') >= at(second, 'second-end'), 'app started after second ended');
    const inits = pod.status!.initContainerStatuses!;
    assert.deepEqual(inits.map((s) => [s.name, s.state?.terminated?.reason, s.ready]), [['first', 'Completed', true], ['second', 'Completed', true]]);
    assert.equal(pod.status!.conditions!.find((c) => c.type === 'Initialized')!.status, 'True');
    await remove('inits.json', 'inits');
  });

  it('keeps a sidecar running beside the app and stops it after the app', async () => {
    const hits: Array<[string, number]> = [];
    const server = http.createServer((req, res) => {
      hits.push([req.url ?? '', Date.now()]);
      res.end('ok');
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as AddressInfo).port;
    try {
      // hostNetwork so the preStop handlers reach the test's server on 127.0.0.1.
      const preStop = (p: string) => ({ preStop: { httpGet: { path: p, port } } });
      await suite.t.writeManifest('sidecar.json', podManifest('sidecar', [
        { name: 'app', image: suite.env.images.busybox, command: ['sh', '-c', 'trap "sleep 1; exit 0" TERM; while true; do sleep 0.2; done'], lifecycle: preStop('/app') },
      ], {
        hostNetwork: true,
        terminationGracePeriodSeconds: 10,
        initContainers: [
          { name: 'proxy', image: suite.env.images.busybox, restartPolicy: 'Always', command: ['sh', '-c', 'trap "exit 0" TERM; while true; do sleep 0.2; done'], lifecycle: preStop('/proxy') },
          { name: 'setup', image: suite.env.images.busybox, command: ['sh', '-c', 'echo setup-done'] },
        ],
      }, { namespace: ns }));
      const pod = (await suite.t.waitForPod('sidecar', isRunning, 40_000, 'Running'))!;
      const [proxy, setup] = pod.status!.initContainerStatuses!;
      assert.ok(proxy!.state?.running, 'the sidecar keeps running after init');
      assert.equal(proxy!.started, true);
      assert.equal(setup!.state?.terminated?.reason, 'Completed');
      assert.ok(new Date(proxy!.state!.running!.startedAt!).getTime() <= new Date(setup!.state!.terminated!.startedAt!).getTime(), 'the sidecar started before the next init container');

      await remove('sidecar.json', 'sidecar');
      const order = hits.map(([u]) => u);
      assert.deepEqual(order, ['/app', '/proxy'], 'app stopped first, then the sidecar');
      assert.ok(hits[1]![1] - hits[0]![1] >= 900, 'the sidecar is stopped only after the app exited (it takes 1 s)');
    } finally {
      server.close();
    }
  });

  it('restarts a crash-looping container with the configured delays and keeps only the allowed dead containers', async () => {
    await suite.t.writeManifest('loop.json', podManifest('loop', [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'sleep 0.4; exit 2'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const gaps = new Map<number, number>();
    let uid = '';
    const deadline = Date.now() + 40_000;
    while (gaps.size < 4 && Date.now() < deadline) {
      const cs = suite.t.pod('loop')?.status?.containerStatuses?.[0];
      uid = suite.t.pod('loop')?.metadata?.uid ?? uid;
      if (cs?.state?.running && cs.lastState?.terminated && !gaps.has(cs.restartCount)) {
        gaps.set(cs.restartCount, new Date(cs.state.running.startedAt!).getTime() - new Date(cs.lastState.terminated.finishedAt!).getTime());
      }
      await sleep(50);
    }
    // The first restart is immediate; then 1 s, 2 s, 4 s (the cap), as configured.
    const expected: Record<number, number> = { 2: 1000, 3: 2000, 4: 4000 };
    for (const [n, want] of Object.entries(expected)) {
      const got = gaps.get(Number(n));
      assert.ok(got !== undefined, `restart ${n} observed (gaps seen: ${JSON.stringify([...gaps])})`);
      assert.ok(got >= want - 100 && got <= want + 1500, `restart ${n} came ${got} ms after the exit; configured ${want} ms`);
    }
    // maxPerPodContainer 1: after its syncs, the pod keeps the newest instance plus one older dead one.
    const created = suite.t.pod('loop')!.status!.containerStatuses![0]!.restartCount + 1;
    let kept = Infinity;
    for (let i = 0; i < 30 && kept > 2; i++) {
      kept = (await suite.cri.listContainers({ labelSelector: { [LABEL.podUID]: uid } })).length;
      if (kept > 2) await sleep(100);
    }
    assert.ok(created >= 5, `${created} containers were created`);
    assert.ok(kept <= 2, `${kept} of ${created} containers kept; allowed: the newest and one dead`);
    const logs = await fs.readdir(path.join(suite.t.config.podLogsDir, `${ns}_loop-test-node_${uid}`, 'main'));
    assert.ok(logs.length <= 3, `log files follow their containers: ${logs.join(', ')}`);
    await remove('loop.json', 'loop');
  });

  it('applies the phase rules of restartPolicy Never and OnFailure', async () => {
    const job = (name: string, code: number, policy: string) =>
      podManifest(name, [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', `exit ${code}`] }], { restartPolicy: policy, terminationGracePeriodSeconds: 1 }, { namespace: ns });
    await suite.t.writeManifest('never-ok.json', job('never-ok', 0, 'Never'));
    await suite.t.writeManifest('never-fail.json', job('never-fail', 1, 'Never'));
    await suite.t.writeManifest('onfailure-ok.json', job('onfailure-ok', 0, 'OnFailure'));
    await suite.t.writeManifest('onfailure-fail.json', job('onfailure-fail', 1, 'OnFailure'));
    await suite.t.waitForPod('never-ok', (p) => p?.status?.phase === 'Succeeded', 30_000, 'Succeeded');
    const failed = await suite.t.waitForPod('never-fail', (p) => p?.status?.phase === 'Failed', 30_000, 'Failed');
    assert.equal(failed!.status!.containerStatuses![0]!.restartCount, 0);
    await suite.t.waitForPod('onfailure-ok', (p) => p?.status?.phase === 'Succeeded', 30_000, 'Succeeded');
    const restarting = await suite.t.waitForPod('onfailure-fail', (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 1, 30_000, 'restarted');
    assert.equal(restarting!.status!.phase, 'Running', 'OnFailure restarts a failed container: the pod stays Running');
    // A finished pod's sandbox is stopped, its containers kept for logs.
    const uid = suite.t.pod('never-ok')!.metadata!.uid!;
    await suite.t.waitForPod('never-ok', () => true);
    for (let i = 0; i < 30; i++) {
      const sbs = await suite.cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } });
      if (sbs.every((s) => s.state === 'SANDBOX_NOTREADY')) break;
      await sleep(100);
    }
    assert.ok((await suite.cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } })).every((s) => s.state === 'SANDBOX_NOTREADY'));
    assert.equal((await suite.cri.listContainers({ labelSelector: { [LABEL.podUID]: uid } })).length, 1);
    for (const n of ['never-ok', 'never-fail', 'onfailure-ok', 'onfailure-fail']) await remove(`${n}.json`, n);
  });
});
