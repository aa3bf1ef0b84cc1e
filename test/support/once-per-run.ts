/**
 * Guards a test support module that holds one thing per mocha run (the node environment, the
 * control plane): evaluated twice in one process (once through require(), once through
 * import(), see .mocharc.cjs), the second copy would start a second instance that stops the
 * first one's processes under the tests still using them. Fail loudly instead.
 */
export function claimOncePerRun(module: string): void {
  const key = Symbol.for(`kubelet-ts.test.once-per-run:${module}`);
  const g = globalThis as Record<symbol, unknown>;
  if (g[key]) {
    throw new Error(
      `${module} was evaluated twice in this process (loaded both as CommonJS and as ESM?): ` +
        'the run would start a second instance of what it holds. Load test files with import() only (see .mocharc.cjs).',
    );
  }
  g[key] = true;
}

/**
 * `npm test` runs the files that need no real part on a lane of their own beside the node tests
 * (scripts/test-lanes.mjs, which sorts files by what they import). A file sorted onto that lane
 * that still reaches the run's containerd, control plane or node VM would start a second one
 * under the node lane's: fail it with what to change instead.
 */
/**
 * npm test's runner (scripts/test-lanes.mjs) starts the run's one node environment and control
 * plane in a process of their own (test/support/shared-parts-main.ts) when several mocha
 * processes share them, and names the file that describes them in this variable.
 */
export const SHARED_PARTS_ENV = 'KUBELET_TS_TEST_SHARED_PARTS';

/** The runtimeInstance npm test's runner gives this node lane's test kubelets (undefined: the default). */
export function laneRuntimeInstance(): string | undefined {
  return process.env.KUBELET_TS_TEST_RUNTIME_INSTANCE || undefined;
}

export function refuseOnPureLane(what: string): void {
  if (process.env.KUBELET_TS_TEST_LANE !== 'pure') return;
  throw new Error(
    `${what} was asked for by a test file on npm test's pure lane, which runs beside the node lane and starts no real part. ` +
      'scripts/test-lanes.mjs puts a file on the node lane when it imports one of its REAL_PART_MODULES: import the support module that starts it, or add that module to the list.',
  );
}
