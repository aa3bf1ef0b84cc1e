#!/usr/bin/env node
/**
 * One-off (issue 38 part 4): moves the README's sections, unchanged, into docs/ by reader and
 * fixes the relative links and anchors that moved. Kept in history so a README edited in
 * parallel can be split again the same way: `node tools/split-readme.mjs OLD-README.md` (the
 * README as it was before the split, with the parallel edits) writes docs/ again (the
 * handwritten docs/operating/README.md and troubleshooting.md stay, the latter with the moved
 * explain text replaced), fixes the plugins' READMEs, and leaves the README's own part (the
 * intro and "Two commands") in README.head.md, for the short README's head.
 */
import { readFileSync, readdirSync, writeFileSync, mkdirSync, existsSync } from 'node:fs';
import { dirname, join, resolve, posix } from 'node:path';

const ROOT = resolve(dirname(new URL(import.meta.url).pathname), '..');
const src = readFileSync(resolve(process.argv[2] ?? join(ROOT, 'README.md')), 'utf8').split('\n');

/** Where each top section goes: its heading text, the file, how many levels its headings go up. */
const MOVES = [
  ['Running it on a node', 'docs/operating/node.md', 1],
  ['As a node of a cluster (API-server mode)', 'docs/operating/api-server.md', 2],
  ['Running it on a kubeadm node', 'docs/operating/kubeadm.md', 2],
  ['The kubelet API: the main port, the read-only port, the local socket', 'docs/operating/kubelet-api.md', 2],
  ['What a pod gets', 'docs/operating/pods.md', 2],
  ['Image credential providers', 'docs/operating/credential-providers.md', 2],
  ['Configuration', 'docs/operating/configuration.md', 1],
  ['Plugins', 'docs/plugins.md', 1],
  ['Volumes', 'docs/operating/volumes.md', 1],
  ['Device plugins and the podresources API', 'docs/operating/device-plugins.md', 1],
  ['Security and reliability', 'docs/operating/security-and-reliability.md', 1],
  ['Layout', 'docs/contributing.md', 0],
  ['Hollow nodes: a cluster at scale without machines', 'docs/operating/hollow-nodes.md', 1],
  ['Benchmarks', 'docs/contributing.md', 0],
  ['Tests', 'docs/contributing.md', 0],
  ['Conformance', 'docs/contributing.md', 0],
];
/** Headings added (at the level given, after the file's shift) before a paragraph that starts so. */
const INSERTS = [
  ['Capability slots: ', '## Capability slots and the bundled plugins'],
  ['Hooks (`core/hooks.ts`', '## Hooks'],
  ['**Install the package**', '### Installing the SDK'],
  ['The walk-through is [', '### A walk-through: a volume plugin and its contract suites'],
  ['**Providing image credentials**', '### Providing image credentials'],
  ['**A config file of the node\'s own**', '## A config file of the node\'s own'],
  ['**As a systemd service**', '## As a systemd service'],
  ['**After an etcd restore (or wipe)**', '## After an etcd restore (or wipe)'],
  ['**Kubeconfig credentials**', '## Kubeconfig credentials'],
  ['**Build before running it on a node:**', '### Build before running it on a node'],
  ['**Swapping the binary**', '## Swapping the binary'],
  ['**The plugins**', '## The plugins'],
  ['**What it says at start.**', '## What it says at start'],
  ['**Cgroup drivers and versions.**', '## Cgroup drivers and versions'],
  ['**Graceful node shutdown**', '## Graceful node shutdown'],
  ['**Joining with a bootstrap token, to Ready**', '## Joining with a bootstrap token, to Ready'],
  ['**Upstream settings kubelet-ts does not implement yet**', '## Upstream settings kubelet-ts does not implement yet'],
  ['**The main port**', '## The main port'],
  ['**Turning the main port off.**', '## Turning the main port off'],
  ['**The read-only port**', '## The read-only port'],
  ['**The local socket**', '## The local socket'],
  ['`kubelet-ts pods [NAME...]', '## `kubelet-ts pods`'],
  ['**Image pull progress**', '## Image pull progress'],
  ['`kubelet-ts logs POD [-c CONTAINER]', '## `kubelet-ts logs`'],
  ['**Persistent volumes**', '## Persistent volumes'],
  ['**A device provider in-process**', '## A device provider in-process'],
  ['**The podresources API**', '## The podresources API'],
];
/**
 * Text moved out of its section to the handwritten troubleshooting page: from the line that
 * starts so to the end of its section, replacing what that page's heading holds.
 */
const DIVERT = {
  start: '`kubelet-ts explain POD [-n NAMESPACE]',
  from: 'docs/operating/kubelet-api.md',
  to: 'docs/operating/troubleshooting.md',
  heading: '## Where the pod\'s start spent its time (`kubelet-ts explain`)',
  pointer: '`kubelet-ts explain` (where a pod\'s start spent its time) and `kubelet-ts events`: see\n[Troubleshooting](docs/operating/troubleshooting.md).', // a link from the root, as the README's are
};

export function anchor(heading) {
  return heading.trim().toLowerCase().replace(/[^\p{L}\p{N}\s_-]/gu, '').replace(/\s/g, '-');
}

// Cut the README into [file, lines] chunks at the moved headings, outside code fences.
let fence = false;
let file = 'README.md';
let shift = 0;
const out = new Map([['README.md', []]]);
const where = new Map(); // anchor -> file
for (const line of src) {
  if (/^\s*(```|~~~)/.test(line)) fence = !fence;
  const h = !fence && /^(#+) (.*)$/.exec(line);
  let text = line;
  if (h) {
    const move = MOVES.find(([t]) => t === h[2]);
    if (move) [, file, shift] = move;
    text = `${'#'.repeat(Math.max(1, h[1].length - (file === 'README.md' ? 0 : shift)))} ${h[2]}`;
    where.set(anchor(h[2]), file);
  }
  if (!fence && file === DIVERT.from && line.startsWith(DIVERT.start)) file = DIVERT.to;
  if (!out.has(file)) out.set(file, []);
  const ins = !fence && INSERTS.find(([start]) => line.startsWith(start));
  if (ins && ins[1]) {
    out.get(file).push(ins[1], '');
    where.set(anchor(ins[1].replace(/^#+ /, '')), file);
  }
  out.get(file).push(text);
}

/** A link of `from` (a path from the root) to `target` as written in the README. */
function relink(from, target) {
  if (/^[a-z]+:/i.test(target)) return target;
  const [path, frag] = target.split('#');
  const inRoot = path === '' ? 'README.md' : path;
  let dest = inRoot;
  if (frag !== undefined && (inRoot === 'README.md') && where.has(frag)) dest = where.get(frag);
  const rel = dest === from ? '' : posix.relative(posix.dirname(from), dest);
  // A link to a moved section's own heading is a link to its file.
  if (rel !== '' && frag !== undefined && MOVES.some(([t, f, s]) => f === dest && s > 0 && anchor(t) === frag)) return rel;
  return `${rel}${frag !== undefined ? `#${frag}` : ''}`;
}

function rewrite(from, text) {
  return text.replace(/\]\(([^)\s]+)\)/g, (_, t) => `](${relink(from, t)})`);
}

const TITLES = { 'docs/contributing.md': 'Contributing' };

/** The file's H1 (added where it has none), then a short table of contents of its ## and ### headings. */
function withContents(f, text) {
  if (TITLES[f]) text = `# ${TITLES[f]}\n\n${text}`;
  const lines = text.split('\n');
  const toc = [];
  let inFence = false;
  for (const l of lines) {
    if (/^\s*(```|~~~)/.test(l)) inFence = !inFence;
    const h = !inFence && /^(##+) (.*)$/.exec(l);
    if (h && h[1].length <= 3) toc.push(`${'  '.repeat(h[1].length - 2)}- [${h[2].replace(/`/g, '')}](#${anchor(h[2])})`);
  }
  if (toc.length === 0) return text;
  return [lines[0], '', 'Contents:', '', ...toc, ...lines.slice(1)].join('\n');
}

const diverted = out.get(DIVERT.to) ?? [];
out.delete(DIVERT.to);
if (diverted.length > 0) out.get(DIVERT.from).push('', DIVERT.pointer);
const page = join(ROOT, DIVERT.to);
if (diverted.length > 0 && existsSync(page)) {
  const text = readFileSync(page, 'utf8');
  const a = text.indexOf(`${DIVERT.heading}\n`);
  const b = text.indexOf('\n## ', a + 1);
  if (a < 0 || b < 0) throw new Error(`${DIVERT.to}: no section ${DIVERT.heading}`);
  const moved = rewrite(DIVERT.to, diverted.join('\n').replace(/\n+$/, ''));
  writeFileSync(page, `${text.slice(0, a)}${DIVERT.heading}\n\n${moved}\n${text.slice(b)}`);
}

for (const [f, lines] of out) {
  if (f === 'README.md') continue;
  const body = withContents(f, rewrite(f, lines.join('\n').replace(/\n+$/, ''))) + '\n';
  mkdirSync(join(ROOT, dirname(f)), { recursive: true });
  writeFileSync(join(ROOT, f), body);
}
writeFileSync(join(ROOT, 'README.head.md'), rewrite('README.md', out.get('README.md').join('\n')));
// The plugins' READMEs link into the README's sections.
for (const p of ['plugins', 'examples']) {
  for (const d of existsSync(join(ROOT, p)) ? readdirSync(join(ROOT, p)) : []) {
    const f = `${p}/${d}/README.md`;
    if (!existsSync(join(ROOT, f))) continue;
    const text = readFileSync(join(ROOT, f), 'utf8');
    const fixed = text.replace(/\]\(((?:\.\.\/)+)README\.md#([^)\s]+)\)/g, (m, up, frag) => {
      const dest = where.get(frag);
      return dest ? `](${relink(f, `README.md#${frag}`)})` : m;
    });
    if (fixed !== text) writeFileSync(join(ROOT, f), fixed);
  }
}
console.log([...out.keys()].join('\n'));
