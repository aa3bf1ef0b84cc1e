import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { createHooks, type ContainerKillEvent } from '../../core/hooks.ts';
import { errorCode, isPluginError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import { isolateTaps } from '../../core/plugins/tap-isolation.ts';
import { instrumentRuntime } from '../../core/runtime/instrumented-runtime.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';
import { currentSignal, runWithSignal } from '../../core/util/abort-scope.ts';
import { MemoryRuntime } from '../../core/runtime/memory-runtime.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';

const pod: V1Pod = { metadata: { name: 'p', namespace: 'default', uid: 'uid-p' }, spec: { containers: [] } };
const kill: ContainerKillEvent = { pod, container: undefined, containerId: 'c1', podIP: '', gracePeriodSeconds: 1, reason: 'test' };

/** Hooks whose taps are isolated as the kubelet's are, with a short hookTimeout. */
function isolatedHooks(timeoutMs: number) {
  const hooks = createHooks();
  isolateTaps(hooks, silentLogger(), { timeoutMs });
  return hooks;
}

/**
 * Cancellation (issue 24 item 4): when the core gives up on a tap (hookTimeout) or a runtime
 * call (runtimeRequestTimeout), the signal the work runs with (`currentSignal()`) aborts, so a
 * vendor's work stops instead of running on.
 */
describe('cancellation: a tap or runtime call the core gave up on sees its signal abort', function () {
  this.timeout(20_000);

  it('a promise tap past hookTimeout sees its signal abort, with the timeout as the reason, in work it started too', async function () {
    let inTap: AbortSignal | undefined;
    let inTimer: AbortSignal | undefined;
    const hooks = isolatedHooks(100);
    hooks.admitPod.tapPromise('slow-policy', () => {
      inTap = currentSignal();
      setTimeout(() => (inTimer = currentSignal()), 10);
      return new Promise<string | undefined>(() => {});
    });
    await assert.rejects(hooks.admitPod.promise(pod), (err: unknown) => isPluginError(err) && /did not finish within 100 ms/.test((err as Error).message));
    assert.ok(inTap, 'the tap ran');
    assert.equal(inTap.aborted, true, 'the timed-out tap\'s signal did not abort');
    assert.match((inTap.reason as Error).message, /did not finish within 100 ms/);
    await sleep(20);
    assert.equal(inTimer, inTap, 'work the tap started runs with the tap\'s signal');
  });

  it('a tap that finishes in time keeps an unaborted signal; each tap has its own', async function () {
    const seen: AbortSignal[] = [];
    const hooks = isolatedHooks(200);
    hooks.beforeKill.tapPromise('quick-1', async () => void seen.push(currentSignal()));
    hooks.beforeKill.tapPromise('quick-2', async () => void seen.push(currentSignal()));
    await hooks.beforeKill.promise(kill);
    await sleep(300);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[0], seen[1]);
    assert.ok(seen.every((s) => !s.aborted), 'a tap that finished in time had its signal aborted later');
  });

  it('a callback tap whose callback never comes sees its signal abort', async function () {
    let inTap: AbortSignal | undefined;
    const hooks = isolatedHooks(100);
    hooks.beforeKill.tapAsync('lost', (_e, _cb) => void (inTap = currentSignal()));
    await assert.rejects(hooks.beforeKill.promise(kill), /did not call back within 100 ms/);
    assert.equal(inTap?.aborted, true);
  });

  it('a runtime call past runtimeRequestTimeout sees its signal abort, and fails with DeadlineExceeded if the runtime ignores it', async function () {
    let signal: AbortSignal | undefined;
    const hanging = new MemoryRuntime();
    hanging.listPodSandboxes = () => {
      signal = currentSignal();
      return new Promise(() => {});
    };
    const rt = instrumentRuntime(hanging as ContainerRuntime, silentLogger(), undefined, { requestTimeoutMs: 150 });
    const t0 = Date.now();
    await assert.rejects(rt.listPodSandboxes(), (err: unknown) => errorCode(err) === 'DeadlineExceeded' && /listPodSandboxes: no answer within 150 ms/.test((err as Error).message));
    const took = Date.now() - t0;
    assert.equal(signal?.aborted, true);
    assert.ok(took >= 150 && took < 3000, `gave up after ${took} ms`);
  });

  it('stopContainer and execSync get their own timeout on top of runtimeRequestTimeout; pullImage none of the core\'s', async function () {
    const aborted: Record<string, boolean> = {};
    const runtime = new MemoryRuntime();
    const watch = (name: string) => async () => {
      const s = currentSignal();
      await sleep(250);
      aborted[name] = s.aborted;
      return name as never;
    };
    runtime.stopContainer = watch('stopContainer');
    runtime.execSync = watch('execSync');
    runtime.pullImage = watch('pullImage');
    runtime.containerStatus = watch('containerStatus');
    const rt = instrumentRuntime(runtime, silentLogger(), undefined, { requestTimeoutMs: 100 });
    await rt.stopContainer('c', 1);
    await rt.execSync('c', ['true'], 1);
    await rt.pullImage('busybox');
    await rt.containerStatus('c').catch(() => {});
    assert.deepEqual(aborted, { stopContainer: false, execSync: false, pullImage: false, containerStatus: true });
  });

  it('a runtime call made by a tap aborts when the tap is given up on', async function () {
    let callSignal: AbortSignal | undefined;
    const runtime = new MemoryRuntime();
    runtime.listContainers = () => {
      callSignal = currentSignal();
      return new Promise(() => {});
    };
    const rt = instrumentRuntime(runtime, silentLogger(), undefined, { requestTimeoutMs: 60_000 });
    const hooks = isolatedHooks(100);
    hooks.afterStart.tapPromise('lister', async () => void (await rt.listContainers()));
    await assert.rejects(hooks.afterStart.promise({ pod, container: { name: 'c' }, containerId: 'c1' } as never), /did not finish within 100 ms/);
    assert.equal(callSignal?.aborted, true, 'the runtime call went on after its tap was given up on');
  });

  describe('cri-containerd passes the signal to its gRPC calls', function () {
    let dir: string;
    let fake: FakeCriServer;
    let rt: CriRuntime;
    beforeEach(async () => {
      dir = mkdtempSync(join(tmpdir(), 'kts-cancel-'));
      fake = await FakeCriServer.start(join(dir, 'cri.sock'));
      rt = new CriRuntime(new CriClient(fake.endpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 10_000 });
    });
    afterEach(async () => {
      fake.clearDelays();
      await rt.close();
      await fake.stop();
      rmSync(dir, { recursive: true, force: true });
    });

    it('a call in flight is cancelled when its signal aborts, long before its deadline', async function () {
      fake.delay('ListPodSandbox', 4000);
      const gaveUp = new AbortController();
      setTimeout(() => gaveUp.abort(new Error('the tap was given up on')), 100);
      const t0 = Date.now();
      await assert.rejects(runWithSignal(gaveUp.signal, () => rt.listPodSandboxes()), (err: unknown) => errorCode(err) === 'DeadlineExceeded' && /ListPodSandbox: cancelled: the tap was given up on/.test((err as Error).message));
      assert.ok(Date.now() - t0 < 2000, `the call ran on for ${Date.now() - t0} ms`);
    });

    it('a call under an aborted signal is not sent', async function () {
      const gaveUp = new AbortController();
      gaveUp.abort(new Error('gone'));
      const before = fake.calls.RunPodSandbox ?? 0;
      await assert.rejects(runWithSignal(gaveUp.signal, () => rt.runPodSandbox({ metadata: { name: 'x', uid: 'u', namespace: 'n', attempt: 0 } } as never)), /cancelled: gone/);
      assert.equal(fake.calls.RunPodSandbox ?? 0, before);
    });
  });
});
