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
