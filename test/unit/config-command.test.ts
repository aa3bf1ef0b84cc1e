/**
 * `kubelet-ts config validate|view`: what an operator sees for a configuration a start would
 * accept, and for one it would refuse (named as the start names it), and the effective
 * configuration as /configz serves it.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import yaml from 'js-yaml';
import { configCommand, CONFIG_USAGE } from '../../core/commands/config-command.ts';
import { DEFAULT_CONFIG_FILE, loadConfig } from '../../core/config/load.ts';
import { configzBody } from '../../core/server/configz.ts';
import { TextSink } from '../support/text-sink.ts';

async function config(argv: string[]): Promise<{ code: number; out: string; err: string }> {
  const out = new TextSink();
  const err = new TextSink();
  const code = await configCommand(argv, { stdout: out, stderr: err });
  return { code, out: out.text, err: err.text };
}

const KUBELET_CONFIGURATION = 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\n';

describe('kubelet-ts config', function () {
  this.timeout(20_000);
  let dir: string;
  const file = async (name: string, text: string) => {
    const p = path.join(dir, name);
    await fs.writeFile(p, text);
    return p;
  };
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-config-cmd-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  describe('validate', function () {
    it('the default bundle: one line naming the file and what the plugins did, nothing on stderr', async function () {
      const r = await config(['validate']);
      assert.deepEqual([r.code, r.err], [0, '']);
      // credential-provider-exec declines to load without an imageCredentialProviderConfig.
      assert.match(r.out, new RegExp(`^${DEFAULT_CONFIG_FILE}: valid; plugins: \\d+ applied, 1 skipped itself \\(credential-provider-exec\\)\\n$`));
    });

    it('a KubeletConfiguration with flags: the start\'s warning and notes on stderr, the flags and the plugins\' file in the line', async function () {
      const f = await file('config.yaml', `${KUBELET_CONFIGURATION}cpuManagerPolicy: static\n`);
      const r = await config(['validate', '--config', f, '--hostname-override', 'node-a', '--pod-infra-container-image', 'pause:3.9']);
      assert.equal(r.code, 0, r.err);
      assert.match(r.out, new RegExp(`^${f} with --hostname-override, --pod-infra-container-image: valid; plugins of ${DEFAULT_CONFIG_FILE}: \\d+ applied`));
      assert.match(r.err, /^kubelet-ts: warning: settings kubelet-ts does not implement, ignored: cpuManagerPolicy: static \(would need /);
      assert.match(r.err, /\nkubelet-ts: note: --pod-infra-container-image=pause:3\.9: accepted and ignored/);
    });

    it('a bad field or flag value exits 1 with the start\'s error naming the file (or flag) and the field', async function () {
      const f = await file('config.yaml', `${KUBELET_CONFIGURATION}syncFrequency: banana\n`);
      const r = await config(['validate', '--config', f]);
      assert.deepEqual([r.code, r.out], [1, '']);
      assert.match(r.err, new RegExp(`^kubelet-ts config validate: ${f}: syncFrequency is "banana"; allowed: a Go duration`));
      const flag = await config(['validate', '--read-only-port', '70000']);
      assert.equal(flag.code, 1);
      assert.match(flag.err, /^kubelet-ts config validate: .*--read-only-port/);
    });

    it('applies the plugins: options their schema refuses exit 1 naming the plugin and the option', async function () {
      const f = await file('kubelet.yaml', 'plugins:\n  - [cri-containerd, { pullTimeoutSeconds: soon }]\n');
      const r = await config(['validate', '--config', f]);
      assert.equal(r.code, 1);
      assert.match(r.err, /^kubelet-ts config validate: plugin 'cri-containerd': invalid options:\n.*pullTimeoutSeconds is "soon"/);
    });

    it('makes the start\'s own checks: an unsafe sysctl that is not namespaced, credential provider flags no plugin reads', async function () {
      const sysctl = await file('sysctl.yaml', `${KUBELET_CONFIGURATION}allowedUnsafeSysctls: [vm.swappiness]\n`);
      const s = await config(['validate', '--config', sysctl]);
      assert.equal(s.code, 1);
      assert.match(s.err, new RegExp(`^kubelet-ts config validate: ${sysctl}: allowedUnsafeSysctls: the sysctls "vm.swappiness" are not known to be namespaced`));
      const noProvider = await file('kubelet.yaml', 'plugins: [cri-containerd]\nimageCredentialProviderConfig: /etc/cp.yaml\nimageCredentialProviderBinDir: /usr/libexec/cp\n');
      const c = await config(['validate', '--config', noProvider]);
      assert.equal(c.code, 1);
      assert.match(c.err, /imageCredentialProviderConfig \(--image-credential-provider-config\) is set but no plugin provides image credentials/);
    });

    it('reads a kubeconfig given as is, not one the TLS bootstrap will write', async function () {
      const missing = path.join(dir, 'kubelet.conf');
      const r = await config(['validate', '--kubeconfig', missing]);
      assert.equal(r.code, 1);
      assert.match(r.err, new RegExp(`^kubelet-ts config validate: kubeconfig ${missing}: cannot read`));
      const bootstrap = await config(['validate', '--kubeconfig', missing, '--bootstrap-kubeconfig', path.join(dir, 'bootstrap.conf')]);
      assert.equal(bootstrap.code, 0, bootstrap.err);
      assert.match(bootstrap.out, /: valid;/);
    });
  });

  describe('view', function () {
    it('prints what /configz serves for the same flags, as YAML, and as JSON with -o json', async function () {
      const f = await file('config.yaml', `${KUBELET_CONFIGURATION}readOnlyPort: 0\nclusterDNS: [10.96.0.10]\n`);
      const flags = ['--config', f, '--hostname-override', 'Node-A', '--max-pods', '30'];
      const served = JSON.parse(JSON.stringify(configzBody(await loadConfig({ configFile: f, settings: [
        { flag: 'hostname-override', spelling: '--hostname-override', value: 'Node-A' },
        { flag: 'max-pods', spelling: '--max-pods', value: 30 },
      ] })).kubeletconfig));
      const y = await config(['view', ...flags]);
      assert.deepEqual([y.code, y.err], [0, '']);
      const doc = yaml.load(y.out) as Record<string, unknown>;
      assert.deepEqual(doc, served);
      assert.deepEqual([doc.kind, doc.nodeName, doc.maxPods, doc.readOnlyPort, doc.syncFrequency], ['KubeletConfiguration', 'node-a', 30, 0, '1m0s']);
      for (const o of [['-o', 'json'], ['-ojson'], ['--output=json'], ['--output', 'json']]) {
        const j = await config(['view', ...o, ...flags]);
        assert.equal(j.code, 0, `${o.join(' ')}: ${j.err}`);
        assert.deepEqual(JSON.parse(j.out), served, o.join(' '));
      }
    });

    it('a configuration a start would refuse is refused, not shown', async function () {
      const f = await file('config.yaml', `${KUBELET_CONFIGURATION}maxPods: lots\n`);
      const r = await config(['view', '--config', f]);
      assert.deepEqual([r.code, r.out], [1, '']);
      assert.match(r.err, new RegExp(`^kubelet-ts config view: ${f}: maxPods`));
    });
  });

  it('-h prints the config command\'s usage; a missing or unknown subcommand, a bad -o, -o with validate exit 2 with it', async function () {
    assert.deepEqual(await config(['-h']), { code: 0, out: CONFIG_USAGE, err: '' });
    assert.deepEqual(await config(['view', '--help']), { code: 0, out: CONFIG_USAGE, err: '' });
    assert.match(CONFIG_USAGE, /^Usage: kubelet-ts config validate \[flags\]\n {7}kubelet-ts config view \[-o yaml\|json\] \[flags\]\n/);
    assert.match(CONFIG_USAGE, /\n {2}--hostname-override NAME /);
    for (const [argv, msg] of [
      [[], 'a subcommand is required: validate or view'],
      [['show'], "unknown subcommand 'show'; allowed: validate, view"],
      [['view', '-o', 'xml'], "--output: 'xml' is not a format; allowed: yaml, json"],
      [['validate', '-o', 'json'], '-o, --output goes with view; validate prints one line'],
      [['view', '--pod-manifest-dir', '/x'], "unknown flag '--pod-manifest-dir' (did you mean --pod-manifest-path?)"],
      [['view', 'extra'], "unexpected argument 'extra'"],
      [['view', '-o'], 'flag --output needs a value'],
    ] as const) {
      assert.deepEqual(await config([...argv]), { code: 2, out: '', err: `kubelet-ts config: ${msg}\n\n${CONFIG_USAGE}` }, argv.join(' '));
    }
  });
});
