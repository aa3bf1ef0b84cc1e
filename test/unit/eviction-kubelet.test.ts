import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { EvictionSettings, KubeletConfig } from '../../core/config/types.ts';
import type { NodeStatusDraft, PressureEvent } from '../../core/hooks.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { isRunning, podManifest, type TestKubelet } from '../support/test-kubelet.ts';
import { waitFor as waitForShared } from '../support/wait-for.ts';
import { hookContext } from '../../core/util/cancellation.ts';

const IMAGE = 'registry.test/h15/app:1';

/**
 * The kubelet's eviction wiring against the fake CRI server: the manager's rounds reach the
 * onPressure policy, the chosen pod is Failed/Evicted with an event and its container stopped
 * with the grace the manager gives (0: hard), the node conditions reach nodeStatus, and
 * admission refuses pods under pressure. Memory pressure is made certain with a soft 100%
 * threshold (a hard one would also be held back from allocatable, leaving no memory to admit pods).
 */
describe('eviction in the kubelet (fake CRI)', function () {
  this.timeout(20_000);
  const suite = fakeCriSuite({ prefix: 'h15-eviction-unit-', images: [IMAGE] });

  const settings = (over: Partial<EvictionSettings> = {}): EvictionSettings => ({
    soft: {}, softGracePeriodMs: {}, minimumReclaim: {}, pressureTransitionPeriodMs: 1000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 200, evictStaticPods: true, ...over,
  });
  const app = (extra: object = {}) => ({ name: 'app', image: IMAGE, command: ['sleep', '3600'], ...extra });
  const burstable = { resources: { requests: { memory: '1Mi' } } };

  const start = (config: Partial<KubeletConfig>, extra: KubeletConfig['plugins'] = []): Promise<TestKubelet> => suite.start(config, extra);

  const alwaysPressure = (over: Partial<EvictionSettings> = {}) => ({
    evictionHard: {},
    eviction: settings({ soft: { 'memory.available': '100%' }, softGracePeriodMs: { 'memory.available': 0 }, ...over }),
  });

  it('a policy choice is carried out: Failed/Evicted, a Warning event, the container stopped with the soft grace; later pods are refused', async function () {
    const events: PressureEvent[] = [];
    let armed = false;
    const policy = definePlugin({
      name: 'h15-test-policy',
      apply(ctx) {
        ctx.hooks.onPressure.tap('h15-test-policy', (e) => {
          events.push(e);
          const victim = armed ? e.pods.find((p) => p.metadata?.name?.startsWith('victim')) : undefined;
          return victim ? { evict: [{ pod: victim, reason: 'Evicted', message: 'chosen by the test policy' }] } : undefined;
        });
      },
    });
    const k = await start(alwaysPressure({ maxPodGracePeriodSeconds: 2 }), [policy]);
    // The first round runs at start: the pods below come under pressure.
    await waitFor('MemoryPressure', () => k.kubelet.eviction.conditions().has('MemoryPressure'));
    await k.writeManifest('victim.json', podManifest('victim', [app(burstable)], { terminationGracePeriodSeconds: 30 }));
    await k.writeManifest('other.json', podManifest('other', [app(burstable)]));
    await k.waitForPod('victim', isRunning, 8000, 'victim running');
    await k.waitForPod('other', isRunning, 8000, 'other running');
    const stopsBefore = suite.fake.requestsOf('StopContainer').length;
    armed = true;
    const victim = await k.waitForPod('victim', (p) => p?.status?.phase === 'Failed', 8000, 'victim evicted');
    assert.equal(victim!.status!.reason, 'Evicted');
    assert.equal(victim!.status!.message, 'chosen by the test policy');
    // Upstream (PodDisruptionConditions, on in 1.28): the kubelet's eviction says why on the pod.
    const disruption = victim!.status!.conditions?.find((c) => c.type === 'DisruptionTarget');
    assert.deepEqual(disruption && [disruption.status, disruption.reason, disruption.message], ['True', 'TerminationByKubelet', 'chosen by the test policy']);
    const stops = suite.fake.requestsOf('StopContainer').slice(stopsBefore);
    assert.ok(stops.length >= 1 && stops.every((r: { timeout: string | number }) => Number(r.timeout) === 2), `stopped with min(evictionMaxPodGracePeriod, the pod's): ${JSON.stringify(stops)}`);
    const ev = k.kubelet.events.list().filter((e) => e.reason === 'Evicted' && e.involvedObject.name.startsWith('victim'));
    assert.deepEqual(ev.map((e) => [e.type, e.message]), [['Warning', 'chosen by the test policy']]);
    // Candidates: active pods only; the evicted one is offered no more. Two more rounds, so the
    // last one surely began after the eviction (a fixed sleep missed them on a loaded machine).
    const roundsAtEviction = events.length;
    await waitFor('two pressure rounds after the eviction', () => events.length >= roundsAtEviction + 2);
    assert.ok(events.at(-1)!.pods.every((p) => !p.metadata!.name!.startsWith('victim')), 'the evicted pod is no candidate');
    assert.ok(isRunning(k.pod('other')));
    assert.equal(events.at(-1)!.signal, 'memory.available');
    assert.equal(events.at(-1)!.hard, false);
    // Under MemoryPressure: BestEffort refused, Burstable admitted.
    await k.writeManifest('besteffort.json', podManifest('besteffort', [app()]));
    const be = await k.waitForPod('besteffort', (p) => p?.status?.phase === 'Failed', 8000, 'best-effort refused');
    assert.equal(be!.status!.reason, 'Evicted');
    assert.equal(be!.status!.message, 'The node had condition: [MemoryPressure]. ');
    // Refused at admission, never admitted: no disruption (upstream adds the condition on eviction only).
    assert.equal(be!.status!.conditions?.find((c) => c.type === 'DisruptionTarget'), undefined);
    // The node conditions reach nodeStatus (what API-server mode posts on the Node).
    const draft: NodeStatusDraft = { capacity: {}, allocatable: {}, labels: {}, conditions: [{ type: 'MemoryPressure', status: 'False', reason: 'KubeletHasSufficientMemory', message: '' }, { type: 'Ready', status: 'True', reason: 'KubeletReady', message: '' }] };
    const out = await k.kubelet.hooks.nodeStatus.promise(draft, { nodeName: 'test-node', node: undefined }, hookContext());
    assert.deepEqual(out.conditions.map((c) => [c.type, c.status]), [['MemoryPressure', 'True'], ['DiskPressure', 'False'], ['PIDPressure', 'False'], ['Ready', 'True']]);
  });

  it('static pods are never candidates without evictStaticPods, nor refused under pressure', async function () {
    const offered: V1Pod[][] = [];
    const policy = definePlugin({ name: 'h15-recorder', apply: (ctx) => ctx.hooks.onPressure.tap('h15-recorder', (e) => void offered.push(e.pods)) });
    const k = await start(alwaysPressure({ evictStaticPods: false }), [policy]);
    await waitFor('MemoryPressure', () => k.kubelet.eviction.conditions().has('MemoryPressure'));
    await k.writeManifest('be.json', podManifest('be', [app()]));
    await k.waitForPod('be', isRunning, 8000, 'a static BestEffort pod is admitted (critical)');
    // With no candidate the policy is never asked, so run rounds ourselves (a wait on the hook
    // could not tell "no round yet" from "no candidate").
    await k.kubelet.eviction.round();
    await k.kubelet.eviction.round();
    assert.ok(k.kubelet.eviction.conditions().has('MemoryPressure'), 'the rounds saw the pressure');
    assert.ok(offered.every((pods) => pods.length === 0), 'no candidate offered');
    assert.ok(isRunning(k.pod('be')), 'the static pod still runs');
  });
});

/** Polls `check` every 20 ms until it returns a truthy value (test/support/wait-for.ts); fails after `timeoutMs`. */
const waitFor = <T>(what: string, check: () => T | undefined | false, timeoutMs = 8000): Promise<T> => waitForShared(what, check, timeoutMs, 20);
