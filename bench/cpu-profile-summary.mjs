// Where a .cpuprofile's time went: self time by function and by file, and total (inclusive)
// time by function, in ms of the window. `node bench/cpu-profile-summary.mjs FILE [TOP]`.
import { readFileSync } from 'node:fs';

const [file, topArg] = process.argv.slice(2);
if (!file) {
  console.error('usage: node bench/cpu-profile-summary.mjs FILE.cpuprofile [TOP]');
  process.exit(2);
}
const top = Number(topArg ?? 30);
const profile = JSON.parse(readFileSync(file, 'utf8'));
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const parent = new Map();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);

// Sample counts → ms: each sample stands for the delta that follows it.
const selfMs = new Map();
for (let i = 0; i < profile.samples.length; i++) {
  const dt = (profile.timeDeltas[i + 1] ?? 0) / 1000;
  selfMs.set(profile.samples[i], (selfMs.get(profile.samples[i]) ?? 0) + dt);
}
const totalMs = (profile.endTime - profile.startTime) / 1000;
const short = (url) => url.replace(/^file:\/\//, '').replace(/^.*\/(node_modules\/)/, '$1').replace(/^.*\/dist\//, 'dist/');
const fnName = (n) => `${n.callFrame.functionName || '(anonymous)'} ${short(n.callFrame.url)}:${n.callFrame.lineNumber + 1}`;

const selfByFn = new Map();
const selfByFile = new Map();
const inclByFn = new Map();
let idle = 0;
for (const [id, ms] of selfMs) {
  const n = byId.get(id);
  if (n.callFrame.functionName === '(idle)') {
    idle += ms;
    continue;
  }
  const name = fnName(n);
  selfByFn.set(name, (selfByFn.get(name) ?? 0) + ms);
  const f = n.callFrame.url ? short(n.callFrame.url) : n.callFrame.functionName;
  selfByFile.set(f, (selfByFile.get(f) ?? 0) + ms);
  // Inclusive: once per distinct function on the stack.
  const seen = new Set();
  for (let cur = id; cur !== undefined; cur = parent.get(cur)) {
    const nm = fnName(byId.get(cur));
    if (seen.has(nm)) continue;
    seen.add(nm);
    inclByFn.set(nm, (inclByFn.get(nm) ?? 0) + ms);
  }
}
const busy = totalMs - idle;
const print = (title, m) => {
  console.log(`\n${title}`);
  for (const [k, v] of [...m].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${v.toFixed(1).padStart(9)} ms  ${k}`);
};
console.log(`window ${totalMs.toFixed(0)} ms, busy ${busy.toFixed(0)} ms (${((busy / totalMs) * 100).toFixed(1)} % of one core), idle ${idle.toFixed(0)} ms`);
print('self time by file', selfByFile);
print('self time by function', selfByFn);
print('total time by function', inclByFn);
