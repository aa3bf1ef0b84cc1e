#!/usr/bin/env node
// `npm test`'s runner: the test files in several mocha processes at once. The node tests mostly
// wait (grace periods, certificate lifetimes, probe periods, back-offs: the 2 cores were 24 %
// busy through a serial run), so files that wait run beside each other.
//
// - The **pure lane** runs the files that reach no real part (unit tests on fakes, fixtures,
//   fuzzing of parsers) beside the node lanes (after the ALONE files), at nice 10: it takes the
//   CPU the node lanes leave idle.
//   `KUBELET_TS_TEST_LANE=pure` makes the node environment, the control plane and the node VM
//   refuse to start there (test/support/once-per-run.ts), so a file put on the wrong lane fails
//   saying so instead of starting a second containerd.
// - The **node lanes** run the files that reach a real part: the run's one containerd and
//   registry and its one control plane, which a process of their own holds
//   (test/support/shared-parts-main.ts) and every node lane attaches to. First the files that
//   must have the node to themselves (ALONE: they freeze containerd, load the machine on purpose,
//   remove images or run upstream's kubelet, which owns the whole runtime) run one after
//   another; then the rest in NODE_LANES mocha processes side by side. Test kubelets on two
//   lanes would each remove the other's pods as orphans, so each lane but the first gives its
//   kubelets a `runtimeInstance` of its own (KUBELET_TS_TEST_RUNTIME_INSTANCE, read by the test
//   support that starts kubelets); files that start kubelets some other way (FIRST_LANE) run on
//   the first lane, whose kubelets keep the default instance.
//
// A file is a node file when it imports, directly or through other test modules, one of the
// REAL_PART_MODULES. Files are dealt to the node lanes longest first by test/lane-timings.json
// (seconds per file from a measured run; a file not in it counts 5 s per test). The first node
// lane's output streams as it comes; the other lanes' are kept in files and printed after it,
// their paths printed first in case the run is cut short. Every lane's per-file seconds are
// merged into one summary, and a failed lane's failures are printed again last. Exit status: the first failing lane's.
//
// `TEST_NODE_LANES=1` runs the node files in one mocha process as before (no shared-parts
// process); `TEST_FILES=<regex>` runs only the matching files, each in its lane; with arguments (`npm test -- --grep x`, a spec file) it runs one plain mocha with
// them; `node scripts/test-lanes.mjs --lanes` prints the lane of each file.
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

const ROOT = path.resolve(path.dirname(new URL(import.meta.url).pathname), '..');
process.chdir(ROOT);
const MOCHA = path.join(ROOT, 'node_modules', '.bin', 'mocha');
const NODE_LANES = Math.max(1, Number(process.env.TEST_NODE_LANES ?? 2) || 1);
/** Niceness of the pure lane: the node lanes' kubelets, containerd and control plane go first. */
const PURE_LANE_NICENESS = 10;

/** Test support modules that start or use one of the run's real parts. */
const REAL_PART_MODULES = [
  'node-env', 'control-plane', 'node-vm', 'node-vm-pods', 'containerd-suite', 'cluster-suite', 'csi-storage-suite',
  'csi-real-driver', 'kubelet-process', 'hollow-process', 'cni-exec-env', 'private-registry', 'sample-device-plugin', 'real-part',
].map((m) => `test/support/${m}.ts`);

/** Node files that run with nothing beside them on the node, and why. */
const ALONE = {
  'test/integration/hardening.test.ts': 'freezes the run\'s containerd (SIGSTOP)',
  'test/integration/bench-smoke.test.ts': 'runs upstream\'s kubelet, which owns the whole runtime, and measures',
  'test/integration/eviction-image-gc.test.ts': 'the image GC removes images other lanes pull',
  'test/integration/eviction.test.ts': 'fills memory and disk to make the node\'s pressure',
  'test/security/huge-pod.test.ts': 'starts 200 containers at once',
  'test/security/main-port-flood.test.ts': 'floods the main port and bounds the kubelet\'s RSS',
  'test/security/etcd-wipe.test.ts': 'a control plane of its own, wiped and restarted',
  'test/fuzz/kubelet-fuzz.test.ts': 'bounds the kubelet\'s RSS under fuzzing',
  'test/integration/eviction-log-rotation.test.ts': 'floods a log and bounds the files on disk in time',
};
/**
 * Node files that run on the first lane: their kubelets do not get the lane's runtimeInstance
 * (started by the CLI, up.sh, kubeadm-style flags, an inner mocha), or they share something of
 * the host or the cluster that two lanes cannot use at once: upstream's fixed device plugin
 * socket (/var/lib/kubelet/device-plugins, the default bundle's: kubeadm-node, tls-bootstrap)
 * and the cluster's one CSIDriver object of the hostpath driver, made and deleted by each of the
 * CSI claim files.
 */
const FIRST_LANE = [
  'test/integration/restart-adoption.test.ts', 'test/integration/kubeadm-node.test.ts', 'test/integration/operator-up.test.ts',
  'test/integration/example-plugin.test.ts', 'test/integration/npm-package.test.ts', 'test/integration/api-node.test.ts',
  'test/integration/node-env.test.ts', 'test/integration/tls-bootstrap.test.ts',
  'test/integration/csi-persistent-volume.test.ts', 'test/integration/csi-volume-expansion.test.ts',
];

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

/** Seconds a file is expected to take: test/lane-timings.json, or 5 s a test. */
function weights(files) {
  let measured = {};
  try { measured = JSON.parse(readFileSync('test/lane-timings.json', 'utf8')); } catch { /* none: estimates only */ }
  return new Map(files.map((f) => [f, measured[f] ?? 5 * Math.max(1, (readFileSync(f, 'utf8').match(/\bit\(/g) ?? []).length)]));
}

/** The node files dealt to `lanes` lanes, longest first to the least loaded; FIRST_LANE files to the first. */
function dealNodeFiles(files, lanes) {
  const w = weights(files);
  const out = Array.from({ length: lanes }, () => ({ files: [], seconds: 0 }));
  const put = (lane, f) => { lane.files.push(f); lane.seconds += w.get(f); };
  for (const f of files.filter((f) => FIRST_LANE.includes(f))) put(out[0], f);
  for (const f of files.filter((f) => !FIRST_LANE.includes(f)).sort((a, b) => w.get(b) - w.get(a))) {
    put(out.reduce((min, l) => (l.seconds < min.seconds ? l : min)), f);
  }
  for (const l of out) l.files.sort();
  return out;
}

const children = new Set();
// Mocha stops on SIGINT after its clean-up hooks: pass the signal on and wait for everyone.
for (const sig of ['SIGINT', 'SIGTERM']) process.on(sig, () => { for (const c of children) c.kill(sig); process.exitCode = 130; });

function track(child) {
  children.add(child);
  child.on('exit', () => children.delete(child));
  return child;
}

/**
 * Runs one mocha. `output` keeps its output in a file; `tee` (with `output`) streams it too, so
 * a streamed lane's failures can be printed again at the end of the run, where a CI log's tail
 * shows them.
 */
function runMocha(args, env, output, niceness = 0, tee = false) {
  return new Promise((resolve) => {
    const colour = tee && process.stdout.isTTY ? ['--color'] : [];
    const child = track(spawn(MOCHA, [...colour, ...args], { env: { ...process.env, ...env }, stdio: ['ignore', output ? 'pipe' : 'inherit', output ? 'pipe' : 'inherit'] }));
    // Set before mocha has started anything, so every process it spawns inherits it.
    if (niceness && child.pid) os.setPriority(child.pid, niceness);
    if (output) { child.stdout.pipe(output, { end: false }); child.stderr.pipe(output, { end: false }); }
    if (output && tee) { child.stdout.pipe(process.stdout, { end: false }); child.stderr.pipe(process.stderr, { end: false }); }
    child.on('exit', (code, signal) => resolve(code ?? (signal ? 128 : 1)));
    child.on('error', (err) => { process.stderr.write(`test-lanes: ${MOCHA}: ${err.message}\n`); resolve(1); });
  });
}

/** Starts the shared-parts process; resolves with its handle once it is ready, or undefined (its error printed) if it could not start. */
function startSharedParts(file, logFile) {
  const flags = ['--import=tsx', '--conditions=kubelet-ts-source', ...(process.allowedNodeEnvironmentFlags.has('--experimental-require-module') ? ['--no-experimental-require-module'] : [])];
  const log = createWriteStream(logFile);
  const child = track(spawn(process.execPath, [...flags, 'test/support/shared-parts-main.ts', file], { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...portSlot(0) } }));
  child.stderr.pipe(log, { end: false });
  const exited = new Promise((r) => child.on('exit', (code, signal) => { log.end(); r(code ?? signal); }));
  return new Promise((resolve) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('ready\n')) resolve({ stop: async () => { child.kill('SIGTERM'); await exited; } });
    });
    exited.then((how) => {
      if (!out.includes('ready\n')) {
        process.stdout.write(`npm test: the shared containerd, registry and control plane did not start (exit ${how}): ${readFileSync(logFile, 'utf8').trim().split('\n').slice(-5).join(' | ')}\nnpm test: the node files run in one lane, which starts them itself (and says why not)\n`);
        resolve(undefined);
      }
    });
  });
}

// TEST_FILES=<regular expression>: only the files whose path matches, in their lanes as in a whole run.
const files = testFiles().filter((f) => !process.env.TEST_FILES || new RegExp(process.env.TEST_FILES).test(f));
const nodeFiles = files.filter((f) => usesRealPart(f));
const pureFiles = files.filter((f) => !usesRealPart(f));
const aloneFiles = nodeFiles.filter((f) => f in ALONE);
const sharedFiles = nodeFiles.filter((f) => !(f in ALONE));

const args = process.argv.slice(2);
if (args[0] === '--lanes') {
  const lanes = dealNodeFiles(sharedFiles, NODE_LANES);
  const lines = [...aloneFiles.map((f) => `alone ${f}`), ...lanes.flatMap((l, i) => l.files.map((f) => `node${i + 1} ${f}`)), ...pureFiles.map((f) => `pure ${f}`)];
  process.stdout.write(`${lines.join('\n')}\n`);
  process.exit(0);
}
if (args.length) process.exit(await runMocha(args, {}, undefined));

const work = path.join(os.tmpdir(), `kubelet-ts-test-lanes-${process.pid}`);
mkdirSync(work, { recursive: true });
const started = Date.now();
const results = [];
/** Runs a lane: `log` undefined streams it (and keeps it in the lane's `.streamed.log`), else its output is kept there. */
async function lane(name, laneFiles, env, { log, niceness } = {}) {
  if (!laneFiles.length) return 0;
  const timings = path.join(work, `${name}.json`);
  const streamed = log ? undefined : path.join(work, `${name}.streamed.log`);
  const out = createWriteStream(log ?? streamed);
  const code = await runMocha(['--spec', ...laneFiles], { TEST_TIMINGS: timings, ...env }, out, niceness, !log);
  await new Promise((r) => out.end(r));
  results.push({ name, code, files: laneFiles.length, log, streamed, timings });
  return code;
}

/** The lines a failed lane's mocha ended with: from its last "N failing" on (at most 200 lines), or its last 40 lines if it never got there. */
function failureBlock(file) {
  let lines;
  try { lines = readFileSync(file, 'utf8').split('\n'); } catch { return '(its output is gone)'; }
  let at = -1;
  for (let i = lines.length - 1; i >= 0; i--) if (/^\s+\d+ failing/.test(lines[i])) { at = i; break; }
  const block = at >= 0 ? lines.slice(at, at + 200) : lines.slice(-40);
  return block.join('\n').trimEnd();
}

const pureLog = path.join(work, 'pure-lane.log');
let pure = Promise.resolve(0);
// Each process that runs beside others picks its ports from its own slice (tools/node-env/util.ts
// freePort): slot 0 the shared parts, 1..NODE_LANES the node lanes (the alone lane, which runs
// before them, shares the first's), the last the pure lane.
const PORT_SLOTS = NODE_LANES + 2;
const portSlot = (i) => ({ KUBELET_TS_PORT_SLOT: `${i}/${PORT_SLOTS}` });
const startPure = () => { pure = lane('pure', pureFiles, { KUBELET_TS_TEST_LANE: 'pure', ...portSlot(PORT_SLOTS - 1) }, { log: pureLog, niceness: PURE_LANE_NICENESS }); };

let nodeCode = 0;
// No node file selected (TEST_FILES naming pure files): nothing needs containerd, the registry or
// the control plane, so none is started (they take ~18 s and load the machine).
if (NODE_LANES === 1 || !nodeFiles.length) {
  process.stdout.write(`npm test: ${nodeFiles.length} node files in one lane, ${pureFiles.length} pure files beside it (their output after, meanwhile in ${pureLog})\n`);
  startPure();
  nodeCode = await lane('node', nodeFiles, { KUBELET_TS_TEST_LANE: 'node', ...portSlot(1) });
} else {
  const sharedFile = path.join(work, 'shared-parts.json');
  const shared = await startSharedParts(sharedFile, path.join(work, 'shared-parts.log'));
  if (!shared) {
    startPure();
    nodeCode = await lane('node', nodeFiles, { KUBELET_TS_TEST_LANE: 'node', ...portSlot(1) });
  } else {
    const lanes = dealNodeFiles(sharedFiles, NODE_LANES);
    const logs = lanes.map((_, i) => (i === 0 ? undefined : path.join(work, `node${i + 1}-lane.log`)));
    process.stdout.write(`npm test: ${aloneFiles.length} node files alone first, then ${sharedFiles.length} in ${NODE_LANES} lanes side by side (${lanes.map((l) => `${l.files.length} files, ~${Math.round(l.seconds)} s`).join('; ')}) with ${pureFiles.length} pure files beside them; the output of the first node lane streams, the others follow it (meanwhile in ${[...logs.filter(Boolean), pureLog].join(', ')})\n`);
    const env = { KUBELET_TS_TEST_LANE: 'node', KUBELET_TS_TEST_SHARED_PARTS: sharedFile };
    try {
      const alone = await lane('alone', aloneFiles, { ...env, ...portSlot(1) });
      // The pure lane starts with the node lanes, which mostly wait, not beside the alone files,
      // which load the machine on purpose: at nice 10 there, its timing tests were starved (a
      // 120 ms pause in a test took longer than the 300 ms it was measured against).
      startPure();
      const codes = await Promise.all(lanes.map((l, i) => lane(`node${i + 1}`, l.files, { ...env, ...portSlot(i + 1), ...(i > 0 ? { KUBELET_TS_TEST_RUNTIME_INSTANCE: `test-lane-${i + 1}-${process.pid}` } : {}) }, { log: logs[i] })));
      nodeCode = alone || codes.find((c) => c) || 0;
    } finally {
      await shared.stop();
    }
  }
}
const pureCode = await pure;

for (const r of results.filter((r) => r.log)) {
  process.stdout.write(`\n========== lane ${r.name} (${r.files} files, exit ${r.code}), run beside the others ==========\n`);
  process.stdout.write(readFileSync(r.log, 'utf8'));
}

const rows = [];
for (const r of results) {
  try { for (const row of JSON.parse(readFileSync(r.timings, 'utf8'))) rows.push({ ...row, lane: r.name }); } catch { /* a lane that died early wrote none */ }
}
rows.sort((a, b) => b.seconds - a.seconds);
const wall = Math.round((Date.now() - started) / 1000);
const perLane = results.map((r) => `${r.name} ${Math.round(rows.filter((x) => x.lane === r.name).reduce((n, x) => n + x.seconds, 0))} s in ${r.files} files (exit ${r.code})`);
process.stdout.write(`\n  npm test: ${wall} s wall; ${perLane.join('; ')}\n`);
process.stdout.write(`  slowest test files of all lanes:\n${rows.slice(0, 15).map((r) => `  ${r.seconds.toFixed(1).padStart(7)} s  ${String(r.tests).padStart(3)} tests  ${r.lane.padEnd(5)}  ${r.file}`).join('\n')}\n`);
// A failed lane's failures again, last: the streamed lanes' scroll far above the summary.
for (const r of results.filter((r) => r.code !== 0)) {
  process.stdout.write(`\n========== the failures of lane ${r.name} (exit ${r.code}) ==========\n${failureBlock(r.log ?? r.streamed)}\n`);
}
if (process.env.TEST_TIMINGS) writeFileSync(process.env.TEST_TIMINGS, `${JSON.stringify(rows, null, 1)}\n`);
rmSync(work, { recursive: true, force: true });
process.exit(nodeCode || pureCode || process.exitCode || 0);
