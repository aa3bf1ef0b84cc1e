import type { V1Pod } from '@kubernetes/client-node';
import { laneRuntimeInstance } from './once-per-run.ts';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { fileURLToPath } from 'node:url';
import type { KubeletConfig, PluginEntry } from '../../core/config/types.ts';
import { defaultMaxParallelSandboxCreations } from '../../core/config/load.ts';
import { Kubelet } from '../../core/kubelet.ts';
import { createLogger, silentLogger, type Logger } from '../../core/logger.ts';

/** The main port's serving certificate and key of test kubelets (test/cases/kubelet-serving). */
export const SERVING_PAIR_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', 'cases', 'kubelet-serving');

/** A full resolved config for tests: fast periods, dirs under `dir`, overridable. */
export function testConfig(dir: string, overrides: Partial<KubeletConfig> = {}): KubeletConfig {
  return {
    nodeName: 'test-node',
    nodeIP: '127.0.0.1',
    rootDir: path.join(dir, 'root'),
    podLogsDir: path.join(dir, 'logs'),
    staticPodPath: path.join(dir, 'manifests'),
    staticPodURL: undefined,
    staticPodURLHeader: {},
    httpCheckFrequencyMs: 20_000,
    fileCheckFrequencyMs: 1000,
    syncFrequencyMs: 60_000,
    plegRelistPeriodMs: 300,
    containerRuntimeEndpoint: 'unix:///nonexistent.sock',
    runtimeRequestTimeoutMs: 30_000,
    address: '127.0.0.1',
    readOnlyPort: 0,
    maxPods: 110,
    // Off for tests that do not test cgroups: the fake runtime's pods have no processes to place.
    cgroupsPerQOS: false,
    cgroupRoot: '/',
    cgroupDriver: 'cgroupfs',
    enableServer: true,
    enableDebuggingHandlers: true,
    enforceNodeAllocatablePods: true,
    podPidsLimit: undefined,
    maxPerPodContainer: 1,
    maxContainers: -1,
    crashLoopBackOff: { initialMs: 10_000, maxMs: 300_000 },
    imagePullBackOff: { initialMs: 10_000, maxMs: 300_000 },
    hookTimeoutMs: 30_000,
    // npm test's node lanes run side by side on one containerd, each its own instance (scripts/test-lanes.mjs).
    runtimeInstance: laneRuntimeInstance(),
    maxParallelImagePulls: undefined,
    maxParallelSandboxCreations: defaultMaxParallelSandboxCreations(),
    maxParallelContainerCreations: defaultMaxParallelSandboxCreations(),
    localObjectsDir: undefined,
    kubeconfig: undefined,
    bootstrapKubeconfig: undefined,
    rotateCertificates: false,
    serverTLSBootstrap: false,
    registerNode: true,
    nodeLabels: {},
    registerWithTaints: [],
    nodeStatusUpdateFrequencyMs: 10_000,
    nodeStatusReportFrequencyMs: 300_000,
    nodeLeaseDurationSeconds: 40,
    shutdownGroups: [],
    kubeAPIQPS: 50,
    kubeAPIBurst: 100,
    eventRecordQPS: 50,
    eventBurst: 100,
    // A free port for the main server (tests run side by side), and a fixed serving pair:
    // no RSA key generation per test kubelet.
    port: 0,
    tlsCertFile: path.join(SERVING_PAIR_DIR, 'tls.crt'),
    tlsPrivateKeyFile: path.join(SERVING_PAIR_DIR, 'tls.key'),
    certDirectory: path.join(dir, 'root', 'pki'),
    tlsMinVersion: undefined,
    tlsCipherSuites: [],
    // The defaults of a config file (tests reach the kubelet through its local socket).
    authentication: { x509ClientCAFile: undefined, webhookEnabled: true, webhookCacheTTLMs: 120_000, anonymousEnabled: false },
    authorization: { mode: 'Webhook', cacheAuthorizedTTLMs: 300_000, cacheUnauthorizedTTLMs: 30_000 },
    streamingConnectionIdleTimeoutMs: 4 * 3600_000,
    systemReserved: {},
    kubeReserved: {},
    evictionHard: { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' },
    eviction: { soft: {}, softGracePeriodMs: {}, minimumReclaim: {}, pressureTransitionPeriodMs: 300_000, maxPodGracePeriodSeconds: 0, monitoringPeriodMs: 10_000, evictStaticPods: false },
    imageGC: { highThresholdPercent: 85, lowThresholdPercent: 80, minAgeMs: 120_000, maxAgeMs: 0 },
    containerLogs: { maxSizeBytes: 10 * 2 ** 20, maxFiles: 5, monitorIntervalMs: 10_000 },
    volumeStatsAggPeriodMs: 60_000,
    allowedUnsafeSysctls: [],
    seccompDefault: false,
    clusterDNS: [],
    clusterDomain: '',
    resolvConf: '/etc/resolv.conf',
    volumePluginDir: path.join(dir, 'volume-plugins'),
    healthzPort: 0,
    healthzBindAddress: '127.0.0.1',
    imageCredentialProviderConfig: undefined,
    imageCredentialProviderBinDir: undefined,
    runtimeClassHandlers: {},
    logLevel: 'info',
    plugins: [],
    configFile: undefined,
    ...overrides,
  };
}

export interface TestKubelet {
  kubelet: Kubelet;
  dir: string;
  config: KubeletConfig;
  manifestDir: string;
  /** Writes a manifest file (object → JSON) into the watched directory. */
  writeManifest(file: string, pod: object | string): Promise<void>;
  removeManifest(file: string): Promise<void>;
  /** The pod as the kubelet reports it (by metadata.name as written, before the node suffix). */
  pod(name: string): V1Pod | undefined;
  /** Polls until `check(pod)` returns true; bounded by `timeoutMs`. */
  waitForPod(name: string, check: (pod: V1Pod | undefined) => boolean, timeoutMs?: number, what?: string): Promise<V1Pod | undefined>;
  stop(): Promise<void>;
  /** Removes every manifest and waits (bounded, best effort: pods left at the bound are said on stderr) until the kubelet removed every pod. */
  removeEveryPod(timeoutMs?: number): Promise<void>;
  /** removeEveryPod, then stops the kubelet and deletes its dirs. */
  dispose(timeoutMs?: number): Promise<void>;
}

/**
 * Starts an in-process kubelet with its own directories (one per test) and the given
 * plugins. Logs are silent unless KUBELET_TS_TEST_LOG=1.
 */
export async function startTestKubelet(options: { plugins: PluginEntry[]; config?: Partial<KubeletConfig>; dir?: string; testHooks?: ConstructorParameters<typeof Kubelet>[3]; logger?: Logger }): Promise<TestKubelet> {
  const dir = options.dir ?? (await fs.mkdtemp(path.join(os.tmpdir(), 'kts-kubelet-')));
  const config = testConfig(dir, { plugins: options.plugins, ...options.config });
  await fs.mkdir(config.staticPodPath!, { recursive: true });
  const logger = options.logger ?? (process.env.KUBELET_TS_TEST_LOG ? createLogger({ level: 'debug' }) : silentLogger());
  const kubelet = new Kubelet(config, logger, [], options.testHooks);
  await kubelet.start();
  const fullName = (name: string) => `${name}-${config.nodeName}`;
  let stopped = false;
  const t: TestKubelet = {
    kubelet,
    dir,
    config,
    manifestDir: config.staticPodPath!,
    async writeManifest(file, pod) {
      const tmp = path.join(config.staticPodPath!, `.${file}.tmp`);
      await fs.writeFile(tmp, typeof pod === 'string' ? pod : JSON.stringify(pod));
      await fs.rename(tmp, path.join(config.staticPodPath!, file));
    },
    async removeManifest(file) {
      await fs.rm(path.join(config.staticPodPath!, file), { force: true });
    },
    pod(name) {
      return kubelet.pods().find((p) => p.metadata?.name === fullName(name));
    },
    async waitForPod(name, check, timeoutMs = 20_000, what = 'condition') {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const pod = t.pod(name);
        if (check(pod)) return pod;
        if (Date.now() > deadline) {
          throw new Error(`pod ${name}: ${what} not reached within ${timeoutMs} ms; last status: ${JSON.stringify(pod?.status ?? null)}`);
        }
        await sleep(100);
      }
    },
    async stop() {
      stopped = true;
      await kubelet.stop();
    },
    async removeEveryPod(timeoutMs = 60_000) {
      for (const f of await fs.readdir(config.staticPodPath!).catch(() => [] as string[])) await t.removeManifest(f);
      // A stopped kubelet removes nothing and its pod list stays as it was: waiting for it to
      // empty only waited out the bound (a minute per kubelet a test restarted).
      if (stopped) return;
      const deadline = Date.now() + timeoutMs;
      while (kubelet.pods().length > 0 && Date.now() < deadline) await sleep(100);
      // Pods left at the bound are usually API pods whose namespace is deleted after this
      // cleanup (a kubelet started after the namespace): said, as the time it cost.
      const left = kubelet.pods().map((p) => `${p.metadata?.namespace}/${p.metadata?.name}`);
      if (left.length > 0) process.stderr.write(`test kubelet ${config.nodeName}: ${left.length} pod(s) still there after ${timeoutMs} ms (${left.join(', ')})\n`);
    },
    async dispose(timeoutMs = 60_000) {
      await t.removeEveryPod(timeoutMs);
      await kubelet.stop();
      await fs.rm(dir, { recursive: true, force: true });
    },
  };
  return t;
}

/** A minimal pod manifest object. */
export function podManifest(name: string, containers: object[], spec: object = {}, metadata: object = {}): object {
  return { apiVersion: 'v1', kind: 'Pod', metadata: { name, ...metadata }, spec: { containers, ...spec } };
}

export const isRunning = (p: V1Pod | undefined) => p?.status?.phase === 'Running' && (p.status.containerStatuses ?? []).every((c) => c.state?.running);
