import assert from 'node:assert/strict';
import { existsSync } from 'node:fs';
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { shebangNodeFlags } from '../support/shebang-flags.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const BIN = path.join(REPO, 'bin', 'kubelet-ts.mjs');
/** Node's flags from the executable's shebang, read once: every run below starts node as the executable does. */
const NODE_FLAGS = shebangNodeFlags(BIN);
const CASES = path.join(REPO, 'test', 'cases');
/** Bound on one CLI run: tsx compiles on start, so allow a few seconds, never hang the suite. */
const RUN_TIMEOUT_MS = 20_000;
/**
 * Bound on a test of `runs` CLI runs one after another: each is bounded by RUN_TIMEOUT_MS, so the test
 * needs their sum, not one run's bound (a busy lane has taken 6-7 s a start, and four of them overran 25 s).
 */
const sequentialRunsBound = (runs: number): number => runs * RUN_TIMEOUT_MS + 5000;

interface RunResult { code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string }

/** Runs `bin/kubelet-ts.mjs ...args` in the repo as its shebang does (node's flags included) and returns its exit code and output. */
function kubeletTs(args: string[]): Promise<RunResult> {
  return new Promise((resolve) => {
    execFile(
      process.execPath,
      [...NODE_FLAGS, BIN, ...args],
      { cwd: REPO, timeout: RUN_TIMEOUT_MS, killSignal: 'SIGKILL', env: { ...process.env, KUBELET_LOG_LEVEL: 'warn' } },
      (err, stdout, stderr) => {
        const e = err as (NodeJS.ErrnoException & { code?: number | string; signal?: NodeJS.Signals }) | null;
        resolve({ code: e ? (typeof e.code === 'number' ? e.code : null) : 0, signal: e?.signal ?? null, stdout, stderr });
      },
    );
  });
}

describe('kubelet-ts CLI', function () {
  this.timeout(sequentialRunsBound(1));
  this.slow(5000);
  let dir: string;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cli-'));
  });

  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('--help exits 0 and prints usage with the upstream flags', async function () {
    const r = await kubeletTs(['--help']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^Usage: kubelet-ts \[run\] \[flags\]/);
    for (const flag of ['--config', '--pod-manifest-path', '--container-runtime-endpoint', '--root-dir', '--node-name', '--read-only-port']) {
      assert.ok(r.stdout.includes(flag), `usage lacks ${flag}`);
    }
    assert.equal(r.stderr, '');
  });

  it('--version prints what kubeadm\'s preflight reads; --help lists kubeadm\'s flags', async function () {
    this.timeout(sequentialRunsBound(3));
    const { KUBELET_VERSION } = await import('../../core/version.ts');
    for (const args of [['--version'], ['--version=raw']]) {
      const r = await kubeletTs(args);
      assert.deepEqual([r.code, r.stdout, r.stderr], [0, `Kubernetes ${KUBELET_VERSION}\n`, ''], args.join(' '));
    }
    assert.match(KUBELET_VERSION, /^v1\.\d+\.\d+\+kubelet-ts\./);
    const help = await kubeletTs(['--help']);
    for (const flag of ['--plugins-config', '--bootstrap-kubeconfig', '--hostname-override', '--pod-infra-container-image', '--node-labels', '--register-with-taints', '-v, --v', '--cgroup-driver', '--resolv-conf', '--cluster-dns', '--cluster-domain', '--rotate-certificates']) {
      assert.ok(help.stdout.includes(flag), `usage lacks ${flag}`);
    }
  });

  it('`plugins` with a KubeletConfiguration: the default bundle\'s plugins, and the warning on stderr', async function () {
    const config = path.join(dir, 'config.yaml');
    await fs.writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\ncgroupDriver: systemd\ncpuManagerPolicy: static\nsyncFrequency: 0s\n');
    const r = await kubeletTs(['plugins', `--config=${config}`, '--root-dir', dir, '--pod-infra-container-image', 'pause:3.9']);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^cri-containerd {2}\(runtime, builtin: /);
    assert.match(r.stderr, /^kubelet-ts: warning: settings kubelet-ts does not implement, ignored: cpuManagerPolicy: static \(would need /);
    assert.match(r.stderr, /\nkubelet-ts: note: --pod-infra-container-image=pause:3\.9: accepted and ignored/);
  });

  it('an unknown flag exits 2 naming the flag and the nearest known one, in plain words, with usage', async function () {
    const r = await kubeletTs(['--pod-manifest-dir', '/tmp']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^kubelet-ts: unknown flag '--pod-manifest-dir' \(did you mean --pod-manifest-path\?\)\n\nUsage: kubelet-ts/);
    assert.doesNotMatch(r.stderr, /positional argument|To specify/, 'not parseArgs\' own text');
    assert.equal(r.stdout, '');
  });

  it('a flag without its value, and extra words, are refused, not ignored', async function () {
    this.timeout(sequentialRunsBound(3));
    const missing = await kubeletTs(['--root-dir']);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /^kubelet-ts: flag --root-dir needs a value\n/);
    const extra = await kubeletTs(['run', 'examples', '--root-dir', dir]);
    assert.equal(extra.code, 2);
    assert.match(extra.stderr, /^kubelet-ts: unexpected argument 'examples'\n/);
    const logs = await kubeletTs(['logs', 'web', 'app', 'more', '--root-dir', dir]);
    assert.equal(logs.code, 2);
    assert.match(logs.stderr, /^kubelet-ts logs: unexpected argument 'more'\n/);
  });

  it('--help lists every log level the config accepts, and the pods command', async function () {
    const { configSchema } = await import('../../core/config/schema.ts');
    const r = await kubeletTs(['--help']);
    const levels = configSchema.properties.logging.properties.level.enum as readonly string[];
    assert.ok(levels.includes('fatal') && levels.includes('silent'));
    assert.match(r.stdout, new RegExp(`--log-level LEVEL +${levels.join('\\|')} `));
    assert.match(r.stdout, /kubelet-ts pods \[NAME\.\.\.\] \[-n NAMESPACE \| -A\]/);
  });

  it('`pods` and `get pods` reach the kubelet on its local socket; `get` of anything else is refused', async function () {
    this.timeout(sequentialRunsBound(4));
    for (const args of [['pods'], ['get', 'pods'], ['get', 'po', '-w']]) {
      const r = await kubeletTs([...args, '--root-dir', dir]);
      assert.equal(r.code, 1, `${args.join(' ')}: ${r.stderr}`);
      assert.equal(r.stderr, `kubelet-ts pods: cannot reach the kubelet at ${path.join(dir, 'kubelet-ts.sock')} (no socket there); is it running with this root dir? (--root-dir DIR)\n`);
    }
    const nodes = await kubeletTs(['get', 'nodes']);
    assert.equal(nodes.code, 2);
    assert.match(nodes.stderr, /only 'get pods' is known here/);
  });

  it('`logs`, `explain` and `pods NAME` for a pod the kubelet does not have exit 1 naming it', async function () {
    this.timeout(sequentialRunsBound(4));
    // A kubelet's local socket that has no pods.
    const server = http.createServer((req, res) => {
      res.setHeader('content-type', 'application/json');
      res.end(req.url === '/pods' ? JSON.stringify({ kind: 'PodList', apiVersion: 'v1', items: [] }) : '{}');
    });
    await new Promise<void>((resolve) => server.listen(path.join(dir, 'kubelet-ts.sock'), resolve));
    try {
      const cases: Array<[string[], string]> = [
        [['logs', 'web'], 'Error from server (NotFound): pods "web" not found\n'],
        [['explain', 'web'], 'kubelet-ts explain: pods "web" not found\n'],
        [['pods', 'web'], 'Error from server (NotFound): pods "web" not found\n'],
        [['logs', 'web', '-n', 'kube-system'], 'Error from server (NotFound): pods "web" not found in namespace "kube-system"\n'],
      ];
      for (const [args, stderr] of cases) {
        const r = await kubeletTs([...args, '--root-dir', dir]);
        assert.deepEqual([r.code, r.stderr, r.stdout], [1, stderr, ''], args.join(' '));
      }
    } finally {
      server.close();
    }
  });

  it('`plugins` lists the plugins without touching the node: no runtime, no socket, no CNI config written', async function () {
    const config = path.join(dir, 'kubelet.config.json');
    const runtimeConfDir = path.join(dir, 'runtime-net.d');
    const socketPath = path.join(dir, 'cni.sock');
    // A runtime endpoint where nothing listens, and cni-exec pointed at files it would write when started.
    await fs.writeFile(config, JSON.stringify({
      podLogsDir: './logs', containerRuntimeEndpoint: `unix://${path.join(dir, 'no-containerd.sock')}`,
      plugins: ['cri-containerd', ['cni-exec', { runtimeConfDir, runtimeBinDir: path.join(dir, 'runtime-bin'), socketPath, confDir: path.join(dir, 'net.d') }], 'probes'],
    }));
    const r = await kubeletTs(['plugins', '--config', config, '--root-dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^cri-containerd {2}\(runtime, builtin: .*\n {2}provides: runtime\n/);
    assert.match(r.stdout, /^cni-exec {2}\(network, builtin: .*\n {2}provides: network\n/m);
    assert.match(r.stdout, /^probes {2}\(probe, builtin: /m);
    assert.equal(existsSync(runtimeConfDir), false, 'no CNI config written for the runtime');
    assert.equal(existsSync(socketPath), false, 'no delegate socket bound');
  });

  it('each command\'s -h prints its own usage, not the global one; plugins\' usage errors show its usage', async function () {
    // Five rounds of runs one after another: the eleven usages three at a time (four rounds), then the usage error.
    this.timeout(sequentialRunsBound(5));
    const { PLUGINS_USAGE } = await import('../../core/commands/plugins.ts');
    const { CONFIG_USAGE } = await import('../../core/commands/config-command.ts');
    const { PODS_USAGE } = await import('../../core/commands/pods.ts');
    const { LOGS_USAGE } = await import('../../core/commands/logs.ts');
    const { EXPLAIN_USAGE } = await import('../../core/commands/explain.ts');
    const { EVENTS_USAGE } = await import('../../core/commands/events.ts');
    const { HOLLOW_USAGE } = await import('../../core/hollow/hollow-args.ts');
    const cases: Array<[string[], string]> = [
      [['plugins', '-h'], PLUGINS_USAGE], [['plugins', '--help'], PLUGINS_USAGE], [['config', '-h'], CONFIG_USAGE], [['config', 'validate', '-h'], CONFIG_USAGE],
      [['pods', '-h'], PODS_USAGE], [['get', 'pods', '-h'], PODS_USAGE], [['get', '-h'], PODS_USAGE], [['logs', '-h'], LOGS_USAGE],
      [['explain', '-h'], EXPLAIN_USAGE], [['events', '-h'], EVENTS_USAGE], [['hollow', '-h'], HOLLOW_USAGE],
    ];
    // Three at a time: each start compiles with tsx, and the machine may have two cores.
    const runs: RunResult[] = [];
    for (let i = 0; i < cases.length; i += 3) runs.push(...(await Promise.all(cases.slice(i, i + 3).map(([args]) => kubeletTs(args)))));
    for (const [i, [args, usage]] of cases.entries()) assert.deepEqual([runs[i]!.code, runs[i]!.stdout, runs[i]!.stderr], [0, usage, ''], args.join(' '));
    assert.match(PLUGINS_USAGE, /^Usage: kubelet-ts plugins \[flags\]\n[^]*\n {2}--hostname-override NAME /);
    const bad = await kubeletTs(['plugins', '--pod-manifest-dir', '/x']);
    assert.equal(bad.code, 2);
    assert.equal(bad.stderr, `kubelet-ts: unknown flag '--pod-manifest-dir' (did you mean --pod-manifest-path?)\n\n${PLUGINS_USAGE}`);
  });

  it('`config validate` and `config view -o json` through the binary; the global usage lists them', async function () {
    const config = path.join(dir, 'config.yaml');
    await fs.writeFile(config, 'apiVersion: kubelet.config.k8s.io/v1beta1\nkind: KubeletConfiguration\nstaticPodPath: /etc/kubernetes/manifests\n');
    const [valid, view, help] = await Promise.all([
      kubeletTs(['config', 'validate', '--config', config, '--root-dir', dir]),
      kubeletTs(['config', 'view', '-o', 'json', '--config', config, '--node-name', 'node-a']),
      kubeletTs(['--help']),
    ]);
    assert.equal(valid.code, 0, valid.stderr);
    assert.match(valid.stdout, new RegExp(`^${config} with --root-dir: valid; plugins of .*kubelet\\.config\\.(ts|js): \\d+ applied`));
    assert.equal(view.code, 0, view.stderr);
    assert.deepEqual(Object.entries(JSON.parse(view.stdout)).filter(([k]) => ['kind', 'staticPodPath', 'nodeName'].includes(k)), [['kind', 'KubeletConfiguration'], ['staticPodPath', '/etc/kubernetes/manifests'], ['nodeName', 'node-a']]);
    assert.match(help.stdout, /\n {7}kubelet-ts config validate \[flags\]\n[^]*\n {7}kubelet-ts config view \[-o yaml\|json\] \[flags\]\n/);
  });

  it('an unknown command exits 2 naming it', async function () {
    const r = await kubeletTs(['frobnicate']);
    assert.equal(r.code, 2);
    assert.match(r.stderr, /^kubelet-ts: unknown command 'frobnicate'/);
  });

  it('--read-only-port abc exits non-zero naming the flag, the value and what is allowed', async function () {
    const r = await kubeletTs(['--read-only-port', 'abc', '--root-dir', dir]);
    assert.notEqual(r.code, 0);
    assert.equal(r.signal, null);
    assert.match(r.stderr, /^kubelet-ts: --read-only-port: 'abc' is not an integer; allowed: an integer port 0-65535/);
  });

  it('--read-only-port out of range exits 1 naming the flag', async function () {
    const config = path.join(dir, 'kubelet.json');
    await fs.writeFile(config, '{}');
    const r = await kubeletTs(['--config', config, '--read-only-port', '70000', '--root-dir', dir]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, 'kubelet-ts: --read-only-port: readOnlyPort is 70000; allowed: an integer port 0-65535 (0 disables)\n');
  });

  it('--config with a bad field exits 1 naming the file and the field', async function () {
    const config = path.join(dir, 'kubelet.yaml');
    await fs.writeFile(config, 'staticPodPath: ./manifests\nsyncFrequncy: 1m\n');
    const r = await kubeletTs(['--config', config, '--root-dir', dir]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `kubelet-ts: ${config}: unknown field 'syncFrequncy' (did you mean 'syncFrequency'?)\n`);
    assert.ok(!r.stderr.includes('    at '), 'a config error must not print a stack trace');
  });

  it('`plugins` prints each plugin, what it provides and which hooks it taps', async function () {
    const r = await kubeletTs(['plugins', '--config', path.join(CASES, 'inline-stub-runtime', 'kubelet.config.ts'), '--root-dir', dir]);
    assert.equal(r.code, 0, r.stderr);
    const lines = r.stdout.trimEnd().split('\n').map((l) => l.replace(/apply [\d.]+ ms/, 'apply N ms'));
    assert.deepEqual(lines, [
      'inline-runtime  (runtime, inline: config)  apply N ms',
      '  provides: runtime',
      'inline-admission  (policy, inline: config)  apply N ms',
      '  taps: admitPod (stage -100)',
      '  taps: onPressure',
    ]);
    const stateDirs = (await fs.readdir(path.join(dir, 'plugin-state'))).sort();
    assert.deepEqual(stateDirs, ['inline-admission', 'inline-runtime'], 'state dirs go under --root-dir');
  });

  it('a config with no runtime plugin exits 1 with the missing slot message', async function () {
    const config = path.join(CASES, 'no-runtime', 'kubelet.config.ts');
    const r = await kubeletTs(['plugins', '--config', config, '--root-dir', dir]);
    assert.equal(r.code, 1);
    assert.equal(r.stderr, `kubelet-ts: plugin 'host': no plugin provides the 'runtime' slot: add a runtime plugin (for example 'cri-containerd') to plugins in ${config}\n`);
    assert.equal(r.stdout, '');
  });

  it('`logs`, `explain` and `events` reach the kubelet on its local socket under --root-dir, and say so when nothing is there', async function () {
    this.timeout(sequentialRunsBound(3));
    for (const [command, args] of [['logs', ['web']], ['explain', ['web']], ['events', []]] as const) {
      const r = await kubeletTs([command, ...args, '--root-dir', dir]);
      assert.equal(r.code, 1, `${command}: ${r.stderr}`);
      assert.equal(r.stderr, `kubelet-ts ${command}: cannot reach the kubelet at ${path.join(dir, 'kubelet-ts.sock')} (no socket there); is it running with this root dir? (--root-dir DIR)\n`);
    }
  });

  it('run with --container-runtime-endpoint to an absent socket exits 1 naming the endpoint', async function () {
    // podLogsDir has no flag: a config in the temp dir keeps the run from writing under /var/log.
    const config = path.join(dir, 'kubelet.config.json');
    await fs.writeFile(config, JSON.stringify({ podLogsDir: './logs', plugins: ['cri-containerd'] }));
    const r = await kubeletTs(['--config', config, '--container-runtime-endpoint', 'unix:///nonexistent.sock', '--root-dir', path.join(dir, 'root')]);
    assert.equal(r.code, 1, r.stderr);
    assert.ok(
      r.stderr.includes("kubelet-ts: plugin 'cri-containerd': container runtime endpoint unix:///nonexistent.sock: no socket at /nonexistent.sock (is containerd running? set --container-runtime-endpoint)\n"),
      r.stderr,
    );
    await fs.access(path.join(dir, 'root', 'plugin-state', 'cri-containerd'));
  });
});

describe('kubelet-ts CLI: a kubeconfig that cannot work', function () {
  this.timeout(sequentialRunsBound(1));
  let dir: string;
  beforeEach(async () => (dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cli-kc-'))));
  afterEach(() => fs.rm(dir, { recursive: true, force: true }));

  const run = async (kubeconfig: string, nodeName: string) => {
    const config = path.join(dir, 'kubelet.config.json');
    await fs.writeFile(config, JSON.stringify({ podLogsDir: './logs', plugins: ['cri-containerd'] }));
    return kubeletTs(['--config', config, '--kubeconfig', kubeconfig, '--node-name', nodeName, '--root-dir', path.join(dir, 'root'), '--container-runtime-endpoint', 'unix:///nonexistent.sock']);
  };

  it('a missing kubeconfig exits 1 naming the file, before touching the runtime', async function () {
    const r = await run(path.join(dir, 'nope.kubeconfig'), 'n1');
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, new RegExp(`^kubelet-ts: kubeconfig ${escape(path.join(dir, 'nope.kubeconfig'))}: `));
    assert.ok(!/\n\s+at /.test(r.stderr), r.stderr);
    assert.ok(!r.stderr.includes('container runtime endpoint'), 'the runtime was not reached first');
  });

  it('a node kubeconfig of another node exits 1 naming both names', async function () {
    const { writeKubeconfig } = await import('../support/fake-apiserver.ts');
    const kc = await writeKubeconfig('https://127.0.0.1:1', 'cert', { dir });
    const r = await run(kc, 'n2');
    assert.equal(r.code, 1, r.stderr);
    assert.match(r.stderr, /kubeconfig .*: it authenticates as system:node:n1, but this node's name is "n2" \(nodeName \/ --node-name\)/);
  });
});

function escape(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}
