'use strict';

// Mocha merges a `spec` given on the command line (`--spec x` or a positional file) with
// the one in this file instead of replacing it, so `npm run test:unit` would run every
// test. Use this file's spec only when the command line names none.
const OPTIONS_WITH_VALUE = new Set(['--require', '-r', '--file', '--config', '--reporter', '-R', '--ignore', '--exclude', '--grep', '-g', '--fgrep', '-f', '--timeout', '-t', '--slow', '-s', '--node-option', '-n', '--reporter-option', '--reporter-options', '-O', '--ui', '-u', '--extension', '--package', '--jobs', '-j', '--retries']);
const args = process.argv.slice(2);
const cliHasSpec = args.some(
  (a, i) =>
    a === '--spec' ||
    a.startsWith('--spec=') ||
    (!a.startsWith('-') && !OPTIONS_WITH_VALUE.has(args[i - 1] ?? '') && /\.[cm]?[jt]s$|[*{]/.test(a) && !/(^|\/)mocha(\.js)?$|cli\.js$/.test(a)),
);

// Mocha runs TypeScript through tsx's ESM loader (`--import=tsx` in the worker node
// process), so spec files and the root hook plugin below are plain .ts modules.
module.exports = {
  // test/vm (the node VM suite, `npm run test:vm`) boots a qemu guest: not part of `npm test`.
  ...(cliHasSpec ? {} : { spec: ['test/**/*.test.ts'], ignore: ['test/vm/**'] }),
  extension: ['ts'],
  // Every spec file is loaded with import(), never require(): Node 20.19+ lets mocha
  // require() a .ts file that tsx turns into CommonJS, falling back to import() only for a
  // file with top-level await, and a module reached both ways is evaluated twice. The test
  // support singletons (one containerd, registry and control plane per run) then exist twice,
  // and the second start kills the first's processes under the tests still using them.
  // (Node versions before the flag existed always load .ts specs with import().)
  // `conditions=kubelet-ts-source`: `import 'kubelet-ts'` in the tests, the built-in plugins
  // and the default config resolves to the SDK's sources, not to the compiled dist/ that
  // package.json `exports` give an installed package (bin/from-sources.mjs says why).
  'node-option': ['import=tsx', 'conditions=kubelet-ts-source', ...(process.allowedNodeEnvironmentFlags.has('--experimental-require-module') ? ['no-experimental-require-module'] : [])],
  // Root hook plugin: stops the shared node environment (containerd, registry) after all
  // tests, if a test started it. Tests must clean up after themselves: no `exit: true`.
  require: ['test/support/root-hooks.ts'],
  timeout: 30000,
  // The spec reporter, plus each test file's duration (the slowest printed; TEST_TIMINGS=<file> for all).
  reporter: 'test/support/timing-reporter.cjs',
};
