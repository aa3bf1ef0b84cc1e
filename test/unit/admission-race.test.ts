import assert from 'node:assert/strict';
import path from 'node:path';
import type { V1Pod, V1PodStatus } from '@kubernetes/client-node';
import { Kubelet } from '../../core/kubelet.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import type { PodSource } from '../../core/sources/pod-source.ts';
import { applyPodDefaults } from '../../core/sources/manifest.ts';
import { silentLogger } from '../../core/logger.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { testConfig } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

const IMAGE = 'busybox:1.36';

/** A pod source the test drives: each `set` is its complete set, as a source reports it. */
class DrivenSource implements PodSource {
  readonly name = 'driven';
  private onSet: ((pods: V1Pod[]) => void) | undefined;
  async start(onSet: (pods: V1Pod[]) => void): Promise<void> {
    this.onSet = onSet;
    onSet([]);
  }
  async stop(): Promise<void> {}
  set(pods: V1Pod[]): void {
    this.onSet!(pods);
  }
}

/** An `admitPod` tap that holds each admission until the test answers it. */
function gatedAdmission(): { plugin: ReturnType<typeof definePlugin>; waiting: Map<string, (reason: string | undefined) => void>; asked: string[] } {
  const waiting = new Map<string, (reason: string | undefined) => void>();
  const asked: string[] = [];
  const plugin = definePlugin({
    name: 'slow-admission',
    apply(ctx) {
      ctx.hooks.admitPod.tapPromise('slow-admission', (pod) => {
        asked.push(pod.metadata!.name!);
        return new Promise<string | undefined>((resolve) => waiting.set(pod.metadata!.name!, resolve));
      });
    },
  });
  return { plugin, waiting, asked };
}

/**
 * Admission is serialised with the pod's other updates (issue 24 item 1): while an `admitPod`
 * tap is awaited, an UPDATE of the pod must not start it unadmitted, and a REMOVE must not
 * leave a rejection that posts Failed for a pod that is gone.
 */
describe('admission in the pod worker: ADD / UPDATE / REMOVE around a slow admitPod tap', function () {
  this.timeout(30_000);
  const suite = fakeCriSuite({ prefix: 'kts-admit-race-', images: [IMAGE] });

  const pod = (name: string, label = 'a'): V1Pod =>
    applyPodDefaults({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: { name, namespace: 'default', uid: `uid-${name}`, labels: { rev: label } },
      spec: { terminationGracePeriodSeconds: 0, containers: [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }] },
    });

  async function start(): Promise<{ kubelet: Kubelet; source: DrivenSource; gate: ReturnType<typeof gatedAdmission>; statuses: Map<string, V1PodStatus[]> }> {
    const source = new DrivenSource();
    const gate = gatedAdmission();
    const config = testConfig(path.join(suite.dir, 'kubelet'), { plugins: [['cri-containerd', { endpoint: suite.fake.endpoint }], gate.plugin], hookTimeoutMs: 20_000 });
    const kubelet = new Kubelet(config, silentLogger(), [source]);
    suite.track(kubelet);
    const statuses = new Map<string, V1PodStatus[]>();
    kubelet.hooks.podStatusChanged.tap('test-recorder', (p, status) => {
      const name = p.metadata!.name!;
      statuses.set(name, [...(statuses.get(name) ?? []), structuredClone(status)]);
    });
    await kubelet.start();
    return { kubelet, source, gate, statuses };
  }
  const sandboxesOf = (name: string) => suite.fake.sandboxes().filter((s) => s.metadata.name === name);

  it('an UPDATE while admission waits does not start the pod; the rejection stands and nothing ran', async () => {
    const { kubelet, source, gate, statuses } = await start();
    source.set([pod('upd', 'a')]);
    await waitFor('admission asked', () => gate.waiting.has('upd'), 5000);
    source.set([pod('upd', 'b')]);
    // Give an unserialised update every chance to start the pod.
    await new Promise((r) => setTimeout(r, 500));
    assert.deepEqual(sandboxesOf('upd'), [], 'the pod started before it was admitted');
    gate.waiting.get('upd')!('held by policy');
    const failed = await waitFor('the pod Failed by its rejection', () => kubelet.pods().find((p) => p.metadata?.name === 'upd' && p.status?.phase === 'Failed'), 5000);
    assert.equal(failed.status?.reason, 'UnexpectedAdmissionError');
    assert.equal(failed.status?.message, 'held by policy');
    // The update ran after admission, as the worker's next sync: still nothing runs of it.
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(sandboxesOf('upd'), []);
    assert.equal(gate.asked.filter((n) => n === 'upd').length, 1, 'admitted once');
    assert.ok((statuses.get('upd') ?? []).every((s) => s.phase !== 'Running'));
  });

  it('an UPDATE while admission waits, then admitted: the pod starts once, with the updated spec', async () => {
    const { kubelet, source, gate } = await start();
    source.set([pod('ok', 'a')]);
    await waitFor('admission asked', () => gate.waiting.has('ok'), 5000);
    source.set([pod('ok', 'b')]);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(sandboxesOf('ok'), []);
    gate.waiting.get('ok')!(undefined);
    const running = await waitFor('the pod Running', () => kubelet.pods().find((p) => p.metadata?.name === 'ok' && p.status?.phase === 'Running'), 8000);
    assert.equal(running.metadata?.labels?.rev, 'b');
    assert.equal(sandboxesOf('ok').length, 1);
  });

  it('a REMOVE while admission waits: the later rejection posts no Failed status and the pod goes', async () => {
    const { kubelet, source, gate, statuses } = await start();
    source.set([pod('rm', 'a')]);
    await waitFor('admission asked', () => gate.waiting.has('rm'), 5000);
    source.set([]);
    await new Promise((r) => setTimeout(r, 200));
    gate.waiting.get('rm')!('held by policy');
    await waitFor('the pod gone', () => !kubelet.pods().some((p) => p.metadata?.name === 'rm'), 8000);
    await new Promise((r) => setTimeout(r, 300));
    const phases = (statuses.get('rm') ?? []).map((s) => s.phase);
    assert.ok(!phases.includes('Failed'), `a stale rejection posted Failed: ${phases.join(', ')}`);
    assert.deepEqual(sandboxesOf('rm'), []);
    // Added again under the same UID: admitted afresh, not held by a rejection of the removed one.
    source.set([pod('rm', 'a')]);
    await waitFor('admission asked again', () => gate.asked.filter((n) => n === 'rm').length === 2, 5000);
    gate.waiting.get('rm')!(undefined);
    await waitFor('the pod Running', () => kubelet.pods().find((p) => p.metadata?.name === 'rm' && p.status?.phase === 'Running'), 8000);
  });

  it('a REMOVE while admission waits, then admitted: the pod never starts', async () => {
    const { kubelet, source, gate } = await start();
    source.set([pod('rm2', 'a')]);
    await waitFor('admission asked', () => gate.waiting.has('rm2'), 5000);
    source.set([]);
    await new Promise((r) => setTimeout(r, 200));
    gate.waiting.get('rm2')!(undefined);
    await waitFor('the pod gone', () => !kubelet.pods().some((p) => p.metadata?.name === 'rm2'), 8000);
    await new Promise((r) => setTimeout(r, 300));
    assert.deepEqual(sandboxesOf('rm2'), []);
  });

  it('a pod removed from its source and still stopping does not count against maxPods: its replacement is admitted, as upstream admits it', async () => {
    const source = new DrivenSource();
    const config = testConfig(path.join(suite.dir, 'kubelet-max'), { plugins: [['cri-containerd', { endpoint: suite.fake.endpoint }]], maxPods: 2 });
    const kubelet = new Kubelet(config, silentLogger(), [source]);
    suite.track(kubelet);
    await kubelet.start();
    const phase = (name: string) => kubelet.pods().find((p) => p.metadata?.name === name)?.status?.phase;
    source.set([pod('old'), pod('stays')]);
    await waitFor('both Running', () => phase('old') === 'Running' && phase('stays') === 'Running', 8000);
    // The old pod's containers take seconds to stop: it is still terminating when its replacement comes.
    suite.fake.delay('StopContainer', 3000);
    source.set([pod('stays'), pod('new')]);
    await waitFor('the replacement admitted and Running', () => phase('new') === 'Running' || phase('new') === 'Failed', 10_000);
    const replacement = kubelet.pods().find((p) => p.metadata?.name === 'new')!;
    assert.equal(replacement.status?.phase, 'Running', `${replacement.status?.reason}: ${replacement.status?.message}`);
    assert.ok(kubelet.pods().some((p) => p.metadata?.name === 'old'), 'the old pod was still stopping when the new one was admitted');
    suite.fake.delay('StopContainer', 0);
    // A third pod while both are wanted: the node is full (2), and it is refused as before.
    source.set([pod('stays'), pod('new'), pod('third')]);
    await waitFor('the third pod refused', () => phase('third') === 'Failed', 8000);
    assert.equal(kubelet.pods().find((p) => p.metadata?.name === 'third')!.status?.reason, 'OutOfpods');
  });
});
