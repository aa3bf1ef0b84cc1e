import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import ts from 'typescript';

/**
 * `require('kubelet-ts')` from CommonJS: the package is ES modules, which Node 22.12+ loads
 * with require() as long as no module of the graph has a top-level await (otherwise
 * ERR_REQUIRE_ASYNC_MODULE). Without building dist/ (slow), this checks the two things that
 * make it work: each export has a condition require() matches, and the SDK's sources (what
 * dist/ is compiled from, module for module) have no top-level await.
 * test/integration/npm-package.test.ts requires the installed package for real.
 */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const ENTRIES = { '.': 'core/sdk/index.ts', './testing': 'core/sdk/testing/index.ts' } as const;

/** Relative imports and re-exports of a module (type-only ones included: harmless, and they keep the walk simple). */
function relativeImports(file: string, source: ts.SourceFile): string[] {
  const out: string[] = [];
  for (const st of source.statements) {
    const spec = (ts.isImportDeclaration(st) || ts.isExportDeclaration(st)) && st.moduleSpecifier && ts.isStringLiteral(st.moduleSpecifier) ? st.moduleSpecifier.text : undefined;
    if (spec?.startsWith('.')) out.push(path.resolve(path.dirname(file), spec));
  }
  return out;
}

/** Where a module awaits at its top level (outside any function), as `file:line`. */
function topLevelAwaits(file: string, source: ts.SourceFile): string[] {
  const found: string[] = [];
  const visit = (node: ts.Node): void => {
    if (ts.isFunctionLike(node) || ts.isClassStaticBlockDeclaration(node)) return;
    if (ts.isAwaitExpression(node) || (ts.isForOfStatement(node) && node.awaitModifier)) {
      found.push(`${path.relative(ROOT, file)}:${source.getLineAndCharacterOfPosition(node.getStart(source)).line + 1}`);
    }
    ts.forEachChild(node, visit);
  };
  visit(source);
  return found;
}

describe('require(\'kubelet-ts\') from CommonJS', function () {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, Record<string, string>> };

  it('each SDK export has a condition require() matches, the same ES module import gets', function () {
    for (const key of Object.keys(ENTRIES)) {
      const conditions = pkg.exports[key]!;
      assert.equal(conditions.default, conditions.import, `exports['${key}'].default`);
      assert.deepEqual(Object.keys(conditions).slice(-1), ['default'], `exports['${key}']: default must come last (Node takes the first condition that matches)`);
    }
  });

  it('no module the SDK entries import has a top-level await (require() of it would fail)', function () {
    const seen = new Set<string>();
    const awaits: string[] = [];
    const queue = Object.values(ENTRIES).map((e) => path.join(ROOT, e));
    while (queue.length > 0) {
      const file = queue.pop()!;
      if (seen.has(file)) continue;
      seen.add(file);
      const source = ts.createSourceFile(file, fs.readFileSync(file, 'utf8'), ts.ScriptTarget.Latest, true);
      awaits.push(...topLevelAwaits(file, source));
      queue.push(...relativeImports(file, source));
    }
    assert.ok(seen.size > 50, `walked the SDK's module graph (${seen.size} modules)`);
    assert.deepEqual(awaits, []);
  });

  it('finds a top-level await where there is one (the check above can fail)', function () {
    const source = ts.createSourceFile('x.ts', 'const a = await f();\nasync function g() { await h(); }\nfor await (const x of y) {}\n', ts.ScriptTarget.Latest, true);
    assert.deepEqual(topLevelAwaits(path.join(ROOT, 'x.ts'), source), ['x.ts:1', 'x.ts:3']);
  });
});
