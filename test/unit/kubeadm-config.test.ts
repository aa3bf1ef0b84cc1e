import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { loadConfig, readConfigFile, DEFAULT_CONFIG_FILE, type ConfigNotice, type LoadConfigOptions } from '../../core/config/load.ts';
import { parseKubeletCommandLine } from '../../core/commands/kubelet-command-line.ts';
import { UsageError } from '../../core/commands/command-args.ts';
import { ConfigError } from '../../core/errors.ts';
import { createHooks } from '../../core/hooks.ts';
import { silentLogger } from '../../core/logger.ts';
import { PluginHost } from '../../core/plugins/plugin-host.ts';
import { KUBELET_FLAGS } from '../../core/config/upstream-flags.ts';
import { UPSTREAM_FIELDS, verbosityToLevel } from '../../core/config/upstream-fields.ts';
import { notImplementedMarkdown, readmeBlock, UPSTREAM_SETTINGS_DOC } from '../../tools/readme-upstream-fields.ts';

const CASES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases');
const KUBEADM_128 = path.join(CASES, 'kubeadm-1.28', 'config.yaml');
const KUBEADM_136 = path.join(CASES, 'kubeadm-1.36', 'config.yaml');

/** Loads with a command line, returning the config and what the start would log. */
async function load(argv: string[], extra: LoadConfigOptions = {}) {
  const line = parseKubeletCommandLine(argv);
  const notices: ConfigNotice[] = [];
  const config = await loadConfig({
    ...(line.configFile !== undefined ? { configFile: line.configFile } : {}),
    ...(line.pluginsConfig !== undefined ? { pluginsConfig: line.pluginsConfig } : {}),
    settings: line.settings,
    notices,
    ...extra,
  });
  return { config, notices, warnings: notices.filter((n) => n.level === 'warn'), infos: notices.filter((n) => n.level === 'info') };
}

/** The ConfigError message of loading with this command line. */
async function failure(argv: string[]): Promise<string> {
  const err = await load(argv).then(() => undefined, (e: unknown) => e);
  assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err === undefined ? 'a config' : String(err)}`);
  return err.message;
}

describe('upstream KubeletConfiguration (kubeadm\'s /var/lib/kubelet/config.yaml)', function () {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-kubeadm-config-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });
  const write = async (name: string, content: string | object) => {
    const file = path.join(dir, name);
    await fs.writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  };
  const upstream = (fields: object) => write('config.yaml', { apiVersion: 'kubelet.config.k8s.io/v1beta1', kind: 'KubeletConfiguration', ...fields });

  describe('kubeadm\'s files', function () {
    for (const [version, file] of [['1.28', KUBEADM_128], ['1.36', KUBEADM_136]] as const) {
      it(`${version}: every zero value reads as upstream's default, its settings take effect, nothing is ignored`, async function () {
        const { config: c, warnings, infos } = await load(['--config', file]);
        // What kubeadm set.
        assert.deepEqual([c.clusterDNS, c.clusterDomain, c.staticPodPath, c.authentication.x509ClientCAFile], [['10.96.0.10'], 'cluster.local', '/etc/kubernetes/manifests', '/etc/kubernetes/pki/ca.crt']);
        assert.deepEqual([c.healthzPort, c.healthzBindAddress, c.authentication.anonymousEnabled, c.authentication.webhookEnabled, c.authorization.mode], [10248, '127.0.0.1', false, true, 'Webhook']);
        // What its zero values mean: upstream's defaults, also where kubelet-ts's own differ.
        assert.deepEqual(
          [c.syncFrequencyMs, c.fileCheckFrequencyMs, c.httpCheckFrequencyMs, c.runtimeRequestTimeoutMs, c.streamingConnectionIdleTimeoutMs, c.nodeStatusUpdateFrequencyMs, c.nodeStatusReportFrequencyMs],
          [60_000, 20_000, 20_000, 120_000, 4 * 3600_000, 10_000, 300_000],
        );
        assert.deepEqual([c.authentication.webhookCacheTTLMs, c.authorization.cacheAuthorizedTTLMs, c.authorization.cacheUnauthorizedTTLMs], [120_000, 300_000, 30_000]);
        assert.deepEqual([c.eviction.pressureTransitionPeriodMs, c.imageGC.minAgeMs, c.imageGC.maxAgeMs, c.maxParallelImagePulls], [300_000, 120_000, 0, 1]);
        assert.deepEqual([c.port, c.readOnlyPort, c.address, c.maxPods, c.resolvConf, c.logLevel], [10250, 0, '0.0.0.0', 110, '/etc/resolv.conf', 'info']);
        assert.equal(c.containerRuntimeEndpoint, version === '1.28' ? 'unix:///run/containerd/containerd.sock' : 'unix:///var/run/containerd/containerd.sock');
        // Plugins: the default bundle's.
        assert.deepEqual(c.plugins, (await readConfigFile(DEFAULT_CONFIG_FILE)).plugins);
        assert.equal(c.pluginsConfigFile, DEFAULT_CONFIG_FILE);
        assert.equal(c.configFile, file);
        // kubeadm's cgroup settings: the systemd driver, node allocatable enforced on kubepods (upstream's default).
        assert.deepEqual([c.cgroupDriver, c.cgroupsPerQOS, c.enforceNodeAllocatablePods, c.podPidsLimit], ['systemd', true, true, undefined]);
        // Nothing kubeadm writes is ignored.
        assert.deepEqual(warnings.map((w) => w.msg), []);
        assert.deepEqual(infos, []);
      });

      it(`${version}: with kubeadm's flags (drop-in and kubeadm-flags.env) in both forms`, async function () {
        const { config: c, warnings, infos } = await load([
          '--bootstrap-kubeconfig=/etc/kubernetes/bootstrap-kubelet.conf', '--kubeconfig', '/etc/kubernetes/kubelet.conf', `--config=${file}`,
          '--container-runtime-endpoint=unix:///var/run/containerd/containerd.sock', '--pod-infra-container-image', 'registry.k8s.io/pause:3.9',
          '--hostname-override=Worker-1', '--node-ip', '10.0.0.5', '--node-labels=node.kubernetes.io/role=worker', '--register-with-taints', 'dedicated=infra:NoSchedule', '--v=4',
        ]);
        assert.deepEqual([c.kubeconfig, c.containerRuntimeEndpoint, c.nodeName, c.nodeIP, c.logLevel], ['/etc/kubernetes/kubelet.conf', 'unix:///var/run/containerd/containerd.sock', 'worker-1', '10.0.0.5', 'debug']);
        assert.deepEqual(c.nodeLabels, { 'node.kubernetes.io/role': 'worker' });
        assert.deepEqual(c.registerWithTaints, [{ key: 'dedicated', value: 'infra', effect: 'NoSchedule' }]);
        assert.deepEqual(warnings.map((w) => w.msg), [], 'no warning: --bootstrap-kubeconfig is not named while --kubeconfig exists');
        assert.deepEqual(infos.map((i) => i.msg), ['--pod-infra-container-image=registry.k8s.io/pause:3.9: accepted and ignored, as upstream deprecated it (and removed it in 1.35): the pod sandbox image comes from the runtime (containerd: sandbox_image), which also keeps it from image GC']);
      });
    }

    it('the docs list the settings not implemented exactly as the warning\'s table has them', async function () {
      const block = readmeBlock(await fs.readFile(UPSTREAM_SETTINGS_DOC, 'utf8'));
      assert.ok(block !== undefined, 'docs/operating/kubeadm.md has the generated block');
      assert.equal(block, notImplementedMarkdown(), 'docs/operating/kubeadm.md is out of date: run `npx tsx tools/readme-upstream-fields.ts`');
    });
  });

  describe('upstream\'s defaulting', function () {
    it('a zero value of a Go field without a pointer is the default; of a pointer field, that value', async function () {
      const file = await upstream({ port: 0, maxPods: 0, eventBurst: 0, nodeLeaseDurationSeconds: 0, containerLogMaxSize: '', eventRecordQPS: 0, resolvConf: '', healthzPort: 0, readOnlyPort: 0, cgroupsPerQOS: false, registerNode: false });
      const { config: c } = await load(['--config', file]);
      assert.deepEqual([c.port, c.maxPods, c.eventBurst, c.nodeLeaseDurationSeconds, c.containerLogs.maxSizeBytes], [10250, 110, 100, 40, 10 * 2 ** 20]);
      assert.deepEqual([c.eventRecordQPS, c.resolvConf, c.healthzPort, c.readOnlyPort, c.cgroupsPerQOS, c.registerNode], [0, '', 0, 0, false, false]);
    });

    it('absent fields take upstream\'s defaults where kubelet-ts\'s own differ; kubelet-ts\'s format keeps its own', async function () {
      const { config: up } = await load(['--config', await upstream({})]);
      const own = await loadConfig({ configFile: await write('own.json', {}) });
      assert.deepEqual([up.fileCheckFrequencyMs, up.maxParallelImagePulls, up.healthzPort], [20_000, 1, 10248]);
      assert.deepEqual([own.fileCheckFrequencyMs, own.maxParallelImagePulls, own.healthzPort], [20_000, undefined, 0]);
    });

    it('serializeImagePulls defaults to false when maxParallelImagePulls allows more than one, as upstream', async function () {
      const { config: c } = await load(['--config', await upstream({ maxParallelImagePulls: 3 })]);
      assert.equal(c.maxParallelImagePulls, 3);
    });

    it('logging.verbosity is the log level as --v is: 0-2 info, 3-4 debug, 5+ trace', async function () {
      assert.deepEqual([0, 2, 3, 4, 5, 9].map(verbosityToLevel), ['info', 'info', 'debug', 'debug', 'trace', 'trace']);
      const { config: c } = await load(['--config', await upstream({ logging: { verbosity: 5, flushFrequency: '5s', format: 'json' } })]);
      assert.equal(c.logLevel, 'trace');
    });

    it('evictionHard replaces the defaults, unless mergeDefaultEvictionSettings', async function () {
      const { config: replaced } = await load(['--config', await upstream({ evictionHard: { 'memory.available': '200Mi' } })]);
      assert.deepEqual(replaced.evictionHard, { 'memory.available': '200Mi' });
      const { config: merged } = await load(['--config', await upstream({ evictionHard: { 'memory.available': '200Mi' }, mergeDefaultEvictionSettings: true })]);
      assert.deepEqual(merged.evictionHard, { 'memory.available': '200Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' });
    });

    it('registerWithTaints takes upstream\'s v1.Taint (timeAdded is dropped)', async function () {
      const { config: c } = await load(['--config', await upstream({ registerWithTaints: [{ key: 'a', effect: 'NoSchedule', timeAdded: null }] })]);
      assert.deepEqual(c.registerWithTaints, [{ key: 'a', effect: 'NoSchedule' }]);
    });

    it('paths in the file are relative to the file', async function () {
      const { config: c } = await load(['--config', await upstream({ staticPodPath: 'manifests', authentication: { x509: { clientCAFile: 'pki/ca.crt' } } })]);
      assert.deepEqual([c.staticPodPath, c.authentication.x509ClientCAFile], [path.join(dir, 'manifests'), path.join(dir, 'pki', 'ca.crt')]);
    });
  });

  it('volumeStatsAggPeriod is honoured: the period given, 0s as upstream defaults it (1m)', async function () {
    assert.equal((await load(['--config', await upstream({ volumeStatsAggPeriod: '15s' })])).config.volumeStatsAggPeriodMs, 15_000);
    assert.equal((await load(['--config', await upstream({ volumeStatsAggPeriod: '0s' })])).config.volumeStatsAggPeriodMs, 60_000);
    assert.deepEqual((await load(['--config', await upstream({ volumeStatsAggPeriod: '2m' })])).warnings, []);
  });

  describe('fields kubelet-ts does not implement', function () {
    it('are named once, in one line, only when their value asks for something kubelet-ts does not do', async function () {
      const quiet = { cpuManagerPolicy: 'none', featureGates: {}, enableServer: true, shutdownGracePeriod: '0s', cpuCFSQuotaPeriod: '100ms', memorySwap: { swapBehavior: 'NoSwap' }, topologyManagerScope: 'pod', podPidsLimit: -1, cgroupDriver: 'cgroupfs', hairpinMode: 'hairpin-veth' };
      assert.deepEqual((await load(['--config', await upstream(quiet)])).warnings, []);
      const loud = { cpuManagerPolicy: 'static', featureGates: { SidecarContainers: true }, cpuCFSQuotaPeriod: '50ms', memorySwap: { swapBehavior: 'LimitedSwap' } };
      const { warnings } = await load(['--config', await upstream(loud)]);
      assert.equal(warnings.length, 1);
      assert.deepEqual(warnings[0]!.ignored!.map((i) => `${i.name}=${JSON.stringify(i.value)}`).sort(), [
        'cpuCFSQuotaPeriod="50ms"', 'cpuManagerPolicy="static"', 'featureGates={"SidecarContainers":true}', 'memorySwap.swapBehavior="LimitedSwap"',
      ]);
      assert.match(warnings[0]!.msg, /cpuManagerPolicy: static \(would need a CPU manager \(exclusive CPUs for Guaranteed pods\)\)/);
    });

    it('every field of the table has a rule, and every flag a target', function () {
      for (const [name, spec] of Object.entries(UPSTREAM_FIELDS)) {
        if (spec.implemented === false) assert.ok(spec.needs && spec.honouredText, name);
      }
      for (const [name, spec] of Object.entries(KUBELET_FLAGS)) {
        const targets = [spec.field, spec.kubeletTs, spec.needs, spec.info, spec.command].filter((x) => x !== undefined);
        assert.equal(targets.length, 1, `--${name} has one target`);
        if (spec.field) assert.ok(UPSTREAM_FIELDS[spec.field], `--${name}: ${spec.field} is in the field table`);
      }
    });
  });

  describe('errors: each problem once, all at once, naming the file, field, value and what is allowed', function () {
    it('unknown names get the nearest known one; kubelet-ts\'s own fields say where they belong', async function () {
      const file = await upstream({ syncFrequncy: '1m', authentication: { webhok: {} }, plugins: ['probes'], nodeName: 'n1', frobnicate: 1 });
      assert.deepEqual((await failure(['--config', file])).split('\n'), [
        `${file}: unknown field 'syncFrequncy' (did you mean 'syncFrequency'?): KubeletConfiguration (kubelet.config.k8s.io/v1beta1) has no such field`,
        `${file}: unknown field 'authentication.webhok' (allowed fields: x509, webhook, anonymous): KubeletConfiguration (kubelet.config.k8s.io/v1beta1) has no such field`,
        `${file}: plugins is a field of kubelet-ts's own config format, not of KubeletConfiguration: set it in the --plugins-config file`,
        `${file}: nodeName is a field of kubelet-ts's own config format, not of KubeletConfiguration: set it in the --plugins-config file or by --hostname-override`,
        `${file}: unknown field 'frobnicate': KubeletConfiguration (kubelet.config.k8s.io/v1beta1) has no such field`,
      ]);
    });

    it('a wrong value of an implemented field, and the TypeMeta', async function () {
      const file = await write('config.yaml', { apiVersion: 'kubelet.config.k8s.io/v1', kind: 'KubeletConfiguration', syncFrequency: 'fast', maxPods: 'many', logging: { verbosity: -1 }, authorization: { mode: 'Sometimes' }, cgroupDriver: 'systemd' });
      assert.deepEqual((await failure(['--config', file])).split('\n').sort(), [
        `${file}: apiVersion is "kubelet.config.k8s.io/v1"; allowed: kubelet.config.k8s.io/v1beta1`,
        `${file}: authorization.mode is "Sometimes"; allowed: "AlwaysAllow", "Webhook"`,
        `${file}: logging.verbosity is -1; allowed: an integer >= 0`,
        `${file}: maxPods is "many"; allowed: an integer >= 1`,
        `${file}: syncFrequency is "fast"; allowed: a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)`,
      ]);
    });

    it('a value from a flag names the flag', async function () {
      const file = await upstream({});
      assert.equal(await failure(['--config', file, '--cluster-domain', 'Not_A_Domain']), `--cluster-domain: clusterDomain is "Not_A_Domain"; allowed: a DNS domain such as 'cluster.local', or ""`);
    });
  });

  describe('--plugins-config: kubelet-ts\'s own file next to a KubeletConfiguration', function () {
    it('gives the plugins (relative paths from its own directory) and the fields upstream has no place for', async function () {
      const plugins = await write('plugins.yaml', 'plugins:\n  - probes\n  - ./my-plugin.mjs\nmaxParallelSandboxCreations: 3\nkubeconfig: node.kubeconfig\n');
      const { config: c } = await load(['--config', await upstream({ clusterDomain: 'example.local' }), '--plugins-config', plugins]);
      assert.deepEqual([c.plugins, c.maxParallelSandboxCreations, c.clusterDomain, c.pluginsConfigFile, c.kubeconfig], [['probes', './my-plugin.mjs'], 3, 'example.local', plugins, path.join(dir, 'node.kubeconfig')]);
    });

    it('says at start which plugins of the default bundle it leaves out (its plugins replace the bundle\'s)', async function () {
      const plugins = await write('plugins.yaml', 'plugins:\n  - cri-containerd\n  - [./my-plugin.mjs, {}]\n  - [probes, {}]\n');
      const { infos } = await load(['--config', await upstream({}), '--plugins-config', plugins]);
      assert.deepEqual(infos.map((n) => n.msg), [
        `${plugins}: its plugins replace the default bundle's (they are not added to it); left out, so not running: csi-grpc, nfs, iscsi, flexvolume, eviction-default, credential-provider-exec, device-plugins, pod-resources (add those wanted to plugins in ${plugins}; the bundle: ${DEFAULT_CONFIG_FILE})`,
      ]);
      const bundle = ((await readConfigFile(DEFAULT_CONFIG_FILE)).plugins as unknown[]).map((e) => (Array.isArray(e) ? e[0] : e));
      const all = await write('all.yaml', `plugins: [${bundle.join(', ')}, ./my-plugin.mjs]\n`);
      assert.deepEqual((await load(['--config', await upstream({}), '--plugins-config', all])).infos, [], 'nothing left out, nothing said');
      assert.deepEqual((await load(['--config', await upstream({})])).infos, [], 'no --plugins-config: the bundle itself');
    });

    it("a file of kubelet-ts's fields only, without plugins, keeps the default bundle (nothing to replace it with, nothing said)", async function () {
      const own = await write('own.yaml', 'plegRelistPeriod: 10m\nhookTimeout: 20s\n');
      const { config: c, infos } = await load(['--config', await upstream({}), '--plugins-config', own]);
      const bundle = ((await readConfigFile(DEFAULT_CONFIG_FILE)).plugins as unknown[]);
      assert.deepEqual([c.plugins, c.plegRelistPeriodMs, c.hookTimeoutMs, infos], [bundle, 600_000, 20_000, []]);
      const none = await write('none.yaml', 'plugins: []\n');
      assert.match((await load(['--config', await upstream({}), '--plugins-config', none])).infos[0]!.msg, /left out, so not running: cri-containerd, /, 'an empty list is a list: it replaces the bundle');
    });

    it('a plugins file without a runtime fails the load naming the file and a runtime plugin to add', async function () {
      const plugins = await write('plugins.yaml', `plugins: [probes]\nrootDir: ${JSON.stringify(path.join(dir, 'root'))}\n`);
      const { config, infos } = await load(['--config', await upstream({}), '--plugins-config', plugins]);
      assert.match(infos[0]!.msg, /left out, so not running: cri-containerd, csi-grpc, /);
      const host = new PluginHost({ hooks: createHooks(), config, logger: silentLogger() });
      await assert.rejects(host.loadAll(config.plugins), { message: `plugin 'host': no plugin provides the 'runtime' slot: add a runtime plugin (for example 'cri-containerd') to plugins in ${plugins}` });
    });

    it('a KubeletConfiguration field in it is refused naming where it belongs; so is the wrong pairing', async function () {
      const plugins = await write('plugins.yaml', 'plugins: [probes]\nclusterDNS: [10.0.0.10]\nsyncFrequency: 1m\n');
      const config = await upstream({});
      assert.deepEqual((await failure(['--config', config, '--plugins-config', plugins])).split('\n'), [
        `${plugins}: clusterDNS is a KubeletConfiguration field: set it in ${config} (the --config file) or by --cluster-dns`,
        `${plugins}: syncFrequency is a KubeletConfiguration field: set it in ${config} (the --config file) or by --sync-frequency`,
      ]);
      assert.match(await failure(['--config', config, '--plugins-config', config]), /a KubeletConfiguration; --plugins-config takes kubelet-ts's own format/);
      const own = await write('own.yaml', 'plugins: [probes]\n');
      assert.match(await failure(['--config', own, '--plugins-config', plugins]), /--plugins-config goes with a KubeletConfiguration --config/);
    });
  });

  describe('flags', function () {
    it('--flag=value and --flag value; lists and maps add up when repeated; -v N, -v=N, -vN', function () {
      const line = parseKubeletCommandLine([
        'run', '--cluster-dns=10.0.0.10', '--cluster-dns', '10.0.0.11,10.0.0.12', '--node-labels', 'a=1,b=2', '--node-labels=c=3',
        '--register-with-taints=k=v:NoSchedule,k2:NoExecute', '--eviction-hard=memory.available<200Mi,nodefs.available<5%', '--feature-gates', 'A=true,B=false',
        '--rotate-certificates', '--cgroups-per-qos=false', '--manifest-url-header', 'a:x,a:y', '-v', '3', '--sync-frequency', '30s',
      ]);
      const v = Object.fromEntries(line.settings.map((s) => [s.flag, s.value]));
      assert.equal(line.command, 'run');
      assert.deepEqual(v, {
        'cluster-dns': ['10.0.0.10', '10.0.0.11', '10.0.0.12'],
        'node-labels': { a: '1', b: '2', c: '3' },
        'register-with-taints': [{ key: 'k', value: 'v', effect: 'NoSchedule' }, { key: 'k2', effect: 'NoExecute' }],
        'eviction-hard': { 'memory.available': '200Mi', 'nodefs.available': '5%' },
        'feature-gates': { A: true, B: false },
        'rotate-certificates': true,
        'cgroups-per-qos': false,
        'manifest-url-header': { a: ['x', 'y'] },
        v: 3,
        'sync-frequency': '30s',
      });
      for (const form of [['-v=5'], ['-v5'], ['--v', '5'], ['--v=5']]) assert.deepEqual(parseKubeletCommandLine(form).settings, [{ flag: 'v', spelling: '--v', value: 5 }], form.join(' '));
      assert.deepEqual(parseKubeletCommandLine(['--version']).version, 'true');
      assert.equal(parseKubeletCommandLine(['-h']).help, true);
    });

    it('an unknown flag gets the nearest name; a boolean takes its value only after =; bad values name the flag', function () {
      assert.throws(() => parseKubeletCommandLine(['--x']), UsageError);
      const message = (argv: string[]) => {
        try {
          parseKubeletCommandLine(argv);
        } catch (err) {
          return (err as Error).message;
        }
        return 'no error';
      };
      assert.equal(message(['--hostname-overide=n1']), "unknown flag '--hostname-overide' (did you mean --hostname-override?)");
      assert.equal(message(['-config', 'x']), "unknown flag '-config' (did you mean --config?)");
      assert.equal(message(['--frobnicate']), "unknown flag '--frobnicate'");
      assert.equal(message(['--rotate-certificates', 'false']), 'flag --rotate-certificates is a boolean: write --rotate-certificates=false, not --rotate-certificates false');
      assert.equal(message(['--register-node=maybe']), "--register-node: 'maybe' is not a boolean; allowed: true or false");
      assert.equal(message(['--max-pods=abc']), "--max-pods: 'abc' is not an integer; allowed: an integer >= 1");
      assert.equal(message(['--sync-frequency', '10']), "--sync-frequency: '10' is not a duration such as '10s', '1m30s', '500ms'; allowed: a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)");
      assert.equal(message(['--node-labels=a']), "--node-labels: 'a' is not key=value; allowed: key=value,key=value");
      assert.equal(message(['--register-with-taints=k=v']), "--register-with-taints: 'k=v' is not a taint; allowed: key=value:Effect or key:Effect, Effect one of NoSchedule, PreferNoSchedule, NoExecute");
      assert.equal(message(['--root-dir']), 'flag --root-dir needs a value');
    });

    it('flags override the file, over either format; paths from flags are relative to the working directory', async function () {
      const file = await upstream({ clusterDomain: 'cluster.local', clusterDNS: ['10.96.0.10'], staticPodPath: '/etc/kubernetes/manifests' });
      const { config: up } = await load(['--config', file, '--cluster-domain=example.local', '--cluster-dns', '10.0.0.10', '--pod-manifest-path', 'rel/manifests', '--healthz-port=0', '--resolv-conf='], {});
      assert.deepEqual([up.clusterDomain, up.clusterDNS, up.staticPodPath, up.healthzPort, up.resolvConf], ['example.local', ['10.0.0.10'], path.resolve('rel/manifests'), 0, '']);
      const own = await write('own.yaml', 'clusterDNS: [10.1.1.1]\nlogging:\n  level: warn\n');
      const { config: c } = await load(['--config', own, '--cluster-dns=10.2.2.2', '--v=5', '--anonymous-auth', '--hostname-override', ' Node-A ']);
      assert.deepEqual([c.clusterDNS, c.logLevel, c.authentication.anonymousEnabled, c.nodeName], [['10.2.2.2'], 'trace', true, 'node-a']);
    });

    it('flags kubelet-ts does not implement join the one warning; --pod-infra-container-image is an info line', async function () {
      const own = await write('own.yaml', 'plugins: []\n');
      const { warnings, infos } = await load(['--config', own, '--cgroup-driver=systemd', '--cpu-manager-policy', 'static', '--cloud-provider=external', '--housekeeping-interval=10s', '--cloud-config=', '--pod-infra-container-image=pause:3.9', '--fail-swap-on=false']);
      assert.equal(warnings.length, 1);
      assert.deepEqual(warnings[0]!.ignored!.map((i) => i.name), ['--cloud-provider', '--housekeeping-interval', 'cpuManagerPolicy']);
      assert.equal(infos.length, 1);
      assert.match(infos[0]!.msg, /^--pod-infra-container-image=pause:3\.9: accepted and ignored/);
    });

    it('a dual-stack --node-ip takes the first address and names the second in the warning', async function () {
      const own = await write('own.yaml', 'plugins: []\n');
      const { config: c, warnings } = await load(['--config', own, '--node-ip=10.0.0.5,fd00::5']);
      assert.equal(c.nodeIP, '10.0.0.5');
      assert.match(warnings[0]!.msg, /--node-ip: fd00::5 \(would need dual-stack node addresses \(kubelet-ts reports the first, 10\.0\.0\.5\)\)/);
    });

    it('two flags for one setting are refused', async function () {
      const own = await write('own.yaml', 'plugins: []\n');
      assert.deepEqual((await failure(['--config', own, '--node-name=a', '--hostname-override=b', '--v=2', '--log-level=warn'])).split('\n'), [
        '--node-name and --hostname-override both set the node name; give one',
        '--log-level and --v both set the log level; give one',
      ]);
    });
  });
});
