/**
 * The rule for a test that needs something of the machine it runs on, but no shared part
 * (Linux's /proc, root to chown): with `CI=true` the test fails, saying what is missing;
 * elsewhere it is skipped with one line saying the same. realPartMissing (real-part.ts) is the
 * same rule for a real part; a file that imports only this one stays on npm test's pure lane,
 * since it reaches nothing another lane uses (scripts/test-lanes.mjs, REAL_PART_MODULES).
 */
export function hostRequirementMissing(ctx: Mocha.Context, what: string, reason: string): never {
  if (process.env.CI === 'true') throw new Error(`CI=true and ${what}: ${reason}`);
  process.stderr.write(`      skipped (${what}): ${reason}\n`);
  ctx.skip();
  // ctx.skip() throws mocha's Pending; this line is for the type checker.
  throw new Error('unreachable');
}
