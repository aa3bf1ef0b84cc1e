/**
 * What every fuzz level asserts about one manifest's outcome, and the heap measurements they
 * share.
 */
import assert from 'node:assert/strict';
import v8 from 'node:v8';
import vm from 'node:vm';
import type { V1Pod } from '@kubernetes/client-node';
import { isKubeletError } from '../../core/errors.ts';
import { applyStaticPodDefaults, parseManifest } from '../../core/sources/manifest.ts';
import { runKubeletPaths } from './kubelet-paths.ts';
import type { FuzzCase } from './manifest-cases.ts';

/** How long one manifest may take from text to pod (or refusal), all kubelet paths included. */
export const MAX_CASE_MS = 2000;

/**
 * The forms a refusal takes after `static pod manifest <file>: `: a parse position or a
 * document-level reason, or `invalid pod: ` and a field path.
 */
const REFUSALS = [
  /^not valid YAML or JSON: line \d+, column \d+: \S/,
  /^not valid YAML or JSON: (excessive aliasing|the document is larger than|nesting is deeper than|the document refers to itself)/,
  /^file is empty \(expected one Pod\)$/,
  /^file is larger than \d+ bytes$/,
  /^file holds \d+ YAML documents; a manifest must hold exactly one Pod$/,
  /^expected a Pod object, got /,
  /^Object 'Kind' is missing/,
  /^kind is .{1,80}, expected Pod$/,
  /^Object 'apiVersion' is missing/,
  /^apiVersion is .{1,80}, expected v1$/,
  /^invalid pod: (<root>|[a-zA-Z]+)(\.[a-zA-Z]+|\[[^\]]*\])*: \S/,
];

/**
 * A run of `n` or more characters of `text` that `message` holds, if any. Any such run holds
 * one of the message's windows of n/2 characters that start at a multiple of n/2, so those
 * few windows are searched for in the text (which may be megabytes).
 */
function copiesInput(message: string, text: string, n: number): string | undefined {
  const half = Math.floor(n / 2);
  for (let i = 0; i + half <= message.length; i += half) {
    const w = message.slice(i, i + half);
    const at = text.indexOf(w);
    if (at < 0) continue;
    // Extend the match both ways to see how long the copied run really is.
    let start = i;
    let end = i + half;
    let t0 = at;
    let t1 = at + half;
    while (start > 0 && t0 > 0 && message[start - 1] === text[t0 - 1]) { start--; t0--; }
    while (end < message.length && t1 < text.length && message[end] === text[t1]) { end++; t1++; }
    if (end - start >= n) return message.slice(start, end);
  }
  return undefined;
}

export interface Outcome {
  pod?: V1Pod;
  message?: string;
  ms: number;
}

/**
 * Parses and prepares one manifest as the file source does and, when it is a pod, runs it
 * through the kubelet's paths. Asserts that it is either a pod, or a KubeletError(InvalidInput)
 * naming the file and then a field path or a parse position, that quotes no more of the file
 * than a short value (no file text at all for a parse error), within {@link MAX_CASE_MS}.
 */
export function checkCase(c: FuzzCase, file: string, context: string): Outcome {
  const t0 = performance.now();
  let pod: V1Pod | undefined;
  let message: string | undefined;
  const where = `${context}: case ${c.id} (${c.kind}), text ${JSON.stringify(c.text.slice(0, 200))}${c.text.length > 200 ? '...' : ''}`;
  try {
    pod = applyStaticPodDefaults(parseManifest(c.text, file), { nodeName: 'fuzz-node', source: 'file', file, seen: '2024-01-01T00:00:00Z' });
  } catch (err) {
    // Messages are built only on failure: reading an error's stack is slow under source maps.
    if (!(isKubeletError(err) && err.code === 'InvalidInput')) {
      assert.fail(`${where}: expected KubeletError(InvalidInput), got ${err instanceof Error ? `${err.name}: ${err.message}\n${err.stack}` : String(err)}`);
    }
    message = err.message;
  }
  if (pod) {
    try {
      runKubeletPaths(pod);
    } catch (err) {
      assert.fail(`${where}: validation accepted a pod the kubelet then failed on: ${err instanceof Error ? err.stack : String(err)}`);
    }
  }
  const ms = performance.now() - t0;
  if (ms >= MAX_CASE_MS) assert.fail(`${where}: took ${Math.round(ms)} ms (limit ${MAX_CASE_MS})`);
  if (message !== undefined) {
    const prefix = `static pod manifest ${file}: `;
    if (!message.startsWith(prefix)) assert.fail(`${where}: message does not start with the file: ${message.slice(0, 300)}`);
    const rest = message.slice(prefix.length);
    if (!REFUSALS.some((re) => re.test(rest))) assert.fail(`${where}: message names no field or position: ${rest.slice(0, 300)}`);
    if (rest.includes('internal error')) assert.fail(`${where}: a validation rule failed: ${rest.slice(0, 300)}`);
    if (message.length > 64 * 1024) assert.fail(`${where}: message of ${message.length} characters`);
    // A parse error says where and why, never what the file holds; a field error may quote a
    // value, cut to a name's length.
    const copied = copiesInput(rest, c.text, rest.startsWith('not valid YAML') ? 20 : 80);
    if (copied !== undefined) assert.fail(`${where}: message copies the file: ${JSON.stringify(copied)}`);
  }
  return { ms, ...(pod ? { pod } : {}), ...(message !== undefined ? { message } : {}) };
}

let gcFn: (() => void) | undefined;

/** A full garbage collection (node started without --expose-gc: the flag is set at run time). */
export function collectGarbage(): void {
  if (!gcFn) {
    v8.setFlagsFromString('--expose-gc');
    gcFn = vm.runInNewContext('gc') as () => void;
  }
  gcFn();
}

/** The V8 heap in use now (cheaper to read than process.memoryUsage()). */
export function heapUsed(): number {
  return v8.getHeapStatistics().used_heap_size;
}

/** The heap in use after a full collection: what stays reachable. */
export function retainedHeap(): number {
  collectGarbage();
  return heapUsed();
}

export const MiB = 1024 * 1024;
