import { stopNodeEnv } from './node-env.ts';
import { stopControlPlane } from './control-plane.ts';
import { removeLeftCgroupRoots } from './kubelet-process.ts';
import { stopNodeVm } from './node-vm.ts';

/**
 * Mocha root hook plugin (loaded by `require` in .mocharc.cjs): after all tests, stop the
 * node VM (test/vm) first, its kubelet is a node of the control plane and its images come from
 * the registry, then the shared node environment and the shared control plane if a test started
 * them (unit-only runs never start them), then the cgroups kubelet processes left.
 */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(150_000);
    await stopNodeVm();
    await Promise.all([stopNodeEnv(), stopControlPlane()]);
    await removeLeftCgroupRoots();
  },
};
