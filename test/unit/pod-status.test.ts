import assert from 'node:assert/strict';
import { ProbeResults } from '../../core/status/probe-results.ts';
import type { V1Container, V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { computePodStatus, podPhase, qosClass, type StatusInputs } from '../../core/status/pod-status.ts';
import { T0, makeContainer, makePod, makeRuntimeStatus, makeSandbox } from '../support/runtime-fixtures.ts';

const a: V1Container = { name: 'a', image: 'busybox:1.36' };
const b: V1Container = { name: 'b', image: 'nginx:1.25' };
const NODE_IP = '192.168.1.10';

function probesWith(id: string, probe: 'readiness' | 'startup' | 'liveness', result: 'success' | 'failure'): ProbeResults {
  const p = new ProbeResults();
  p.set(id, probe, result);
  return p;
}

function inputs(o: Partial<StatusInputs> = {}): StatusInputs {
  return {
    nodeIP: NODE_IP,
    runtimeName: 'containerd',
    waiting: new Map(),
    probes: new ProbeResults(),
    startTime: new Date(T0),
    previous: undefined,
    terminating: false,
    ...o,
  };
}

const cond = (s: V1PodStatus, type: string) => s.conditions?.find((c) => c.type === type);
const condStatus = (s: V1PodStatus) => Object.fromEntries((s.conditions ?? []).map((c) => [c.type, c.status]));

describe('computePodStatus', () => {
  describe('ephemeral containers', () => {
    it('are reported in ephemeralContainerStatuses, never ready, and change neither the phase nor the conditions', () => {
      const dbg = { name: 'debugger', image: 'busybox:1.36' };
      const pod = makePod({ containers: [a], ephemeralContainers: [dbg] as never });
      const waiting = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [makeContainer(a)]), inputs());
      assert.equal(waiting.ephemeralContainerStatuses![0]!.state!.waiting!.reason, 'ContainerCreating');
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [makeContainer(a), makeContainer(dbg, { state: 'CONTAINER_EXITED', exitCode: 3 })]), inputs());
      assert.equal(s.phase, 'Running');
      assert.equal(condStatus(s).Ready, 'True');
      assert.deepEqual(s.containerStatuses!.map((c) => c.name), ['a']);
      const e = s.ephemeralContainerStatuses![0]!;
      assert.equal(e.name, 'debugger');
      assert.equal(e.ready, false);
      assert.equal(e.state!.terminated!.exitCode, 3);
      assert.equal(computePodStatus(makePod({ containers: [a] }), undefined, inputs()).ephemeralContainerStatuses, undefined);
    });
  });

  describe('phase', () => {
    it('Pending with ContainerCreating before any container exists', () => {
      const pod = makePod({ containers: [a, b] });
      for (const rs of [undefined, makeRuntimeStatus([makeSandbox()], [])]) {
        const s = computePodStatus(pod, rs, inputs());
        assert.equal(s.phase, 'Pending');
        for (const cs of s.containerStatuses!) {
          assert.deepEqual(cs.state, { waiting: { reason: 'ContainerCreating' } });
          assert.equal(cs.ready, false);
          assert.equal(cs.started, false);
          assert.equal(cs.restartCount, 0);
          assert.equal(cs.containerID, undefined);
        }
        assert.equal(cond(s, 'Ready')!.status, 'False');
        assert.equal(cond(s, 'Ready')!.message, 'containers with unready status: [a b]');
      }
    });

    it('Pending shows the waiting reason of the last sync (ErrImagePull)', () => {
      const pod = makePod({ containers: [a] });
      const waiting = new Map([['a', { reason: 'ErrImagePull', message: 'Failed to pull image "busybox:1.36": not found' }]]);
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], []), inputs({ waiting }));
      assert.equal(s.phase, 'Pending');
      assert.deepEqual(s.containerStatuses![0]!.state, { waiting: { reason: 'ErrImagePull', message: 'Failed to pull image "busybox:1.36": not found' } });
    });

    it('Running with every container running: containerID, imageID, started, ready, startedAt', () => {
      const pod = makePod({ containers: [a, b] });
      const ca = makeContainer(a, { imageRef: 'docker.io/library/busybox@sha256:111' });
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [ca, makeContainer(b)]), inputs());
      assert.equal(s.phase, 'Running');
      const st = s.containerStatuses![0]!;
      assert.equal(st.name, 'a');
      assert.equal(st.image, 'busybox:1.36');
      assert.equal(st.imageID, 'docker.io/library/busybox@sha256:111');
      assert.equal(st.containerID, 'containerd://a-0');
      assert.equal(st.started, true);
      assert.equal(st.ready, true);
      assert.deepEqual(st.state, { running: { startedAt: new Date(ca.startedAt) } });
      assert.equal(st.lastState, undefined);
      assert.deepEqual(condStatus(s), { PodReadyToStartContainers: 'True', Initialized: 'True', Ready: 'True', ContainersReady: 'True', PodScheduled: 'True' });
    });

    it('Succeeded when every container of a Never/OnFailure pod exited 0', () => {
      for (const restartPolicy of ['Never', 'OnFailure']) {
        const pod = makePod({ containers: [a, b], restartPolicy });
        const rs = makeRuntimeStatus([makeSandbox({ state: 'SANDBOX_NOTREADY' })], [makeContainer(a, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(b, { state: 'CONTAINER_EXITED', exitCode: 0 })]);
        const s = computePodStatus(pod, rs, inputs());
        assert.equal(s.phase, 'Succeeded', restartPolicy);
        const t = s.containerStatuses![0]!.state!.terminated!;
        assert.equal(t.exitCode, 0);
        assert.equal(t.reason, 'Completed');
        assert.equal(t.containerID, 'containerd://a-0');
        assert.equal(cond(s, 'Ready')!.reason, 'PodCompleted');
        assert.equal(cond(s, 'ContainersReady')!.reason, 'PodCompleted');
      }
    });

    it('Failed when a Never pod has a container that exited non-zero', () => {
      const pod = makePod({ containers: [a, b], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(a, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(b, { state: 'CONTAINER_EXITED', exitCode: 3 })]);
      const s = computePodStatus(pod, rs, inputs());
      assert.equal(s.phase, 'Failed');
      assert.equal(s.containerStatuses![1]!.state!.terminated!.reason, 'Error');
      assert.equal(s.containerStatuses![1]!.state!.terminated!.exitCode, 3);
      assert.equal(cond(s, 'Ready')!.status, 'False');
      assert.equal(cond(s, 'Ready')!.reason, 'PodFailed');
      assert.equal(cond(s, 'ContainersReady')!.reason, 'PodFailed');
      assert.equal(cond(s, 'ContainersReady')!.message, undefined, 'terminal phases carry no unready message');
    });

    it('a restart created but not started yet: waiting, with the previous instance as lastState', () => {
      const pod = makePod({ containers: [a] });
      const dead = makeContainer(a, { state: 'CONTAINER_EXITED', exitCode: 2, restartCount: 0 });
      const created = makeContainer(a, { state: 'CONTAINER_CREATED', restartCount: 1 });
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [created, dead]), inputs({}));
      const st = s.containerStatuses![0]!;
      assert.equal(st.state!.waiting!.reason, 'ContainerCreating');
      assert.equal(st.restartCount, 1);
      assert.equal(st.lastState!.terminated!.exitCode, 2);
    });

    it('Running while an Always container is in CrashLoopBackOff (waiting, lastState.terminated)', () => {
      const pod = makePod({ containers: [a] });
      const dead = makeContainer(a, { state: 'CONTAINER_EXITED', exitCode: 1, restartCount: 4 });
      const message = 'back-off 1m20s restarting failed container=a pod=web_default(uid-1)';
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [dead]), inputs({ waiting: new Map([['a', { reason: 'CrashLoopBackOff', message }]]) }));
      assert.equal(s.phase, 'Running');
      const st = s.containerStatuses![0]!;
      assert.deepEqual(st.state, { waiting: { reason: 'CrashLoopBackOff', message } });
      assert.equal(st.lastState!.terminated!.exitCode, 1);
      assert.equal(st.lastState!.terminated!.reason, 'Error');
      assert.deepEqual(st.lastState!.terminated!.finishedAt, new Date(dead.finishedAt));
      assert.equal(st.restartCount, 4);
      assert.equal(st.ready, false);
      assert.equal(st.containerID, 'containerd://a-4');
      assert.equal(cond(s, 'Ready')!.message, 'containers with unready status: [a]');
    });

    it('a restarted container reports the previous instance as lastState', () => {
      const pod = makePod({ containers: [a] });
      const old = makeContainer(a, { state: 'CONTAINER_EXITED', exitCode: 2, restartCount: 0 });
      const cur = makeContainer(a, { restartCount: 1 });
      const st = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [old, cur]), inputs()).containerStatuses![0]!;
      assert.ok(st.state!.running);
      assert.equal(st.restartCount, 1);
      assert.equal(st.containerID, 'containerd://a-1');
      assert.equal(st.lastState!.terminated!.exitCode, 2);
      assert.equal(st.lastState!.terminated!.containerID, 'containerd://a-0');
    });
  });

  describe('conditions', () => {
    it('Ready/ContainersReady false naming the unready container (readiness probe not yet passed)', () => {
      const pod = makePod({ containers: [{ ...a, readinessProbe: { exec: { command: ['true'] } } }, b] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(a), makeContainer(b)]);
      let s = computePodStatus(pod, rs, inputs());
      assert.equal(s.phase, 'Running');
      for (const type of ['Ready', 'ContainersReady']) {
        assert.equal(cond(s, type)!.status, 'False');
        assert.equal(cond(s, type)!.reason, 'ContainersNotReady');
        assert.equal(cond(s, type)!.message, 'containers with unready status: [a]');
      }
      assert.equal(cond(s, 'PodScheduled')!.status, 'True');
      assert.equal(cond(s, 'Initialized')!.status, 'True');
      s = computePodStatus(pod, rs, inputs({ probes: probesWith('a-0', 'readiness', 'success'), previous: s }));
      assert.equal(cond(s, 'Ready')!.status, 'True');
      assert.equal(cond(s, 'Ready')!.message, undefined);
    });

    it('Initialized false while init containers run; app containers wait with PodInitializing', () => {
      const init1: V1Container = { name: 'init-1', image: 'busybox:1.36' };
      const init2: V1Container = { name: 'init-2', image: 'busybox:1.36' };
      const pod = makePod({ initContainers: [init1, init2], containers: [a] });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 0 }), makeContainer(init2, { createdAt: T0 + 20_000 })]);
      const s = computePodStatus(pod, rs, inputs());
      assert.equal(s.phase, 'Pending');
      const init = cond(s, 'Initialized')!;
      assert.equal(init.status, 'False');
      assert.equal(init.reason, 'ContainersNotInitialized');
      assert.equal(init.message, 'containers with incomplete status: [init-2]');
      assert.equal(s.initContainerStatuses!.length, 2);
      assert.equal(s.initContainerStatuses![0]!.state!.terminated!.reason, 'Completed');
      assert.ok(s.initContainerStatuses![1]!.state!.running);
      assert.deepEqual(s.containerStatuses![0]!.state, { waiting: { reason: 'PodInitializing' } });
    });

    it('Failed when an init container of a Never pod failed', () => {
      const init1: V1Container = { name: 'init-1', image: 'busybox:1.36' };
      const pod = makePod({ initContainers: [init1], containers: [a], restartPolicy: 'Never' });
      const rs = makeRuntimeStatus([makeSandbox()], [makeContainer(init1, { state: 'CONTAINER_EXITED', exitCode: 1 })]);
      assert.equal(computePodStatus(pod, rs, inputs()).phase, 'Failed');
    });

    it('keeps lastTransitionTime while a condition does not change, and moves it when it does', () => {
      const pod = makePod({ containers: [a] });
      const old = new Date('2020-01-01T00:00:00Z');
      const pending = computePodStatus(pod, undefined, inputs());
      const previous: V1PodStatus = { ...pending, conditions: pending.conditions!.map((c) => ({ ...c, lastTransitionTime: old })) };
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [makeContainer(a)]), inputs({ previous }));
      assert.deepEqual(cond(s, 'PodScheduled')!.lastTransitionTime, old, 'unchanged: True → True');
      assert.deepEqual(cond(s, 'Initialized')!.lastTransitionTime, old, 'unchanged: True → True');
      assert.equal(cond(s, 'Ready')!.status, 'True');
      assert.ok(new Date(cond(s, 'Ready')!.lastTransitionTime!).getTime() > old.getTime(), 'changed: False → True gets a new time');
      assert.ok(new Date(cond(s, 'ContainersReady')!.lastTransitionTime!).getTime() > old.getTime());
    });

    it('a terminating pod reports its containers not ready', () => {
      const pod = makePod({ containers: [a] });
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox()], [makeContainer(a)]), inputs({ terminating: true }));
      assert.equal(s.containerStatuses![0]!.ready, false);
      assert.equal(cond(s, 'Ready')!.status, 'False');
    });
  });

  describe('IPs', () => {
    it('podIP and podIPs come from the ready sandbox; hostIP is the node', () => {
      const pod = makePod({ containers: [a] });
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox({ ip: '10.88.0.7', additionalIps: ['fd00::7'] })], [makeContainer(a)]), inputs());
      assert.equal(s.podIP, '10.88.0.7');
      assert.deepEqual(s.podIPs, [{ ip: '10.88.0.7' }, { ip: 'fd00::7' }]);
      assert.equal(s.hostIP, NODE_IP);
      assert.deepEqual(s.hostIPs, [{ ip: NODE_IP }]);
      assert.deepEqual(s.startTime, new Date(T0));
    });

    it('hostNetwork pods report the node IP', () => {
      const pod = makePod({ containers: [a], hostNetwork: true });
      const s = computePodStatus(pod, makeRuntimeStatus([makeSandbox({ ip: '' })], [makeContainer(a)]), inputs());
      assert.equal(s.podIP, NODE_IP);
      assert.deepEqual(s.podIPs, [{ ip: NODE_IP }]);
    });

    it('no IP before a sandbox exists; the last IP is kept once the sandbox stopped', () => {
      const pod = makePod({ containers: [a], restartPolicy: 'Never' });
      const none = computePodStatus(pod, undefined, inputs());
      assert.equal(none.podIP, undefined);
      assert.equal(none.podIPs, undefined);
      const running = computePodStatus(pod, makeRuntimeStatus([makeSandbox({ ip: '10.88.0.9' })], [makeContainer(a)]), inputs());
      const done = computePodStatus(pod, makeRuntimeStatus([makeSandbox({ state: 'SANDBOX_NOTREADY', ip: '' })], [makeContainer(a, { state: 'CONTAINER_EXITED' })]), inputs({ previous: running }));
      assert.equal(done.podIP, '10.88.0.9');
      assert.equal(cond(done, 'PodReadyToStartContainers')!.status, 'False');
    });
  });
});

describe('podPhase', () => {
  const pod = (restartPolicy: string) => makePod({ containers: [a, b], restartPolicy });
  const running = { name: 'a', image: '', imageID: '', ready: true, restartCount: 0, state: { running: {} } };
  const exited = (code: number, name = 'b') => ({ name, image: '', imageID: '', ready: false, restartCount: 0, state: { terminated: { exitCode: code } } });
  const creating = { name: 'b', image: '', imageID: '', ready: false, restartCount: 0, state: { waiting: { reason: 'ContainerCreating' } } };
  const crashLoop = { name: 'b', image: '', imageID: '', ready: false, restartCount: 3, state: { waiting: { reason: 'CrashLoopBackOff' } }, lastState: { terminated: { exitCode: 1 } } };

  it('follows upstream getPhase', () => {
    assert.equal(podPhase(pod('Always'), [running, creating] as any, true, false), 'Pending');
    assert.equal(podPhase(pod('Always'), [running, exited(0)] as any, true, false), 'Running');
    assert.equal(podPhase(pod('Always'), [exited(0, 'a'), exited(1)] as any, true, false), 'Running');
    assert.equal(podPhase(pod('Always'), [exited(1, 'a'), crashLoop] as any, true, false), 'Running');
    assert.equal(podPhase(pod('OnFailure'), [exited(0, 'a'), exited(0)] as any, true, false), 'Succeeded');
    assert.equal(podPhase(pod('OnFailure'), [exited(0, 'a'), exited(1)] as any, true, false), 'Running');
    assert.equal(podPhase(pod('Never'), [exited(0, 'a'), exited(0)] as any, true, false), 'Succeeded');
    assert.equal(podPhase(pod('Never'), [exited(0, 'a'), exited(1)] as any, true, false), 'Failed');
    assert.equal(podPhase(pod('Never'), [running, exited(1)] as any, true, false), 'Running');
    assert.equal(podPhase(pod('Always'), [running, running] as any, false, false), 'Pending', 'init not done');
    assert.equal(podPhase(pod('Never'), [creating] as any, false, true), 'Failed', 'init failed');
  });
});

describe('qosClass', () => {
  const withRes = (resources: object, name = 'a'): V1Container => ({ name, image: 'x', resources } as V1Container);
  const pod = (...containers: V1Container[]): V1Pod => makePod({ containers });

  it('BestEffort without requests or limits', () => {
    assert.equal(qosClass(pod(a, b)), 'BestEffort');
  });
  it('BestEffort when requests are zero', () => {
    assert.equal(qosClass(pod(withRes({ requests: { cpu: '0', memory: '0' } }))), 'BestEffort');
  });
  it('Guaranteed when every container has cpu and memory limits equal to requests', () => {
    assert.equal(qosClass(pod(withRes({ requests: { cpu: '500m', memory: '128Mi' }, limits: { cpu: '0.5', memory: '134217728' } }), withRes({ limits: { cpu: '1', memory: '1Gi' } }, 'b'))), 'Guaranteed');
  });
  it('Burstable when requests differ from limits', () => {
    assert.equal(qosClass(pod(withRes({ requests: { cpu: '100m', memory: '128Mi' }, limits: { cpu: '200m', memory: '128Mi' } }))), 'Burstable');
  });
  it('Burstable with requests only, or when one container has no limits', () => {
    assert.equal(qosClass(pod(withRes({ requests: { memory: '64Mi' } }))), 'Burstable');
    assert.equal(qosClass(pod(withRes({ limits: { cpu: '1', memory: '1Gi' } }), b)), 'Burstable');
    assert.equal(qosClass(pod(withRes({ limits: { cpu: '1' } }))), 'Burstable', 'memory limit missing');
  });
  it('counts init containers', () => {
    const p = makePod({ initContainers: [withRes({ requests: { cpu: '100m' } }, 'init')], containers: [withRes({ limits: { cpu: '1', memory: '1Gi' } })] });
    assert.equal(qosClass(p), 'Burstable');
  });
  it('is reported in the pod status', () => {
    const p = pod(withRes({ limits: { cpu: '1', memory: '1Gi' } }));
    assert.equal(computePodStatus(p, undefined, inputs()).qosClass, 'Guaranteed');
  });
});
