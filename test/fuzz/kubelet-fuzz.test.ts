import assert from 'node:assert/strict';
import { readFile, rename, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { loadObjectModels } from '../../core/objects/object-decoder.ts';
import { parseManifest } from '../../core/sources/manifest.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { procRssBytes, startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { BOMB_SHAPES, aliasBomb, randomCase, type FuzzCase } from './manifest-cases.ts';
import { fuzzSettings, reproduceHint } from './prng.ts';
import { MiB } from './fuzz-checks.ts';
import { runRequestsFuzz } from './long/requests-kind.ts';
import { formatReport, podFacts } from './long/report.ts';

/**
 * Fuzz level 3: the kubelet as an operator runs it (its own process, real containerd), two
 * pods Running, then a batch of hostile manifests dropped into its manifest directory, alias
 * bombs among them. The kubelet lives, warns about each file by name without copying what the
 * file holds into its log, keeps its pods (same UIDs, Running, no restart) and its RSS bounded.
 * Then the requests kind of `npm run fuzz:long`, small and seeded (KUBELET_TS_FUZZ_COUNT, default
 * 300): hostile requests to the main port's handlers through its local socket, the pods untouched.
 */
const { seed, count } = fuzzSettings(300);
const HINT = reproduceHint(seed, path.relative(process.cwd(), fileURLToPath(import.meta.url)));
const BATCH = 60;
const MAX_RSS = 400 * MiB;
/** What reading the whole batch may add to the RSS at its peak. */
const MAX_RSS_GROWTH = 128 * MiB;
const SECRET = 'KTS_FUZZ_SECRET_0123456789abcdef';
const POD_NAMES = ['fuzz-a', 'fuzz-b'];

interface LogLine {
  level?: number;
  msg?: string;
  file?: string;
}

async function until<T>(what: string, timeoutMs: number, fn: () => Promise<T | undefined>): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const v = await fn();
    if (v !== undefined) return v;
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await sleep(250);
  }
}

/** The batch: a bomb of each shape, a syntax error next to a secret, and refused random cases. */
function batch(): FuzzCase[] {
  const cases: FuzzCase[] = BOMB_SHAPES.map((shape, i) => aliasBomb(shape, [['spec', 'containers', 0, 'command'], ['spec', 'nodeSelector'], ['metadata', 'finalizers']][i % 3]!));
  cases.push({ id: 'secret-next-to-error', kind: 'syntax error between secrets', text: `# ${SECRET}\napiVersion: v1\nkind: Pod\nmetadata: {name: [oops ${SECRET}\n# ${SECRET}\n` });
  // Only refused cases: a valid one would be a pod to run (and to pull an image for).
  for (let i = 0; cases.length < BATCH && i < BATCH * 20; i++) {
    const c = randomCase(seed, i);
    try {
      parseManifest(Buffer.from(c.text, 'utf8').toString('utf8'), '/x.yaml');
    } catch {
      cases.push(c);
    }
  }
  return cases;
}

describe('fuzz: hostile manifests dropped next to running pods (real kubelet, containerd)', function () {
  this.timeout(180_000);
  let env: NodeEnv;
  let kubelet: KubeletProcess | undefined;
  let exited = false;
  const caseFiles: string[] = [];

  before(async function () {
    env = await nodeEnvOrSkip(this);
    await loadObjectModels();
    kubelet = await startKubeletProcess(env);
    void kubelet.exited.then(() => (exited = true));
  });

  after(async function () {
    if (!kubelet) return;
    const k = kubelet;
    await Promise.all(caseFiles.map((f) => rm(f, { force: true })));
    for (const name of POD_NAMES) await k.removeManifest(`${name}.json`);
    if (!exited) await until('the fuzz pods to be gone', 60_000, async () => ((await k.pods())?.some((p) => POD_NAMES.some((n) => p.metadata?.name?.startsWith(n))) ? undefined : true)).catch(() => undefined);
    await k.stop();
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') process.stderr.write(`      fuzz seed ${seed}: ${HINT}\n`);
  });

  it(`lives through ${BATCH} hostile manifests with its pods untouched and its RSS bounded`, async function () {
    const k = kubelet!;
    for (const name of POD_NAMES) {
      await k.writeManifest(`${name}.json`, {
        apiVersion: 'v1', kind: 'Pod', metadata: { name },
        spec: { terminationGracePeriodSeconds: 1, containers: [{ name: 'main', image: env.images.busybox, command: ['sleep', '3600'] }] },
      } as V1Pod);
    }
    const mine = (pods: V1Pod[] | undefined) => (pods ?? []).filter((p) => POD_NAMES.some((n) => p.metadata?.name === `${n}-bench-node`));
    const running = (p: V1Pod) => p.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running && c.restartCount === 0);
    const before = await until('both pods Running', 90_000, async () => {
      const pods = mine(await k.pods());
      return pods.length === 2 && pods.every(running) ? pods : undefined;
    });
    const uids = new Map(before.map((p) => [p.metadata!.name!, p.metadata!.uid!]));

    const startRss = await procRssBytes(k.pid);
    let maxRss = startRss;
    const sampler = setInterval(() => void procRssBytes(k.pid).then((r) => (maxRss = Math.max(maxRss, r)), () => undefined), 100);
    try {
      const cases = batch();
      const t0 = Date.now();
      for (const c of cases) {
        // Renamed into place, as an editor saves: the kubelet reads the whole file at once.
        const file = path.join(k.manifestDir, `fuzz-case-${c.id}.yaml`);
        await writeFile(path.join(k.manifestDir, `.fuzz-case-${c.id}.tmp`), Buffer.from(c.text, 'utf8'));
        await rename(path.join(k.manifestDir, `.fuzz-case-${c.id}.tmp`), file);
        caseFiles.push(file);
      }
      // A warning naming each file.
      const lines = await until(`a warning for each of ${cases.length} files`, 60_000, async () => {
        const log = (await readFile(k.logFile, 'utf8'))
          .split('\n')
          .map((l) => { try { return JSON.parse(l) as LogLine; } catch { return undefined; } })
          .filter((l): l is LogLine => l !== undefined);
        const warned = new Set(log.filter((l) => l.level === 40 && l.file !== undefined).map((l) => l.file));
        return caseFiles.every((f) => warned.has(f)) ? log : undefined;
      });
      const tookMs = Date.now() - t0;
      // A few more seconds: rescans, syncs and relists with the files in place.
      await sleep(3000);

      assert.equal(exited, false, 'the kubelet is alive');
      const after = mine(await k.pods());
      assert.equal(after.length, 2);
      for (const p of after) {
        assert.equal(p.metadata?.uid, uids.get(p.metadata!.name!), `${p.metadata?.name} keeps its UID`);
        assert.ok(running(p), `${p.metadata?.name} is Running with no restart: ${JSON.stringify(p.status?.containerStatuses)}`);
      }
      const log = await readFile(k.logFile, 'utf8');
      assert.ok(!log.includes(SECRET), 'no line of a manifest is copied into the log');
      assert.ok(lines.every((l) => l.level === undefined || l.level < 60), 'nothing fatal logged');
      assert.ok(maxRss < MAX_RSS, `RSS peaked at ${Math.round(maxRss / MiB)} MiB`);
      assert.ok(maxRss - startRss < MAX_RSS_GROWTH, `RSS grew by ${Math.round((maxRss - startRss) / MiB)} MiB while reading the batch`);
      process.stdout.write(`      ${cases.length} files warned about within ${tookMs} ms; RSS ${Math.round(startRss / MiB)} MiB before, peak ${Math.round(maxRss / MiB)} MiB (${k.code})\n`);
    } finally {
      clearInterval(sampler);
    }
  });

  it(`answers ${count} hostile requests through its local socket (every route, odd queries, headers, upgrades, bodies, half-open) with its pods untouched`, async function () {
    // After the manifests above: the same kubelet, its pods Running (the runner checks).
    const k = kubelet!;
    const target = { namespace: 'default', pod: 'fuzz-a-bench-node', container: 'main' };
    const r = await runRequestsFuzz({
      kubelet: k, socketPath: k.socketPath, target, seed, count, concurrency: 16, settleMs: 2000,
      pod: async () => podFacts((await k.pods())?.find((p) => p.metadata?.name === target.pod)),
      reproduce: (i) => `npm run fuzz:long -- --kind requests --seed ${seed} --from ${i} --count 1`,
    });
    process.stdout.write(`${formatReport(r).replace(/^/gm, '      ')}\n`);
    assert.deepEqual(r.crashes, [], `${r.crashes.join('\n')}\n${r.reproduce.join('\n')}`);
    assert.equal(r.sent, count);
    assert.ok(r.rss.peakMiB - r.rss.beforeMiB < MAX_RSS_GROWTH / MiB, `RSS grew by ${r.rss.peakMiB - r.rss.beforeMiB} MiB during ${count} requests`);
  });
});
