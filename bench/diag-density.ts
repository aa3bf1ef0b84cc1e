// Diagnostic, not a benchmark: N pods dropped at once, then all removed, printing progress
// (and the kubelet's log on stderr with KUBELET_TS_TEST_LOG=1). `N=250 npx tsx bench/diag-density.ts`
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startNodeEnv } from '../tools/node-env/index.ts';
import { removeCgroupRoot } from '../test/support/cgroups.ts';
import { isRunning, startTestKubelet } from '../test/support/test-kubelet.ts';
import { benchPodManifest } from './lib.ts';

const n = Number(process.env.N ?? 30);
const env = await startNodeEnv({ baseDir: await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dd-')), removeOnStop: true });
const t = await startTestKubelet({
  plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
  config: { maxPods: Math.max(110, n), plegRelistPeriodMs: 1000, cgroupsPerQOS: true, cgroupRoot: '/kts-diag-density' },
});
const names = Array.from({ length: n }, (_, i) => `dd${i}`);
const t0 = Date.now();
await Promise.all(names.map((nm) => t.writeManifest(`${nm}.json`, benchPodManifest(nm, 'dd', env.images.busybox))));
for (let i = 0; i < 600 && t.kubelet.pods().filter(isRunning).length < n; i++) await sleep(500);
console.log(`${t.kubelet.pods().filter(isRunning).length}/${n} Running after ${Date.now() - t0} ms`);
const t1 = Date.now();
await Promise.all(names.map((nm) => t.removeManifest(`${nm}.json`)));
for (let i = 0; i < 600 && t.kubelet.pods().length > 0; i++) {
  if (i % 20 === 0) console.log(`${(Date.now() - t1) / 1000}s: ${t.kubelet.pods().length} pods left`);
  await sleep(500);
}
console.log(`${t.kubelet.pods().length} pods left ${Date.now() - t1} ms after the manifests went`);
await t.dispose(5000);
await env.stop();
await removeCgroupRoot('/kts-diag-density');
