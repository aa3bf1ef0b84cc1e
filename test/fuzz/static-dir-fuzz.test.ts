import assert from 'node:assert/strict';
import * as fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { StaticPodDirSource } from '../../core/sources/static-dir.ts';
import { applyStaticPodDefaults, parseManifest } from '../../core/sources/manifest.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { MiB, heapUsed, retainedHeap } from './fuzz-checks.ts';
import { aliasBombCases, randomCase, type FuzzCase } from './manifest-cases.ts';
import { fuzzSettings, reproduceHint } from './prng.ts';

/**
 * Fuzz level 2: a directory of hostile manifests and two valid ones, read by the static pod
 * source as the kubelet runs it. Every bad file is reported under its name, with one warning;
 * the valid pods come out with the UIDs their manifests give them (also in a second source,
 * as after a restart); the heap stays bounded while the directory is read and after.
 */
const NODE = 'fuzz-node';
const { seed, count } = fuzzSettings(300);
const HINT = reproduceHint(seed, path.relative(process.cwd(), fileURLToPath(import.meta.url)));
/** Cases in the directory: the first random ones, and a bomb of each shape. */
const DIR_CASES = Math.min(count, 100);
const MAX_PEAK_HEAP = 256 * MiB;
const MAX_RETAINED_GROWTH = 32 * MiB;

const goodManifest = (name: string) => `apiVersion: v1
kind: Pod
metadata:
  name: ${name}
spec:
  containers:
  - name: main
    image: busybox:1.36
    command: ["sleep", "3600"]
`;

interface LogLine {
  level: number;
  msg: string;
  file?: string;
  err?: unknown;
}

describe('fuzz: the static pod directory source', function () {
  this.timeout(60_000);
  let tmp: string;
  let dir: string;
  const sources: StaticPodDirSource[] = [];

  before(async () => {
    await loadObjectModels();
    tmp = await fs.mkdtemp('/tmp/kts-fuzz-');
    dir = path.join(tmp, 'manifests');
    await fs.mkdir(dir);
  });

  after(async () => {
    await Promise.all(sources.splice(0).map((s) => s.stop()));
    await fs.rm(tmp, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') process.stderr.write(`      fuzz seed ${seed}: ${HINT}\n`);
  });

  async function readDir(logger = captureLogger<LogLine>().logger): Promise<{ source: StaticPodDirSource; pods: V1Pod[]; peak: number }> {
    const source = new StaticPodDirSource({ dir, nodeName: NODE, rescanPeriodMs: 0, logger });
    sources.push(source);
    const emitted: V1Pod[][] = [];
    const base = heapUsed();
    let peak = 0;
    // The scan awaits between files: a sampler sees the heap while each one is read.
    const sampler = setInterval(() => (peak = Math.max(peak, heapUsed() - base)), 5);
    try {
      await source.start((pods) => emitted.push(pods));
    } finally {
      clearInterval(sampler);
    }
    peak = Math.max(peak, heapUsed() - base);
    assert.equal(emitted.length, 1, 'one emission for the initial set');
    return { source, pods: emitted[0]!, peak };
  }

  it(`reports each of ${DIR_CASES} hostile manifests and keeps the valid pods (seed ${seed})`, async function () {
    const cases: FuzzCase[] = [...aliasBombCases().filter((_, i) => i % 9 === 0), ...Array.from({ length: DIR_CASES }, (_, i) => randomCase(seed, i))];
    const expected = new Map<string, { refusal?: string; pod?: V1Pod }>();
    for (const c of cases) {
      const file = path.join(dir, `${c.id}.yaml`);
      const bytes = Buffer.from(c.text, 'utf8');
      await fs.writeFile(file, bytes);
      // What the source must make of the file: parseManifest's verdict on the same bytes.
      try {
        expected.set(file, { pod: applyStaticPodDefaults(parseManifest(bytes.toString('utf8'), file), { nodeName: NODE, source: 'file', file }) });
      } catch (err) {
        expected.set(file, { refusal: (err as Error).message });
      }
    }
    const good = ['fuzz-good-a', 'fuzz-good-b'].map((name) => ({ name, file: path.join(dir, `${name}.yaml`) }));
    for (const g of good) await fs.writeFile(g.file, goodManifest(g.name));
    const goodUids = good.map((g) => applyStaticPodDefaults(parseManifest(goodManifest(g.name), g.file), { nodeName: NODE, source: 'file', file: g.file }).metadata!.uid!);

    const before = retainedHeap();
    const { logger, lines } = captureLogger<LogLine>();
    const t0 = performance.now();
    const first = await readDir(logger);
    const ms = performance.now() - t0;
    const errors = first.source.errors();

    // The valid pods, with the UIDs their manifests give them.
    for (const [i, g] of good.entries()) {
      const pod = first.pods.find((p) => p.metadata?.name === `${g.name}-${NODE}`);
      assert.ok(pod, `${g.name} is emitted`);
      assert.equal(pod.metadata?.uid, goodUids[i]);
      assert.equal(errors.has(g.file), false);
    }
    // Every refused manifest is reported under its name, with the reason parseManifest gives,
    // and warned about once, naming the file.
    let refused = 0;
    for (const [file, want] of expected) {
      if (want.refusal === undefined) {
        // A valid case is a pod, or loses to an earlier file declaring the same pod.
        const uid = want.pod!.metadata!.uid;
        assert.ok(first.pods.some((p) => p.metadata?.uid === uid) || /duplicate pod/.test(errors.get(file) ?? ''), `${file}: valid, yet neither emitted nor a duplicate`);
        continue;
      }
      refused++;
      assert.equal(errors.get(file), want.refusal, `${file}: reported reason`);
      assert.ok(want.refusal.startsWith(`static pod manifest ${file}: `));
      const warnings = lines.filter((l) => l.level === 40 && l.file === file);
      assert.equal(warnings.length, 1, `${file}: one warning`);
    }
    assert.ok(refused > DIR_CASES / 2, `${refused} of ${expected.size} refused`);
    assert.ok(first.peak < MAX_PEAK_HEAP, `heap peaked ${Math.round(first.peak / MiB)} MiB above its start while reading`);

    // A second source (a restarted kubelet) derives the same UIDs.
    const second = await readDir();
    const uids = (pods: V1Pod[]) => pods.map((p) => p.metadata!.uid).sort();
    assert.deepEqual(uids(second.pods), uids(first.pods));
    assert.deepEqual(second.source.errors(), errors);

    await Promise.all(sources.splice(0).map((s) => s.stop()));
    const growth = retainedHeap() - before;
    assert.ok(growth < MAX_RETAINED_GROWTH, `${Math.round(growth / MiB)} MiB retained after the sources stopped`);
    process.stdout.write(`      ${expected.size} hostile files read in ${Math.round(ms)} ms: ${refused} reported, heap peak +${Math.round(first.peak / MiB)} MiB\n`);
  });
});
