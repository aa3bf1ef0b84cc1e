import { readFileSync } from 'node:fs';

/**
 * The node flags an executable's shebang gives node (`#!/usr/bin/env -S node <flags>`), so a
 * run that starts node itself (`node bin/kubelet-ts.mjs`, or with a profiler preloaded) runs
 * the kubelet as the executable does: `--disable-sigusr1` among them, whose absence the
 * kubelet's start warns of.
 */
export function shebangNodeFlags(bin: string): string[] {
  const words = readFileSync(bin, 'utf8').split('\n', 1)[0]!.replace(/^#!\S+\s+-S\s+/, '').split(/\s+/).filter(Boolean);
  return words.slice(words.indexOf('node') + 1);
}
