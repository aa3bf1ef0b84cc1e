import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startNodeEnv } from '../tools/node-env/index.ts';
import { removeCgroupRoot } from '../test/support/cgroups.ts';
import { startTestKubelet, podManifest, isRunning } from '../test/support/test-kubelet.ts';
import { renderWaterfall } from '../core/timeline/waterfall.ts';

const env = await startNodeEnv({ baseDir: await fs.mkdtemp(path.join(os.tmpdir(), 'kts-diag-')), removeOnStop: true });
const t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { plegRelistPeriodMs: 1000, cgroupsPerQOS: true, cgroupRoot: '/kts-diag' } });
for (let i = 0; i < 4; i++) {
  const name = `d${i}`;
  const t0 = Date.now();
  await t.writeManifest(`${name}.json`, podManifest(name, [{ name: 'main', image: env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 0 }));
  await t.waitForPod(name, isRunning, 20000);
  const ms = Date.now() - t0;
  const tl = t.kubelet.timelines.find('default', `${name}-test-node`)!;
  console.log(`${name}: ${ms} ms (written -> seen ${tl.seenMs - t0} ms)`);
  console.log(renderWaterfall(tl));
}
for (let i = 0; i < 4; i++) await t.removeManifest(`d${i}.json`);
await t.waitForPod('x', () => t.kubelet.pods().length === 0, 20000);
await t.stop();
await env.stop();
await removeCgroupRoot('/kts-diag');
