import assert from 'node:assert/strict';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { controlPlaneOrSkip, type ControlPlane } from '../support/control-plane.ts';
import { run as runPodStart } from '../../bench/pod-start.ts';
import { run as runDensity } from '../../bench/density.ts';
import { run as runSteady } from '../../bench/steady.ts';
import { run as runPodStartApi } from '../../bench/pod-start-api.ts';
import { run as runDensityApi } from '../../bench/density-api.ts';
import { run as runApiLoad } from '../../bench/api-load.ts';
import { run as runHollow } from '../../bench/hollow.ts';
import { run as runLogFlood } from '../../bench/log-flood.ts';

/**
 * The benchmarks in smoke mode (3 pods, a 3 s window) on the shared node environment, so they
 * never rot. Only that they complete and produce numbers is asserted; the figures are printed
 * (set KUBELET_TS_TEST_LOG=1 for progress lines) and mean nothing at this size.
 */
describe('benchmarks (smoke mode)', function () {
  this.timeout(180_000);
  let env: NodeEnv;
  const log = (line: string) => {
    if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[bench] ${line}\n`);
  };
  const print = (text: string) => process.stdout.write(`${text.replace(/^/gm, '      ')}\n`);
  const positive = (x: number | undefined, what: string) => assert.ok(typeof x === 'number' && Number.isFinite(x) && x > 0, `${what} = ${x}`);

  before(async function () {
    env = await nodeEnvOrSkip(this);
  });

  it('pod-start runs and reports raw and kubelet percentiles', async () => {
    const r = await runPodStart({ env, smoke: true, resultsDir: false, log, print });
    assert.equal(r.kubeletMs.length, 3);
    assert.equal(r.rawMs.length, 3);
    for (const k of ['p50', 'p90', 'p99'] as const) {
      positive(r.raw[k], `raw ${k}`);
      positive(r.kubelet[k], `kubelet ${k}`);
      positive(r.ratio[k], `ratio ${k}`);
    }
  });

  it('density runs and reports both totals and their ratio', async () => {
    const r = await runDensity({ env, smoke: true, resultsDir: false, log, print });
    assert.equal(r.rounds.length, 1);
    const round = r.rounds[0]!;
    assert.equal(round.n, 3);
    positive(round.rawTotalMs, 'raw total');
    positive(round.kubeletTotalMs, 'kubelet total');
    positive(round.ratio, 'ratio');
  });

  it('steady runs the kubelet as its own process and reports its CPU, RSS and relist durations', async () => {
    const r = await runSteady({ env, smoke: true, resultsDir: false, log, print });
    // CPU over a 3 s window can be under one clock tick (10 ms): a number, not necessarily > 0.
    assert.ok(Number.isFinite(r.kubeletCpuCores) && r.kubeletCpuCores >= 0, `kubelet cpu = ${r.kubeletCpuCores}`);
    // The kubelet's own process: more than a bare node (~40 MiB), far less than this test process.
    assert.ok(r.rssMiB.mean > 40 && r.rssMiB.mean < 400, `rss = ${r.rssMiB.mean} MiB`);
    assert.ok(['compiled', 'sources'].includes(r.kubeletCode), `kubeletCode = ${r.kubeletCode}`);
    assert.ok(r.plegMetricMs.count >= 2, `the kubelet's PLEG relisted ${r.plegMetricMs.count} times in the window`);
    positive(r.plegMetricMs.p50, 'pleg metric p50');
    positive(r.relistMs.p50, 'relist p50');
    positive(r.relistMs.p99, 'relist p99');
    positive(r.windowSeconds, 'window');
  });

  it('log-flood runs a flooding container on raw CRI and kubelet-ts and reports its log sizes', async () => {
    const r = await runLogFlood({ env, smoke: true, resultsDir: false, log, print });
    assert.deepEqual(r.sides.map((s) => s.side), ['raw CRI (no rotation)', 'kubelet-ts']);
    for (const s of r.sides) positive(s.peakTotalMiB, `${s.side} peak total`);
    positive(r.sides[0]!.writtenMiB, 'raw written');
  });
});

/**
 * The API-server benchmarks in smoke mode against the suite's shared control plane, kubelet-ts
 * only (the upstream kubelet is left out in smoke mode): each completes and produces numbers.
 */
describe('API benchmarks (smoke mode, kubelet-ts only)', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let cp: ControlPlane;
  const log = (line: string) => {
    if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[bench] ${line}\n`);
  };
  const print = (text: string) => process.stdout.write(`${text.replace(/^/gm, '      ')}\n`);
  const positive = (x: number | undefined, what: string) => assert.ok(typeof x === 'number' && Number.isFinite(x) && x > 0, `${what} = ${x}`);
  const common = () => ({ env, cluster: cp, smoke: true, upstream: false, resultsDir: false as const, log, print });

  before(async function () {
    this.timeout(300_000);
    env = await nodeEnvOrSkip(this);
    cp = await controlPlaneOrSkip(this);
  });

  it('pod-start-api reports raw + round trip and kubelet-ts percentiles through the API', async () => {
    const r = await runPodStartApi(common());
    assert.equal(r.kubeletMs.length, 3);
    assert.equal(r.rawPlusRoundTripMs.length, 3);
    positive(r.roundTripCreateToWatchMs.p50, 'round trip p50');
    positive(r.kubelet.p50, 'kubelet p50');
    positive(r.ratio.kubelet.p50, 'ratio p50');
    assert.equal(r.upstream, undefined);
  });

  it('density-api reports all pods Running in the API against raw + round trip', async () => {
    const r = await runDensityApi(common());
    assert.equal(r.sizes.length, 1);
    assert.equal(r.sizes[0]!.n, 3);
    positive(r.sizes[0]!.kubelet.totalMs, 'kubelet total');
    positive(r.sizes[0]!.ratio.kubelet, 'ratio');
  });

  it('api-load counts the kubelet\'s requests at its proxy', async () => {
    const r = await runApiLoad({ ...common(), seconds: 3 });
    assert.equal(r.sides.length, 1);
    const side = r.sides[0]!;
    const started = side.startPhase.rows.map((row) => row.key);
    for (const key of ['create nodes', 'list pods', 'watch pods', 'patch pods/status']) assert.ok(started.includes(key), `${key} among ${started.join(', ')}`);
    assert.ok(Number.isFinite(side.window.totalPerMinute), `window rate ${side.window.totalPerMinute}`);
  });

  it('hollow runs kubelet-ts hollow nodes and reports per-node figures', async () => {
    const r = await runHollow({ cluster: cp, smoke: true, resultsDir: false, log, print });
    assert.equal(r.sides.length, 1);
    const side = r.sides[0]!;
    assert.equal(side.kind, 'kubelet-ts');
    assert.equal(side.error, undefined);
    assert.equal(side.nodes, 3);
    positive(side.readyMs, 'ready ms');
    positive(side.podsRunningMs, 'pods running ms');
    positive(side.withPods?.rssMiB.perNode, 'rss per node');
    assert.ok(Number.isFinite(side.withPods?.cpuCores.perNode), `cpu per node = ${side.withPods?.cpuCores.perNode}`);
    assert.equal(side.withPods?.readyAtEnd, 3);
    assert.ok((side.withPods?.requests?.total ?? 0) > 0, 'requests counted at the proxy');
  });
});
