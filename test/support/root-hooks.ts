import { stopNodeEnv } from './node-env.ts';
import { stopControlPlane } from './control-plane.ts';

/**
 * Mocha root hook plugin (loaded by `require` in .mocharc.cjs): after all tests, stop the
 * shared node environment and the shared control plane if a test started them. Unit-only runs
 * never start them.
 */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(150_000);
    await Promise.all([stopNodeEnv(), stopControlPlane()]);
  },
};
