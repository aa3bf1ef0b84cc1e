import { stopNodeEnv } from './node-env.ts';

/**
 * Mocha root hook plugin (loaded by `require` in .mocharc.cjs): after all tests, stop the
 * shared node environment if a test started it. Unit-only runs never start it.
 */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(60_000);
    await stopNodeEnv();
  },
};
