import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import path from 'node:path';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { MiB, checkCase, collectGarbage, heapUsed, retainedHeap } from './fuzz-checks.ts';
import { aliasBombCases, randomCase, typeSweepCases, MUTATOR_NAMES, type FuzzCase } from './manifest-cases.ts';
import { fuzzSettings, reproduceHint } from './prng.ts';

/**
 * Fuzz level 1: static pod manifests that are hostile input, through parseManifest and
 * applyStaticPodDefaults, and each accepted pod through the kubelet's pure paths (sandbox and
 * container configs, sync actions, status, cgroup limits, probes). Every case is a pod or a
 * clean, bounded refusal naming the file and a field or position, in bounded time and heap.
 */
const FILE = '/etc/kubernetes/manifests/fuzz.yaml';
const { seed, count } = fuzzSettings(300);
const HINT = reproduceHint(seed, path.relative(process.cwd(), fileURLToPath(import.meta.url)));
/** Transient heap one case may use (a 3 MiB manifest parses in a few tens of MiB). */
const MAX_CASE_HEAP = 256 * MiB;
/** Heap a whole batch may leave behind. */
const MAX_RETAINED_GROWTH = 32 * MiB;

interface Tally {
  accepted: number;
  refused: number;
  slowestMs: number;
  slowest: string;
}

function runBatch(cases: Iterable<FuzzCase>, context: string): Tally & { outcomes: Map<string, string | undefined> } {
  const tally = { accepted: 0, refused: 0, slowestMs: 0, slowest: '', outcomes: new Map<string, string | undefined>() };
  const before = retainedHeap();
  let n = 0;
  for (const c of cases) {
    const out = checkCase(c, FILE, context);
    if (out.pod) tally.accepted++;
    else tally.refused++;
    tally.outcomes.set(c.kind, out.message);
    if (out.ms > tally.slowestMs) Object.assign(tally, { slowestMs: out.ms, slowest: c.kind });
    const heap = heapUsed() - before;
    if (heap >= MAX_CASE_HEAP) assert.fail(`${context}: case ${c.id} (${c.kind}): heap grew by ${Math.round(heap / MiB)} MiB`);
    // A full collection now and then keeps one case's garbage from counting against the next.
    if (++n % 250 === 0) collectGarbage();
  }
  const growth = retainedHeap() - before;
  assert.ok(growth < MAX_RETAINED_GROWTH, `${context}: ${Math.round(growth / MiB)} MiB of heap retained after the batch`);
  return tally;
}

describe('fuzz: static pod manifests (parseManifest, defaults, kubelet paths)', function () {
  this.timeout(120_000);
  before(() => loadObjectModels());

  // The seed in every failure: a case is reproduced by running this file with it.
  afterEach(function () {
    if (this.currentTest?.state === 'failed') process.stderr.write(`      fuzz seed ${seed}: ${HINT}\n`);
  });

  it('every field of a rich pod with every wrong type: a pod or a refusal naming the field', function () {
    const t = runBatch(typeSweepCases(), `type sweep, ${HINT}`);
    const out = t.outcomes;
    // The sweep must do what it claims: refuse what is wrong, keep what is merely optional.
    assert.match(out.get('number at spec.containers[0].command')!, /invalid pod: spec\.containers\[0\]\.command: expected list, got number/);
    assert.match(out.get('string at spec.containers[0].ports')!, /spec\.containers\[0\]\.ports: expected list, got string/);
    assert.match(out.get('huge at spec.terminationGracePeriodSeconds')!, /spec\.terminationGracePeriodSeconds: Invalid value: 1e\+300: must be between/);
    assert.match(out.get('traversal at metadata.name')!, /metadata\.name: Invalid value: "\.\.\/\.\.\/etc"/);
    assert.match(out.get('nan-string at spec.containers[0].resources.limits.cpu')!, /limits\[cpu\]: Invalid value: "NaN": quantities must match/);
    assert.match(out.get('map at spec.volumes[3].configMap.defaultMode')!, /defaultMode: expected integer, got map/);
    assert.match(out.get('huge at spec.volumes[3].configMap.items[0].mode')!, /items\[0\]\.mode: Invalid value: 1e\+300: must be a 32-bit integer \(between -2147483648 and 2147483647\)$/);
    assert.equal(out.get('deleted at metadata.labels'), undefined, 'labels are optional');
    assert.equal(out.get('null at spec.containers[0].resources'), undefined, 'null is an absent field');
    assert.ok(t.accepted > 100 && t.refused > 1000, `accepted ${t.accepted}, refused ${t.refused}`);
    process.stdout.write(`      ${t.accepted + t.refused} cases: ${t.accepted} pods, ${t.refused} refused; slowest ${Math.round(t.slowestMs)} ms (${t.slowest})\n`);
  });

  it('alias bombs of every shape in every place are refused at once', function () {
    const cases = aliasBombCases();
    const t = runBatch(cases, `alias bombs, ${HINT}`);
    assert.equal(t.accepted, 0, 'no bomb becomes a pod');
    for (const [kind, message] of t.outcomes) {
      assert.match(message!, /not valid YAML or JSON: (excessive aliasing|the document is larger than 3145728 bytes as JSON|nesting is deeper than|line \d+, column \d+: (merge keys exceeded|abnormal merge sequence size))/, kind);
    }
    process.stdout.write(`      ${cases.length} bombs refused; slowest ${Math.round(t.slowestMs)} ms (${t.slowest})\n`);
  });

  it(`${count} seeded random mutations (seed ${seed})`, function () {
    const cases = (function* () {
      for (let i = 0; i < count; i++) yield randomCase(seed, i);
    })();
    const t = runBatch(cases, `random cases, ${HINT}`);
    assert.equal(t.accepted + t.refused, count);
    assert.ok(t.refused > 0, 'mutations refused');
    process.stdout.write(`      ${count} cases over ${MUTATOR_NAMES.length} mutators: ${t.accepted} pods, ${t.refused} refused; slowest ${Math.round(t.slowestMs)} ms (${t.slowest})\n`);
  });
});
