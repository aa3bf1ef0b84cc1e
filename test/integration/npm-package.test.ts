import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import fs from 'node:fs/promises';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { mountsUnder, unmount } from '../../core/volumes/mount-utils.ts';
import { realPartMissing } from '../support/real-part.ts';

/**
 * The npm package as a vendor gets it: `npm pack` (its prepack builds dist/) of a copy of the
 * repository, the tarball installed into an empty directory without the internet, then a
 * plugin in plain JavaScript loaded by plain node (tsx removed from the install), the
 * examples/ramdisk-volume package's contract tests run against the installed package, and a
 * TypeScript plugin type-checked against the installed declarations.
 */
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const EXAMPLE = path.join(REPO, 'examples', 'ramdisk-volume');
const requireHere = createRequire(import.meta.url);
/** What the copy that is packed leaves out: installed, built, or made by runs (.gitignore). */
const NOT_COPIED = new Set(['node_modules', '.git', 'dist', '.node', 'run']);

interface Run { code: number; stdout: string; stderr: string }

/**
 * Runs a command to its end (bounded by `timeoutMs`) with a vendor's environment: no
 * NODE_OPTIONS (the repository's runs may carry its source condition), npm never asking the
 * registry whether it is current.
 */
function run(cmd: string, args: string[], opts: { cwd: string; timeoutMs: number; env?: NodeJS.ProcessEnv }): Promise<Run> {
  const env: NodeJS.ProcessEnv = { ...process.env, npm_config_update_notifier: 'false', npm_config_audit: 'false', npm_config_fund: 'false', ...opts.env };
  delete env.NODE_OPTIONS;
  return new Promise((resolve) => {
    execFile(cmd, args, { cwd: opts.cwd, env, timeout: opts.timeoutMs, killSignal: 'SIGKILL', maxBuffer: 32 << 20 }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : -1) : 0, stdout, stderr: e && typeof e.code !== 'number' ? `${e.message}\n${stderr}` : stderr });
    });
  });
}

function ok(r: Run, what: string): Run {
  assert.equal(r.code, 0, `${what} failed (exit ${r.code}):\n${r.stdout.slice(-4000)}\n${r.stderr.slice(-4000)}`);
  return r;
}

/** A real part of the test is missing: skipped with the reason, or a failure with CI=true. */
function unavailable(ctx: Mocha.Context, reason: string): never {
  return realPartMissing(ctx, 'the package cannot be tried', reason);
}

/**
 * The lockfile of a vendor's directory that depends on the tarball (and on the type packages a
 * TypeScript vendor adds): every other package pinned to the version and integrity the
 * repository's package-lock.json has, so `npm ci --offline` takes them all from the npm cache
 * that the repository's `npm ci` filled. (`npm install --offline <tgz>` would need the
 * registry's metadata documents for the version ranges, which `npm ci` never fetches.)
 */
async function vendorLockfile(tgzName: string, tgz: string, rootDeps: Record<string, string>): Promise<object> {
  const lock = JSON.parse(await fs.readFile(path.join(REPO, 'package-lock.json'), 'utf8')) as { packages: Record<string, { dependencies?: Record<string, string>; optionalDependencies?: Record<string, string>; peerDependencies?: Record<string, string> }> };
  const pkg = JSON.parse(await fs.readFile(path.join(REPO, 'package.json'), 'utf8'));
  const kept: Record<string, object> = {};
  const parentOf = (key: string): string => key.slice(0, Math.max(0, key.lastIndexOf('/node_modules/')));
  // Node's lookup over the repository's tree: the nearest node_modules/<name> upwards wins.
  const visit = (from: string, deps: Record<string, string> | undefined): void => {
    for (const name of Object.keys(deps ?? {})) {
      for (let dir = from; ; dir = parentOf(dir)) {
        const key = `${dir ? `${dir}/` : ''}node_modules/${name}`;
        const entry = lock.packages[key];
        if (entry) {
          if (!kept[key]) {
            kept[key] = entry;
            visit(key, { ...entry.dependencies, ...entry.optionalDependencies, ...entry.peerDependencies });
          }
          break;
        }
        if (!dir) break; // an optional dependency of another platform
      }
    }
  };
  visit('node_modules/kubelet-ts', pkg.dependencies);
  visit('', Object.fromEntries(Object.keys(rootDeps).filter((n) => n !== 'kubelet-ts').map((n) => [n, ''])));
  const integrity = `sha512-${createHash('sha512').update(await fs.readFile(tgz)).digest('base64')}`;
  return {
    name: 'vendor-node',
    lockfileVersion: 3,
    requires: true,
    packages: {
      '': { name: 'vendor-node', dependencies: rootDeps },
      'node_modules/kubelet-ts': { version: pkg.version, resolved: `file:${tgzName}`, integrity, license: pkg.license, dependencies: pkg.dependencies, bin: pkg.bin, engines: pkg.engines },
      ...kept,
    },
  };
}

describe('the npm package (npm pack), installed into an empty directory', function () {
  this.timeout(300_000);
  let ws: string;
  let tgz: string;
  let entries: string[];
  let packed: { exports: Record<string, Record<string, string>>; files: string[]; bin: Record<string, string> };

  before(async function () {
    ws = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-npm-package-'));
    // A copy of the repository as a clean checkout has it, so packing (which builds dist/)
    // leaves the repository's own dist/ alone; its node_modules are the repository's.
    const src = path.join(ws, 'src');
    await fs.cp(REPO, src, {
      recursive: true,
      filter: async (from) => {
        const rel = path.relative(REPO, from);
        if (NOT_COPIED.has(rel.split(path.sep)[0]!)) return false;
        const st = await fs.lstat(from);
        return st.isFile() || st.isDirectory() || st.isSymbolicLink();
      },
    });
    await fs.symlink(path.join(REPO, 'node_modules'), path.join(src, 'node_modules'), 'dir');
    ok(await run('npm', ['pack', '--offline', '--pack-destination', ws], { cwd: src, timeoutMs: 240_000 }), 'npm pack');
    const tgzs = (await fs.readdir(ws)).filter((f) => f.endsWith('.tgz'));
    assert.deepEqual(tgzs, ['kubelet-ts-0.1.0.tgz']);
    tgz = path.join(ws, tgzs[0]!);
    entries = ok(await run('tar', ['-tzf', tgz], { cwd: ws, timeoutMs: 30_000 }), 'tar -t').stdout.split('\n').filter(Boolean);
    packed = JSON.parse(ok(await run('tar', ['-xzOf', tgz, 'package/package.json'], { cwd: ws, timeoutMs: 30_000 }), 'tar -x').stdout);
  });

  after(async function () {
    if (!ws) return;
    for (const mp of (await mountsUnder(ws)).reverse()) await unmount(mp).catch(() => {});
    const left = await mountsUnder(ws);
    await fs.rm(ws, { recursive: true, force: true });
    assert.deepEqual(left, [], 'no mount left');
  });

  it('ships the compiled JavaScript with its declarations, the executable, the plugins\' assets and the README, and no sources, tests or benchmarks', async function () {
    const files = new Set(entries.map((e) => e.replace(/^package\//, '')));
    for (const f of ['package.json', 'README.md', 'bin/kubelet-ts.mjs', 'bin/source-stamp.mjs', 'dist/package.json', 'dist/kubelet.config.js', 'dist/kubelet.config.d.ts', 'dist/core/cli.js']) {
      assert.ok(files.has(f), `${f} in the tarball`);
    }
    // Every compiled module has its declarations beside it.
    const js = [...files].filter((f) => f.endsWith('.js'));
    assert.ok(js.length > 100, `${js.length} compiled modules`);
    assert.deepEqual(js.filter((f) => !files.has(f.replace(/\.js$/, '.d.ts'))), [], 'modules without declarations');
    // What the plugins read at run time (protos, the CNI shim) and their READMEs, each where the compiled plugin looks.
    const assets: string[] = [];
    for (const f of await fs.readdir(path.join(REPO, 'plugins'), { recursive: true, withFileTypes: true })) {
      if (f.isFile() && !f.name.endsWith('.ts')) assets.push(path.relative(REPO, path.join(f.parentPath, f.name)));
    }
    assert.ok(assets.some((a) => a.endsWith('README.md')) && assets.some((a) => a.endsWith('.proto')));
    assert.deepEqual(assets.filter((a) => !files.has(`dist/${a}`)), [], 'plugin assets missing');
    // Nothing of the development tree.
    const stray = [...files].filter((f) => /^(test|bench|tools|scripts|examples|core|plugins|\.ci)\//.test(f) || (f.endsWith('.ts') && !f.endsWith('.d.ts')) || /^(tsconfig.*\.json|\.mocharc\.cjs|package-lock\.json)$/.test(f));
    assert.deepEqual(stray, [], 'development files in the tarball');
    // Every export condition a vendor's node or TypeScript takes names a file in the tarball.
    assert.deepEqual(Object.keys(packed.exports), ['.', './testing', './package.json']);
    for (const sub of ['.', './testing']) {
      for (const cond of ['types', 'import']) assert.ok(files.has(packed.exports[sub]![cond]!.replace(/^\.\//, '')), `exports['${sub}'].${cond} (${packed.exports[sub]![cond]}) in the tarball`);
    }
    assert.ok(files.has(packed.bin['kubelet-ts']!));
    const { size } = await fs.stat(tgz);
    process.stderr.write(`      ${path.basename(tgz)}: ${entries.length} files, ${size} bytes\n`);
  });

  describe('installed offline', function () {
    let vendor: string;
    let example: string;

    before(async function () {
      vendor = path.join(ws, 'vendor');
      await fs.mkdir(vendor);
      const rootDeps = { 'kubelet-ts': `file:../${path.basename(tgz)}`, '@types/node': '^20.19.43', '@types/mocha': '^10.0.10' };
      await fs.writeFile(path.join(vendor, 'package.json'), JSON.stringify({ name: 'vendor-node', private: true, type: 'module', dependencies: rootDeps }, null, 2));
      await fs.writeFile(path.join(vendor, 'package-lock.json'), JSON.stringify(await vendorLockfile(`../${path.basename(tgz)}`, tgz, rootDeps), null, 2));
      // Install scripts are not run: none of these packages needs one here (esbuild's checks its binary).
      const r = await run('npm', ['ci', '--offline', '--ignore-scripts', '--no-audit', '--no-fund'], { cwd: vendor, timeoutMs: 240_000 });
      if (r.code !== 0 && /ENOTCACHED/.test(r.stderr + r.stdout)) unavailable(this, `the npm cache lacks a package the tarball depends on (run \`npm ci\` in the repository): ${/request to (\S+)/.exec(r.stderr)?.[1] ?? r.stderr.split('\n')[0]}`);
      ok(r, 'npm ci --offline');
      // The example plugin package, a vendor's repository inside the directory: it finds kubelet-ts in ../node_modules.
      example = path.join(vendor, 'kts-ramdisk-volume');
      await fs.cp(EXAMPLE, example, { recursive: true, filter: (from) => !from.includes(`${path.sep}node_modules`) });
    });

    it('loads a plugin in plain JavaScript with plain node, no TypeScript loader installed, and `kubelet-ts plugins` lists it', async function () {
      await fs.mkdir(path.join(vendor, 'plugins'));
      await fs.writeFile(
        path.join(vendor, 'plugins', 'hold-labelled.mjs'),
        `// A vendor's plugin in plain JavaScript: refuses pods labelled hold=true, with the operator's reason.
import { definePlugin, STAGE } from 'kubelet-ts';

export default definePlugin({
  name: 'hold-labelled',
  kind: 'policy',
  optionsSchema: { type: 'object', additionalProperties: false, properties: { reason: { type: 'string', minLength: 1, default: 'held' } } },
  apply(ctx, options) {
    ctx.hooks.admitPod.tap({ name: 'hold-labelled', stage: STAGE.POLICY }, (pod) => (pod.metadata?.labels?.hold === 'true' ? options.reason : undefined));
  },
});
`,
      );
      await fs.writeFile(path.join(vendor, 'kubelet.config.mjs'), `export default { rootDir: ${JSON.stringify(path.join(vendor, 'root'))}, plugins: [['cri-containerd', {}], ['./plugins/hold-labelled.mjs', { reason: 'held for review' }]] };\n`);
      // Its own test in plain JavaScript, with the test kit.
      await fs.writeFile(
        path.join(vendor, 'check-hold.mjs'),
        `import { startPluginsForTest } from 'kubelet-ts/testing';
import hold from './plugins/hold-labelled.mjs';
const plugins = await startPluginsForTest([[hold, { reason: 'held for review' }]], { rootDir: process.argv[2] });
try {
  const held = await plugins.hooks.admitPod.promise({ metadata: { name: 'a', labels: { hold: 'true' } } });
  const admitted = await plugins.hooks.admitPod.promise({ metadata: { name: 'b' } });
  console.log(JSON.stringify({ held, admitted: admitted ?? null, sdk: import.meta.resolve('kubelet-ts/testing') }));
} finally {
  await plugins.close();
}
`,
      );
      // tsx is a dependency (for TypeScript configs and plugins); moved away, nothing can load it.
      const tsx = path.join(vendor, 'node_modules', 'tsx');
      await fs.rename(tsx, `${tsx}.away`);
      try {
        // The executable as npm linked it, run by its shebang with the node on PATH.
        const bin = path.join(vendor, 'node_modules', '.bin', 'kubelet-ts');
        const env = { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}` };
        const listed = ok(await run(bin, ['plugins', '--config', path.join(vendor, 'kubelet.config.mjs')], { cwd: vendor, timeoutMs: 30_000, env }), 'kubelet-ts plugins');
        const installed = path.join(vendor, 'node_modules', 'kubelet-ts');
        assert.match(listed.stdout, new RegExp(`^cri-containerd {2}\\(runtime, builtin: ${installed}/dist/plugins/cri-containerd/index\\.js\\)`, 'm'));
        assert.match(listed.stdout, new RegExp(`^hold-labelled {2}\\(policy, path: ${vendor}/plugins/hold-labelled\\.mjs\\).*\\n {2}taps: admitPod \\(stage -100\\)$`, 'm'));
        const checked = ok(await run(process.execPath, [path.join(vendor, 'check-hold.mjs'), path.join(vendor, 'check-root')], { cwd: vendor, timeoutMs: 30_000 }), 'check-hold.mjs');
        assert.deepEqual(JSON.parse(checked.stdout), { held: 'held for review', admitted: null, sdk: pathToFileURL(path.join(installed, 'dist/core/sdk/testing/index.js')).href });
      } finally {
        await fs.rename(`${tsx}.away`, tsx);
      }
    });

    it('is required from CommonJS (require(esm), Node 22.12+): a .cjs plugin and its test', async function () {
      await fs.mkdir(path.join(vendor, 'cjs'), { recursive: true });
      await fs.writeFile(
        path.join(vendor, 'cjs', 'refuse-all.cjs'),
        `const { definePlugin, STAGE } = require('kubelet-ts');
module.exports = definePlugin({ name: 'refuse-all', kind: 'policy', apply(ctx) { ctx.hooks.admitPod.tap({ name: 'refuse-all', stage: STAGE.POLICY }, () => 'refused'); } });
`,
      );
      await fs.writeFile(
        path.join(vendor, 'cjs', 'check.cjs'),
        `const { startPluginsForTest } = require('kubelet-ts/testing');
startPluginsForTest([require('./refuse-all.cjs')], { rootDir: process.argv[2] }).then(async (plugins) => {
  console.log(JSON.stringify({ answer: await plugins.hooks.admitPod.promise({ metadata: { name: 'a' } }), sdk: require.resolve('kubelet-ts') }));
  await plugins.close();
});
`,
      );
      const r = ok(await run(process.execPath, [path.join(vendor, 'cjs', 'check.cjs'), path.join(vendor, 'cjs-root')], { cwd: vendor, timeoutMs: 30_000 }), 'check.cjs');
      assert.deepEqual(JSON.parse(r.stdout), { answer: 'refused', sdk: path.join(vendor, 'node_modules', 'kubelet-ts', 'dist', 'core', 'sdk', 'index.js') });
    });

    it('passes the ramdisk-volume example\'s contract tests against the installed package', async function () {
      if (process.getuid?.() !== 0) unavailable(this, 'the ramdisk contract mounts tmpfs, which needs root');
      const resolved = ok(await run(process.execPath, ['--input-type=module', '-e', "console.log(import.meta.resolve('kubelet-ts/testing'))"], { cwd: example, timeoutMs: 10_000 }), 'resolve');
      assert.equal(resolved.stdout.trim(), pathToFileURL(path.join(vendor, 'node_modules', 'kubelet-ts', 'dist', 'core', 'sdk', 'testing', 'index.js')).href);
      // The vendor's test runner: mocha (the repository's copy), with the tsx the install brought for the example's TypeScript.
      const mocha = requireHere.resolve('mocha/bin/mocha.js');
      const r = await run(process.execPath, ['--import', 'tsx', '--no-experimental-require-module', mocha, '--no-config', '--timeout', '60000', 'test/contract.test.ts'], { cwd: example, timeoutMs: 180_000 });
      const out = r.stdout + r.stderr;
      assert.equal(r.code, 0, `mocha in the example package failed:\n${out}`);
      assert.match(out, /volume-provider contract: ramdisk/);
      assert.match(out, /after a kubelet restart, set-up with `previous` adopts the volume/);
      assert.match(out, /\d+ passing/);
      assert.doesNotMatch(out, /failing|pending/);
    });

    it('type-checks a TypeScript plugin against its declarations, and names what a plugin gets wrong', async function () {
      // The example (plugin and contract test) as its tsconfig checks it, plus a plugin with two
      // mistakes the declarations must catch; the declarations themselves are checked too
      // (skipLibCheck off), where only other packages' may fail (client-node's want @types/ws).
      await fs.writeFile(
        path.join(example, 'wrong.ts'),
        `import { definePlugin } from 'kubelet-ts';
export default definePlugin<{ sizeMiB: number }>({
  name: 'wrong',
  apply(ctx, options) {
    const size: string = options.sizeMiB;
    ctx.hooks.admitPod.tap('wrong', (pod) => pod.spec?.noSuchField);
    void size;
  },
});
`,
      );
      await fs.writeFile(path.join(example, 'tsconfig.check.json'), JSON.stringify({ extends: './tsconfig.json', compilerOptions: { skipLibCheck: false }, include: ['index.ts', 'test', 'wrong.ts'] }));
      const tsc = requireHere.resolve('typescript/bin/tsc');
      const r = await run(process.execPath, [tsc, '-p', 'tsconfig.check.json', '--pretty', 'false'], { cwd: example, timeoutMs: 240_000 });
      const errors = r.stdout.split('\n').filter((l) => /: error TS\d+:/.test(l));
      assert.notEqual(r.code, 0);
      const ours = errors.filter((l) => !l.startsWith('../node_modules/') || l.startsWith('../node_modules/kubelet-ts/'));
      assert.equal(ours.length, 2, `expected the two mistakes of wrong.ts only:\n${r.stdout}`);
      assert.match(ours[0]!, /^wrong\.ts\(5,\d+\): error TS2322: Type 'number' is not assignable to type 'string'/);
      assert.match(ours[1]!, /^wrong\.ts\(6,\d+\): error TS2339: Property 'noSuchField' does not exist on type 'V1PodSpec'/);
    });
  });
});
