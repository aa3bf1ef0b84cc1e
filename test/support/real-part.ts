import { hostRequirementMissing } from './host-requirement.ts';

/**
 * The rule for a test whose real part (containerd, the control plane, a binary of ../shared, a
 * tool of the machine) is missing: with `CI=true` the test fails, saying what is missing; elsewhere
 * it is skipped with one line saying the same, so a developer's machine without the part still
 * runs the rest. Every "...OrSkip" helper of test/support ends here. A file that imports this
 * module runs on a node lane (scripts/test-lanes.mjs).
 */
export function realPartMissing(ctx: Mocha.Context, what: string, reason: string): never {
  return hostRequirementMissing(ctx, what, reason);
}
