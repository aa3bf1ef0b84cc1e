import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import type { ProbeOutcome, ProbeResultEvent } from '../../core/hooks.ts';
import { KubeletError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import type { ContainerRuntime, ExecResult } from '../../core/runtime/types.ts';
import { ProbeManager } from '../../plugins/probes/manager.ts';
import { ProbeWorker, type ProbeRunResult, type ProbeTiming, type Timers } from '../../plugins/probes/probe-worker.ts';

const flush = () => new Promise<void>((r) => setImmediate(r));

/** A fake clock: timers fire only when the test advances time. */
class FakeTimers implements Timers {
  private t = 1_000_000;
  private seq = 0;
  private readonly queue = new Map<number, { at: number; fn: () => void }>();
  now(): number {
    return this.t;
  }
  setTimeout(fn: () => void, ms: number): unknown {
    const id = ++this.seq;
    this.queue.set(id, { at: this.t + ms, fn });
    return id;
  }
  clearTimeout(h: unknown): void {
    this.queue.delete(h as number);
  }
  get pending(): number {
    return this.queue.size;
  }
  /** Moves time forward by `ms`, firing due timers in order and letting promises settle. */
  async advance(ms: number): Promise<void> {
    const end = this.t + ms;
    for (;;) {
      await flush();
      let next: [number, { at: number; fn: () => void }] | undefined;
      for (const e of this.queue) if (e[1].at <= end && (!next || e[1].at < next[1].at)) next = e;
      if (!next) break;
      this.queue.delete(next[0]);
      this.t = next[1].at;
      next[1].fn();
    }
    this.t = end;
    await flush();
  }
  /** A promise that resolves after `ms` of fake time. */
  sleep(ms: number): Promise<void> {
    return new Promise((r) => this.setTimeout(r, ms));
  }
}

const timing = (t: Partial<ProbeTiming> = {}): ProbeTiming => ({ initialDelaySeconds: 0, periodSeconds: 10, successThreshold: 1, failureThreshold: 3, ...t });
const ok = (output = 'ok'): ProbeRunResult => ({ result: 'success', output });
const bad = (output = 'bad'): ProbeRunResult => ({ result: 'failure', output });

/** A worker whose runs answer from `script` (the last answer repeats); records runs and reports (in seconds since start). */
function harness(o: { type: 'liveness' | 'readiness' | 'startup'; timing?: Partial<ProbeTiming>; script: Array<ProbeRunResult | (() => Promise<ProbeRunResult>)>; firstDelayMs?: number; started?: () => boolean }) {
  const timers = new FakeTimers();
  const t0 = timers.now();
  const runs: number[] = [];
  const reports: Array<[number, ProbeOutcome, string]> = [];
  let i = 0;
  const worker = new ProbeWorker({
    type: o.type,
    timing: timing(o.timing),
    startedAt: t0,
    firstDelayMs: o.firstDelayMs ?? 0,
    timers,
    started: o.started ?? (() => true),
    run: async () => {
      runs.push((timers.now() - t0) / 1000);
      const step = o.script[Math.min(i++, o.script.length - 1)]!;
      return typeof step === 'function' ? step() : step;
    },
    report: async (result, output) => {
      reports.push([(timers.now() - t0) / 1000, result, output]);
    },
  });
  return { timers, worker, runs, reports };
}

describe('probe worker: the threshold state machine (fake clock)', () => {
  it('runs first at once, then every periodSeconds', async () => {
    const h = harness({ type: 'readiness', script: [ok()] });
    h.worker.start();
    await h.timers.advance(35_000);
    assert.deepEqual(h.runs, [0, 10, 20, 30]);
  });

  it('readiness starts as failure: a first failure is not reported, the first success is', async () => {
    const h = harness({ type: 'readiness', script: [bad(), bad(), ok()] });
    h.worker.start();
    await h.timers.advance(25_000);
    assert.deepEqual(h.reports, [[20, 'success', 'ok']]);
  });

  it('changes state only after failureThreshold consecutive failures, and reports only transitions', async () => {
    const h = harness({ type: 'readiness', script: [ok(), ok(), bad(), bad(), ok(), bad(), bad(), bad('down'), bad(), ok('up')] });
    h.worker.start();
    await h.timers.advance(95_000);
    assert.deepEqual(h.reports, [
      [0, 'success', 'ok'],
      [70, 'failure', 'down'],
      [90, 'success', 'up'],
    ]);
  });

  it('needs successThreshold consecutive successes to turn ready', async () => {
    const h = harness({ type: 'readiness', timing: { successThreshold: 3 }, script: [ok(), ok(), bad(), ok(), ok(), ok()] });
    h.worker.start();
    await h.timers.advance(55_000);
    assert.deepEqual(h.reports.map((r) => r.slice(0, 2)), [[50, 'success']]);
  });

  it('skips runs until initialDelaySeconds have passed since the container started (on the period grid)', async () => {
    const h = harness({ type: 'liveness', timing: { initialDelaySeconds: 15 }, script: [ok()] });
    h.worker.start();
    await h.timers.advance(45_000);
    assert.deepEqual(h.runs, [20, 30, 40]);
  });

  it('waits firstDelayMs (the jitter) before the first run', async () => {
    const h = harness({ type: 'readiness', firstDelayMs: 7_300, script: [ok()] });
    h.worker.start();
    await h.timers.advance(20_000);
    assert.deepEqual(h.runs, [7.3, 17.3]);
  });

  it('liveness: one failure report at the threshold, then on hold (no more runs) until a new container', async () => {
    const h = harness({ type: 'liveness', script: [ok(), bad(), bad(), bad('dead')] });
    h.worker.start();
    await h.timers.advance(100_000);
    assert.deepEqual(h.reports, [[30, 'failure', 'dead']]);
    assert.deepEqual(h.runs, [0, 10, 20, 30]);
    assert.equal(h.worker.onHold, true);
  });

  it('liveness starts healthy: successes report nothing', async () => {
    const h = harness({ type: 'liveness', script: [ok()] });
    h.worker.start();
    await h.timers.advance(50_000);
    assert.deepEqual(h.reports, []);
  });

  it('startup: reports success once and stops probing (on hold)', async () => {
    const h = harness({ type: 'startup', script: [bad(), bad(), ok('up')] });
    h.worker.start();
    await h.timers.advance(100_000);
    assert.deepEqual(h.reports, [[20, 'success', 'up']]);
    assert.deepEqual(h.runs, [0, 10, 20]);
  });

  it('startup: failureThreshold failures report failure (the core kills the container)', async () => {
    const h = harness({ type: 'startup', timing: { failureThreshold: 2, periodSeconds: 1 }, script: [bad('no'), bad('still no')] });
    h.worker.start();
    await h.timers.advance(10_000);
    assert.deepEqual(h.reports, [[1, 'failure', 'still no']]);
  });

  it('liveness and readiness do not run until started() (the startup probe) says so', async () => {
    let started = false;
    const h = harness({ type: 'liveness', script: [bad()], started: () => started, timing: { failureThreshold: 1 } });
    h.worker.start();
    await h.timers.advance(30_000);
    assert.deepEqual(h.runs, []);
    started = true;
    await h.timers.advance(10_000);
    assert.deepEqual(h.runs, [40]);
    assert.deepEqual(h.reports.map((r) => r[1]), ['failure']);
  });

  it('an errored run changes nothing; before any result it is reported once as unknown with the error', async () => {
    const h = harness({ type: 'readiness', script: [{ error: 'couldn\'t find port: web' }, { error: 'couldn\'t find port: web' }, ok(), { error: 'runtime down' }, { error: 'runtime down' }, { error: 'runtime down' }] });
    h.worker.start();
    await h.timers.advance(55_000);
    assert.deepEqual(h.reports, [[0, 'unknown', 'couldn\'t find port: web'], [20, 'success', 'ok']]);
  });

  it('keeps a ticker: a slow run does not shift the period, an overrun runs the next at once', async () => {
    const timersRef: { t?: FakeTimers } = {};
    const h = harness({
      type: 'readiness',
      script: [async () => (await timersRef.t!.sleep(3_000), ok()), async () => (await timersRef.t!.sleep(12_000), ok()), ok()],
    });
    timersRef.t = h.timers;
    h.worker.start();
    await h.timers.advance(40_000);
    assert.deepEqual(h.runs, [0, 10, 22, 32]);
  });

  it('trigger() runs at once and restarts the period from there', async () => {
    const h = harness({ type: 'readiness', script: [bad()] });
    h.worker.start();
    await h.timers.advance(4_000);
    h.worker.trigger();
    await h.timers.advance(20_000);
    assert.deepEqual(h.runs, [0, 4, 14, 24]);
  });

  it('stop() ends the loop; a run in flight when stopped reports nothing', async () => {
    const timersRef: { t?: FakeTimers } = {};
    const h = harness({ type: 'readiness', script: [async () => (await timersRef.t!.sleep(5_000), ok())] });
    timersRef.t = h.timers;
    h.worker.start();
    await h.timers.advance(1_000);
    h.worker.stop();
    await h.timers.advance(60_000);
    assert.deepEqual(h.runs, [0]);
    assert.deepEqual(h.reports, []);
    assert.equal(h.timers.pending, 0);
  });

  it('a run that says stop (pod gone) ends the worker', async () => {
    const h = harness({ type: 'readiness', script: [{ stop: 'the pod is gone' }] });
    h.worker.start();
    await h.timers.advance(60_000);
    assert.deepEqual(h.runs, [0]);
    assert.equal(h.worker.stopped, true);
  });
});

/** A fake runtime whose ExecSync answers by command (first word after `sh -c` or the command itself). */
function fakeRuntime(answer: (cmd: string[]) => ExecResult | Error): ContainerRuntime {
  return {
    execSync: async (_id: string, cmd: string[]) => {
      const r = answer(cmd);
      if (r instanceof Error) throw r;
      return r;
    },
  } as unknown as ContainerRuntime;
}
const exit = (code: number, out = ''): ExecResult => ({ exitCode: code, stdout: Buffer.from(out), stderr: Buffer.alloc(0) });

function managerHarness(pod: V1Pod, runtime: ContainerRuntime, opts: { jitter?: boolean; random?: number } = {}) {
  const timers = new FakeTimers();
  const events: ProbeResultEvent[] = [];
  const at: number[] = [];
  const t0 = timers.now();
  const runs: string[] = [];
  const manager = new ProbeManager(
    {
      runtime: () => runtime,
      pods: () => [pod],
      reportProbe: async (e) => {
        events.push(e);
        at.push((timers.now() - t0) / 1000);
      },
      observeProbeRun: (r) => runs.push(`${r.containerName} ${r.probe}=${r.result}`),
      logger: silentLogger(),
      timers,
      random: () => opts.random ?? 0,
    },
    { execConcurrency: 4, jitter: opts.jitter ?? false },
  );
  return { timers, manager, events, at, runs, summary: () => events.map((e, i) => `${at[i]}s ${e.containerName} ${e.probe}=${e.result}`) };
}

const testPod = (containers: V1Container[], extra: Partial<V1Pod['status']> = {}): V1Pod => ({
  metadata: { name: 'p', namespace: 'ns', uid: 'uid-1' },
  spec: { containers },
  status: { podIP: '10.0.0.9', ...extra },
});

describe('probe manager (fake clock, fake runtime)', () => {
  it('a startup probe holds liveness and readiness off until it succeeds; readiness then runs at once', async () => {
    let ticks = 0;
    const runtime = fakeRuntime((cmd) => {
      if (cmd[0] === 'startup') return exit(++ticks >= 3 ? 0 : 1);
      // Fails until the app is up: run before the startup probe succeeded, it would report a failure.
      if (cmd[0] === 'live') return exit(ticks >= 3 ? 0 : 1);
      if (cmd[0] === 'ready') return exit(0);
      return new Error('unexpected');
    });
    const c: V1Container = {
      name: 'app',
      startupProbe: { exec: { command: ['startup'] }, periodSeconds: 1, failureThreshold: 10 },
      livenessProbe: { exec: { command: ['live'] }, periodSeconds: 1, failureThreshold: 1 },
      readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 5 },
    };
    const pod = testPod([c]);
    const h = managerHarness(pod, runtime);
    h.manager.containerStarted(pod, c, 'cid-1', '10.0.0.9', h.timers.now());
    await h.timers.advance(10_000);
    assert.deepEqual(h.summary(), ['2s app startup=success', '2s app readiness=success']);
    assert.equal(h.manager.workers('cid-1')!.get('liveness')!.published, 'success');
    // Every run is counted for prober_probe_total, not only the changes reported above.
    assert.deepEqual(h.runs.slice(0, 3), ['app startup=failure', 'app startup=failure', 'app startup=success']);
    assert.ok(h.runs.filter((r) => r === 'app liveness=success').length >= 5);
  });

  it('jitters first runs only for workers started within one period of its own start (upstream)', async () => {
    const runtime = fakeRuntime(() => exit(0));
    const c: V1Container = { name: 'app', readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 10 } };
    const pod = testPod([c]);
    const h = managerHarness(pod, runtime, { jitter: true, random: 0.5 });
    h.manager.containerStarted(pod, c, 'cid-1', '10.0.0.9', h.timers.now());
    await h.timers.advance(6_000);
    assert.deepEqual(h.summary(), ['5s app readiness=success']);
    await h.timers.advance(10_000);
    h.manager.containerStarted(pod, { ...c, name: 'app' }, 'cid-2', '10.0.0.9', h.timers.now());
    await h.timers.advance(0);
    assert.deepEqual(h.summary().slice(1), ['16s app readiness=success']);
  });

  it('an exec that outlives its timeout is a failure; a command the runtime cannot start is a failure with its message', async () => {
    const runtime = fakeRuntime((cmd) => {
      if (cmd[0] === 'hang') return new KubeletError('DeadlineExceeded', 'CRI ExecSync: failed to exec in container: timeout 1s exceeded: context deadline exceeded');
      return new KubeletError('NotFound', 'CRI ExecSync: failed to exec in container: failed to start exec "x": OCI runtime exec failed: exec failed: unable to start container process: exec: "nosuchcmd": executable file not found in $PATH: unknown');
    });
    const a: V1Container = { name: 'a', livenessProbe: { exec: { command: ['hang', '10'] }, periodSeconds: 1, failureThreshold: 1 } };
    const b: V1Container = { name: 'b', livenessProbe: { exec: { command: ['nosuchcmd'] }, periodSeconds: 1, failureThreshold: 2 } };
    const pod = testPod([a, b]);
    const h = managerHarness(pod, runtime);
    h.manager.containerStarted(pod, a, 'cid-a', '', h.timers.now());
    h.manager.containerStarted(pod, b, 'cid-b', '', h.timers.now());
    await h.timers.advance(5_000);
    assert.deepEqual(h.summary(), ['0s a liveness=failure', '1s b liveness=failure']);
    assert.equal(h.events[0]!.output, 'command "hang 10" timed out');
    assert.match(h.events[1]!.output, /executable file not found in \$PATH/);
  });

  it('$(VAR) in an exec command expands from the container\'s literal env only', async () => {
    const seen: string[][] = [];
    const runtime = fakeRuntime((cmd) => (seen.push(cmd), exit(0)));
    const c: V1Container = {
      name: 'app', env: [{ name: 'FILE', value: '/tmp/ok' }, { name: 'FROM', valueFrom: { fieldRef: { fieldPath: 'metadata.name' } } }],
      readinessProbe: { exec: { command: ['cat', '$(FILE)', '$(FROM)', '$$(FILE)'] } },
    };
    const pod = testPod([c]);
    const h = managerHarness(pod, runtime);
    h.manager.containerStarted(pod, c, 'cid-1', '', h.timers.now());
    await h.timers.advance(0);
    assert.deepEqual(seen[0], ['cat', '/tmp/ok', '$(FROM)', '$(FILE)']);
  });

  it('refuses a probe with a negative period (upstream validation) with a clear message, and runs the others', async () => {
    const runtime = fakeRuntime(() => exit(0));
    const c: V1Container = {
      name: 'app',
      livenessProbe: { exec: { command: ['live'] }, periodSeconds: -5 },
      readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 1 },
    };
    const pod = testPod([c]);
    const h = managerHarness(pod, runtime);
    h.manager.containerStarted(pod, c, 'cid-1', '', h.timers.now());
    await h.timers.advance(1_000);
    assert.deepEqual(h.summary(), ['0s app liveness=unknown', '0s app readiness=success']);
    assert.equal(h.events[0]!.output, 'Liveness probe refused: spec.containers[0].livenessProbe.periodSeconds: Invalid value: -5: must be greater than or equal to 0');
    assert.deepEqual([...h.manager.workers('cid-1')!.keys()], ['readiness']);
  });

  it('a port the container does not declare: reported once as unknown with the reason, no crash, worker keeps its period', async () => {
    const c: V1Container = { name: 'app', ports: [{ name: 'web', containerPort: 8080 }], readinessProbe: { httpGet: { port: 'metrics', path: '/' }, periodSeconds: 1 } };
    const pod = testPod([c]);
    const h = managerHarness(pod, fakeRuntime(() => exit(0)));
    h.manager.containerStarted(pod, c, 'cid-1', '10.0.0.9', h.timers.now());
    await h.timers.advance(5_000);
    assert.deepEqual(h.summary(), ['0s app readiness=unknown']);
    assert.equal(h.events[0]!.output, 'couldn\'t find port: metrics in container app');
    assert.equal(h.manager.size, 1);
  });

  it('reconcile: starts workers for running containers that have none, stops them when the status shows the container exited, never restarts a stopped one', async () => {
    const runs: string[] = [];
    const runtime = fakeRuntime(() => (runs.push('x'), exit(0)));
    const c: V1Container = { name: 'app', readinessProbe: { exec: { command: ['ready'] }, periodSeconds: 1 } };
    const pod = testPod([c]);
    const h = managerHarness(pod, runtime);
    const running = { name: 'app', image: 'i', imageID: '', restartCount: 0, ready: false, containerID: 'containerd://cid-1', state: { running: { startedAt: new Date(h.timers.now()) } } };
    h.manager.reconcile(pod, { phase: 'Running', podIP: '10.0.0.9', containerStatuses: [running] });
    await h.timers.advance(2_500);
    assert.equal(h.manager.workers('cid-1')?.size, 1);
    assert.equal(runs.length, 3);
    // Exited (lastState of its successor): its workers stop.
    const next = { ...running, containerID: 'containerd://cid-2', lastState: { terminated: { exitCode: 1, containerID: 'containerd://cid-1' } } } as typeof running;
    h.manager.reconcile(pod, { phase: 'Running', podIP: '10.0.0.9', containerStatuses: [next] });
    assert.equal(h.manager.workers('cid-1'), undefined);
    assert.equal(h.manager.workers('cid-2')?.size, 1);
    // A stale status that still shows cid-1 running does not bring its workers back.
    h.manager.reconcile(pod, { phase: 'Running', podIP: '10.0.0.9', containerStatuses: [running] });
    assert.equal(h.manager.workers('cid-1'), undefined);
    // Killed (beforeKill) and removed.
    h.manager.containerStopping(pod, 'cid-2');
    assert.equal(h.manager.size, 0);
    h.manager.podRemoved(pod);
    await h.timers.advance(5_000);
    assert.equal(h.timers.pending, 0);
  });

  it('reconcile: a status read between create and start (waiting, with the ID) does not stop the new container\'s workers', async () => {
    const runs: string[] = [];
    const c: V1Container = { name: 'app', livenessProbe: { exec: { command: ['live'] }, periodSeconds: 1 } };
    const pod = testPod([c]);
    const h = managerHarness(pod, fakeRuntime(() => (runs.push('x'), exit(0))));
    h.manager.containerStarted(pod, c, 'cid-4', '', h.timers.now());
    const created = { name: 'app', image: 'i', imageID: '', restartCount: 3, ready: false, containerID: 'containerd://cid-4', state: { waiting: { reason: 'ContainerCreating' } }, lastState: { terminated: { exitCode: 137, containerID: 'containerd://cid-3' } } };
    h.manager.reconcile(pod, { phase: 'Running', containerStatuses: [created] });
    await h.timers.advance(2_500);
    assert.equal(h.manager.workers('cid-4')?.get('liveness')?.stopped, false);
    assert.ok(runs.length >= 2, 'the new container is probed');
    h.manager.reconcile(pod, { phase: 'Running', containerStatuses: [{ ...created, state: { terminated: { exitCode: 1, containerID: 'containerd://cid-4' } } }] });
    assert.equal(h.manager.workers('cid-4'), undefined, 'once terminated, its workers stop');
    h.manager.stopAll();
  });

  it('a pod being deleted keeps readiness but stops liveness and startup', async () => {
    const c: V1Container = { name: 'app', livenessProbe: { exec: { command: ['l'] } }, readinessProbe: { exec: { command: ['r'] } } };
    const pod = testPod([c]);
    const h = managerHarness(pod, fakeRuntime(() => exit(0)));
    h.manager.containerStarted(pod, c, 'cid-1', '', h.timers.now());
    const deleting: V1Pod = { ...pod, metadata: { ...pod.metadata, deletionTimestamp: new Date() } };
    h.manager.reconcile(deleting, { phase: 'Running', containerStatuses: [{ name: 'app', image: 'i', imageID: '', restartCount: 0, ready: false, containerID: 'containerd://cid-1', state: { running: {} } }] });
    assert.equal(h.manager.workers('cid-1')!.get('liveness')!.stopped, true);
    assert.equal(h.manager.workers('cid-1')!.get('readiness')!.stopped, false);
    h.manager.stopAll();
  });
});
