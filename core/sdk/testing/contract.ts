/** One promise a plugin makes to the core, checked by running `run` against a subject; it throws when broken. */
export interface ContractRule<S> {
  /** The rule in words: the name of its test, and what a failure reports. */
  name: string;
  run(subject: S): Promise<void>;
}

/** A rule the subject broke, and how. */
export interface ContractFailure {
  rule: string;
  message: string;
}

// Recognised by a registry-wide symbol, as coded errors are: a vendor's copy of this module throws it too.
const NOT_APPLICABLE = Symbol.for('kubelet-ts.contract.RuleNotApplicable');

/**
 * Thrown by a rule about something the subject says it does not offer (a network plugin without
 * `check`): the rule is skipped, with the reason, rather than failed or silently passed.
 */
export class RuleNotApplicable extends Error {
  readonly [NOT_APPLICABLE] = true;
  constructor(reason: string) {
    super(reason);
    this.name = 'RuleNotApplicable';
  }
}

function isNotApplicable(err: unknown): err is RuleNotApplicable {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[NOT_APPLICABLE] === true;
}

/** Runs the rules in order; a broken rule does not stop the others, a rule that does not apply is no failure. */
export async function runContract<S>(rules: ReadonlyArray<ContractRule<S>>, subject: S): Promise<ContractFailure[]> {
  const failures: ContractFailure[] = [];
  for (const rule of rules) {
    try {
      await rule.run(subject);
    } catch (err) {
      if (isNotApplicable(err)) continue;
      failures.push({ rule: rule.name, message: (err as Error)?.message ?? String(err) });
    }
  }
  return failures;
}

/** A contract run outside mocha: the subject's scenario made, every rule run, what the rules made swept; returns the broken rules. */
export async function checkContract<S, C>(rules: ReadonlyArray<ContractRule<C>>, subject: S, scenario: (subject: S) => C, sweep: (scenario: C) => Promise<void>): Promise<ContractFailure[]> {
  const sc = scenario(subject);
  try {
    return await runContract(rules, sc);
  } finally {
    await sweep(sc);
  }
}

/** The BDD globals the describe* suites use (mocha's; any runner with the same globals works). */
export interface BddGlobals {
  describe(title: string, fn: (this: { timeout(ms: number): void }) => void): void;
  it(title: string, fn: (this: { skip(): void }) => Promise<void>): void;
  before(fn: () => Promise<void>): void;
  after(fn: () => Promise<void>): void;
}

/** The runner's globals; a clear error outside a test runner (use the check* functions there). */
export function bdd(): BddGlobals {
  const g = globalThis as unknown as Partial<BddGlobals>;
  if (typeof g.describe !== 'function' || typeof g.it !== 'function' || typeof g.before !== 'function' || typeof g.after !== 'function') {
    throw new Error('the describe* contract suites run inside mocha (describe/it/before/after globals); outside a test runner, call checkRuntimeContract / checkVolumeContract / checkNetworkContract');
  }
  return g as BddGlobals;
}

/** One suite of a contract: a test per rule, the subject made once before, swept after. */
export function describeContract<S, C>(
  title: string,
  rules: ReadonlyArray<ContractRule<C>>,
  make: () => Promise<S>,
  scenario: (subject: S) => C,
  sweep: (scenario: C) => Promise<void>,
  teardown?: () => Promise<void>,
  opts: { timeoutMs?: number } = {},
): void {
  const { describe, it, before, after } = bdd();
  describe(title, function () {
    this.timeout(opts.timeoutMs ?? 60_000);
    let sc: C | undefined;
    before(async () => {
      sc = scenario(await make());
    });
    after(async () => {
      if (sc !== undefined) await sweep(sc);
      await teardown?.();
    });
    for (const rule of rules) {
      it(rule.name, async function () {
        if (sc === undefined) throw new Error('the contract subject could not be made (see the before hook)');
        try {
          await rule.run(sc);
        } catch (err) {
          if (!isNotApplicable(err)) throw err;
          // mocha's skip takes no reason: say it, as the repository's other skips do.
          process.stderr.write(`      skipped (${rule.name}): ${err.message}\n`);
          this.skip();
        }
      });
    }
  });
}
