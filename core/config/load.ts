import { Ajv, type ValidateFunction } from 'ajv';
import { cosmiconfig, type Loader } from 'cosmiconfig';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, errorMessage } from '../errors.ts';
import { formatAjvErrors } from './ajv-errors.ts';
import { evictionConfigErrors, resolveEvictionSettings, resolveImageGCSettings } from './eviction-config.ts';
import { parseDuration } from '../util/duration.ts';
import { quantityValue } from '../objects/quantity.ts';
import { configSchema } from './schema.ts';
import { importModule } from '../util/import-module.ts';
import type { EvictionSignal, KubeletConfig, KubeletConfigInput } from './types.ts';
import { KUBELET_LABEL_RULE, invalidLabelKey, kubeletMaySetLabel } from '../objects/node-labels.ts';
import { PACKAGE_ROOT, RUNS_COMPILED } from '../util/package-root.ts';

export const DEFAULT_CONFIG_FILE = path.join(PACKAGE_ROOT, RUNS_COMPILED ? 'kubelet.config.js' : 'kubelet.config.ts');

/** Command-line values that override the file, named after the upstream kubelet flags. */
export interface ConfigFlags {
  podManifestPath?: string;
  manifestUrl?: string;
  manifestUrlHeader?: Record<string, string[]>;
  containerRuntimeEndpoint?: string;
  rootDir?: string;
  nodeName?: string;
  readOnlyPort?: number;
  nodeIP?: string;
  logLevel?: string;
  kubeconfig?: string;
  port?: number;
  tlsCertFile?: string;
  tlsPrivateKeyFile?: string;
  certDirectory?: string;
  imageCredentialProviderConfig?: string;
  imageCredentialProviderBinDir?: string;
}

/** Flag → config field, and the flag's spelling for messages. */
const FLAG_FIELDS: Record<keyof ConfigFlags, [keyof KubeletConfigInput, string]> = {
  podManifestPath: ['staticPodPath', '--pod-manifest-path'],
  manifestUrl: ['staticPodURL', '--manifest-url'],
  manifestUrlHeader: ['staticPodURLHeader', '--manifest-url-header'],
  containerRuntimeEndpoint: ['containerRuntimeEndpoint', '--container-runtime-endpoint'],
  rootDir: ['rootDir', '--root-dir'],
  nodeName: ['nodeName', '--node-name'],
  readOnlyPort: ['readOnlyPort', '--read-only-port'],
  nodeIP: ['nodeIP', '--node-ip'],
  logLevel: ['logging', '--log-level'],
  kubeconfig: ['kubeconfig', '--kubeconfig'],
  port: ['port', '--port'],
  tlsCertFile: ['tlsCertFile', '--tls-cert-file'],
  tlsPrivateKeyFile: ['tlsPrivateKeyFile', '--tls-private-key-file'],
  certDirectory: ['certDirectory', '--cert-dir'],
  imageCredentialProviderConfig: ['imageCredentialProviderConfig', '--image-credential-provider-config'],
  imageCredentialProviderBinDir: ['imageCredentialProviderBinDir', '--image-credential-provider-bin-dir'],
};

// cosmiconfig's own TypeScript loader compiles with the `typescript` package (a dev
// dependency); importModule loads .ts configs with the same resolution (and `kubelet-ts`
// package self-reference) as the rest of the program.
const importLoader: Loader = async (filepath) => {
  const mod = await importModule(filepath);
  // Without a default export, the module's named exports would be read as config fields.
  if (!('default' in mod)) throw new Error('the file has no default export (export default defineConfig({...}))');
  return mod.default;
};

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true });
const validateConfig: ValidateFunction = ajv.compile(configSchema);

/** Reads the config file (cosmiconfig, module name `kubelet`) and returns its raw object. */
export async function readConfigFile(file: string): Promise<KubeletConfigInput> {
  const explorer = cosmiconfig('kubelet', {
    loaders: { '.ts': importLoader, '.mts': importLoader, '.js': importLoader, '.mjs': importLoader },
  });
  let result;
  try {
    result = await explorer.load(file);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new ConfigError(`${file}: config file not found`);
    throw new ConfigError(`${file}: cannot load config: ${errorMessage(err)}`);
  }
  const config = result?.config;
  if (config === undefined || config === null) return {};
  if (typeof config !== 'object' || Array.isArray(config)) {
    throw new ConfigError(`${file}: the config must be an object (export default defineConfig({...}))`);
  }
  return config as KubeletConfigInput;
}

/**
 * Loads, validates and resolves the configuration: the file (or the package's default
 * bundle), then the flags on top. Every error names its source (file or flag), the field,
 * the bad value and what is allowed.
 */
export async function loadConfig(options: { configFile?: string; flags?: ConfigFlags } = {}): Promise<KubeletConfig> {
  const file = path.resolve(options.configFile ?? DEFAULT_CONFIG_FILE);
  const raw = structuredCloneConfig(await readConfigFile(file));
  if (!validateConfig(raw)) throw new ConfigError(formatAjvErrors(validateConfig.errors, raw, file));

  const flagged: Record<string, unknown> = { ...raw };
  for (const [flag, value] of Object.entries(options.flags ?? {})) {
    if (value === undefined) continue;
    const [field, spelling] = FLAG_FIELDS[flag as keyof ConfigFlags];
    const fieldValue = field === 'logging' ? { level: value } : value;
    const fieldSchema = (configSchema.properties as Record<string, object>)[field]!;
    const check = ajv.compile({ type: 'object', properties: { [field]: fieldSchema } });
    if (!check({ [field]: fieldValue })) throw new ConfigError(formatAjvErrors(check.errors, { [field]: fieldValue }, spelling));
    flagged[field] = fieldValue;
  }
  checkNodeFields(flagged as KubeletConfigInput, file);
  checkServingFields(flagged as KubeletConfigInput, file);
  checkCredentialProviderFields(flagged as KubeletConfigInput, file);
  const evictionErrors = evictionConfigErrors(flagged as KubeletConfigInput, file);
  if (evictionErrors.length) throw new ConfigError(evictionErrors.join('\n'));
  return resolve(flagged as Required<KubeletConfigInput>, file, options.flags ?? {});
}

/** Upstream's hard eviction thresholds on Linux (pkg/kubelet/eviction: DefaultEvictionHard). */
export const DEFAULT_EVICTION_HARD: Readonly<Partial<Record<EvictionSignal, string>>> = Object.freeze({
  'memory.available': '100Mi',
  'nodefs.available': '10%',
  'nodefs.inodesFree': '5%',
  'imagefs.available': '15%',
});

/**
 * Checks of the node registration fields that the schema cannot say well: label keys (a
 * qualified name, and only those NodeRestriction lets a node set, as upstream's kubelet
 * refuses at start), and frequencies that must be positive.
 */
function checkNodeFields(c: KubeletConfigInput, file: string): void {
  const errors: string[] = [];
  for (const key of Object.keys(c.nodeLabels ?? {})) {
    const bad = invalidLabelKey(key);
    if (bad) errors.push(`${file}: nodeLabels has the key ${JSON.stringify(key)}; allowed: ${bad}`);
    else if (!kubeletMaySetLabel(key)) errors.push(`${file}: nodeLabels has the key ${JSON.stringify(key)}, which NodeRestriction does not let a node set; allowed: ${KUBELET_LABEL_RULE}`);
  }
  for (const field of ['nodeStatusUpdateFrequency', 'nodeStatusReportFrequency'] as const) {
    const value = c[field];
    if (value !== undefined && parseDuration(value) <= 0) {
      errors.push(`${file}: ${field} is ${JSON.stringify(value)}; allowed: a Go duration > 0 such as '10s', '1m'`);
    }
  }
  if (errors.length) throw new ConfigError(errors.join('\n'));
}

/** The serving certificate comes as a pair: one file without the other is a mistake, not a request for a self-signed one. */
function checkServingFields(c: KubeletConfigInput, file: string): void {
  if ((c.tlsCertFile === undefined) !== (c.tlsPrivateKeyFile === undefined)) {
    const [given, missing] = c.tlsCertFile !== undefined ? ['tlsCertFile', 'tlsPrivateKeyFile'] : ['tlsPrivateKeyFile', 'tlsCertFile'];
    throw new ConfigError(`${file}: ${given} is set but ${missing} is not; allowed: both (a certificate and its key), or neither (a self-signed pair in certDirectory)`);
  }
}

/** Exec credential providers need both their config and the directory of their executables (upstream fails the start without the directory). */
function checkCredentialProviderFields(c: KubeletConfigInput, file: string): void {
  if (c.imageCredentialProviderConfig !== undefined && c.imageCredentialProviderBinDir === undefined) {
    throw new ConfigError(`${file}: imageCredentialProviderConfig (--image-credential-provider-config) is set but imageCredentialProviderBinDir (--image-credential-provider-bin-dir) is not; allowed: both, or neither`);
  }
}

/** Copies the config without breaking plugin objects or functions inside `plugins`. */
function structuredCloneConfig(config: KubeletConfigInput): KubeletConfigInput {
  const copy: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(config)) {
    copy[k] = k === 'plugins' || v === null || typeof v !== 'object' ? v : JSON.parse(JSON.stringify(v));
  }
  return copy as KubeletConfigInput;
}

function resolve(c: Required<KubeletConfigInput>, file: string, flags: ConfigFlags): KubeletConfig {
  // Paths in the file are relative to the file; paths from flags are relative to the cwd.
  const fromFile = (p: string | undefined, flag: string | undefined) =>
    p === undefined ? undefined : flag !== undefined ? path.resolve(p) : path.resolve(path.dirname(file), p);
  return {
    nodeName: c.nodeName ?? os.hostname().toLowerCase(),
    nodeIP: c.nodeIP ?? detectNodeIP(),
    rootDir: fromFile(c.rootDir, flags.rootDir)!,
    podLogsDir: fromFile(c.podLogsDir, undefined)!,
    staticPodPath: fromFile(c.staticPodPath, flags.podManifestPath),
    staticPodURL: c.staticPodURL,
    staticPodURLHeader: c.staticPodURLHeader,
    httpCheckFrequencyMs: parseDuration(c.httpCheckFrequency),
    fileCheckFrequencyMs: parseDuration(c.fileCheckFrequency),
    syncFrequencyMs: parseDuration(c.syncFrequency),
    plegRelistPeriodMs: parseDuration(c.plegRelistPeriod),
    containerRuntimeEndpoint: c.containerRuntimeEndpoint,
    runtimeRequestTimeoutMs: parseDuration(c.runtimeRequestTimeout),
    address: c.address,
    readOnlyPort: c.readOnlyPort,
    maxPods: c.maxPods,
    cgroupsPerQOS: c.cgroupsPerQOS,
    maxPerPodContainer: c.maxPerPodContainer,
    maxContainers: c.maxContainers,
    cgroupRoot: c.cgroupRoot,
    crashLoopBackOff: {
      initialMs: parseDuration(c.crashLoopBackOff.initialContainerRestartPeriod!),
      maxMs: parseDuration(c.crashLoopBackOff.maxContainerRestartPeriod!),
    },
    imagePullBackOff: {
      initialMs: parseDuration(c.imagePullBackOff.initialPeriod!),
      maxMs: parseDuration(c.imagePullBackOff.maxPeriod!),
    },
    hookTimeoutMs: parseDuration(c.hookTimeout),
    maxParallelImagePulls: c.serializeImagePulls ? 1 : c.maxParallelImagePulls,
    maxParallelSandboxCreations: c.maxParallelSandboxCreations === 0 ? undefined : (c.maxParallelSandboxCreations ?? defaultMaxParallelSandboxCreations()),
    localObjectsDir: fromFile(c.localObjectsDir, undefined),
    kubeconfig: fromFile(c.kubeconfig, flags.kubeconfig),
    registerNode: c.registerNode,
    nodeLabels: c.nodeLabels,
    registerWithTaints: c.registerWithTaints,
    nodeStatusUpdateFrequencyMs: parseDuration(c.nodeStatusUpdateFrequency ?? '10s'),
    // Upstream: "If nodeStatusUpdateFrequency is set explicitly, nodeStatusReportFrequency's
    // default value will be set to nodeStatusUpdateFrequency for backward compatibility."
    nodeStatusReportFrequencyMs: parseDuration(c.nodeStatusReportFrequency ?? c.nodeStatusUpdateFrequency ?? '5m'),
    nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
    kubeAPIQPS: c.kubeAPIQPS,
    kubeAPIBurst: c.kubeAPIBurst,
    eventRecordQPS: c.eventRecordQPS,
    eventBurst: c.eventBurst,
    port: c.port,
    ...resolveServing(c, fromFile, flags),
    systemReserved: c.systemReserved,
    kubeReserved: c.kubeReserved,
    evictionHard: c.evictionHard ?? { ...DEFAULT_EVICTION_HARD },
    eviction: resolveEvictionSettings(c),
    imageGC: resolveImageGCSettings(c),
    containerLogs: { maxSizeBytes: Math.floor(quantityValue(c.containerLogMaxSize ?? '10Mi') ?? 10 * 2 ** 20), maxFiles: c.containerLogMaxFiles ?? 5, monitorIntervalMs: parseDuration(c.containerLogMonitorInterval ?? '10s') },
    allowedUnsafeSysctls: c.allowedUnsafeSysctls,
    seccompDefault: c.seccompDefault,
    clusterDNS: c.clusterDNS,
    clusterDomain: c.clusterDomain,
    resolvConf: c.resolvConf === '' ? '' : fromFile(c.resolvConf, undefined)!,
    imageCredentialProviderConfig: fromFile(c.imageCredentialProviderConfig, flags.imageCredentialProviderConfig),
    imageCredentialProviderBinDir: fromFile(c.imageCredentialProviderBinDir, flags.imageCredentialProviderBinDir),
    runtimeClassHandlers: c.runtimeClassHandlers,
    logLevel: c.logging.level ?? 'info',
    plugins: c.plugins,
    configFile: file,
  };
}

/** The main port's TLS, authentication and authorization settings, resolved (paths as other paths, durations in ms). */
function resolveServing(
  c: Required<KubeletConfigInput>,
  fromFile: (p: string | undefined, flag: string | undefined) => string | undefined,
  flags: ConfigFlags,
): Pick<KubeletConfig, 'tlsCertFile' | 'tlsPrivateKeyFile' | 'certDirectory' | 'tlsMinVersion' | 'tlsCipherSuites' | 'authentication' | 'authorization' | 'streamingConnectionIdleTimeoutMs'> {
  const rootDir = fromFile(c.rootDir, flags.rootDir)!;
  const authn = c.authentication;
  const authz = c.authorization;
  return {
    tlsCertFile: fromFile(c.tlsCertFile, flags.tlsCertFile),
    tlsPrivateKeyFile: fromFile(c.tlsPrivateKeyFile, flags.tlsPrivateKeyFile),
    certDirectory: fromFile(c.certDirectory, flags.certDirectory) ?? path.join(rootDir, 'pki'),
    tlsMinVersion: c.tlsMinVersion,
    tlsCipherSuites: c.tlsCipherSuites ?? [],
    authentication: {
      x509ClientCAFile: fromFile(authn.x509?.clientCAFile, undefined),
      webhookEnabled: authn.webhook?.enabled ?? true,
      webhookCacheTTLMs: parseDuration(authn.webhook?.cacheTTL ?? '2m'),
      anonymousEnabled: authn.anonymous?.enabled ?? false,
    },
    authorization: {
      mode: authz.mode ?? 'Webhook',
      cacheAuthorizedTTLMs: parseDuration(authz.webhook?.cacheAuthorizedTTL ?? '5m'),
      cacheUnauthorizedTTLMs: parseDuration(authz.webhook?.cacheUnauthorizedTTL ?? '30s'),
    },
    streamingConnectionIdleTimeoutMs: parseDuration(c.streamingConnectionIdleTimeout),
  };
}

/**
 * Twice the CPUs: sandbox creation is CPU work in containerd, runc and the CNI plugins, and at
 * 110 pods dropped at once an unbounded burst finished 1.2x later than 4 at a time on 2 CPUs
 * (bench/README.md, density).
 */
export function defaultMaxParallelSandboxCreations(): number {
  return 2 * os.availableParallelism();
}

/** The first non-internal IPv4 address, as upstream picks a node IP when none is given. */
export function detectNodeIP(): string {
  for (const addrs of Object.values(os.networkInterfaces())) {
    for (const a of addrs ?? []) if (a.family === 'IPv4' && !a.internal) return a.address;
  }
  return '127.0.0.1';
}
