import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

/**
 * package.json `exports` give an installed package the compiled SDK (dist/, with its `.d.ts`),
 * and the repository's own runs the TypeScript sources, under the export condition
 * `kubelet-ts-source` (bin/from-sources.mjs). A run of the sources that imported the SDK from
 * dist/ would get a stale build, or none, and a second copy of the core's classes.
 */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(REPO, 'bin', 'kubelet-ts.mjs');
const SOURCE_CONDITION = 'kubelet-ts-source';

describe('package exports: the sources for the repository, the build for an install', function () {
  this.timeout(30_000);

  it('maps each public entry to its source, and to the compiled module and declarations that source builds to', async function () {
    const pkg = JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8')) as { exports: Record<string, string | Record<string, string>>; types: string };
    const entries = Object.entries(pkg.exports).filter(([subpath]) => subpath !== './package.json');
    assert.deepEqual(entries.map(([subpath]) => subpath), ['.', './testing']);
    for (const [subpath, target] of entries) {
      assert.equal(typeof target, 'object', `${subpath}: conditions`);
      const conditions = target as Record<string, string>;
      // Node and TypeScript take the first condition they know: the source one must come first, `types` before `import`;
      // `default` last, the same module for require() (require(esm)).
      assert.deepEqual(Object.keys(conditions), [SOURCE_CONDITION, 'types', 'import', 'default'], subpath);
      assert.equal(conditions.default, conditions.import, `${subpath}: default is the ES module require() loads`);
      const source = conditions[SOURCE_CONDITION]!;
      await fs.access(path.join(REPO, source));
      // tsconfig.build.json compiles the repository's root into dist/, keeping the layout.
      assert.equal(conditions.import, source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.js'), subpath);
      assert.equal(conditions.types, source.replace(/^\.\//, './dist/').replace(/\.ts$/, '.d.ts'), subpath);
    }
    assert.equal(pkg.types, (pkg.exports['.'] as Record<string, string>).types);
  });

  it('resolves kubelet-ts to the sources when the executable runs them, for a plugin outside the repository too', async function () {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-sources-'));
    try {
      const record = path.join(dir, 'resolved.json');
      await fs.writeFile(
        path.join(dir, 'where.mjs'),
        `import { writeFileSync } from 'node:fs';
import { definePlugin } from 'kubelet-ts';
writeFileSync(${JSON.stringify(record)}, JSON.stringify([import.meta.resolve('kubelet-ts'), import.meta.resolve('kubelet-ts/testing')]));
export default definePlugin({ name: 'where', apply() {} });
`,
      );
      await fs.writeFile(path.join(dir, 'kubelet.config.mjs'), `export default { rootDir: ${JSON.stringify(path.join(dir, 'root'))}, plugins: [['cri-containerd', {}], './where.mjs'] };\n`);
      // From a directory outside the repository (where its tsconfig paths do not reach), with
      // the sources forced even when dist/ is fresh.
      const { stdout } = await new Promise<{ stdout: string }>((resolve, reject) =>
        execFile(process.execPath, [BIN, 'plugins', '--config', path.join(dir, 'kubelet.config.mjs')], { cwd: dir, timeout: 25_000, killSignal: 'SIGKILL', env: { ...process.env, KUBELET_TS_FROM_SOURCE: '1' } }, (err, out, stderr) =>
          err ? reject(new Error(`${err.message}\n${stderr}`)) : resolve({ stdout: out }),
        ),
      );
      assert.match(stdout, new RegExp(`^cri-containerd {2}\\(runtime, builtin: ${REPO}/plugins/cri-containerd/index\\.ts\\)`, 'm'));
      assert.match(stdout, /^where {2}\(other, path: .*\/where\.mjs\)/m);
      assert.deepEqual(JSON.parse(await fs.readFile(record, 'utf8')), [pathToFileURL(path.join(REPO, 'core/sdk/index.ts')).href, pathToFileURL(path.join(REPO, 'core/sdk/testing/index.ts')).href]);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});
