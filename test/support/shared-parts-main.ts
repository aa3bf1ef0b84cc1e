/**
 * The run's one node environment (containerd, registry) and control plane, for several mocha
 * processes at once: npm test's runner (scripts/test-lanes.mjs) starts this process when its
 * node lanes run side by side. It starts both, writes what the lanes need to reach them into
 * the file named by its argument (node-env.ts `SHARED_PARTS_ENV`; the lanes attach to them
 * instead of starting their own) and prints `ready`; on SIGTERM it stops them as the root
 * hooks of a single mocha run do, and exits. A failed start prints the error and exits 1.
 */
import { writeFile } from 'node:fs/promises';
import { describeNodeEnv, getNodeEnv, stopNodeEnv } from './node-env.ts';
import { getControlPlane, stopControlPlane, type ControlPlaneDescription } from './control-plane.ts';
import { removeLeftCgroupRoots } from './kubelet-process.ts';

const out = process.argv[2];
if (!out) {
  process.stderr.write('usage: shared-parts-main.ts <description file>\n');
  process.exit(2);
}

let stopping = false;
const stop = async (code: number) => {
  if (stopping) return;
  stopping = true;
  await Promise.all([stopNodeEnv(), stopControlPlane()]).catch((err) => process.stderr.write(`shared parts: stopping: ${(err as Error).message}\n`));
  await removeLeftCgroupRoots();
  process.exit(code);
};
for (const sig of ['SIGTERM', 'SIGINT'] as const) process.on(sig, () => void stop(0));

try {
  const [env, cp] = await Promise.all([getNodeEnv(), getControlPlane()]);
  const controlPlane = (cp as typeof cp & { description: ControlPlaneDescription }).description;
  await writeFile(out, JSON.stringify({ nodeEnv: describeNodeEnv(env), controlPlane }));
  process.stdout.write('ready\n');
} catch (err) {
  process.stderr.write(`shared parts: ${(err as Error).stack ?? err}\n`);
  await stop(1);
}
// Held open until the runner's SIGTERM.
setInterval(() => {}, 1 << 30);
