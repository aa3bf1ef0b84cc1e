import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The plugin SDK boundary: a built-in plugin imports the core only through `kubelet-ts`
 * (core/sdk/index.ts), as a vendor's npm plugin must, so every built-in is an example a vendor
 * can copy. Relative imports stay inside the plugin's own directory; packages are node's own
 * or the project's dependencies.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PLUGINS = path.join(ROOT, 'plugins');
const DEPENDENCIES = new Set(Object.keys((JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { dependencies: Record<string, string> }).dependencies));
const BUILTINS = new Set(builtinModules);

/** Every module specifier in a source: static imports and re-exports, dynamic imports, module augmentations. */
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(])import\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]|declare\s+module\s+['"]([^'"]+)['"]/gm;

export interface BoundaryViolation { file: string; line: number; specifier: string; why: string }

/** The imports of one plugin source file that cross the SDK boundary. */
export function boundaryViolations(file: string, source: string, pluginDir: string): BoundaryViolation[] {
  const out: BoundaryViolation[] = [];
  for (const m of source.matchAll(SPECIFIER)) {
    const specifier = (m[1] ?? m[2] ?? m[3] ?? m[4])!;
    const line = source.slice(0, m.index + m[0].lastIndexOf(specifier)).split('\n').length;
    let why: string | undefined;
    if (specifier.startsWith('.')) {
      const target = path.resolve(path.dirname(file), specifier);
      if (target !== pluginDir && !target.startsWith(pluginDir + path.sep)) why = `leaves the plugin's directory (${path.relative(ROOT, target)}): import it from 'kubelet-ts', the plugin SDK`;
    } else if (specifier !== 'kubelet-ts') {
      const pkg = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
      if (!specifier.startsWith('node:') && !BUILTINS.has(pkg) && !DEPENDENCIES.has(pkg)) why = `'${pkg}' is neither a node module, 'kubelet-ts', nor a dependency in package.json`;
      if (pkg === 'kubelet-ts' && specifier !== 'kubelet-ts') why = `only the package root 'kubelet-ts' is public`;
    }
    if (why) out.push({ file: path.relative(ROOT, file), line, specifier, why });
  }
  return out;
}

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const p = path.join(dir, e.name);
    if (e.isDirectory()) return e.name === 'node_modules' ? [] : sources(p);
    return /\.(ts|mts|js|mjs)$/.test(e.name) && !e.name.endsWith('.d.ts') ? [p] : [];
  });
}

describe('plugin SDK boundary', function () {
  it('built-in plugins import the core only through kubelet-ts', function () {
    const plugins = readdirSync(PLUGINS, { withFileTypes: true }).filter((e) => e.isDirectory());
    assert.ok(plugins.length >= 4, `the built-in plugins are found (${plugins.map((p) => p.name).join(', ')})`);
    const violations: BoundaryViolation[] = [];
    let files = 0;
    for (const p of plugins) {
      const dir = path.join(PLUGINS, p.name);
      for (const f of sources(dir)) {
        files++;
        violations.push(...boundaryViolations(f, readFileSync(f, 'utf8'), dir));
      }
    }
    assert.ok(files > 20, `plugin sources were read (${files})`);
    assert.deepEqual(violations.map((v) => `${v.file}:${v.line}: '${v.specifier}' ${v.why}`), []);
  });

  it('names the file, line and import of each kind of crossing', function () {
    const dir = path.join(PLUGINS, 'demo');
    const src = [
      "import { definePlugin } from 'kubelet-ts';",
      "import { helper } from './helper.ts';",
      "import type { Logger } from '../../core/logger.ts';",
      "export { x } from '../other-plugin/x.ts';",
      "const lazy = await import('../../core/kubelet.ts');",
      "declare module '../../core/plugins/plugin-api.ts' {}",
      "import leftpad from 'left-pad';",
      "import internal from 'kubelet-ts/core/hooks.ts';",
      "import fs from 'node:fs';",
      "import { status } from '@grpc/grpc-js';",
    ].join('\n');
    const found = boundaryViolations(path.join(dir, 'index.ts'), src, dir);
    assert.deepEqual(found.map((v) => [v.line, v.specifier]), [
      [3, '../../core/logger.ts'],
      [4, '../other-plugin/x.ts'],
      [5, '../../core/kubelet.ts'],
      [6, '../../core/plugins/plugin-api.ts'],
      [7, 'left-pad'],
      [8, 'kubelet-ts/core/hooks.ts'],
    ]);
    assert.match(found[0]!.why, /import it from 'kubelet-ts'/);
    assert.equal(found[0]!.file, 'plugins/demo/index.ts');
  });
});
