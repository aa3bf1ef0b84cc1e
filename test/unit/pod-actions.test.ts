import assert from 'node:assert/strict';
import type { V1Container } from '@kubernetes/client-node';
import { Backoff } from '../../core/pod/backoff.ts';
import { backoffKey, computePodActions, type PodActions } from '../../core/pod/pod-actions.ts';
import { fakeClock, makeContainer, makePod, makeRuntimeStatus, makeSandbox } from '../support/runtime-fixtures.ts';

const app: V1Container = { name: 'app', image: 'busybox:1.36' };
const side: V1Container = { name: 'side', image: 'nginx:1.25' };
const init1: V1Container = { name: 'init-a', image: 'busybox:1.36', command: ['true'] };
const init2: V1Container = { name: 'init-b', image: 'busybox:1.36', command: ['true'] };

const starts = (a: PodActions) => a.containersToStart.map((s) => `${s.container.name}#${s.restartCount}`);

describe('computePodActions', () => {
  let clock: ReturnType<typeof fakeClock>;
  let crash: Backoff;
  beforeEach(() => {
    clock = fakeClock();
    crash = new Backoff(10_000, 300_000, clock.now);
  });

  describe('sandbox', () => {
    it('new pod: creates sandbox attempt 0 and starts every container with restartCount 0', () => {
      const pod = makePod({ containers: [app, side] });
      const a = computePodActions(pod, undefined, crash);
      assert.equal(a.createSandbox, true);
      assert.equal(a.attempt, 0);
      assert.equal(a.killPod, false, 'nothing to kill yet');
      assert.equal(a.sandboxId, undefined);
      assert.equal(a.nextInit, undefined);
      assert.deepEqual(starts(a), ['app#0', 'side#0']);
      assert.deepEqual(a.containersToKill, []);
    });

    it('ready sandbox with its containers running: nothing to do', () => {
      const pod = makePod({ containers: [app, side] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app), makeContainer(side)]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.createSandbox, false);
      assert.equal(a.killPod, false);
      assert.equal(a.sandboxId, 'sb-0');
      assert.deepEqual(starts(a), []);
      assert.deepEqual(a.containersToKill, []);
      assert.equal(a.requeueAfterMs, undefined);
    });

    it('sandbox NOTREADY (died): kill, new sandbox with attempt+1, containers restart with restartCount+1', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus(
        [makeSandbox({ attempt: 2, state: 'SANDBOX_NOTREADY' })],
        [makeContainer(app, { sandboxId: 'sb-2', state: 'CONTAINER_EXITED', exitCode: 137, restartCount: 3 })],
      );
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, true);
      assert.equal(a.createSandbox, true);
      assert.equal(a.attempt, 3);
      assert.deepEqual(starts(a), ['app#4']);
    });

    it('sandbox NOTREADY while a container still runs: kill first, then recreate', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus([makeSandbox({ state: 'SANDBOX_NOTREADY' })], [makeContainer(app)]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, true);
      assert.equal(a.createSandbox, true);
      assert.equal(a.attempt, 1);
      assert.deepEqual(starts(a), ['app#1']);
    });

    it('two ready sandboxes: kill both and create a new one', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus([makeSandbox({ attempt: 0 }), makeSandbox({ attempt: 1 })], [makeContainer(app, { sandboxId: 'sb-1' })]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, true);
      assert.equal(a.createSandbox, true);
      assert.equal(a.attempt, 2);
    });
  });

  describe('restart policy after a container exited', () => {
    const cases: Array<[string, number, boolean]> = [
      ['Always', 0, true],
      ['Always', 1, true],
      ['OnFailure', 0, false],
      ['OnFailure', 1, true],
      ['Never', 0, false],
      ['Never', 1, false],
    ];
    for (const [policy, exitCode, restart] of cases) {
      it(`${policy}, exit ${exitCode}: ${restart ? 'restarts with restartCount+1' : 'does not restart; the pod is finished (killPod)'}`, () => {
        const pod = makePod({ containers: [app], restartPolicy: policy });
        const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode, restartCount: 2 })]);
        const a = computePodActions(pod, rs, crash);
        assert.equal(a.createSandbox, false);
        assert.deepEqual(starts(a), restart ? ['app#3'] : []);
        assert.equal(a.killPod, !restart);
        assert.equal(a.waiting.size, 0);
        if (restart) {
          assert.equal(a.containersToStart[0]!.backoffKey, backoffKey(pod, app));
          assert.equal(a.containersToStart[0]!.previousFinishedAt, rs.containers[0]!.finishedAt);
        }
      });
    }

    it('OnFailure with one container done and one running: keeps the pod, restarts nothing', () => {
      const pod = makePod({ containers: [app, side], restartPolicy: 'OnFailure' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(side)]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, false);
      assert.deepEqual(starts(a), []);
    });

    it('OnFailure with a dead sandbox: recreates it for the failed container only', () => {
      const pod = makePod({ containers: [app, side], restartPolicy: 'OnFailure' });
      const rs = makeRuntimeStatus(
        [makeSandbox({ state: 'SANDBOX_NOTREADY' })],
        [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(side, { state: 'CONTAINER_EXITED', exitCode: 2 })],
      );
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.createSandbox, true);
      assert.deepEqual(starts(a), ['side#1']);
    });
  });

  describe('Never pod finished', () => {
    it('ready sandbox, all containers exited: killPod, no new sandbox, nothing started', () => {
      const pod = makePod({ containers: [app, side], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(side, { state: 'CONTAINER_EXITED', exitCode: 1 })]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, true);
      assert.equal(a.createSandbox, false);
      assert.deepEqual(starts(a), []);
      assert.equal(a.nextInit, undefined);
    });

    it('sandbox already stopped: no new sandbox, nothing started', () => {
      const pod = makePod({ containers: [app], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox({ state: 'SANDBOX_NOTREADY' })], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 1 })]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.createSandbox, false);
      assert.deepEqual(starts(a), []);
    });

    it('sandbox died before any container was created: a new sandbox is still made', () => {
      const pod = makePod({ containers: [app], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox({ state: 'SANDBOX_NOTREADY' })], []);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.createSandbox, true);
      assert.equal(a.attempt, 1);
      assert.deepEqual(starts(a), ['app#0']);
    });

    it('a running container keeps the pod going', () => {
      const pod = makePod({ containers: [app, side], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(side)]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, false);
      assert.deepEqual(starts(a), []);
    });
  });

  describe('crash-loop back-off', () => {
    it('holds a restart back with CrashLoopBackOff while in back-off, restarts after it', () => {
      const pod = makePod({ containers: [app] });
      const key = backoffKey(pod, app);
      // The previous restart advanced the back-off to 10 s.
      crash.next(key, clock.now() - 60_000);
      const exitedAt = clock.now();
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 1, restartCount: 1, finishedAt: exitedAt })]);

      clock.advance(4000);
      const held = computePodActions(pod, rs, crash);
      assert.deepEqual(starts(held), []);
      assert.equal(held.killPod, false, 'a crash-looping container does not kill the pod');
      assert.deepEqual(held.waiting.get('app'), {
        reason: 'CrashLoopBackOff',
        message: 'back-off 10s restarting failed container=app pod=web_default(uid-1)',
      });
      assert.equal(held.requeueAfterMs, 6000, 'look again when the back-off ends');

      clock.advance(6000);
      const go = computePodActions(pod, rs, crash);
      assert.deepEqual(starts(go), ['app#2']);
      assert.equal(go.waiting.size, 0);
      assert.equal(go.containersToStart[0]!.backoffKey, key);
      assert.equal(go.containersToStart[0]!.previousFinishedAt, exitedAt);
    });

    it('the delay in the message doubles with each restart ("5m0s" at the cap)', () => {
      const pod = makePod({ containers: [app] });
      const key = backoffKey(pod, app);
      crash.next(key, clock.now());
      crash.next(key, clock.now());
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 1, finishedAt: clock.now() })]);
      assert.match(computePodActions(pod, rs, crash).waiting.get('app')!.message, /^back-off 20s restarting failed container=app /);
      for (let i = 0; i < 6; i++) crash.next(key, clock.now());
      assert.match(computePodActions(pod, rs, crash).waiting.get('app')!.message, /^back-off 5m0s restarting failed container=app pod=web_default\(uid-1\)$/);
    });

    it('a container that never restarted before is restarted at once', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 1, finishedAt: clock.now() })]);
      assert.deepEqual(starts(computePodActions(pod, rs, crash)), ['app#1']);
    });
  });

  describe('container spec changes', () => {
    it('a running container with a different spec hash is killed and started again (restartCount+1)', () => {
      const pod = makePod({ containers: [app, side] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { hash: 'old-hash', restartCount: 1 }), makeContainer(side)]);
      const a = computePodActions(pod, rs, crash);
      assert.equal(a.killPod, false);
      assert.equal(a.createSandbox, false);
      assert.deepEqual(a.containersToKill.map((k) => [k.id, k.name]), [['app-1', 'app']]);
      assert.match(a.containersToKill[0]!.message, /app definition changed/);
      assert.deepEqual(starts(a), ['app#2']);
    });

    it('the same spec keeps the container', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app)]);
      const changed = makePod({ containers: [{ ...app, command: ['sleep', '3600'] }] });
      assert.deepEqual(computePodActions(pod, rs, crash).containersToKill, []);
      assert.equal(computePodActions(changed, rs, crash).containersToKill.length, 1);
    });

    it('a container created but never started is replaced', () => {
      const pod = makePod({ containers: [app] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_CREATED' })]);
      const a = computePodActions(pod, rs, crash);
      assert.deepEqual(a.containersToKill.map((k) => k.id), ['app-0']);
      assert.deepEqual(starts(a), ['app#1']);
    });
  });

  describe('init containers', () => {
    const pod = () => makePod({ initContainers: [init1, init2], containers: [app] });

    it('new pod: creates the sandbox and starts only the first init container', () => {
      const a = computePodActions(pod(), undefined, crash);
      assert.equal(a.createSandbox, true);
      assert.equal(a.nextInit?.container.name, 'init-a');
      assert.deepEqual(starts(a), []);
    });

    it('runs them one at a time, in order, before any app container', () => {
      const sb = makeSandbox();
      let a = computePodActions(pod(), makeRuntimeStatus([sb], [makeContainer(init1)]), crash);
      assert.equal(a.nextInit, undefined, 'init-a still running: wait');
      assert.deepEqual(starts(a), []);

      const aDone = makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 0 });
      a = computePodActions(pod(), makeRuntimeStatus([sb], [aDone]), crash);
      assert.equal(a.nextInit?.container.name, 'init-b');
      assert.equal(a.nextInit?.restartCount, 0);
      assert.deepEqual(starts(a), []);

      const bDone = makeContainer(init2, { state: 'CONTAINER_EXITED', exitCode: 0, createdAt: aDone.createdAt + 1000 });
      a = computePodActions(pod(), makeRuntimeStatus([sb], [aDone, bDone]), crash);
      assert.equal(a.nextInit, undefined);
      assert.deepEqual(starts(a), ['app#0']);
    });

    it('a failed init container is retried (OnFailure/Always) with restartCount+1', () => {
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 1 })]);
      const a = computePodActions(pod(), rs, crash);
      assert.equal(a.nextInit?.container.name, 'init-a');
      assert.equal(a.nextInit?.restartCount, 1);
      assert.deepEqual(starts(a), []);
    });

    it('a failed init container fails a Never pod: killPod, no app container', () => {
      const p = makePod({ initContainers: [init1, init2], containers: [app], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 1 })]);
      const a = computePodActions(p, rs, crash);
      assert.equal(a.killPod, true);
      assert.equal(a.nextInit, undefined);
      assert.deepEqual(starts(a), []);
    });

    it('a new sandbox starts initialization over from the first init container', () => {
      const rs = makeRuntimeStatus(
        [makeSandbox({ state: 'SANDBOX_NOTREADY' })],
        [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(init2, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 137 })],
      );
      const a = computePodActions(pod(), rs, crash);
      assert.equal(a.createSandbox, true);
      assert.equal(a.nextInit?.container.name, 'init-a');
      assert.equal(a.nextInit?.restartCount, 1);
      assert.deepEqual(starts(a), []);
    });
  });

  describe('ephemeral containers', () => {
    const debugger_ = { name: 'debugger', image: 'busybox:1.36', targetContainerName: 'app' } as V1Container;
    const eph = (a: PodActions) => a.ephemeralToStart.map((s) => `${s.container.name}#${s.restartCount}`);

    it('starts an added one in the running sandbox, once, even before init finished; never one that ran', () => {
      const pod = makePod({ initContainers: [init1], containers: [app], ephemeralContainers: [debugger_] as never });
      const initRunning = makeRuntimeStatus([makeSandbox()], [makeContainer(init1)]);
      assert.deepEqual(eph(computePodActions(pod, initRunning, crash)), ['debugger#0'], 'a debugger starts while init runs');
      const exited = makeRuntimeStatus([makeSandbox()], [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(app), makeContainer(debugger_, { state: 'CONTAINER_EXITED', exitCode: 3 })]);
      assert.deepEqual(eph(computePodActions(pod, exited, crash)), [], 'an ephemeral container is never restarted');
    });

    it('none in a new sandbox nor in a pod that finished', () => {
      const pod = makePod({ containers: [app], restartPolicy: 'Never', ephemeralContainers: [debugger_] as never });
      assert.deepEqual(eph(computePodActions(pod, undefined, crash)), []);
      const done = makeRuntimeStatus([makeSandbox()], [makeContainer(app, { state: 'CONTAINER_EXITED', exitCode: 0 })]);
      const a = computePodActions(pod, done, crash);
      assert.equal(a.killPod, true);
      assert.deepEqual(eph(a), []);
    });
  });
});
