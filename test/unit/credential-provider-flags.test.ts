/**
 * Upstream's flags --image-credential-provider-config and --image-credential-provider-bin-dir (the
 * config fields imageCredentialProviderConfig, imageCredentialProviderBinDir): they reach the
 * credential-provider-exec plugin of the default bundle, one without the other is refused, and a
 * config whose plugins leave out every image credential provider does not ignore them silently.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig } from '../../core/config/load.ts';
import { Kubelet } from '../../core/kubelet.ts';
import { silentLogger } from '../../core/logger.ts';
import { testConfig } from '../support/test-kubelet.ts';
import { unusedRuntime } from '../support/recorder-plugin.ts';
import { definePlugin } from '../../core/plugins/plugin-api.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(REPO, 'bin', 'kubelet-ts.mjs');
const RUN_TIMEOUT_MS = 20_000;

function kubeletTs(args: string[]): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [BIN, ...args], { cwd: REPO, timeout: RUN_TIMEOUT_MS, killSignal: 'SIGKILL' }, (err, stdout, stderr) => {
      const e = err as (NodeJS.ErrnoException & { code?: number | string }) | null;
      resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, stdout, stderr });
    });
  });
}

describe('image credential provider flags and fields', function () {
  // Two CLI runs a test at most, each bounded by RUN_TIMEOUT_MS; the margin lets a run's own bound report first.
  this.timeout(RUN_TIMEOUT_MS * 2 + 5000);
  this.slow(5000);
  let dir: string;
  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-credflags-'));
  });
  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('the default bundle\'s credential-provider-exec declines to load without the flags, and taps imageCredentials with them', async function () {
    const without = await kubeletTs(['plugins', '--root-dir', dir]);
    assert.equal(without.code, 0, without.stderr);
    assert.match(without.stdout, /^credential-provider-exec {2}skipped: no imageCredentialProviderConfig \(--image-credential-provider-config\): no exec image credential providers$/m);
    const config = path.join(dir, 'providers.yaml');
    const bin = path.join(dir, 'bin');
    const withFlags = await kubeletTs(['plugins', '--root-dir', dir, '--image-credential-provider-config', config, '--image-credential-provider-bin-dir', bin]);
    assert.equal(withFlags.code, 0, withFlags.stderr);
    assert.match(withFlags.stdout, /^credential-provider-exec {2}\(other, builtin: .*\)  apply [\d.]+ ms\n {2}taps: imageCredentials$/m);
  });

  it('--help lists both flags; the config flag without the bin dir is refused naming both', async function () {
    const help = await kubeletTs(['--help']);
    assert.match(help.stdout, /--image-credential-provider-config FILE/);
    assert.match(help.stdout, /--image-credential-provider-bin-dir DIR/);
    const r = await kubeletTs(['plugins', '--root-dir', dir, '--image-credential-provider-config', path.join(dir, 'p.yaml')]);
    assert.equal(r.code, 1);
    // The default config is the sources' kubelet.config.ts, or dist/kubelet.config.js when the executable runs a fresh build.
    assert.match(r.stderr, /^kubelet-ts: .*kubelet\.config\.(ts|js): imageCredentialProviderConfig \(--image-credential-provider-config\) is set but imageCredentialProviderBinDir \(--image-credential-provider-bin-dir\) is not; allowed: both, or neither\n$/);
  });

  it('paths in the file are relative to the file, paths from flags to the working directory', async function () {
    const file = path.join(dir, 'kubelet.json');
    await fs.writeFile(file, JSON.stringify({ imageCredentialProviderConfig: 'creds/providers.yaml', imageCredentialProviderBinDir: '../bin' }));
    const fromFile = await loadConfig({ configFile: file });
    assert.equal(fromFile.imageCredentialProviderConfig, path.join(dir, 'creds', 'providers.yaml'));
    assert.equal(fromFile.imageCredentialProviderBinDir, path.resolve(dir, '..', 'bin'));
    const fromFlags = await loadConfig({ configFile: file, flags: { imageCredentialProviderConfig: 'p.yaml', imageCredentialProviderBinDir: 'b' } });
    assert.equal(fromFlags.imageCredentialProviderConfig, path.resolve('p.yaml'));
    assert.equal(fromFlags.imageCredentialProviderBinDir, path.resolve('b'));
    await fs.writeFile(file, JSON.stringify({ imageCredentialProviderConfig: '' }));
    await assert.rejects(loadConfig({ configFile: file }), /imageCredentialProviderConfig/);
  });

  it('a kubelet whose plugins leave out every image credential provider refuses to start with the config set', async function () {
    const runtime = definePlugin({ name: 'stub-runtime', kind: 'runtime', apply: (ctx) => ctx.provide('runtime', unusedRuntime()) });
    const config = testConfig(dir, { plugins: [runtime], imageCredentialProviderConfig: path.join(dir, 'p.yaml'), imageCredentialProviderBinDir: dir, configFile: path.join(dir, 'kubelet.config.ts') });
    const kubelet = new Kubelet(config, silentLogger());
    try {
      await assert.rejects(kubelet.start(), {
        name: 'ConfigError',
        message: `${path.join(dir, 'kubelet.config.ts')}: imageCredentialProviderConfig (--image-credential-provider-config) is set but no plugin provides image credentials: add 'credential-provider-exec' to plugins`,
      });
    } finally {
      await kubelet.stop();
    }
  });
});
