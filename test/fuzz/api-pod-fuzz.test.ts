import assert from 'node:assert/strict';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { createNamespace, deleteNamespace } from '../../bench/api/api-pods.ts';
import { H2ApiClient } from '../../bench/api/h2-client.ts';
import { readKubeconfigTls } from '../../bench/api/kubeconfig-tls.ts';
import { controlPlaneOrSkip, type ControlPlane } from '../support/control-plane.ts';
import { startHollowProcess, type HollowProcess } from '../support/hollow-process.ts';
import { API_POD_FEATURES } from './api-pod-cases.ts';
import { runApiPodsFuzz } from './long/api-pods-kind.ts';
import { formatReport } from './long/report.ts';
import { fuzzSettings, reproduceHint } from './prng.ts';

/**
 * The api-pods kind of `npm run fuzz:long`, small and seeded: odd pods the API server accepts
 * (thousands of env vars or volumes, deep projections, extreme quantities, unicode, ...; one
 * case of each feature first) created through the real API server, bound to a kubelet-ts
 * hollow node (the kubelet core on the in-memory runtime: what is fuzzed is its handling of
 * hostile API objects), each reported on by the kubelet, then deleted gracefully or forcibly.
 * The node lives, its own pod from before stays the same pod, Running, never restarted.
 */
// One case of each feature (KUBELET_TS_FUZZ_COUNT is the other fuzz tests' count: hundreds of
// these pods are fuzz:long's to run).
const { seed } = fuzzSettings(API_POD_FEATURES.length);
const count = API_POD_FEATURES.length;
const HINT = reproduceHint(seed, path.relative(process.cwd(), fileURLToPath(import.meta.url)));

describe('fuzz: odd pods through the API server (real control plane, hollow node)', function () {
  this.timeout(240_000);
  let cp: ControlPlane;
  let admin: H2ApiClient | undefined;
  let hollow: HollowProcess | undefined;
  let dir: string | undefined;
  const ns = `kts-fuzz-api-${process.pid}`;

  before(async function () {
    cp = await controlPlaneOrSkip(this);
    admin = new H2ApiClient(readKubeconfigTls(cp.adminKubeconfig));
    await createNamespace(admin, ns);
    dir = await mkdtemp(path.join(os.tmpdir(), 'kts-fuzz-api-'));
    await writeFile(path.join(dir, 'config.json'), JSON.stringify({ kubeAPIQPS: 1000, kubeAPIBurst: 2000 }));
    hollow = await startHollowProcess({ nodes: 1, kubeconfig: cp.adminKubeconfig, prefix: `kts-fuzz-${process.pid}`, args: ['--max-pods', '500', '--cleanup', '--config', path.join(dir, 'config.json')] });
  });

  after(async function () {
    this.timeout(180_000);
    await hollow?.stop('SIGTERM');
    if (admin) await deleteNamespace(admin, ns).catch(() => undefined);
    admin?.close();
    if (dir) await rm(dir, { recursive: true, force: true });
  });

  afterEach(function () {
    if (this.currentTest?.state === 'failed') process.stderr.write(`      fuzz seed ${seed}: ${HINT}\n`);
  });

  it(`lives through ${count} odd pods, each reported on and deleted, its own pod untouched`, async function () {
    const r = await runApiPodsFuzz({
      kubelet: hollow!, admin: admin!, namespace: ns, nodeName: hollow!.names[0]!, image: 'busybox',
      seed, count, batch: count, settleMs: 1000, batchTimeoutMs: 60_000,
      reproduce: (i) => `npm run fuzz:long -- --kind api-pods --seed ${seed} --from ${i} --count 1`,
    });
    process.stdout.write(`${formatReport(r).replace(/^/gm, '      ')}\n`);
    assert.deepEqual(r.crashes, [], `${r.crashes.join('\n')}\n${r.reproduce.join('\n')}`);
    // The generator's cases are the API server's to accept: most must get through to the node.
    assert.ok(r.sent >= count * 0.75, `the API server accepted ${r.sent} of ${count}: ${JSON.stringify(r.details['refused by the API server'])}`);
    assert.equal(r.details['no status from the kubelet within the batch timeout'], 0, 'the kubelet reported on every pod');
    // A deleted pod goes (a 253-character name once kept its termination failing for ever).
    assert.equal(r.details['not deleted within the batch timeout (forced)'], 0, 'the kubelet finished every deletion');
  });
});
