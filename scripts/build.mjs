#!/usr/bin/env node
// `npm run build [-- --out-dir DIR]`: compiles core/, plugins/ and the default config to
// JavaScript and declarations (tsc -p tsconfig.build.json), copies what the plugins read at run time (protos,
// the CNI shim) and writes a package.json that makes the output a package of its own, named
// kubelet-ts, so that `import 'kubelet-ts'` inside it (the default config, bundled plugins)
// resolves to the compiled core instead of the TypeScript sources.
// bin/kubelet-ts.mjs runs dist/ while the sources are as they were at build time, the sources
// through tsx otherwise.
import { spawnSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { sourceStamp } from '../bin/source-stamp.mjs';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const { values } = parseArgs({ options: { 'out-dir': { type: 'string' } } });
const OUT = resolve(values['out-dir'] ?? join(ROOT, 'dist'));

rmSync(OUT, { recursive: true, force: true });
// Taken before compiling: an edit during the build makes the output stale, not fresh.
const stamp = sourceStamp(ROOT);
const tsc = createRequire(import.meta.url).resolve('typescript/bin/tsc');
const t0 = performance.now();
const res = spawnSync(process.execPath, [tsc, '-p', join(ROOT, 'tsconfig.build.json'), '--outDir', OUT], { stdio: 'inherit' });
if (res.status !== 0) {
  console.error(`build: tsc failed (exit ${res.status ?? res.signal})`);
  process.exit(1);
}

// The declarations keep the sources' `./x.ts` specifiers (tsc rewrites them in the JavaScript
// only: microsoft/TypeScript#61037). TypeScript 5 reads them, older compilers and some editors
// do not; `.js` is what every one of them maps to the `.d.ts` beside it.
const RELATIVE_TS_SPECIFIER = /((?:\bfrom\s*|\bimport\s*\(\s*|\bdeclare\s+module\s*)(['"])\.{1,2}\/[^'"]*?)\.ts(\2)/g;
let declarations = 0;
(function rewriteDeclarations(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const file = join(dir, entry.name);
    if (entry.isDirectory()) rewriteDeclarations(file);
    else if (entry.name.endsWith('.d.ts')) {
      writeFileSync(file, readFileSync(file, 'utf8').replace(RELATIVE_TS_SPECIFIER, '$1.js$3'));
      declarations++;
    }
  }
})(OUT);

let assets = 0;
(function copyAssets(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const src = join(dir, entry.name);
    if (entry.isDirectory()) copyAssets(src);
    // Everything but the TypeScript: protos and shims read at run time, the plugins' READMEs.
    else if (!entry.name.endsWith('.ts')) {
      const dst = join(OUT, relative(ROOT, src));
      mkdirSync(dirname(dst), { recursive: true });
      cpSync(src, dst, { preserveTimestamps: true });
      assets++;
    }
  }
})(join(ROOT, 'plugins'));
for (const readme of ['README.md']) if (existsSync(join(ROOT, readme))) cpSync(join(ROOT, readme), join(OUT, readme));

// Outside the repository (a test's temporary build), the dependencies are not found by walking up.
if (relative(ROOT, OUT).startsWith('..')) symlinkSync(join(ROOT, 'node_modules'), join(OUT, 'node_modules'), 'dir');

const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8'));
writeFileSync(
  join(OUT, 'package.json'),
  `${JSON.stringify(
    {
      name: pkg.name,
      version: pkg.version,
      description: pkg.description,
      license: pkg.license,
      type: 'module',
      // `default` serves require() too: Node 22.12+ requires these ES modules (no top-level
      // await in them: test/unit/sdk-commonjs.test.ts).
      exports: {
        '.': { types: './core/sdk/index.d.ts', import: './core/sdk/index.js', default: './core/sdk/index.js' },
        './testing': { types: './core/sdk/testing/index.d.ts', import: './core/sdk/testing/index.js', default: './core/sdk/testing/index.js' },
      },
      engines: pkg.engines,
      dependencies: pkg.dependencies,
      // bin/kubelet-ts.mjs runs this output only while the sources have this stamp.
      kubeletTsBuild: { builtAt: new Date().toISOString(), sourceStamp: stamp },
    },
    null,
    2,
  )}\n`,
);
console.log(`build: ${relative(process.cwd(), OUT) || '.'} in ${Math.round(performance.now() - t0)} ms (${declarations} declarations, ${assets} assets copied)`);
