#!/usr/bin/env node
// Where a heap snapshot's bytes are: `node bench/heap-snapshot-summary.mjs FILE [TOP]` prints the
// live heap by V8 node type (code, strings, objects, ...), the TOP (30) largest groups by type
// and constructor, and the largest strings by their first characters (a module's source text
// shows as its first line). With a second snapshot, `... BEFORE AFTER [TOP]` prints what grew
// from one to the other. Self sizes only: retained sizes need the graph, which DevTools draws.
import { readFileSync } from 'node:fs';

function groups(file) {
  const snap = JSON.parse(readFileSync(file, 'utf8'));
  const fields = snap.snapshot.meta.node_fields;
  const types = snap.snapshot.meta.node_types[0];
  const width = fields.length;
  const [ti, ni, si] = ['type', 'name', 'self_size'].map((f) => fields.indexOf(f));
  const byType = new Map();
  const byGroup = new Map();
  const bigStrings = [];
  const add = (map, key, size) => {
    const g = map.get(key) ?? { size: 0, count: 0 };
    g.size += size;
    g.count++;
    map.set(key, g);
  };
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i + ti]];
    const name = snap.strings[snap.nodes[i + ni]];
    const size = snap.nodes[i + si];
    add(byType, type, size);
    add(byGroup, ['object', 'closure', 'native', 'hidden', 'array'].includes(type) ? `${type}: ${name.slice(0, 60)}` : type, size);
    if (type === 'string' && size > 16_384) bigStrings.push({ size, head: name.slice(0, 80).replace(/\s+/g, ' ') });
  }
  return { byType, byGroup, bigStrings };
}

const mib = (b) => (b / 2 ** 20).toFixed(2);
const sorted = (map) => [...map].sort((a, b) => b[1].size - a[1].size);
const args = process.argv.slice(2);
const top = /^\d+$/.test(args.at(-1) ?? '') ? Number(args.pop()) : 30;
if (args.length === 1) {
  const { byType, byGroup, bigStrings } = groups(args[0]);
  console.log(`live heap ${mib([...byType.values()].reduce((a, g) => a + g.size, 0))} MiB`);
  for (const [type, g] of sorted(byType)) console.log(`  ${type.padEnd(22)} ${mib(g.size).padStart(7)} MiB  ${g.count}`);
  console.log(`\nlargest groups (type: constructor)`);
  for (const [key, g] of sorted(byGroup).slice(0, top)) console.log(`  ${mib(g.size).padStart(7)} MiB  ${String(g.count).padStart(7)}  ${key}`);
  bigStrings.sort((a, b) => b.size - a.size);
  console.log(`\nstrings over 16 KiB: ${bigStrings.length}, ${mib(bigStrings.reduce((a, s) => a + s.size, 0))} MiB`);
  for (const s of bigStrings.slice(0, top)) console.log(`  ${String(Math.round(s.size / 1024)).padStart(5)} KiB  ${s.head}`);
} else if (args.length === 2) {
  const [a, b] = args.map((f) => groups(f).byGroup);
  const keys = [...new Set([...a.keys(), ...b.keys()])];
  const delta = (k) => (b.get(k)?.size ?? 0) - (a.get(k)?.size ?? 0);
  keys.sort((x, y) => delta(y) - delta(x));
  console.log(`grew by ${mib(keys.reduce((s, k) => s + delta(k), 0))} MiB`);
  for (const k of keys.slice(0, top)) console.log(`  ${String(Math.round(delta(k) / 1024)).padStart(7)} KiB  ${String((b.get(k)?.count ?? 0) - (a.get(k)?.count ?? 0)).padStart(7)}  ${k}`);
} else {
  console.error('usage: node bench/heap-snapshot-summary.mjs FILE [TOP]  |  BEFORE AFTER [TOP]');
  process.exit(2);
}
