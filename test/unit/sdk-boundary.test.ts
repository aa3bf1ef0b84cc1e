import assert from 'node:assert/strict';
import { builtinModules } from 'node:module';
import { existsSync, readFileSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The plugin SDK boundary: a built-in plugin imports the core only through `kubelet-ts`
 * (core/sdk/index.ts), as a vendor's npm plugin must, so every built-in is an example a vendor
 * can copy. Relative imports stay inside the plugin's own directory; packages are node's own
 * or the project's dependencies. The vendor plugins under examples/ are held to the same, as
 * the npm packages they stand for: the package's public entry points (`kubelet-ts`,
 * `kubelet-ts/testing`) and what their own package.json declares.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const PLUGINS = path.join(ROOT, 'plugins');
const EXAMPLES = path.join(ROOT, 'examples');
const PACKAGE = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { name: string; dependencies: Record<string, string>; exports: Record<string, unknown> };
const DEPENDENCIES = new Set(Object.keys(PACKAGE.dependencies));
const BUILTINS = new Set(builtinModules);
/** What the package exports (`kubelet-ts`, `kubelet-ts/testing`), as a vendor's package imports it. */
const PUBLIC_ENTRIES = new Set(Object.keys(PACKAGE.exports).map((k) => (k === '.' ? PACKAGE.name : `${PACKAGE.name}/${k.replace(/^\.\//, '')}`)));

/** Which imports a plugin may make: the public entries of kubelet-ts and the packages it may depend on. */
export interface BoundaryRules { publicEntries: ReadonlySet<string>; dependencies: ReadonlySet<string> }

/** A built-in plugin: the SDK root only, and the project's dependencies. */
const BUILTIN_RULES: BoundaryRules = { publicEntries: new Set(['kubelet-ts']), dependencies: DEPENDENCIES };

/** Every module specifier in a source: static imports and re-exports, dynamic imports, module augmentations. */
const SPECIFIER = /(?:^|[\s;])(?:import|export)\s[^'"]*?from\s*['"]([^'"]+)['"]|(?:^|[\s;(])import\s*\(\s*['"]([^'"]+)['"]\s*\)|^\s*import\s*['"]([^'"]+)['"]|declare\s+module\s+['"]([^'"]+)['"]/gm;

export interface BoundaryViolation { file: string; line: number; specifier: string; why: string }

/** The imports of one plugin source file that cross the SDK boundary. */
export function boundaryViolations(file: string, source: string, pluginDir: string, rules: BoundaryRules = BUILTIN_RULES): BoundaryViolation[] {
  const out: BoundaryViolation[] = [];
  for (const m of source.matchAll(SPECIFIER)) {
    const specifier = (m[1] ?? m[2] ?? m[3] ?? m[4])!;
    const line = source.slice(0, m.index + m[0].lastIndexOf(specifier)).split('\n').length;
    let why: string | undefined;
    if (specifier.startsWith('.')) {
      const target = path.resolve(path.dirname(file), specifier);
      if (target !== pluginDir && !target.startsWith(pluginDir + path.sep)) why = `leaves the plugin's directory (${path.relative(ROOT, target)}): import it from 'kubelet-ts', the plugin SDK`;
    } else if (!rules.publicEntries.has(specifier)) {
      const pkg = specifier.startsWith('@') ? specifier.split('/').slice(0, 2).join('/') : specifier.split('/')[0]!;
      if (!specifier.startsWith('node:') && !BUILTINS.has(pkg) && !rules.dependencies.has(pkg)) why = `'${pkg}' is neither a node module, 'kubelet-ts', nor a dependency in package.json`;
      if (pkg === 'kubelet-ts') why = `only ${[...rules.publicEntries].map((e) => `'${e}'`).join(' and ')} ${rules.publicEntries.size > 1 ? 'are' : 'is'} public`;
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

  it('vendor plugins under examples/ import kubelet-ts only through its public entries, and only what their package.json declares', function () {
    const examples = readdirSync(EXAMPLES, { withFileTypes: true }).filter((e) => e.isDirectory() && existsSync(path.join(EXAMPLES, e.name, 'package.json')));
    assert.ok(examples.length >= 1, 'the example plugins are found');
    const violations: BoundaryViolation[] = [];
    let files = 0;
    for (const e of examples) {
      const dir = path.join(EXAMPLES, e.name);
      const pkg = JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')) as Record<string, Record<string, string> | undefined>;
      const dependencies = new Set(['dependencies', 'peerDependencies', 'devDependencies'].flatMap((k) => Object.keys(pkg[k] ?? {})));
      const rules: BoundaryRules = { publicEntries: dependencies.has(PACKAGE.name) ? PUBLIC_ENTRIES : new Set(), dependencies };
      for (const f of sources(dir)) {
        files++;
        violations.push(...boundaryViolations(f, readFileSync(f, 'utf8'), dir, rules));
      }
    }
    assert.ok(files >= 2, `example sources were read (${files})`);
    assert.deepEqual(violations.map((v) => `${v.file}:${v.line}: '${v.specifier}' ${v.why}`), []);
    // What the rules refuse in an example: the core's files, and a package its package.json does not declare.
    const dir = path.join(EXAMPLES, 'demo');
    const rules: BoundaryRules = { publicEntries: PUBLIC_ENTRIES, dependencies: new Set(['kubelet-ts']) };
    const found = boundaryViolations(path.join(dir, 'index.ts'), [
      "import { startPluginsForTest } from 'kubelet-ts/testing';",
      "import { Kubelet } from '../../core/kubelet.ts';",
      "import { HookMap } from 'tapable';",
      "import hooks from 'kubelet-ts/core/hooks.ts';",
    ].join('\n'), dir, rules);
    assert.deepEqual(found.map((v) => [v.line, v.specifier]), [[2, '../../core/kubelet.ts'], [3, 'tapable'], [4, 'kubelet-ts/core/hooks.ts']]);
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
