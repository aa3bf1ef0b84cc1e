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
import { NEVER_ABORTS, hookContext, untilAborted, type CallOptions, type HookContext } from '../../core/util/cancellation.ts';
import { PodWorkers } from '../../core/pod/pod-workers.ts';
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
 * Cancellation, passed explicitly (issue 38 part 2): when the core gives up on a tap
 * (hookTimeout), a runtime call (runtimeRequestTimeout) or a pod's sync (the pod is to be
 * terminated), the signal handed to the work (a tap's `ctx.signal`, a call's `options.signal`)
 * aborts, so a vendor's work stops instead of running on.
 */
describe('cancellation: a tap or runtime call the core gave up on sees its signal abort', function () {
  this.timeout(20_000);

  it('a promise tap past hookTimeout sees its signal abort, with the timeout as the reason', async function () {
    let inTap: AbortSignal | undefined;
    const hooks = isolatedHooks(100);
    hooks.admitPod.tapPromise('slow-policy', (_pod, ctx) => {
      inTap = ctx.signal;
      return new Promise<string | undefined>(() => {});
    });
    await assert.rejects(hooks.admitPod.promise(pod, hookContext()), (err: unknown) => isPluginError(err) && /did not finish within 100 ms/.test((err as Error).message));
    assert.ok(inTap, 'the tap ran');
    assert.equal(inTap.aborted, true, 'the timed-out tap\'s signal did not abort');
    assert.match((inTap.reason as Error).message, /did not finish within 100 ms/);
  });

  it('a tap\'s signal follows the caller\'s: the work the hook is part of given up on aborts it', async function () {
    let inTap: AbortSignal | undefined;
    const hooks = isolatedHooks(60_000);
    hooks.beforeSandbox.tapPromise('slow-network', (config, _pod, ctx) => {
      inTap = ctx.signal;
      return new Promise((resolve, reject) => {
        ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason), { once: true });
        setTimeout(() => resolve(config), 30_000).unref();
      });
    });
    const sync = new AbortController();
    setTimeout(() => sync.abort(new Error('the pod is to be terminated')), 50);
    const t0 = Date.now();
    await assert.rejects(hooks.beforeSandbox.promise({} as never, pod, hookContext(sync.signal)), /the pod is to be terminated/);
    assert.ok(Date.now() - t0 < 5000);
    assert.equal(inTap?.aborted, true);
    assert.notEqual(inTap, sync.signal, 'each tap gets a signal of its own, not the caller\'s');
  });

  it('a tap that finishes in time keeps an unaborted signal; each tap has its own', async function () {
    const seen: AbortSignal[] = [];
    const hooks = isolatedHooks(200);
    hooks.beforeKill.tapPromise('quick-1', async (_e, ctx) => void seen.push(ctx.signal));
    hooks.beforeKill.tapPromise('quick-2', async (_e, ctx) => void seen.push(ctx.signal));
    await hooks.beforeKill.promise(kill, hookContext());
    await sleep(300);
    assert.equal(seen.length, 2);
    assert.notEqual(seen[0], seen[1]);
    assert.ok(seen.every((s) => !s.aborted), 'a tap that finished in time had its signal aborted later');
  });

  it('a callback tap whose callback never comes sees its signal abort', async function () {
    let inTap: AbortSignal | undefined;
    const hooks = isolatedHooks(100);
    hooks.beforeKill.tapAsync('lost', (_e, ctx: HookContext, _cb) => void (inTap = ctx.signal));
    await assert.rejects(hooks.beforeKill.promise(kill, hookContext()), /did not call back within 100 ms/);
    assert.equal(inTap?.aborted, true);
  });

  it('a runtime call past runtimeRequestTimeout sees its signal abort, and fails with DeadlineExceeded if the runtime ignores it', async function () {
    let signal: AbortSignal | undefined;
    const hanging = new MemoryRuntime();
    hanging.listPodSandboxes = (_filter?: unknown, options?: CallOptions) => {
      signal = options?.signal;
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
    const watch = (name: string) => async (...args: unknown[]) => {
      const s = (args[{ stopContainer: 2, execSync: 3, pullImage: 3, containerStatus: 1 }[name]!] as CallOptions).signal!;
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

  it('a runtime call a tap makes with its signal aborts when the tap is given up on', async function () {
    let callSignal: AbortSignal | undefined;
    const runtime = new MemoryRuntime();
    runtime.listContainers = (_filter?: unknown, options?: CallOptions) => {
      callSignal = options?.signal;
      return new Promise(() => {});
    };
    const rt = instrumentRuntime(runtime, silentLogger(), undefined, { requestTimeoutMs: 60_000 });
    const hooks = isolatedHooks(100);
    hooks.afterStart.tapPromise('lister', async (_e, ctx) => void (await rt.listContainers(undefined, { signal: ctx.signal })));
    await assert.rejects(hooks.afterStart.promise({ pod, container: { name: 'c' }, containerId: 'c1' } as never, hookContext()), /did not finish within 100 ms/);
    assert.equal(callSignal?.aborted, true, 'the runtime call went on after its tap was given up on');
  });

  it('work a tap starts in the background does not inherit its signal', async function () {
    // Explicit: what the tap does not hand its signal to never sees it (the ambient scope of before 0.1.0 leaked it into timers).
    let background: AbortSignal | undefined;
    const runtime = new MemoryRuntime();
    runtime.listContainers = async (_filter?: unknown, options?: CallOptions) => {
      background = options?.signal;
      return [];
    };
    const rt = instrumentRuntime(runtime, silentLogger(), undefined, { requestTimeoutMs: 60_000 });
    const hooks = isolatedHooks(50);
    hooks.afterStart.tapPromise('starter', async () => {
      setTimeout(() => void rt.listContainers(), 120);
      await new Promise(() => {});
    });
    await assert.rejects(hooks.afterStart.promise({ pod, container: { name: 'c' }, containerId: 'c1' } as never, hookContext()), /did not finish within 50 ms/);
    await sleep(200);
    assert.ok(background, 'the background call ran');
    assert.equal(background.aborted, false, 'a background call inherited the given-up tap\'s signal');
  });

  it('a pod worker gives up on a sync when its pod is to be terminated: the sync\'s signal aborts, the termination runs next', async function () {
    const order: string[] = [];
    let syncSignal: AbortSignal | undefined;
    let terminateSignal: AbortSignal | undefined;
    const workers = new PodWorkers({
      sync: (_p, signal) => {
        syncSignal = signal;
        order.push('sync');
        // A runtime call in flight: it ends when its signal aborts.
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      },
      terminate: async (_p, _grace, signal) => {
        terminateSignal = signal;
        order.push('terminate');
      },
      requeue: () => order.push('requeue'),
      terminated: () => order.push('terminated'),
    }, silentLogger());
    workers.update(pod);
    await sleep(20);
    workers.update(pod, true);
    assert.deepEqual(await workers.drain(5000), []);
    assert.equal(syncSignal?.aborted, true);
    assert.match((syncSignal!.reason as Error).message, /the pod is to be terminated/);
    assert.equal(terminateSignal?.aborted, false);
    assert.deepEqual(order, ['sync', 'terminate', 'terminated'], 'the given-up sync is neither retried nor reported as a failure');
  });

  it('halting the workers gives up on the operations in progress', async function () {
    let syncSignal: AbortSignal | undefined;
    const workers = new PodWorkers({
      sync: (_p, signal) => {
        syncSignal = signal;
        return new Promise((_, reject) => signal.addEventListener('abort', () => reject(signal.reason), { once: true }));
      },
      terminate: async () => {},
      requeue: () => {},
      terminated: () => {},
    }, silentLogger());
    workers.update(pod);
    await sleep(20);
    workers.halt();
    assert.deepEqual(await workers.drain(5000), []);
    assert.match((syncSignal?.reason as Error).message, /the kubelet is stopping/);
  });

  it('untilAborted stops waiting for shared work without cancelling it', async function () {
    let finished = false;
    const shared = sleep(150).then(() => { finished = true; return 'done'; });
    const caller = new AbortController();
    setTimeout(() => caller.abort(new Error('this pod gave up')), 20);
    await assert.rejects(untilAborted(shared, caller.signal), /this pod gave up/);
    assert.equal(await untilAborted(shared, NEVER_ABORTS), 'done');
    assert.equal(finished, true);
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
      await assert.rejects(rt.listPodSandboxes(undefined, { signal: gaveUp.signal }), (err: unknown) => errorCode(err) === 'DeadlineExceeded' && /ListPodSandbox: cancelled: the tap was given up on/.test((err as Error).message));
      assert.ok(Date.now() - t0 < 2000, `the call ran on for ${Date.now() - t0} ms`);
    });

    it('a call under an aborted signal is not sent', async function () {
      const gaveUp = new AbortController();
      gaveUp.abort(new Error('gone'));
      const before = fake.calls.RunPodSandbox ?? 0;
      await assert.rejects(rt.runPodSandbox({ metadata: { name: 'x', uid: 'u', namespace: 'n', attempt: 0 } } as never, undefined, { signal: gaveUp.signal }), /cancelled: gone/);
      assert.equal(fake.calls.RunPodSandbox ?? 0, before);
    });
  });
});
