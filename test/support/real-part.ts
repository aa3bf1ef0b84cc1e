/**
 * The rule for a test whose real part (containerd, the control plane, a binary of ../shared, a
 * tool of the machine) is missing: with `CI=true` the test fails, saying what is missing; elsewhere
 * it is skipped with one line saying the same, so a developer's machine without the part still
 * runs the rest. Every "...OrSkip" helper of test/support ends here.
 */
export function realPartMissing(ctx: Mocha.Context, what: string, reason: string): never {
  if (process.env.CI === 'true') throw new Error(`CI=true and ${what}: ${reason}`);
  process.stderr.write(`      skipped (${what}): ${reason}\n`);
  ctx.skip();
  // ctx.skip() throws mocha's Pending; this line is for the type checker.
  throw new Error('unreachable');
}
