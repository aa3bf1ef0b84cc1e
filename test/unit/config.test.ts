import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { loadConfig, type ConfigFlags } from '../../core/config/load.ts';
import { defineConfig } from '../../core/config/types.ts';
import { ConfigError } from '../../core/errors.ts';

const CASES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases');
const CORE_INDEX = pathToFileURL(path.resolve(CASES, '..', '..', 'core', 'sdk', 'index.ts')).href;

const DURATION_ALLOWED = "allowed: a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)";

describe('loadConfig', function () {
  let dir: string;

  beforeEach(async function () {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-config-'));
  });

  afterEach(async function () {
    await fs.rm(dir, { recursive: true, force: true });
  });

  async function write(name: string, content: string | object): Promise<string> {
    const file = path.join(dir, name);
    await fs.writeFile(file, typeof content === 'string' ? content : JSON.stringify(content));
    return file;
  }

  /** The ConfigError message loading `file` with `flags` gives (fails the test if it loads). */
  async function failure(file: string, flags: ConfigFlags = {}): Promise<string> {
    const err = await loadConfig({ configFile: file, flags }).then(() => undefined, (e: unknown) => e);
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${err === undefined ? 'a config' : String(err)}`);
    return err.message;
  }

  describe('file formats (cosmiconfig)', function () {
    it('loads a .ts config written with defineConfig, compiling its TypeScript', async function () {
      const file = path.join(CASES, 'config-ts', 'kubelet.config.ts');
      const c = await loadConfig({ configFile: file });
      assert.equal(c.nodeName, 'node-from-ts');
      assert.equal(c.syncFrequencyMs, 90_000);
      assert.equal(c.runtimeRequestTimeoutMs, 180_000);
      assert.equal(c.configFile, file);
    });

    it('loads a .ts config from outside the package (typed annotations, import of the package entry)', async function () {
      const file = await write(
        'kubelet.config.ts',
        `import { defineConfig } from '${CORE_INDEX}';\nconst port: number = 10250 + 5;\nexport default defineConfig({ readOnlyPort: port, maxPods: 20 });\n`,
      );
      const c = await loadConfig({ configFile: file });
      assert.deepEqual([c.readOnlyPort, c.maxPods], [10255, 20]);
    });

    it('loads a .js config (ESM default export)', async function () {
      const file = await write('kubelet.config.js', "export default { nodeName: 'node-js', syncFrequency: '10s' };\n");
      const c = await loadConfig({ configFile: file });
      assert.deepEqual([c.nodeName, c.syncFrequencyMs], ['node-js', 10_000]);
    });

    it('loads a .json config', async function () {
      const file = await write('kubelet.json', { nodeName: 'node-json', maxPods: 7, plugins: [['cri-containerd', { pullTimeoutSeconds: 60 }]] });
      const c = await loadConfig({ configFile: file });
      assert.deepEqual([c.nodeName, c.maxPods, c.plugins], ['node-json', 7, [['cri-containerd', { pullTimeoutSeconds: 60 }]]]);
    });

    it('loads a .yaml config', async function () {
      const file = await write('kubelet.yaml', 'nodeName: node-yaml\nsyncFrequency: 2m\nlogging:\n  level: warn\nplugins:\n  - cri-containerd\n');
      const c = await loadConfig({ configFile: file });
      assert.deepEqual([c.nodeName, c.syncFrequencyMs, c.logLevel, c.plugins], ['node-yaml', 120_000, 'warn', ['cri-containerd']]);
    });

    it('defineConfig returns the object it is given (types only)', function () {
      const input = { maxPods: 3 };
      assert.equal(defineConfig(input), input);
    });
  });

  describe('resolved values', function () {
    it('fills every default for an empty config', async function () {
      const c = await loadConfig({ configFile: await write('kubelet.json', {}) });
      assert.deepEqual(
        {
          rootDir: c.rootDir, podLogsDir: c.podLogsDir, staticPodPath: c.staticPodPath, fileCheckFrequencyMs: c.fileCheckFrequencyMs,
          syncFrequencyMs: c.syncFrequencyMs, plegRelistPeriodMs: c.plegRelistPeriodMs, containerRuntimeEndpoint: c.containerRuntimeEndpoint,
          runtimeRequestTimeoutMs: c.runtimeRequestTimeoutMs, address: c.address, readOnlyPort: c.readOnlyPort, maxPods: c.maxPods,
          crashLoopBackOff: c.crashLoopBackOff, imagePullBackOff: c.imagePullBackOff, hookTimeoutMs: c.hookTimeoutMs, logLevel: c.logLevel, plugins: c.plugins,
        },
        {
          rootDir: '/var/lib/kubelet', podLogsDir: '/var/log/pods', staticPodPath: undefined, fileCheckFrequencyMs: 20_000,
          syncFrequencyMs: 60_000, plegRelistPeriodMs: 1000, containerRuntimeEndpoint: 'unix:///run/containerd/containerd.sock',
          runtimeRequestTimeoutMs: 120_000, address: '0.0.0.0', readOnlyPort: 0, maxPods: 110,
          crashLoopBackOff: { initialMs: 10_000, maxMs: 300_000 }, imagePullBackOff: { initialMs: 10_000, maxMs: 300_000 }, hookTimeoutMs: 120_000, logLevel: 'info', plugins: [],
        },
      );
      assert.equal(c.nodeName, os.hostname().toLowerCase());
      assert.match(c.nodeIP, /^[0-9a-f.:]+$/);
      assert.equal(c.maxParallelSandboxCreations, 2 * os.availableParallelism());
      // The main port, as upstream's defaults: 10250, a self-signed pair under the root dir, no anonymous requests, Webhook authorization.
      assert.deepEqual(
        { port: c.port, tlsCertFile: c.tlsCertFile, certDirectory: c.certDirectory, authentication: c.authentication, authorization: c.authorization, idle: c.streamingConnectionIdleTimeoutMs },
        {
          port: 10250, tlsCertFile: undefined, certDirectory: '/var/lib/kubelet/pki',
          authentication: { x509ClientCAFile: undefined, webhookEnabled: true, webhookCacheTTLMs: 120_000, anonymousEnabled: false },
          authorization: { mode: 'Webhook', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
          idle: 4 * 3600_000,
        },
      );
    });

    it('main port settings: upstream names, paths relative to the file, a certificate only with its key', async function () {
      const c = await loadConfig({
        configFile: await write('serving.json', {
          tlsCertFile: 'pki/tls.crt', tlsPrivateKeyFile: 'pki/tls.key', tlsMinVersion: 'VersionTLS13',
          tlsCipherSuites: ['TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256', 'TLS_AES_128_GCM_SHA256'],
          authentication: { x509: { clientCAFile: 'ca.crt' }, webhook: { cacheTTL: '30s' }, anonymous: { enabled: true } },
          authorization: { mode: 'AlwaysAllow' }, streamingConnectionIdleTimeout: '5m',
        }),
      });
      assert.equal(c.tlsCertFile, path.join(dir, 'pki', 'tls.crt'));
      assert.equal(c.authentication.x509ClientCAFile, path.join(dir, 'ca.crt'));
      assert.deepEqual([c.tlsMinVersion, c.tlsCipherSuites.length, c.authentication.webhookCacheTTLMs, c.authentication.anonymousEnabled, c.authorization.mode, c.streamingConnectionIdleTimeoutMs], ['VersionTLS13', 2, 30_000, true, 'AlwaysAllow', 300_000]);
      const half = await write('half.json', { tlsCertFile: 'a.crt' });
      assert.equal(await failure(half), `${half}: tlsCertFile is set but tlsPrivateKeyFile is not; allowed: both (a certificate and its key), or neither (a self-signed pair in certDirectory)`);
      const suite = await write('suite.json', { tlsCipherSuites: ['TLS_RSA_WITH_RC4_128_SHA'] });
      assert.match(await failure(suite), /tlsCipherSuites\.0 is "TLS_RSA_WITH_RC4_128_SHA"; allowed: "TLS_RSA_WITH_3DES_EDE_CBC_SHA", /);
      const mode = await write('mode.json', { authorization: { mode: 'RBAC' } });
      assert.equal(await failure(mode), `${mode}: authorization.mode is "RBAC"; allowed: "AlwaysAllow", "Webhook"`);
      const flagged = await loadConfig({ configFile: await write('f.json', {}), flags: { port: 10260, certDirectory: 'certs' } });
      assert.deepEqual([flagged.port, flagged.certDirectory], [10260, path.resolve('certs')]);
    });

    it('maxParallelSandboxCreations: a number bounds, 0 means no bound, a negative is refused', async function () {
      assert.equal((await loadConfig({ configFile: await write('s3.json', { maxParallelSandboxCreations: 3 }) })).maxParallelSandboxCreations, 3);
      assert.equal((await loadConfig({ configFile: await write('s0.json', { maxParallelSandboxCreations: 0 }) })).maxParallelSandboxCreations, undefined);
      await assert.rejects(loadConfig({ configFile: await write('sn.json', { maxParallelSandboxCreations: -1 }) }), /maxParallelSandboxCreations/);
    });

    it('parses Go durations and plain seconds into milliseconds', async function () {
      const c = await loadConfig({ configFile: path.join(CASES, 'config-ts', 'kubelet.config.ts') });
      assert.equal(c.syncFrequencyMs, 90_000); // '1m30s'
      assert.equal(c.fileCheckFrequencyMs, 500); // '500ms'
      assert.equal(c.hookTimeoutMs, 45_000); // 45 (seconds)
      assert.deepEqual(c.crashLoopBackOff, { initialMs: 10_000, maxMs: 3_600_000 }); // '1h', default kept beside it
      const more = await loadConfig({ configFile: await write('d.json', { syncFrequency: '1.5s', plegRelistPeriod: '0', runtimeRequestTimeout: '1h2m3s' }) });
      assert.deepEqual([more.syncFrequencyMs, more.plegRelistPeriodMs, more.runtimeRequestTimeoutMs], [1500, 0, 3_723_000]);
    });

    it("resolves relative paths in the file against the file's directory", async function () {
      const file = path.join(CASES, 'config-ts', 'kubelet.config.ts');
      const c = await loadConfig({ configFile: file });
      const base = path.dirname(file);
      assert.deepEqual([c.rootDir, c.podLogsDir, c.staticPodPath], [path.join(base, 'state'), path.join(base, 'logs'), path.join(base, 'manifests')]);
    });

    it('resolves relative paths in flags against the working directory, and flags override the file', async function () {
      const file = path.join(CASES, 'config-ts', 'kubelet.config.ts');
      const c = await loadConfig({
        configFile: file,
        flags: { rootDir: 'flag-root', podManifestPath: path.join(dir, 'm'), readOnlyPort: 0, nodeName: 'node-from-flag', containerRuntimeEndpoint: 'unix:///tmp/x.sock', nodeIP: '10.1.2.3', logLevel: 'error' },
      });
      assert.equal(c.rootDir, path.resolve(process.cwd(), 'flag-root'));
      assert.equal(c.staticPodPath, path.join(dir, 'm'));
      assert.equal(c.podLogsDir, path.join(path.dirname(file), 'logs'), 'a path without a flag still resolves against the file');
      assert.deepEqual([c.readOnlyPort, c.nodeName, c.containerRuntimeEndpoint, c.nodeIP, c.logLevel], [0, 'node-from-flag', 'unix:///tmp/x.sock', '10.1.2.3', 'error']);
    });

    it('leaves file values alone for flags that are not given', async function () {
      const c = await loadConfig({ configFile: path.join(CASES, 'config-ts', 'kubelet.config.ts'), flags: { rootDir: undefined, readOnlyPort: undefined } });
      assert.deepEqual([c.readOnlyPort, c.logLevel], [10255, 'debug']);
    });
  });

  describe('invalid configs name the source, the field, the bad value and what is allowed', function () {
    it('an unknown field names the nearest known one, never the list of all 70', async function () {
      const file = await write('kubelet.json', { syncFrequncy: '1m', frobnicate: true });
      assert.deepEqual((await failure(file)).split('\n'), [
        `${file}: unknown field 'syncFrequncy' (did you mean 'syncFrequency'?)`,
        `${file}: unknown field 'frobnicate'`,
      ]);
    });

    it('an unknown nested field names its full path', async function () {
      const file = await write('kubelet.yaml', 'crashLoopBackOff:\n  maxPeriod: 5m\n');
      assert.equal(await failure(file), `${file}: unknown field 'crashLoopBackOff.maxPeriod' (allowed fields: initialContainerRestartPeriod, maxContainerRestartPeriod)`);
    });

    it('a wrong type', async function () {
      const file = await write('kubelet.json', { maxPods: 'many' });
      assert.equal(await failure(file), `${file}: maxPods is "many"; allowed: an integer >= 1`);
    });

    it('a bad duration (string, negative number, wrong type)', async function () {
      const file = await write('kubelet.json', { syncFrequency: '1 minute', fileCheckFrequency: -5, hookTimeout: true });
      const lines = (await failure(file)).split('\n').sort();
      assert.deepEqual(lines, [
        `${file}: fileCheckFrequency is -5; ${DURATION_ALLOWED}`,
        `${file}: hookTimeout is true; ${DURATION_ALLOWED}`,
        `${file}: syncFrequency is "1 minute"; ${DURATION_ALLOWED}`,
      ]);
    });

    it('a port out of range', async function () {
      const file = await write('kubelet.json', { readOnlyPort: 70000 });
      assert.equal(await failure(file), `${file}: readOnlyPort is 70000; allowed: an integer port 0-65535 (0 disables)`);
    });

    it('a bad logging.level lists the levels', async function () {
      const file = await write('kubelet.yaml', 'logging:\n  level: loud\n');
      assert.equal(await failure(file), `${file}: logging.level is "loud"; allowed: "trace", "debug", "info", "warn", "error", "fatal", "silent"`);
    });

    it('a bad node name and a non-unix runtime endpoint', async function () {
      const file = await write('kubelet.json', { nodeName: 'Node_A', containerRuntimeEndpoint: 'tcp://127.0.0.1:1234' });
      assert.deepEqual((await failure(file)).split('\n'), [
        `${file}: nodeName is "Node_A"; allowed: a DNS-1123 subdomain (lowercase letters, digits, - and .)`,
        `${file}: containerRuntimeEndpoint is "tcp://127.0.0.1:1234"; allowed: a unix:///path/to/socket endpoint`,
      ]);
    });

    it('a bad flag value names the flag spelling', async function () {
      const file = await write('kubelet.json', {});
      assert.equal(await failure(file, { readOnlyPort: 70000 }), '--read-only-port: readOnlyPort is 70000; allowed: an integer port 0-65535 (0 disables)');
      assert.equal(await failure(file, { logLevel: 'loud' }), '--log-level: logging.level is "loud"; allowed: "trace", "debug", "info", "warn", "error", "fatal", "silent"');
      assert.equal(await failure(file, { containerRuntimeEndpoint: '/run/containerd.sock' }), '--container-runtime-endpoint: containerRuntimeEndpoint is "/run/containerd.sock"; allowed: a unix:///path/to/socket endpoint');
      assert.equal(await failure(file, { nodeName: 'UPPER' }), '--node-name: nodeName is "UPPER"; allowed: a DNS-1123 subdomain (lowercase letters, digits, - and .)');
    });

    it('a missing file', async function () {
      const file = path.join(dir, 'nope', 'kubelet.config.ts');
      assert.equal(await failure(file), `${file}: config file not found`);
    });

    it('a config that is not an object (.ts number, .json array, .yaml list)', async function () {
      const allowed = 'the config must be an object (export default defineConfig({...}))';
      const ts = await write('num.ts', 'export default 42;\n');
      assert.equal(await failure(ts), `${ts}: ${allowed}`);
      const json = await write('arr.json', '[1, 2]');
      assert.equal(await failure(json), `${json}: ${allowed}`);
      const yaml = await write('list.yaml', '- a\n- b\n');
      assert.equal(await failure(yaml), `${yaml}: ${allowed}`);
    });

    it('a module without a default export says so instead of reading its named exports as fields', async function () {
      const file = await write('named.ts', "export const config = { maxPods: 3 };\n");
      assert.equal(await failure(file), `${file}: cannot load config: the file has no default export (export default defineConfig({...}))`);
    });

    it('a file that does not parse names the file', async function () {
      const file = await write('broken.json', '{ "maxPods": ');
      assert.match(await failure(file), new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: cannot load config: `));
    });
  });

  describe('API server and node registration fields (upstream names and defaults)', function () {
    it('defaults: no kubeconfig, register, 10s / 5m, lease 40 s, 50 qps / 100 burst, port 10250, upstream eviction thresholds', async function () {
      const c = await loadConfig({ configFile: await write('kubelet.json', {}) });
      assert.deepEqual(
        {
          kubeconfig: c.kubeconfig, registerNode: c.registerNode, nodeLabels: c.nodeLabels, registerWithTaints: c.registerWithTaints,
          nodeStatusUpdateFrequencyMs: c.nodeStatusUpdateFrequencyMs, nodeStatusReportFrequencyMs: c.nodeStatusReportFrequencyMs,
          nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds, kubeAPIQPS: c.kubeAPIQPS, kubeAPIBurst: c.kubeAPIBurst, port: c.port,
          systemReserved: c.systemReserved, kubeReserved: c.kubeReserved, evictionHard: c.evictionHard,
        },
        {
          kubeconfig: undefined, registerNode: true, nodeLabels: {}, registerWithTaints: [],
          nodeStatusUpdateFrequencyMs: 10_000, nodeStatusReportFrequencyMs: 300_000,
          nodeLeaseDurationSeconds: 40, kubeAPIQPS: 50, kubeAPIBurst: 100, port: 10250,
          systemReserved: {}, kubeReserved: {}, evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' },
        },
      );
    });

    it('reads every field; the kubeconfig is relative to the file, --kubeconfig to the working directory', async function () {
      const file = await write('kubelet.yaml', [
        'kubeconfig: ../etc/kubelet.kubeconfig',
        'registerNode: false',
        'nodeLabels: {example.com/pool: gpu, node.kubernetes.io/exclude-from-external-load-balancers: "true"}',
        'registerWithTaints: [{key: dedicated, value: gpu, effect: NoSchedule}, {key: example.com/x, effect: NoExecute}]',
        'nodeStatusUpdateFrequency: 4s',
        'nodeLeaseDurationSeconds: 20',
        'kubeAPIQPS: 2.5',
        'kubeAPIBurst: 5',
        'port: 11250',
        'systemReserved: {cpu: 500m, memory: 1Gi}',
        'kubeReserved: {ephemeral-storage: 1Gi, pid: "100"}',
        'evictionHard: {memory.available: 200Mi}',
      ].join('\n'));
      const c = await loadConfig({ configFile: file });
      assert.equal(c.kubeconfig, path.resolve(dir, '..', 'etc', 'kubelet.kubeconfig'));
      assert.deepEqual([c.registerNode, c.nodeLabels['example.com/pool'], c.registerWithTaints.length, c.nodeLeaseDurationSeconds, c.kubeAPIQPS, c.kubeAPIBurst, c.port], [false, 'gpu', 2, 20, 2.5, 5, 11250]);
      assert.deepEqual(c.registerWithTaints[1], { key: 'example.com/x', effect: 'NoExecute' });
      // Upstream: an explicit update frequency is also the report frequency's default.
      assert.deepEqual([c.nodeStatusUpdateFrequencyMs, c.nodeStatusReportFrequencyMs], [4000, 4000]);
      assert.deepEqual([c.systemReserved, c.kubeReserved], [{ cpu: '500m', memory: '1Gi' }, { 'ephemeral-storage': '1Gi', pid: '100' }]);
      assert.deepEqual(c.evictionHard, { 'memory.available': '200Mi' }, 'a map in the file replaces the defaults whole (upstream 1.28)');
      const flagged = await loadConfig({ configFile: file, flags: { kubeconfig: 'from-flag.kubeconfig' } });
      assert.equal(flagged.kubeconfig, path.resolve('from-flag.kubeconfig'));
    });

    it('bad values name the field, the value and what is allowed', async function () {
      const file = await write('kubelet.json', {
        kubeAPIQPS: 0, kubeAPIBurst: 0, nodeLeaseDurationSeconds: 0, port: 0, nodeStatusReportFrequency: 'often',
        systemReserved: { cpu: '-1', gpu: '1' }, kubeReserved: { memory: '1 GB' },
        evictionHard: { 'memory.available': '150%', 'nodefs.avail': '10%' },
        registerWithTaints: [{ key: 'bad key', effect: 'Sometimes' }, { effect: 'NoSchedule' }],
        nodeLabels: { pool: 'a b' },
      });
      const lines = (await failure(file)).split('\n').sort();
      const quantity = "allowed: a non-negative quantity such as '500m', '1Gi', '100'";
      assert.deepEqual(lines, [
        `${file}: evictionHard.memory.available is "150%"; allowed: a quantity such as '100Mi' or a percentage such as '10%'`,
        `${file}: kubeAPIBurst is 0; allowed: an integer >= 1`,
        `${file}: kubeAPIQPS is 0; allowed: a number of requests per second > 0`,
        `${file}: kubeReserved.memory is "1 GB"; ${quantity}`,
        `${file}: nodeLabels.pool is "a b"; allowed: a label value: at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit (or empty)`,
        `${file}: nodeLeaseDurationSeconds is 0; allowed: an integer number of seconds >= 1`,
        `${file}: nodeStatusReportFrequency is "often"; ${DURATION_ALLOWED}`,
        `${file}: port is 0; allowed: an integer port 1-65535`,
        `${file}: registerWithTaints.0.effect is "Sometimes"; allowed: "NoSchedule", "PreferNoSchedule", "NoExecute"`,
        `${file}: registerWithTaints.0.key is "bad key"; allowed: a qualified name such as 'dedicated' or 'example.com/gpu'`,
        `${file}: registerWithTaints.1.key is required`,
        `${file}: systemReserved.cpu is "-1"; ${quantity}`,
        `${file}: unknown field 'evictionHard.nodefs.avail' (allowed fields: memory.available, nodefs.available, nodefs.inodesFree, imagefs.available, imagefs.inodesFree, pid.available)`,
        `${file}: unknown field 'systemReserved.gpu' (allowed fields: cpu, memory, ephemeral-storage, pid)`,
      ]);
    });

    it('refuses node labels NodeRestriction would refuse, and zero frequencies', async function () {
      const file = await write('kubelet.json', { nodeLabels: { 'node-role.kubernetes.io/worker': '', 'Bad Key': 'x', 'node.kubernetes.io/ok': 'y' }, nodeStatusUpdateFrequency: '0s' });
      const lines = (await failure(file)).split('\n');
      assert.equal(lines.length, 3);
      assert.match(lines[0]!, new RegExp(`^${file.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}: nodeLabels has the key "node-role.kubernetes.io/worker", which NodeRestriction does not let a node set; allowed: labels in the 'kubernetes.io' or 'k8s.io' namespaces must begin with an allowed prefix \\(kubelet.kubernetes.io, node.kubernetes.io\\)`));
      assert.match(lines[1]!, /nodeLabels has the key "Bad Key"; allowed: a qualified name/);
      assert.equal(lines[2], `${file}: nodeStatusUpdateFrequency is "0s"; allowed: a Go duration > 0 such as '10s', '1m'`);
    });
  });
});
