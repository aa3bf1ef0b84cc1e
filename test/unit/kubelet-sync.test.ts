import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import * as grpc from '@grpc/grpc-js';
import type { V1ContainerStatus, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import type { KubeletConfig } from '../../core/config/types.ts';
import { Kubelet } from '../../core/kubelet.ts';
import type { KubeletPlugin } from '../../core/plugins/plugin-api.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { isRunning, podManifest, testConfig, type TestKubelet } from '../support/test-kubelet.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { waitFor as waitForShared } from '../support/wait-for.ts';

const IMAGE = 'busybox:1.36';

/** Polls `check` every 20 ms until it returns a truthy value (test/support/wait-for.ts); fails after `timeoutMs`. */
const waitFor = <T>(what: string, check: () => T | undefined | false, timeoutMs = 8000): Promise<T> => waitForShared(what, check, timeoutMs, 20);

const app = (name = 'app', image = IMAGE, extra: object = {}) => ({ name, image, command: ['sleep', '3600'], ...extra });
const cs = (p: V1Pod | undefined, name = 'app'): V1ContainerStatus | undefined => p?.status?.containerStatuses?.find((c) => c.name === name);
const idOf = (containerID: string | undefined) => containerID?.replace(/^[^:]+:\/\//, '') ?? '';

describe('Kubelet sync against the fake CRI server', function () {
  this.timeout(20_000);
  const suite = fakeCriSuite({ prefix: 'kts-sync-', images: [IMAGE] });
  const plugins = () => [['cri-containerd', { endpoint: suite.fake.endpoint }]] as KubeletConfig['plugins'];
  const start = (config: Partial<KubeletConfig> = {}, extraPlugins: KubeletConfig['plugins'] = []): Promise<TestKubelet> => suite.start(config, extraPlugins);
  const stopKubelet = (k: { stop(): Promise<void> }): Promise<void> => suite.stop(k);
  /** Statuses of pod `name` as announced on podStatusChanged, in order. */
  function recordStatuses(t: TestKubelet, name: string): V1PodStatus[] {
    const seen: V1PodStatus[] = [];
    t.kubelet.hooks.podStatusChanged.tap('test-recorder', (pod, status) => {
      if (pod.metadata?.name === `${name}-${t.config.nodeName}`) seen.push(structuredClone(status));
    });
    return seen;
  }

  it('runs a pod from a manifest: labelled sandbox and containers, Running status, upstream log path', async () => {
    const t = await start();
    await t.writeManifest('web.yaml', podManifest('web', [app('app'), app('side')]));
    const pod = (await t.waitForPod('web', isRunning, 8000, 'Running'))!;
    const uid = pod.metadata!.uid!;
    assert.ok(uid);

    assert.equal(suite.fake.sandboxes().length, 1);
    const sb = suite.fake.sandboxes()[0]!;
    assert.equal(sb.labels[LABEL.podName], 'web-test-node');
    assert.equal(sb.labels[LABEL.podNamespace], 'default');
    assert.equal(sb.labels[LABEL.podUID], uid);
    assert.equal(sb.metadata.attempt, 0);
    assert.deepEqual(suite.fake.containers().map((c) => c.labels[LABEL.containerName]).sort(), ['app', 'side']);
    for (const c of suite.fake.containers()) {
      assert.equal(c.labels[LABEL.podUID], uid);
      assert.equal(c.podSandboxId, sb.id);
      assert.equal(c.state, 'CONTAINER_RUNNING');
    }

    assert.equal(pod.status!.phase, 'Running');
    assert.equal(pod.status!.podIP, sb.ip);
    const image = suite.fake.images().find((i) => i.repoTags.includes('docker.io/library/busybox:1.36'))!;
    for (const name of ['app', 'side']) {
      const st = cs(pod, name)!;
      const c = suite.fake.containers().find((x) => x.labels[LABEL.containerName] === name)!;
      assert.equal(st.containerID, `fake-cri://${c.id}`);
      assert.equal(st.imageID, image.repoDigests[0]);
      assert.equal(st.started, true);
      assert.equal(st.ready, true);
      assert.equal(st.restartCount, 0);
      assert.ok(st.state?.running?.startedAt);
    }
    assert.equal(pod.status!.conditions!.find((c) => c.type === 'Ready')!.status, 'True');

    const logDir = path.join(t.config.podLogsDir, `default_web-test-node_${uid}`);
    const create = suite.fake.requestsOf('CreateContainer').find((r) => r.config.metadata.name === 'app');
    assert.equal(create.config.logPath, 'app/0.log');
    assert.equal(create.sandboxConfig.logDirectory, logDir);
    assert.equal(suite.fake.containers().find((x) => x.labels[LABEL.containerName] === 'app')!.logPath, path.join(logDir, 'app', '0.log'));
    assert.ok((await fs.stat(path.join(logDir, 'app'))).isDirectory(), 'the container log directory exists');
  });

  it('shows a container start in the status at once, without waiting for a relist', async () => {
    const t = await start({ plegRelistPeriodMs: 60_000 });
    const t0 = Date.now();
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    await t.waitForPod('web', isRunning, 3000, 'Running with a 60 s relist period');
    assert.ok(Date.now() - t0 < 3000);
  });

  it('restarts an exited container (restartCount 1), then reports CrashLoopBackOff while backing off', async () => {
    const t = await start({ crashLoopBackOff: { initialMs: 200, maxMs: 1000 }, plegRelistPeriodMs: 50 });
    const statuses = recordStatuses(t, 'web');
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    let pod = (await t.waitForPod('web', isRunning, 8000, 'Running'))!;
    const uid = pod.metadata!.uid!;
    const first = idOf(cs(pod)!.containerID);

    suite.fake.exitContainer(first, 1);
    pod = (await t.waitForPod('web', (p) => cs(p)?.restartCount === 1 && !!cs(p)?.state?.running, 5000, 'restart 1'))!;
    assert.notEqual(idOf(cs(pod)!.containerID), first, 'a new container instance');
    assert.equal(cs(pod)!.lastState?.terminated?.exitCode, 1);
    assert.equal(cs(pod)!.lastState?.terminated?.reason, 'Error');
    assert.equal(suite.fake.requestsOf('CreateContainer').at(-1).config.logPath, 'app/1.log');

    // Crash again (and again, should a relist come later than the back-off): the status says CrashLoopBackOff.
    const inBackoff = (s: V1PodStatus) => s.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff';
    for (let i = 0; i < 5 && !statuses.some(inBackoff); i++) {
      const cur = idOf(cs(t.pod('web'))!.containerID);
      const count = cs(t.pod('web'))!.restartCount;
      suite.fake.exitContainer(cur, 1);
      await waitFor('CrashLoopBackOff or another restart', () => statuses.some(inBackoff) || (cs(t.pod('web'))!.restartCount > count && cs(t.pod('web'))!.state?.running), 5000);
    }
    const backingOff = statuses.find(inBackoff)!;
    assert.ok(backingOff, 'CrashLoopBackOff was reported');
    const st = backingOff.containerStatuses![0]!;
    assert.match(st.state!.waiting!.message!, new RegExp(`^back-off \\d+(ms|s) restarting failed container=app pod=web-test-node_default\\(${uid}\\)$`));
    assert.equal(st.lastState?.terminated?.exitCode, 1);
    assert.equal(st.ready, false);
    assert.equal(backingOff.phase, 'Running', 'a crash-looping Always pod stays Running');

    // After the back-off the container runs again with a higher restart count.
    const before = st.restartCount;
    await t.waitForPod('web', (p) => (cs(p)?.restartCount ?? 0) > before && !!cs(p)?.state?.running, 5000, 'restart after back-off');
  });

  it('a runtime change during a quick operation of the pod\'s worker shows with the operation\'s end; during a long one (over 1 s), before its end', async () => {
    // The restart of 'slow' runs its afterStart for `hold` ms; at its start, container 'steady'
    // exits. Upstream shows a runtime change at the end of its sync (and no sooner than its 1 s
    // relist); the conformance test "lifecycle of Pods and PodStatus" read Ready in the middle of
    // such a quick restart and failed on kubelet-ts's mid-operation status.
    let hold = 0;
    let heldUntil = 0;
    const holding: KubeletPlugin = {
      name: 'holding',
      apply(ctx) {
        ctx.hooks.afterStart.tapPromise('holding', async (e) => {
          if (e.container.name !== 'slow' || hold === 0) return;
          const steady = cs(t.pod('web'), 'steady')?.containerID;
          suite.fake.exitContainer(idOf(steady), 1);
          await sleep(hold);
          heldUntil = Date.now();
        });
      },
    };
    const t = await start({ crashLoopBackOff: { initialMs: 100, maxMs: 200 }, plegRelistPeriodMs: 50 }, [holding]);
    const seen: Array<{ at: number; steadyRunning: boolean }> = [];
    t.kubelet.hooks.podStatusChanged.tap('test-recorder', (pod, status) => {
      if (pod.metadata?.name === `web-${t.config.nodeName}`) seen.push({ at: Date.now(), steadyRunning: !!status.containerStatuses?.find((c) => c.name === 'steady')?.state?.running });
    });
    await t.writeManifest('web.yaml', podManifest('web', [app('steady'), app('slow')]));
    await t.waitForPod('web', isRunning, 8000, 'Running');
    /** When the first status without 'steady' running was announced after `from`, once the held afterStart is over. */
    const steadyStopShownAt = async (from: number) => {
      await waitFor('the held afterStart over', () => heldUntil > from, 10_000);
      return (await waitFor('a status without steady running', () => seen.find((s) => s.at >= from && !s.steadyRunning), 5000)).at;
    };

    hold = 400;
    let from = Date.now();
    suite.fake.exitContainer(idOf(cs(t.pod('web'), 'slow')?.containerID), 1);
    let shown = await steadyStopShownAt(from);
    assert.ok(shown >= heldUntil, `a 400 ms operation: steady's exit shown at its end (${shown - heldUntil} ms after it)`);

    await t.waitForPod('web', (p) => !!cs(p, 'steady')?.state?.running && !!cs(p, 'slow')?.state?.running, 8000, 'both running again');
    hold = 2500;
    from = Date.now();
    suite.fake.exitContainer(idOf(cs(t.pod('web'), 'slow')?.containerID), 1);
    shown = await steadyStopShownAt(from);
    assert.ok(shown < heldUntil - 500, `a 2.5 s operation: steady's exit shown before its end (${heldUntil - shown} ms before)`);
  });

  it('reports ErrImagePull then ImagePullBackOff for a missing image; other pods run', async () => {
    const t = await start({ imagePullBackOff: { initialMs: 1500, maxMs: 3000 } });
    const statuses = recordStatuses(t, 'bad');
    await t.writeManifest('bad.yaml', podManifest('bad', [app('app', 'example.com/no/such:1.0')]));
    await t.writeManifest('good.yaml', podManifest('good', [app()]));
    await t.waitForPod('good', isRunning, 8000, 'the other pod Running');
    const reasons = () => statuses.map((s) => s.containerStatuses?.[0]?.state?.waiting?.reason);
    await waitFor('ImagePullBackOff', () => reasons().includes('ImagePullBackOff'), 5000);
    const firstPull = statuses.find((s) => s.containerStatuses?.[0]?.state?.waiting?.reason === 'ErrImagePull')!;
    assert.ok(firstPull, `ErrImagePull before ImagePullBackOff; saw ${reasons().join(', ')}`);
    assert.ok(reasons().indexOf('ErrImagePull') < reasons().indexOf('ImagePullBackOff'));
    assert.match(firstPull.containerStatuses![0]!.state!.waiting!.message!, /^Failed to pull image "example.com\/no\/such:1.0": .*not found/);
    const backoff = statuses.find((s) => s.containerStatuses?.[0]?.state?.waiting?.reason === 'ImagePullBackOff')!;
    assert.equal(backoff.containerStatuses![0]!.state!.waiting!.message, 'Back-off pulling image "example.com/no/such:1.0"');
    assert.equal(t.pod('bad')!.status!.phase, 'Pending');
    assert.ok(suite.fake.calls.PullImage! >= 2, 'the good image and at least one failed pull');
    assert.ok(isRunning(t.pod('good')));
  });

  it('stops and removes a pod whose manifest was removed, with its grace period', async () => {
    const t = await start();
    await t.writeManifest('web.yaml', podManifest('web', [app()], { terminationGracePeriodSeconds: 7 }));
    const pod = (await t.waitForPod('web', isRunning, 8000, 'Running'))!;
    const uid = pod.metadata!.uid!;
    const containerId = idOf(cs(pod)!.containerID);
    const sandboxId = suite.fake.sandboxes()[0]!.id;
    suite.fake.resetCalls();

    await t.removeManifest('web.yaml');
    await waitFor('pod gone from the kubelet', () => t.kubelet.pods().length === 0, 8000);
    assert.equal(suite.fake.sandboxes().length, 0);
    assert.equal(suite.fake.containers().length, 0);

    const order = suite.fake.requests.map((r) => r.method).filter((m) => ['StopContainer', 'StopPodSandbox', 'RemoveContainer', 'RemovePodSandbox'].includes(m));
    assert.deepEqual(order, ['StopContainer', 'StopPodSandbox', 'RemoveContainer', 'RemovePodSandbox']);
    const stop = suite.fake.requestsOf('StopContainer')[0];
    assert.equal(stop.containerId, containerId);
    assert.equal(Number(stop.timeout), 7);
    assert.equal(suite.fake.requestsOf('StopPodSandbox')[0].podSandboxId, sandboxId);
    assert.equal(suite.fake.requestsOf('RemovePodSandbox')[0].podSandboxId, sandboxId);
    await assert.rejects(fs.stat(path.join(t.config.podLogsDir, `default_web-test-node_${uid}`)), /ENOENT/, 'pod log directory removed');
    assert.equal(suite.fake.calls.RunPodSandbox, 0, 'not started again');
  });

  it('removes a pod whose name is too long for its log directory (the API allows 253 characters; a file name 255 bytes)', async () => {
    // Found by fuzz:long's api-pods kind: the pod could never start (its sandbox's log
    // directory cannot be made, as upstream's kubelet), and its termination failed on the same
    // name at every retry, so a deleted pod stayed Terminating for ever.
    const t = await start();
    const name = 'n'.repeat(240);
    await t.writeManifest('long.yaml', podManifest(name, [app()], { terminationGracePeriodSeconds: 1 }));
    await t.waitForPod(name, (p) => p !== undefined, 8000, 'known');
    await waitFor('a failed sandbox creation', () => suite.fake.sandboxes().length === 0 && t.kubelet.pods().length === 1, 8000);
    await sleep(300);
    await t.removeManifest('long.yaml');
    await waitFor('pod gone from the kubelet', () => t.kubelet.pods().length === 0, 8000);
    assert.equal(suite.fake.sandboxes().length, 0);
  });

  it('replaces an edited static pod: the old pod is terminated before the new one starts', async () => {
    const t = await start();
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    const oldPod = (await t.waitForPod('web', isRunning, 8000, 'Running'))!;
    const oldUid = oldPod.metadata!.uid!;
    const oldSandbox = suite.fake.sandboxes()[0]!.id;
    suite.fake.resetCalls();

    await t.writeManifest('web.yaml', podManifest('web', [app('app', IMAGE, { env: [{ name: 'VERSION', value: '2' }] })]));
    const newPod = (await t.waitForPod('web', (p) => !!p && p.metadata!.uid !== oldUid && isRunning(p), 8000, 'new pod Running'))!;
    assert.notEqual(newPod.metadata!.uid, oldUid);
    await waitFor('old pod forgotten', () => t.kubelet.pods().length === 1, 5000);

    const methods = suite.fake.requests.map((r) => r.method);
    const oldGone = suite.fake.requests.findIndex((r) => r.method === 'RemovePodSandbox' && r.request.podSandboxId === oldSandbox);
    const newSandbox = methods.indexOf('RunPodSandbox');
    assert.ok(oldGone >= 0, 'old sandbox removed');
    assert.ok(newSandbox > oldGone, `new sandbox created after the old one was removed (${methods.join(',')})`);
    assert.deepEqual(suite.fake.sandboxes().map((s) => s.labels[LABEL.podUID]), [newPod.metadata!.uid]);
    assert.equal(suite.fake.containers()[0]!.config.envs.find((e: { key: string }) => e.key === 'VERSION')?.value, '2');
  });

  it('adopts running pods after a restart: no new sandbox or container, same IDs, restartCount kept', async () => {
    const config = { crashLoopBackOff: { initialMs: 200, maxMs: 1000 } };
    const t1 = await start(config);
    await t1.writeManifest('web.yaml', podManifest('web', [app()]));
    let pod = (await t1.waitForPod('web', isRunning, 8000, 'Running'))!;
    suite.fake.exitContainer(idOf(cs(pod)!.containerID), 1);
    pod = (await t1.waitForPod('web', (p) => cs(p)?.restartCount === 1 && !!cs(p)?.state?.running, 5000, 'restart 1'))!;
    const uid = pod.metadata!.uid;
    const containerID = cs(pod)!.containerID;
    const sandboxes = suite.fake.sandboxes().map((s) => s.id);
    await stopKubelet(t1);
    assert.equal(suite.fake.containers().find((c) => `fake-cri://${c.id}` === containerID)?.state, 'CONTAINER_RUNNING', 'pods keep running while the kubelet is down');

    suite.fake.resetCalls();
    const t2 = await start(config);
    const adopted = (await t2.waitForPod('web', isRunning, 8000, 'Running after restart'))!;
    await t2.kubelet.idle();
    await sleep(700); // two relists and a resync: time enough for a duplicate to show up
    assert.equal(adopted.metadata!.uid, uid);
    assert.equal(cs(adopted)!.containerID, containerID);
    assert.equal(cs(t2.pod('web'))!.restartCount, 1);
    assert.equal(cs(t2.pod('web'))!.lastState?.terminated?.exitCode, 1);
    assert.equal(suite.fake.calls.RunPodSandbox, 0);
    assert.equal(suite.fake.calls.CreateContainer, 0);
    assert.equal(suite.fake.calls.StopContainer, 0);
    assert.equal(suite.fake.calls.StopPodSandbox, 0);
    assert.deepEqual(suite.fake.sandboxes().map((s) => s.id), sandboxes);
  });

  it('adopts running pods even when its first relist of the runtime fails', async () => {
    const t1 = await start();
    await t1.writeManifest('web.yaml', podManifest('web', [app()]));
    const pod = (await t1.waitForPod('web', isRunning, 8000, 'Running'))!;
    const containerID = cs(pod)!.containerID;
    await stopKubelet(t1);

    suite.fake.resetCalls();
    suite.fake.failNext('ListPodSandbox', grpc.status.UNAVAILABLE, 'runtime busy');
    const t2 = await start();
    await t2.waitForPod('web', isRunning, 8000, 'Running after restart');
    await t2.kubelet.idle();
    await sleep(700);
    assert.equal(cs(t2.pod('web'))!.containerID, containerID);
    assert.equal(suite.fake.calls.RunPodSandbox, 0, 'no second sandbox for the adopted pod');
    assert.equal(suite.fake.sandboxes().length, 1);
  });

  it('runs the valid pod next to an invalid manifest and stays healthy', async () => {
    const t = await start();
    await t.writeManifest('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec: {containers: [{name: "x"}]}\n');
    await t.writeManifest('garbage.yaml', '{ this is: [not yaml');
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    await t.waitForPod('web', isRunning, 8000, 'Running');
    await sleep(300);
    assert.deepEqual(t.kubelet.pods().map((p) => p.metadata!.name), ['web-test-node']);
    assert.equal(t.kubelet.healthz(), 'ok');
    assert.equal(suite.fake.calls.RunPodSandbox, 1);
  });

  it('retries a pod whose plugin tap threw once, naming the plugin; other pods are unaffected', async () => {
    let victimCalls = 0;
    const flaky: KubeletPlugin = {
      name: 'flaky-net',
      apply(ctx) {
        ctx.hooks.beforeSandbox.tapPromise('flaky-net', async (sandboxConfig, pod) => {
          if (pod.metadata?.name === 'victim-test-node' && ++victimCalls === 1) throw new Error('address pool exhausted');
          return sandboxConfig;
        });
      },
    };
    // Built like startTestKubelet, with a logger the test reads.
    const { logger, lines } = captureLogger('info');
    const config = testConfig(path.join(suite.dir, 'kubelet'), { plugins: [...plugins(), flaky] });
    await fs.mkdir(config.staticPodPath!, { recursive: true });
    const kubelet = new Kubelet(config, logger);
    await kubelet.start();
    suite.track(kubelet);
    const manifest = async (name: string) => {
      await fs.writeFile(path.join(config.staticPodPath!, `.${name}.tmp`), JSON.stringify(podManifest(name, [app()])));
      await fs.rename(path.join(config.staticPodPath!, `.${name}.tmp`), path.join(config.staticPodPath!, `${name}.json`));
    };
    const podNamed = (name: string) => kubelet.pods().find((p) => p.metadata?.name === `${name}-test-node`);

    await manifest('victim');
    await manifest('bystander');
    await waitFor('bystander Running', () => isRunning(podNamed('bystander')), 8000);
    const failure = await waitFor('the failed sync logged', () => lines.find((l) => l.msg === 'pod worker operation failed'), 5000);
    assert.equal(failure.pod, 'default/victim-test-node');
    assert.match(String(failure.err), /plugin 'flaky-net' \(hook beforeSandbox\): address pool exhausted/);
    assert.ok(lines.some((l) => l.plugin === 'flaky-net' && l.hook === 'beforeSandbox' && l.msg === 'plugin tap failed'));
    await waitFor('victim Running after a retry', () => isRunning(podNamed('victim')), 8000);
    assert.equal(victimCalls, 2, 'one failed call, one retry');
    assert.equal(suite.fake.calls.RunPodSandbox, 2);
    assert.equal(kubelet.healthz(), 'ok');
  });

  it('retries a pod whose RunPodSandbox failed once', async () => {
    suite.fake.failNext('RunPodSandbox', grpc.status.UNKNOWN, 'failed to setup network for sandbox: injected');
    const t = await start();
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    const pod = (await t.waitForPod('web', isRunning, 8000, 'Running after a retry'))!;
    assert.equal(suite.fake.calls.RunPodSandbox, 2);
    assert.equal(suite.fake.sandboxes().length, 1);
    assert.equal(suite.fake.sandboxes()[0]!.metadata.attempt, 0, 'the failed attempt left nothing behind');
    assert.equal(cs(pod)!.restartCount, 0);
  });

  it('a pod with init containers waits in PodInitializing, never ContainerCreating, through a failed volume and a failed sandbox (as upstream; e2e InitContainer watches for it)', async () => {
    const missing = path.join(suite.dir, 'init-wait-data');
    const t = await start();
    const statuses = recordStatuses(t, 'initwait');
    await t.writeManifest('initwait.yaml', podManifest('initwait', [app('app', IMAGE, { volumeMounts: [{ name: 'data', mountPath: '/data' }] })], {
      initContainers: [{ name: 'init1', image: IMAGE, command: ['true'] }],
      volumes: [{ name: 'data', hostPath: { path: missing, type: 'Directory' } }],
    }));
    await waitFor('a FailedMount status', () => statuses.some((s) => /MountVolume.SetUp failed for volume "data"/.test(s.containerStatuses?.[0]?.state?.waiting?.message ?? '')));
    suite.fake.failNext('RunPodSandbox', grpc.status.UNKNOWN, 'failed to setup network for sandbox: injected');
    await fs.mkdir(missing);
    await waitFor('init1 created after the failed sandbox', () => suite.fake.containers().some((c) => c.labels[LABEL.containerName] === 'init1'));
    await waitFor('the status after it', () => statuses.some((s) => !!s.initContainerStatuses?.[0]?.containerID));
    // Announced statuses are those whose reasons changed: a sandbox failure shown as ContainerCreating would be among them.
    assert.equal(suite.fake.calls.RunPodSandbox, 2, 'one failed sandbox, one retry');
    for (const s of statuses) {
      for (const c of [...(s.initContainerStatuses ?? []), ...(s.containerStatuses ?? [])]) {
        if (c.state?.waiting) assert.equal(c.state.waiting.reason, 'PodInitializing', `${c.name}: ${JSON.stringify(c.state)}`);
      }
    }
  });

  it('creates at most maxParallelSandboxCreations sandboxes at once; every pod still runs', async () => {
    suite.fake.delay('RunPodSandbox', 150);
    const t = await start({ maxParallelSandboxCreations: 2 });
    const names = ['a', 'b', 'c', 'd', 'e', 'f'];
    await Promise.all(names.map((n) => t.writeManifest(`${n}.yaml`, podManifest(n, [app()]))));
    for (const n of names) await t.waitForPod(n, isRunning, 8000, `${n} Running`);
    assert.equal(suite.fake.calls.RunPodSandbox, names.length);
    assert.equal(suite.fake.maxInFlight.RunPodSandbox, 2);
    // The wait for a slot is a step of the start timeline of the pods that waited.
    const waited = names.filter((n) => t.kubelet.timelines.find('default', `${n}-${t.config.nodeName}`)?.steps.some((s) => s.step === 'sandbox-slot'));
    assert.ok(waited.length >= names.length - 2, `pods that waited for a slot: ${waited.join(', ')}`);
  });

  it('with no bound (maxParallelSandboxCreations: 0 in the config), creates all sandboxes at once', async () => {
    suite.fake.delay('RunPodSandbox', 150);
    const t = await start({ maxParallelSandboxCreations: undefined });
    const names = ['a', 'b', 'c', 'd'];
    await Promise.all(names.map((n) => t.writeManifest(`${n}.yaml`, podManifest(n, [app()]))));
    for (const n of names) await t.waitForPod(n, isRunning, 8000, `${n} Running`);
    assert.ok(suite.fake.maxInFlight.RunPodSandbox! > 2, `max in flight ${suite.fake.maxInFlight.RunPodSandbox}`);
  });

  it('starts a pod\'s containers a few at a time, at most maxParallelContainerCreations node-wide; every container runs', async () => {
    suite.fake.delay('CreateContainer', 40);
    const t = await start({ maxParallelContainerCreations: 3 });
    const containers = Array.from({ length: 12 }, (_, i) => app(`c${i}`));
    await Promise.all(['a', 'b'].map((n) => t.writeManifest(`${n}.yaml`, podManifest(n, containers))));
    for (const n of ['a', 'b']) await t.waitForPod(n, isRunning, 15_000, `${n} Running`);
    assert.equal(suite.fake.calls.CreateContainer, 24);
    assert.equal(suite.fake.maxInFlight.CreateContainer, 3, 'the node-wide bound');
  });

  it('without a node-wide bound, one pod still starts at most 4 containers at once', async () => {
    suite.fake.delay('CreateContainer', 40);
    const t = await start({ maxParallelContainerCreations: undefined });
    await t.writeManifest('a.yaml', podManifest('a', Array.from({ length: 12 }, (_, i) => app(`c${i}`))));
    await t.waitForPod('a', isRunning, 15_000, 'a Running');
    assert.equal(suite.fake.maxInFlight.CreateContainer, 4);
  });

  it('a pod removed while its containers start: no further create is issued, and nothing of it is left', async () => {
    suite.fake.delay('CreateContainer', 150);
    const t = await start({ maxParallelContainerCreations: 2 });
    await t.writeManifest('big.yaml', podManifest('big', Array.from({ length: 40 }, (_, i) => app(`c${i}`)), { terminationGracePeriodSeconds: 1 }));
    await waitFor('some containers created', () => (suite.fake.calls.CreateContainer ?? 0) >= 2, 10_000);
    await t.removeManifest('big.yaml');
    await waitFor('the pod gone from the runtime', () => suite.fake.containers().length === 0 && suite.fake.sandboxes().length === 0, 20_000);
    assert.ok((suite.fake.calls.CreateContainer ?? 0) < 20, `creates issued: ${suite.fake.calls.CreateContainer} of 40`);
    await sleep(500);
    assert.equal(suite.fake.containers().length, 0, 'no create landed after the removal');
  });

  it('stops a pod of many containers at most 8 at a time; every container is stopped and removed', async () => {
    const t = await start({ maxParallelContainerCreations: undefined });
    await t.writeManifest('many.yaml', podManifest('many', Array.from({ length: 30 }, (_, i) => app(`c${i}`)), { terminationGracePeriodSeconds: 1 }));
    await t.waitForPod('many', isRunning, 15_000, 'many Running');
    suite.fake.delay('StopContainer', 60);
    await t.removeManifest('many.yaml');
    await waitFor('the pod gone from the runtime', () => suite.fake.containers().length === 0 && suite.fake.sandboxes().length === 0, 20_000);
    assert.equal(suite.fake.calls.StopContainer, 30);
    assert.equal(suite.fake.maxInFlight.StopContainer, 8);
  });

  it('stops and removes a sandbox of ours that no source wants (orphan), leaving others alone', async () => {
    suite.fake.addImage(IMAGE, { present: true });
    const cri = new CriClient(suite.fake.endpoint);
    const sandbox = (name: string, uid: string, labels: Record<string, string>) => ({
      metadata: { name, uid, namespace: 'default', attempt: 0 },
      logDirectory: path.join(suite.dir, 'logs', name),
      labels,
      linux: { securityContext: { namespaceOptions: { network: 'POD', pid: 'CONTAINER', ipc: 'POD' } } },
    });
    let orphanSandbox: string;
    let orphanContainer: string;
    let foreignSandbox: string;
    let otherInstanceSandbox: string;
    try {
      const ours = { [LABEL.managed]: 'true', [LABEL.podUID]: 'orphan-uid', [LABEL.podName]: 'ghost', [LABEL.podNamespace]: 'default' };
      const config = sandbox('ghost', 'orphan-uid', ours);
      orphanSandbox = (await cri.callRuntime('RunPodSandbox', { config }, 2000)).podSandboxId;
      orphanContainer = (await cri.callRuntime('CreateContainer', {
        podSandboxId: orphanSandbox,
        config: { metadata: { name: 'c', attempt: 0 }, image: { image: IMAGE }, labels: { ...ours, [LABEL.containerName]: 'c' }, logPath: 'c/0.log' },
        sandboxConfig: config,
      }, 2000)).containerId;
      await cri.callRuntime('StartContainer', { containerId: orphanContainer }, 2000);
      // Someone else's pod (another kubelet or crictl): same pod labels, but not marked as ours.
      const foreign = { [LABEL.podUID]: 'foreign-uid', [LABEL.podName]: 'other', [LABEL.podNamespace]: 'default' };
      foreignSandbox = (await cri.callRuntime('RunPodSandbox', { config: sandbox('other', 'foreign-uid', foreign) }, 2000)).podSandboxId;
      // Another kubelet-ts's pod on the same runtime (its runtimeInstance: the managed label's value).
      const otherInstance = { ...foreign, [LABEL.podUID]: 'instance-uid', [LABEL.podName]: 'theirs', [LABEL.managed]: 'node-b' };
      otherInstanceSandbox = (await cri.callRuntime('RunPodSandbox', { config: sandbox('theirs', 'instance-uid', otherInstance) }, 2000)).podSandboxId;
    } finally {
      cri.close();
    }
    suite.fake.resetCalls();

    const t = await start();
    await t.writeManifest('web.yaml', podManifest('web', [app()]));
    await t.waitForPod('web', isRunning, 8000, 'Running');
    await waitFor('orphan sandbox removed', () => !suite.fake.sandbox(orphanSandbox), 8000);
    assert.equal(suite.fake.container(orphanContainer), undefined);
    const stop = suite.fake.requestsOf('StopContainer').find((r) => r.containerId === orphanContainer);
    assert.ok(stop, 'the orphan container was stopped');
    assert.equal(Number(stop.timeout), 30, 'default grace period');
    const idx = (m: string) => suite.fake.requests.findIndex((r) => r.method === m && (r.request.podSandboxId === orphanSandbox || r.request.containerId === orphanContainer));
    assert.ok(idx('StopContainer') < idx('StopPodSandbox') && idx('StopPodSandbox') < idx('RemovePodSandbox'));

    assert.equal(suite.fake.sandbox(foreignSandbox!)?.state, 'SANDBOX_READY', 'a sandbox without our label is not touched');
    assert.ok(!suite.fake.requests.some((r) => r.request?.podSandboxId === foreignSandbox && r.method !== 'PodSandboxStatus'));
    assert.equal(suite.fake.sandbox(otherInstanceSandbox!)?.state, 'SANDBOX_READY', 'a sandbox of another runtimeInstance is not touched');
    assert.ok(!suite.fake.requests.some((r) => r.request?.podSandboxId === otherInstanceSandbox && r.method !== 'PodSandboxStatus'));
    assert.ok(isRunning(t.pod('web')), 'our pod is not affected');
    assert.deepEqual(t.kubelet.pods().map((p) => p.metadata!.name), ['web-test-node']);
  });
});
