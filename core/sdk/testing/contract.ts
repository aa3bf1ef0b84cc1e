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

/** Runs the rules in order; a broken rule does not stop the others. */
export async function runContract<S>(rules: ReadonlyArray<ContractRule<S>>, subject: S): Promise<ContractFailure[]> {
  const failures: ContractFailure[] = [];
  for (const rule of rules) {
    try {
      await rule.run(subject);
    } catch (err) {
      failures.push({ rule: rule.name, message: (err as Error)?.message ?? String(err) });
    }
  }
  return failures;
}

/** The BDD globals the describe* suites use (mocha's; any runner with the same globals works). */
export interface BddGlobals {
  describe(title: string, fn: (this: { timeout(ms: number): void }) => void): void;
  it(title: string, fn: () => Promise<void>): void;
  before(fn: () => Promise<void>): void;
  after(fn: () => Promise<void>): void;
}

/** The runner's globals; a clear error outside a test runner (use the check* functions there). */
export function bdd(): BddGlobals {
  const g = globalThis as unknown as Partial<BddGlobals>;
  if (typeof g.describe !== 'function' || typeof g.it !== 'function' || typeof g.before !== 'function' || typeof g.after !== 'function') {
    throw new Error('the describe* contract suites run inside mocha (describe/it/before/after globals); outside a test runner, call checkRuntimeContract / checkVolumeContract');
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
): void {
  const { describe, it, before, after } = bdd();
  describe(title, function () {
    this.timeout(60_000);
    let sc: C | undefined;
    before(async () => {
      sc = scenario(await make());
    });
    after(async () => {
      if (sc !== undefined) await sweep(sc);
      await teardown?.();
    });
    for (const rule of rules) {
      it(rule.name, async () => {
        if (sc === undefined) throw new Error('the contract subject could not be made (see the before hook)');
        await rule.run(sc);
      });
    }
  });
}
