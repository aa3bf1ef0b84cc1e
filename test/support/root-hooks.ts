import { stopNodeEnv } from './node-env.ts';
import { stopControlPlane } from './control-plane.ts';
import { removeLeftCgroupRoots } from './kubelet-process.ts';

/**
 * Mocha root hook plugin (loaded by `require` in .mocharc.cjs): after all tests, stop the
 * shared node environment and the shared control plane if a test started them (unit-only runs
 * never start them), then the cgroups kubelet processes left.
 */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(150_000);
    await Promise.all([stopNodeEnv(), stopControlPlane()]);
    await removeLeftCgroupRoots();
  },
};
