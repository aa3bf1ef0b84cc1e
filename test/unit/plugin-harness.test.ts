import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { hookContext } from '../../core/util/cancellation.ts';

/**
 * `startPluginsForTest` as a vendor's own test calls it: from the plugin's package, naming the
 * plugin by its package name or a path, while the kubelet's rootDir is a temporary directory
 * elsewhere (the harness writes its config file there, which must not be where names resolve).
 */
describe('startPluginsForTest resolves plugins from the caller\'s project', function () {
  let project: string;
  let rootDir: string;
  let started: PluginsUnderTest | undefined;
  const cwd = process.cwd();

  /** A plugin module that taps admitPod and refuses every pod with its name. */
  const pluginSource = (name: string) => `export default {
  name: '${name}',
  kind: 'policy',
  apply(ctx) { ctx.hooks.admitPod.tap('${name}', () => 'refused by ${name}'); },
};\n`;

  beforeEach(async function () {
    const base = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-harness-'));
    project = path.join(base, 'vendor-project');
    rootDir = path.join(base, 'kubelet-root');
    await fs.mkdir(project, { recursive: true });
    // The vendor's package: ESM-only (`exports` with only an `import` condition), as a modern package is.
    await fs.writeFile(path.join(project, 'package.json'), JSON.stringify({ name: 'vendor-admission', version: '1.0.0', type: 'module', exports: { '.': { import: './index.js' } } }));
    await fs.writeFile(path.join(project, 'index.js'), pluginSource('vendor-admission'));
    // A plugin it depends on, installed in its node_modules.
    const dep = path.join(project, 'node_modules', 'other-admission');
    await fs.mkdir(dep, { recursive: true });
    await fs.writeFile(path.join(dep, 'package.json'), JSON.stringify({ name: 'other-admission', version: '1.0.0', type: 'module', exports: './main.js' }));
    await fs.writeFile(path.join(dep, 'main.js'), pluginSource('other-admission'));
  });

  afterEach(async function () {
    process.chdir(cwd);
    await started?.close();
    started = undefined;
    await fs.rm(path.dirname(project), { recursive: true, force: true });
  });

  /** What admitPod answers with the plugins applied: which plugin refused first. */
  const refusal = (t: PluginsUnderTest) => t.hooks.admitPod.promise({ metadata: { name: 'p' } }, hookContext());

  it('from the working directory by default: the package by its own name, an installed package, a relative path', async function () {
    process.chdir(project);
    started = await startPluginsForTest([['vendor-admission', {}]], { rootDir });
    assert.equal(await refusal(started), 'refused by vendor-admission');
    await started.close();
    started = await startPluginsForTest(['other-admission'], { rootDir });
    assert.equal(await refusal(started), 'refused by other-admission');
    await started.close();
    started = await startPluginsForTest([['./index.js', {}]], { rootDir });
    assert.equal(await refusal(started), 'refused by vendor-admission');
  });

  it('from projectDir when given, whatever the working directory', async function () {
    started = await startPluginsForTest(['other-admission', './index.js'], { rootDir, projectDir: project });
    assert.equal(await refusal(started), 'refused by other-admission');
  });

  it('names the directory it looked in when the package is not there', async function () {
    await assert.rejects(
      startPluginsForTest(['missing-admission'], { rootDir, projectDir: project }),
      (err: Error) => {
        assert.match(err.message, /^plugin 'missing-admission': unknown plugin: not a built-in \(.*\), not a path, and no npm module 'missing-admission' is installed where (.*) can import it$/);
        assert.ok(err.message.endsWith(`where ${project} can import it`), err.message);
        return true;
      },
    );
  });
});
