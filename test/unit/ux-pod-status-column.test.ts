/**
 * Issue 17: `kubelet-ts pods` computes STATUS, READY and RESTARTS as kubectl's printPod does.
 * Each case is a pod status the kubelet reports, and the column kubectl would show for it.
 */
import assert from 'node:assert/strict';
import type { V1ContainerStatus, V1Pod } from '@kubernetes/client-node';
import { podRow, podStatusColumns } from '../../core/commands/pod-columns.ts';
import { humanDuration } from '../../core/commands/human-duration.ts';

const NOW = Date.parse('2026-11-22T12:00:00Z');

function pod(spec: Partial<V1Pod['spec']>, status: V1Pod['status'], meta: Partial<V1Pod['metadata']> = {}): V1Pod {
  return {
    metadata: { name: 'p', namespace: 'default', uid: 'u1', ...meta },
    spec: { containers: [{ name: 'app', image: 'busybox' }], ...spec },
    status,
  } as V1Pod;
}
const running = (name = 'app', extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus =>
  ({ name, ready: true, restartCount: 0, image: 'busybox', imageID: '', state: { running: { startedAt: new Date(NOW - 60_000) } }, ...extra }) as V1ContainerStatus;
const waiting = (reason: string, name = 'app', extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus =>
  ({ name, ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { waiting: { reason } }, ...extra }) as V1ContainerStatus;
const terminated = (reason: string | undefined, exitCode: number, name = 'app', extra: Partial<V1ContainerStatus> = {}): V1ContainerStatus =>
  ({ name, ready: false, restartCount: 0, image: 'busybox', imageID: '', state: { terminated: { exitCode, ...(reason ? { reason } : {}) } }, ...extra }) as V1ContainerStatus;

describe('ux: the STATUS column as kubectl computes it', () => {
  it('Running, with READY counting ready running containers', () => {
    const p = pod({ containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'x' }] }, { phase: 'Running', containerStatuses: [running('a'), running('b', { ready: false })] });
    assert.deepEqual(podStatusColumns(p, NOW), { ready: '1/2', status: 'Running', restarts: '0' });
  });

  it('CrashLoopBackOff with restarts and when the last one was', () => {
    const p = pod({}, {
      phase: 'Running',
      containerStatuses: [waiting('CrashLoopBackOff', 'app', { restartCount: 4, lastState: { terminated: { exitCode: 1, reason: 'Error', finishedAt: new Date(NOW - 75_000) } } })],
    });
    assert.deepEqual(podStatusColumns(p, NOW), { ready: '0/1', status: 'CrashLoopBackOff', restarts: '4 (75s ago)' });
  });

  it('ImagePullBackOff and ErrImagePull come from the waiting reason', () => {
    assert.equal(podStatusColumns(pod({}, { phase: 'Pending', containerStatuses: [waiting('ImagePullBackOff')] })).status, 'ImagePullBackOff');
    assert.equal(podStatusColumns(pod({}, { phase: 'Pending', containerStatuses: [waiting('ErrImagePull')] })).status, 'ErrImagePull');
  });

  it('Init:1/2 while the second of two init containers runs, Init:CrashLoopBackOff, Init:Error', () => {
    const spec = { initContainers: [{ name: 'i1', image: 'x' }, { name: 'i2', image: 'x' }] };
    const done = terminated('Completed', 0, 'i1');
    assert.equal(podStatusColumns(pod(spec, { phase: 'Pending', initContainerStatuses: [done, running('i2', { ready: false })], containerStatuses: [waiting('PodInitializing')] })).status, 'Init:1/2');
    assert.equal(podStatusColumns(pod(spec, { phase: 'Pending', initContainerStatuses: [done, waiting('CrashLoopBackOff', 'i2')] })).status, 'Init:CrashLoopBackOff');
    assert.equal(podStatusColumns(pod(spec, { phase: 'Pending', initContainerStatuses: [terminated('Error', 1, 'i1')] })).status, 'Init:Error');
    assert.equal(podStatusColumns(pod(spec, { phase: 'Pending', initContainerStatuses: [terminated(undefined, 3, 'i1')] })).status, 'Init:ExitCode:3');
  });

  it('a running sidecar counts in READY and does not hold the pod in Init', () => {
    const spec = { initContainers: [{ name: 'side', image: 'x', restartPolicy: 'Always' }] };
    const p = pod(spec, { phase: 'Running', conditions: [{ type: 'Initialized', status: 'True' }], initContainerStatuses: [running('side', { started: true })], containerStatuses: [running()] } as V1Pod['status']);
    assert.deepEqual(podStatusColumns(p, NOW), { ready: '2/2', status: 'Running', restarts: '0' });
  });

  it('Completed, OOMKilled, ExitCode:N', () => {
    assert.equal(podStatusColumns(pod({}, { phase: 'Succeeded', containerStatuses: [terminated('Completed', 0)] })).status, 'Completed');
    assert.equal(podStatusColumns(pod({}, { phase: 'Running', containerStatuses: [terminated('OOMKilled', 137)] })).status, 'OOMKilled');
    assert.equal(podStatusColumns(pod({}, { phase: 'Failed', containerStatuses: [terminated(undefined, 2)] })).status, 'ExitCode:2');
  });

  it('one container Completed and another running is NotReady (no Ready condition) or Running', () => {
    const spec = { containers: [{ name: 'a', image: 'x' }, { name: 'b', image: 'x' }] };
    const statuses = [terminated('Completed', 0, 'a'), running('b')];
    assert.equal(podStatusColumns(pod(spec, { phase: 'Running', containerStatuses: statuses })).status, 'NotReady');
    assert.equal(podStatusColumns(pod(spec, { phase: 'Running', containerStatuses: statuses, conditions: [{ type: 'Ready', status: 'True' }] } as V1Pod['status'])).status, 'Running');
  });

  it('Terminating once a deletion is under way, but not for a finished pod', () => {
    const deleted = { deletionTimestamp: new Date(NOW) };
    assert.equal(podStatusColumns(pod({}, { phase: 'Running', containerStatuses: [running()] }, deleted)).status, 'Terminating');
    assert.equal(podStatusColumns(pod({}, { phase: 'Succeeded', containerStatuses: [terminated('Completed', 0)] }, deleted)).status, 'Completed');
  });

  it('a pod without a status yet is Pending; a rejected one shows its reason', () => {
    assert.equal(podStatusColumns(pod({}, undefined)).status, 'Pending');
    assert.equal(podStatusColumns(pod({}, { phase: 'Failed', reason: 'OutOfcpu' })).status, 'OutOfcpu');
  });

  it('a row has AGE from the static pod\'s config.seen, IP and NODE', () => {
    const p = pod({ nodeName: 'vm' }, { phase: 'Running', podIP: '10.88.0.4', containerStatuses: [running()] }, { annotations: { 'kubernetes.io/config.seen': new Date(NOW - 150_000).toISOString() } });
    const r = podRow(p, NOW);
    assert.deepEqual([r.age, r.ip, r.node], ['2m30s', '10.88.0.4', 'vm']);
    assert.deepEqual([podRow(pod({}, undefined), NOW).ip, podRow(pod({}, undefined), NOW).node], ['<none>', '<none>']);
  });

  it('ages as kubectl prints them', () => {
    const s = 1000;
    assert.deepEqual(
      [0, 59 * s, 119 * s, 120 * s, 150 * s, 600 * s, 179 * 60 * s, 3 * 3600 * s + 60 * s, 9 * 3600 * s, 50 * 3600 * s, 24 * 3600 * s * 10, -5 * s].map(humanDuration),
      ['0s', '59s', '119s', '2m', '2m30s', '10m', '179m', '3h1m', '9h', '2d2h', '10d', '<invalid>'],
    );
  });
});
