/**
 * Issue 17: a config copied out of the repository (as kubelet.config.ts's comment suggests)
 * failed with `Cannot find package 'kubelet-ts'`: Node looks for the package from the config's
 * own directory. The config loader now answers 'kubelet-ts' with the running package.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../core/config/load.ts';

const BIN = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'bin', 'kubelet-ts.mjs');

/** Runs the CLI from `cwd`: outside the repository, where its tsconfig paths do not reach either. */
function kubeletTs(args: string[], cwd: string): Promise<{ code: number; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd, timeout: 20_000, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === 'number' ? err.code : -1) : 0, stdout, stderr });
    });
  });
}

describe('ux: a config file outside the repository', function () {
  // Above the run's own 20 s bound, so a run that hangs is reported as killed, not as the test's timeout.
  this.timeout(25_000);
  let dir: string;
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h17-etc-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  it("imports defineConfig from 'kubelet-ts' in an .mts config anywhere", async () => {
    const file = path.join(dir, 'kubelet.config.mts');
    // A config with no runtime plugin: the CLI loads it, then says what is missing in it.
    await fs.writeFile(file, `import { defineConfig } from 'kubelet-ts';
export default defineConfig({ rootDir: ${JSON.stringify(path.join(dir, 'root'))}, plugins: ['probes'] });
`);
    const r = await kubeletTs(['plugins', '--config', file], dir);
    assert.equal(r.stderr, `kubelet-ts: plugin 'host': no plugin provides the 'runtime' slot: add a runtime plugin (for example 'cri-containerd') to plugins in ${file}\n`);
    assert.equal(r.code, 1);
  });

  it('a YAML config needs no import at all', async () => {
    const file = path.join(dir, 'kubelet.yaml');
    await fs.writeFile(file, `rootDir: ${path.join(dir, 'root')}\nplugins:\n  - [cri-containerd, { pullTimeoutSeconds: 600 }]\n  - probes\n`);
    const config = await loadConfig({ configFile: file });
    assert.equal(config.rootDir, path.join(dir, 'root'));
  });

  it('another missing package is still reported as missing', async () => {
    const file = path.join(dir, 'kubelet.config.mts');
    await fs.writeFile(file, "import x from 'kubelet-ts-not-a-package';\nexport default { plugins: [x] };\n");
    const r = await kubeletTs(['plugins', '--config', file], dir);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /cannot load config: Cannot find package 'kubelet-ts-not-a-package'/);
  });
});
