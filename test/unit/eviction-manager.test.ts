import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import type { EvictionSettings } from '../../core/config/types.ts';
import { EvictionManager } from '../../core/eviction/eviction-manager.ts';
import { PressureState } from '../../core/eviction/pressure-state.ts';
import { thresholdsOf } from '../../core/eviction/thresholds.ts';
import type { SignalObservations } from '../../core/eviction/signals.ts';
import type { EvictionDecision, PressureEvent } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import { checkPressureAdmission } from '../../core/pod/admission.ts';
import type { StatsSnapshot } from '../../core/stats/stats-provider.ts';
import type { PodStats, Summary } from '../../core/stats/summary-types.ts';
import { evictionMessage } from '../../plugins/eviction-default/eviction-message.ts';
import { rankPods } from '../../plugins/eviction-default/ranking.ts';
import evictionDefault from '../../plugins/eviction-default/index.ts';

const Mi = 2 ** 20;
const settings = (over: Partial<EvictionSettings> = {}): EvictionSettings => ({
  soft: {}, softGracePeriodMs: {}, minimumReclaim: {}, pressureTransitionPeriodMs: 60_000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 10_000, evictStaticPods: false, ...over,
});

function pod(name: string, opts: { memRequest?: string; priority?: number; source?: string; sizeLimit?: string; grace?: number; priorityClassName?: string } = {}): V1Pod {
  return {
    metadata: { name, namespace: 'h15', uid: `uid-${name}`, annotations: { 'kubernetes.io/config.source': opts.source ?? 'api' } },
    spec: {
      containers: [{ name: 'c', image: 'x', ...(opts.memRequest ? { resources: { requests: { memory: opts.memRequest } } } : {}) }],
      ...(opts.priority !== undefined ? { priority: opts.priority } : {}),
      ...(opts.priorityClassName ? { priorityClassName: opts.priorityClassName } : {}),
      ...(opts.sizeLimit ? { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: opts.sizeLimit } }] } : {}),
      ...(opts.grace !== undefined ? { terminationGracePeriodSeconds: opts.grace } : {}),
    },
    status: { phase: 'Running' },
  };
}

function podStats(p: V1Pod, memBytes: number, volumeBytes?: number): PodStats {
  const time = new Date().toISOString();
  return {
    podRef: { name: p.metadata!.name!, namespace: 'h15', uid: p.metadata!.uid! },
    startTime: time,
    containers: [{ name: 'c', startTime: time, memory: { time, workingSetBytes: memBytes } }],
    memory: { time, workingSetBytes: memBytes },
    ...(volumeBytes !== undefined ? { volume: [{ time, name: 'scratch', usedBytes: volumeBytes }] } : {}),
  };
}

function summary(memAvailable: number, pods: PodStats[], nodefsAvailable = 50e9): Summary {
  const time = new Date().toISOString();
  return {
    node: {
      nodeName: 'n', startTime: time,
      memory: { time, availableBytes: memAvailable, workingSetBytes: 8 * 1024 * Mi - memAvailable },
      fs: { time, availableBytes: nodefsAvailable, capacityBytes: 100e9, inodesFree: 1e6, inodes: 2e6 },
    },
    pods,
  };
}

const snap = (s: Summary): StatsSnapshot => ({ summary: s, collectedAt: Date.now(), errors: [], containerStatsFailed: false });

describe('eviction', function () {
  describe('PressureState', function () {
    const obs = (memAvailable: number): SignalObservations => new Map([['memory.available', { available: memAvailable, capacity: 8192 * Mi }]]);

    it('a crossed hard threshold is met at once; its condition stays True for the transition period after it recovers', function () {
      const s = new PressureState(thresholdsOf({ 'memory.available': '100Mi' }, settings()), 60_000);
      let r = s.observe(obs(50 * Mi), 0);
      assert.deepEqual(r.met.map((t) => t.signal), ['memory.available']);
      assert.deepEqual([...r.conditions], ['MemoryPressure']);
      r = s.observe(obs(500 * Mi), 10_000);
      assert.deepEqual(r.met, []);
      assert.deepEqual([...r.conditions], ['MemoryPressure'], 'within the transition period');
      r = s.observe(obs(500 * Mi), 70_001);
      assert.deepEqual([...r.conditions], [], 'after the transition period');
    });

    it('a met threshold stays met until the signal recovered past its minimum reclaim', function () {
      const s = new PressureState(thresholdsOf({ 'memory.available': '100Mi' }, settings({ minimumReclaim: { 'memory.available': '200Mi' } })), 0);
      assert.equal(s.observe(obs(50 * Mi), 0).met.length, 1);
      assert.equal(s.observe(obs(250 * Mi), 1).met.length, 1, '250Mi < 100Mi + 200Mi');
      assert.equal(s.observe(obs(301 * Mi), 2).met.length, 0);
      assert.equal(s.observe(obs(250 * Mi), 3).met.length, 0, 'not met again before it crosses 100Mi');
    });

    it('a soft threshold is met once crossed without a break for its grace period; its condition is True at once', function () {
      const s = new PressureState(thresholdsOf({}, settings({ soft: { 'memory.available': '1Gi' }, softGracePeriodMs: { 'memory.available': 30_000 } })), 0);
      let r = s.observe(obs(512 * Mi), 0);
      assert.equal(r.met.length, 0);
      assert.deepEqual([...r.conditions], ['MemoryPressure']);
      assert.equal(s.observe(obs(512 * Mi), 20_000).met.length, 0);
      s.observe(obs(2048 * Mi), 25_000); // a break restarts the grace period
      assert.equal(s.observe(obs(512 * Mi), 40_000).met.length, 0);
      r = s.observe(obs(512 * Mi), 70_000);
      assert.equal(r.met.length, 1);
      assert.equal(r.met[0]!.hard, false);
    });
  });

  describe('EvictionManager', function () {
    function manager(opts: { pods: V1Pod[]; summaries: Summary[]; settings?: EvictionSettings; decide?: (e: PressureEvent) => EvictionDecision | undefined; podReclaimed?: (uid: string) => { volumes: string[] } | undefined; podCleanupTimeoutMs?: number }) {
      const podEvents: Array<{ pod: string; type: string; reason: string; message: string }> = [];
      const evicted: Array<{ name: string; message: string; grace: number }> = [];
      // Which evictions carry DisruptionTarget (upstream: pressure evictions do, local storage limits do not).
      const disruptions: Array<[string, boolean]> = [];
      const events: PressureEvent[] = [];
      const reclaims: string[] = [];
      let i = 0;
      // What each snapshot asked for: a node-only one (pods: false) gets no pods' figures, as
      // the stats provider's; the ranking's follow-up (pods: true right after a node-only one)
      // reads the same moment, not the next summary.
      const asked: Array<boolean | undefined> = [];
      const m = new EvictionManager({
        evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%' },
        settings: opts.settings ?? settings(),
        stats: {
          snapshot: async (_maxAgeMs, o) => {
            const followUp = o?.pods === true && asked.at(-1) === false;
            asked.push(o?.pods);
            const s = opts.summaries[Math.min(followUp ? i - 1 : i++, opts.summaries.length - 1)]!;
            return snap(o?.pods === false ? { ...s, pods: [] } : s);
          },
        },
        activePods: () => opts.pods,
        decide: async (e) => {
          events.push(e);
          return opts.decide ? opts.decide(e) : { evict: [{ pod: rankPods(e)[0]!, reason: 'Evicted', message: evictionMessage(e, rankPods(e)[0]!) }] };
        },
        evict: (p, message, grace, disruptionTarget) => {
          evicted.push({ name: p.metadata!.name!, message, grace });
          disruptions.push([p.metadata!.name!, disruptionTarget]);
          return true;
        },
        reclaimNodeLevel: async (signal) => {
          reclaims.push(signal);
        },
        nodeEvent: () => {},
        ...(opts.podReclaimed ? { podReclaimed: opts.podReclaimed } : {}),
        ...(opts.podCleanupTimeoutMs !== undefined ? { podCleanupTimeoutMs: opts.podCleanupTimeoutMs } : {}),
        podEvent: (p, type, reason, message) => podEvents.push({ pod: p.metadata!.name!, type, reason, message }),
        logger: silentLogger(),
      });
      return { m, evicted, events, reclaims, asked, podEvents, disruptions };
    }

    it('after an eviction for disk the round waits until the evicted pod gave its volumes back, then removes dead containers and says what came back', async function () {
      const filler = pod('filler');
      const quiet = pod('quiet');
      let polls = 0;
      const { m, evicted, reclaims, podEvents } = manager({
        pods: [filler, quiet],
        // Before: 10 MiB free; the figures after the reclaim: 60 MiB free.
        summaries: [summary(4096 * Mi, [podStats(filler, Mi, 50 * Mi), podStats(quiet, Mi, 0)], 10 * Mi), summary(4096 * Mi, [podStats(filler, Mi, 50 * Mi), podStats(quiet, Mi, 0)], 10 * Mi), summary(4096 * Mi, [], 60 * Mi)],
        settings: settings({ soft: {} }),
        podReclaimed: (uid) => (uid === 'uid-filler' && ++polls >= 3 ? { volumes: ['scratch'] } : undefined),
      });
      // nodefs.available 10% of 100 GB is met by 10 MiB: the eviction, then the wait.
      await m.round();
      assert.deepEqual(evicted.map((e) => e.name), ['filler']);
      assert.ok(polls >= 3, 'the round waited for the pod to give its resources back');
      assert.deepEqual(reclaims, ['nodefs.available', 'nodefs.available'], 'node-level reclaim before choosing, and again once the evicted pod stopped');
      assert.equal(podEvents.length, 1);
      assert.equal(podEvents[0]!.reason, 'EvictionReclaimed');
      assert.match(podEvents[0]!.message, /^Reclaimed after the eviction in [\d.]+s: volumes scratch torn down, pod cgroup removed, dead containers and their logs removed; nodefs\.available 10\.0Mi → 60\.0Mi$/);
    });

    it('an evicted pod that does not give its resources back holds the round for podCleanupTimeout at most', async function () {
      const filler = pod('filler');
      const { m, evicted, podEvents } = manager({
        pods: [filler],
        summaries: [summary(4096 * Mi, [podStats(filler, Mi, 50 * Mi)], 10 * Mi)],
        podReclaimed: () => undefined,
        podCleanupTimeoutMs: 600,
      });
      const t0 = performance.now();
      await m.round();
      const took = performance.now() - t0;
      assert.deepEqual(evicted.map((e) => e.name), ['filler']);
      assert.ok(took >= 550 && took < 5000, `waited ${took} ms`);
      assert.deepEqual(podEvents, []);
    });

    it('memory pressure: the pod over its request is evicted with no grace and upstream message; static and critical pods are never candidates', async function () {
      const hog = pod('hog', { memRequest: '10Mi' });
      const guaranteed = pod('guaranteed', { memRequest: '1Gi' });
      const staticPod = pod('static', { source: 'file' });
      const critical = pod('critical', { priority: 2_000_001_000 });
      const { m, evicted, events, disruptions } = manager({ pods: [guaranteed, hog, staticPod, critical], summaries: [summary(50 * Mi, [podStats(hog, 600 * Mi), podStats(guaranteed, 100 * Mi), podStats(staticPod, 900 * Mi), podStats(critical, 900 * Mi)])] });
      await m.round();
      assert.deepEqual(events[0]!.pods.map((p) => p.metadata!.name), ['guaranteed', 'hog']);
      assert.equal(events[0]!.signal, 'memory.available');
      assert.deepEqual(evicted, [{ name: 'hog', grace: 0, message: 'The node was low on resource: memory. Threshold quantity: 100Mi, available: 50Mi. Container c was using 600Mi, request is 10Mi, has larger consumption of memory. ' }]);
      assert.deepEqual(disruptions, [['hog', true]], 'a pressure eviction carries DisruptionTarget');
      assert.deepEqual(m.conditionDrafts().map((c) => [c.type, c.status, c.reason]), [
        ['MemoryPressure', 'True', 'KubeletHasInsufficientMemory'], ['DiskPressure', 'False', 'KubeletHasNoDiskPressure'], ['PIDPressure', 'False', 'KubeletHasSufficientPID'],
      ]);
    });

    it('evictStaticPods makes static pods candidates', async function () {
      const staticPod = pod('static', { source: 'file' });
      const { m, evicted } = manager({ pods: [staticPod], summaries: [summary(50 * Mi, [podStats(staticPod, 900 * Mi)])], settings: settings({ evictStaticPods: true }) });
      await m.round();
      assert.deepEqual(evicted.map((e) => e.name), ['static']);
    });

    it('a policy that chooses differently is obeyed; a choice that is no candidate is refused', async function () {
      const hog = pod('hog', { memRequest: '10Mi' });
      const small = pod('small', { memRequest: '1Gi' });
      const staticPod = pod('static', { source: 'file' });
      const { m, evicted } = manager({
        pods: [hog, small, staticPod],
        summaries: [summary(50 * Mi, [podStats(hog, 600 * Mi), podStats(small, 10 * Mi)])],
        decide: (e) => ({ evict: [{ pod: staticPod, reason: 'Evicted', message: 'no' }, { pod: e.pods.find((p) => p.metadata!.name === 'small')!, reason: 'Evicted', message: 'test policy' }] }),
      });
      await m.round();
      assert.deepEqual(evicted, [{ name: 'small', grace: 0, message: 'test policy' }]);
    });

    it('a soft threshold evicts with the pod grace capped by evictionMaxPodGracePeriod', async function () {
      const hog = pod('hog', { grace: 120 });
      const s = settings({ soft: { 'memory.available': '1Gi' }, softGracePeriodMs: { 'memory.available': 0 }, maxPodGracePeriodSeconds: 20 });
      const { m, evicted } = manager({ pods: [hog], summaries: [summary(512 * Mi, [podStats(hog, 600 * Mi)])], settings: s });
      await m.round();
      assert.deepEqual(evicted.map((e) => [e.name, e.grace]), [['hog', 20]]);
    });

    it('an emptyDir over its sizeLimit is evicted without asking the policy', async function () {
      const filler = pod('filler', { sizeLimit: '1Mi' });
      const { m, evicted, events, disruptions } = manager({ pods: [filler], summaries: [summary(4096 * Mi, [podStats(filler, Mi, 3 * Mi)])] });
      await m.round();
      assert.equal(events.length, 0);
      assert.deepEqual(evicted, [{ name: 'filler', grace: 0, message: 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". ' }]);
      assert.deepEqual(disruptions, [['filler', false]], 'over its own limit: no DisruptionTarget, as upstream');
    });

    it('asks for the pods\' figures only when a pod set a local storage limit or a threshold is met (then ranks on them)', async function () {
      const p = pod('p');
      const quiet = manager({ pods: [p], summaries: [summary(4096 * Mi, [podStats(p, Mi)])] });
      await quiet.m.round();
      await quiet.m.round();
      assert.deepEqual(quiet.asked, [false, false], 'a steady node reads the node\'s figures only');
      const filler = pod('filler', { sizeLimit: '1Mi' });
      const limited = manager({ pods: [p, filler], summaries: [summary(4096 * Mi, [podStats(p, Mi), podStats(filler, Mi, 0)])] });
      await limited.m.round();
      assert.deepEqual(limited.asked, [true], 'a pod with a sizeLimit needs its measured use each round');
      assert.deepEqual(limited.evicted, []);
      const pressed = manager({ pods: [p], summaries: [summary(50 * Mi, [podStats(p, 600 * Mi)])] });
      await pressed.m.round();
      assert.deepEqual(pressed.asked, [false, true], 'a met threshold reads the pods to rank them');
      assert.equal(pressed.events[0]!.usage[p.metadata!.uid!]?.memoryBytes, 600 * Mi, 'ranked on the pods\' figures');
      assert.deepEqual(pressed.evicted.map((e) => e.name), ['p']);
    });

    it('disk pressure reclaims node-level resources first, and evicts nobody when that was enough', async function () {
      const p = pod('p');
      const { m, evicted, reclaims } = manager({ pods: [p], summaries: [summary(4096 * Mi, [podStats(p, Mi)], 5e9), summary(4096 * Mi, [podStats(p, Mi)], 20e9)] });
      await m.round();
      assert.deepEqual(reclaims, ['nodefs.available']);
      assert.deepEqual(evicted, []);
      assert.deepEqual([...m.conditions()], ['DiskPressure']);
    });
  });

  describe('eviction-default ranking', function () {
    const usage = (mem: number, req: number) => ({ memoryBytes: mem, memoryRequestBytes: req, ephemeralStorageRequestBytes: 0, containers: [] });
    it('memory: over request first, then lower priority, then most above request; pods without figures first', function () {
      const a = pod('a', { priority: 10 });
      const b = pod('b', { priority: 0 });
      const c = pod('c', { priority: 0 });
      const d = pod('d', { priority: 1000 });
      const nostats = pod('nostats', { priority: 5000 });
      const e: PressureEvent = {
        signal: 'memory.available', threshold: '100Mi', thresholdQuantity: String(100 * Mi), observed: String(50 * Mi), resource: 'memory', hard: true,
        pods: [a, b, c, d, nostats],
        usage: { 'uid-a': usage(300, 100), 'uid-b': usage(50, 100), 'uid-c': usage(90, 10), 'uid-d': usage(900, 100) },
      };
      assert.deepEqual(rankPods(e).map((p) => p.metadata!.name), ['nostats', 'c', 'a', 'd', 'b']);
    });

    it('pids: lower priority, then most processes', function () {
      const a = pod('a');
      const b = pod('b');
      const e: PressureEvent = {
        signal: 'pid.available', threshold: '1000', thresholdQuantity: '1000', observed: '10', resource: 'pids', hard: true, pods: [a, b],
        usage: { 'uid-a': { ...usage(0, 0), processes: 3 }, 'uid-b': { ...usage(0, 0), processes: 30 } },
      };
      assert.deepEqual(rankPods(e).map((p) => p.metadata!.name), ['b', 'a']);
      assert.equal(evictionMessage(e, b), 'The node was low on resource: pids. Threshold quantity: 1000, available: 10. ');
    });

    it('the plugin is a policy tapping onPressure only', function () {
      assert.equal(evictionDefault.name, 'eviction-default');
      assert.equal(evictionDefault.kind, 'policy');
    });
  });

  describe('admission under pressure', function () {
    const bestEffort = pod('be');
    const burstable = pod('burst', { memRequest: '10Mi' });
    it('memory pressure refuses BestEffort pods unless they tolerate the memory-pressure taint', function () {
      const mem = new Set(['MemoryPressure']);
      assert.deepEqual(checkPressureAdmission(bestEffort, mem, { critical: false }), { reason: 'Evicted', message: 'The node had condition: [MemoryPressure]. ' });
      assert.equal(checkPressureAdmission(burstable, mem, { critical: false }), undefined);
      const tolerating = { ...bestEffort, spec: { ...bestEffort.spec!, tolerations: [{ key: 'node.kubernetes.io/memory-pressure', operator: 'Exists', effect: 'NoSchedule' }] } };
      assert.equal(checkPressureAdmission(tolerating, mem, { critical: false }), undefined);
    });
    it('disk pressure refuses every pod but critical ones', function () {
      const disk = new Set(['MemoryPressure', 'DiskPressure']);
      assert.deepEqual(checkPressureAdmission(burstable, disk, { critical: false }), { reason: 'Evicted', message: 'The node had condition: [MemoryPressure DiskPressure]. ' });
      assert.equal(checkPressureAdmission(burstable, disk, { critical: true }), undefined);
      assert.equal(checkPressureAdmission(burstable, new Set(), { critical: false }), undefined);
    });
  });
});
