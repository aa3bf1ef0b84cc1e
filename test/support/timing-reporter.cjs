'use strict';
// The spec reporter, and how long each test file took from its first hook to its last
// (`before` hooks that start a control plane or containerd count, which a test's own time does
// not show; the run's one containerd and control plane count in the first file that needs them):
// the slowest files are printed at the end (so in CI's log), and with TEST_TIMINGS=<file> every
// file's seconds go there as JSON. What makes `npm test` slow is then read, not guessed. Plain
// CommonJS: mocha loads reporters with require().
const fs = require('node:fs');
const path = require('node:path');
const Mocha = require('mocha');

const { EVENT_SUITE_BEGIN, EVENT_SUITE_END, EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING, EVENT_RUN_END } = Mocha.Runner.constants;
/** How many of the slowest files the summary lists. */
const SHOWN = 15;

class TimingReporter extends Mocha.reporters.Spec {
  constructor(runner, options) {
    super(runner, options);
    /** file → { startMs, seconds, tests } */
    const files = new Map();
    const fileOf = (runnable) => (runnable.file ? path.relative(process.cwd(), runnable.file) : undefined);
    runner.on(EVENT_SUITE_BEGIN, (suite) => {
      const file = fileOf(suite);
      if (file && !files.has(file)) files.set(file, { startMs: Date.now(), seconds: 0, tests: 0 });
    });
    runner.on(EVENT_SUITE_END, (suite) => {
      const f = files.get(fileOf(suite));
      // A file's suites end one by one; the last end is the file's.
      if (f) f.seconds = (Date.now() - f.startMs) / 1000;
    });
    for (const event of [EVENT_TEST_PASS, EVENT_TEST_FAIL, EVENT_TEST_PENDING]) {
      runner.on(event, (test) => {
        const f = files.get(fileOf(test));
        if (f) f.tests++;
      });
    }
    runner.once(EVENT_RUN_END, () => {
      const rows = [...files.entries()].map(([file, f]) => ({ file, seconds: Math.round(f.seconds * 10) / 10, tests: f.tests })).sort((a, b) => b.seconds - a.seconds);
      const total = rows.reduce((n, r) => n + r.seconds, 0);
      const lines = rows.slice(0, SHOWN).map((r) => `  ${r.seconds.toFixed(1).padStart(7)} s  ${String(r.tests).padStart(3)} tests  ${r.file}`);
      process.stdout.write(`\n  slowest test files (of ${rows.length}, ${Math.round(total)} s in all):\n${lines.join('\n')}\n\n`);
      const out = process.env.TEST_TIMINGS;
      if (out) fs.writeFileSync(out, `${JSON.stringify(rows, null, 1)}\n`);
    });
  }
}

module.exports = TimingReporter;
