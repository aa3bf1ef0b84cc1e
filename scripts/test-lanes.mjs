#!/usr/bin/env node
// `npm test`'s runner: the test files in two mocha processes at once, so the waits of the slow
// node tests (grace periods, certificate lifetimes, back-offs) overlap with the files that need
// no real part.
//
// - The **node lane** runs, one file after another, every file that reaches a real part: the
//   run's one containerd and registry, its one control plane, the node VM. Its kubelets cannot
//   share that containerd at the same time (each removes the managed sandboxes none of its
//   sources wants), so this lane is serial as the whole suite was.
// - The **pure lane** runs the rest (unit tests on fakes, fixtures, fuzzing of parsers) beside
//   it. It starts no real part: `KUBELET_TS_TEST_LANE=pure` makes the shared environment, the
//   control plane and the node VM refuse to start there (test/support/once-per-run.ts), so a file
//   put in the wrong lane fails with a message saying so instead of starting a second containerd.
//   It runs at a lower CPU priority (nice 10): it takes the CPU the node lane leaves idle while
//   it waits, and yields it when the node lane's kubelets, containerd and control plane want it.
//
// A file belongs to the node lane when it imports, directly or through other test modules, one
// of the REAL_PART_MODULES below. The node lane's output streams as it comes; the pure lane's
// is kept in a file and printed after it (so neither interleaves with the other), its path
// printed first in case the run is cut short. Each lane's per-file seconds are merged into one
// summary of the slowest files and the wall time. Exit status: the first failing lane's.
// With arguments (`npm test -- --grep x`, a spec file) it runs one plain mocha with them;
// `node scripts/test-lanes.mjs --lanes` prints which lane each file is on.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, readdirSync, rmSync, createWriteStream } from 'node:fs';
import path from 'node:path';
import os from 'node:os';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(ROOT);
const MOCHA = path.join(ROOT, 'node_modules', '.bin', 'mocha');

/** Test support modules that start or use one of the run's real parts. */
const REAL_PART_MODULES = [
  'node-env', 'control-plane', 'node-vm', 'node-vm-pods', 'containerd-suite', 'cluster-suite', 'csi-storage-suite',
  'csi-real-driver', 'kubelet-process', 'hollow-process', 'cni-exec-env', 'private-registry', 'sample-device-plugin', 'real-part',
].map((m) => `test/support/${m}.ts`);

/** Every test file `npm test` runs (.mocharc.cjs's spec: test/**, but test/vm), sorted as mocha sorts them. */
function testFiles() {
  const out = [];
  const walk = (dir) => {
    for (const e of readdirSync(dir, { withFileTypes: true })) {
      const p = path.join(dir, e.name);
      if (e.isDirectory()) { if (p !== 'test/vm') walk(p); } else if (e.name.endsWith('.test.ts')) out.push(p);
    }
  };
  walk('test');
  return out.sort();
}

/** The relative imports of a test module that stay under test/ (static and dynamic). */
function testImports(file) {
  const src = readFileSync(file, 'utf8');
  const found = [];
  for (const m of src.matchAll(/(?:from\s+|import\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)) {
    const target = path.relative(ROOT, path.resolve(path.dirname(file), m[1]));
    if (target.startsWith(`test${path.sep}`) && existsSync(target)) found.push(target);
  }
  return found;
}

const reachesRealPart = new Map();
/** True if the file is, or imports through test modules, one of the REAL_PART_MODULES. */
function usesRealPart(file, visiting = new Set()) {
  if (REAL_PART_MODULES.includes(file)) return true;
  if (reachesRealPart.has(file)) return reachesRealPart.get(file);
  if (visiting.has(file)) return false;
  visiting.add(file);
  const result = testImports(file).some((f) => usesRealPart(f, visiting));
  reachesRealPart.set(file, result);
  return result;
}

/** Niceness of the pure lane: the node lane's kubelets, containerd and control plane go first. */
const PURE_LANE_NICENESS = 10;

function runMocha(args, env, output, niceness = 0) {
  return new Promise((resolve) => {
    const child = spawn(MOCHA, args, { env: { ...process.env, ...env }, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] });
    // Set before mocha has started anything, so every process it spawns inherits it.
    if (niceness && child.pid) os.setPriority(child.pid, niceness);
    if (output) { child.stdout.pipe(output, { end: false }); child.stderr.pipe(output, { end: false }); }
    children.add(child);
    child.on('exit', (code, signal) => { children.delete(child); resolve(code ?? (signal ? 128 : 1)); });
    child.on('error', (err) => { children.delete(child); process.stderr.write(`test-lanes: ${MOCHA}: ${err.message}\n`); resolve(1); });
  });
}

const children = new Set();
// Mocha stops on SIGINT after its clean-up hooks: pass the signal to both lanes and wait for them.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { for (const c of children) c.kill(sig); process.exitCode = 130; });

const files = testFiles();
const nodeLane = files.filter((f) => usesRealPart(f));
const pureLane = files.filter((f) => !usesRealPart(f));

const passThrough = process.argv.slice(2);
if (passThrough[0] === '--lanes') {
  process.stdout.write(`${[...nodeLane.map((f) => `node ${f}`), ...pureLane.map((f) => `pure ${f}`)].join('\n')}\n`);
  process.exit(0);
}
if (passThrough.length) process.exit(await runMocha(passThrough, {}, undefined));
const work = path.join(os.tmpdir(), `kubelet-ts-test-lanes-${process.pid}`);
mkdirSync(work, { recursive: true });
const timings = { node: path.join(work, 'node-lane.json'), pure: path.join(work, 'pure-lane.json') };
const pureLog = path.join(work, 'pure-lane.log');
const started = Date.now();
process.stdout.write(`npm test: ${nodeLane.length} files on the node lane (real parts, one after another) and ${pureLane.length} on the pure lane beside it; the pure lane's output follows the node lane's (meanwhile in ${pureLog})\n`);

const pureOut = createWriteStream(pureLog);
const [nodeCode, pureCode] = await Promise.all([
  runMocha(['--spec', ...nodeLane], { TEST_TIMINGS: timings.node, KUBELET_TS_TEST_LANE: 'node' }, undefined),
  runMocha(['--spec', ...pureLane], { TEST_TIMINGS: timings.pure, KUBELET_TS_TEST_LANE: 'pure' }, pureOut, PURE_LANE_NICENESS).then((code) => { pureOut.end(); return code; }),
]);
await new Promise((r) => (pureOut.writableFinished ? r() : pureOut.on('finish', r)));

process.stdout.write('\n========== the pure lane (no real parts), run beside the node lane ==========\n');
process.stdout.write(readFileSync(pureLog, 'utf8'));

const rows = [];
for (const [lane, file] of Object.entries(timings)) {
  try { for (const r of JSON.parse(readFileSync(file, 'utf8'))) rows.push({ ...r, lane }); } catch { /* a lane that died early wrote none */ }
}
rows.sort((a, b) => b.seconds - a.seconds);
const sum = (lane) => Math.round(rows.filter((r) => r.lane === lane).reduce((n, r) => n + r.seconds, 0));
const wall = Math.round((Date.now() - started) / 1000);
process.stdout.write(`\n  npm test: ${wall} s wall; node lane ${sum('node')} s in ${nodeLane.length} files (exit ${nodeCode}), pure lane ${sum('pure')} s in ${pureLane.length} files (exit ${pureCode})\n`);
process.stdout.write(`  slowest test files of both lanes:\n${rows.slice(0, 15).map((r) => `  ${r.seconds.toFixed(1).padStart(7)} s  ${String(r.tests).padStart(3)} tests  ${r.lane.padEnd(4)}  ${r.file}`).join('\n')}\n`);
const out = process.env.TEST_TIMINGS;
if (out) {
  const { writeFileSync } = await import('node:fs');
  writeFileSync(out, `${JSON.stringify(rows, null, 1)}\n`);
}
rmSync(work, { recursive: true, force: true });
process.exit(nodeCode || pureCode || process.exitCode || 0);
