import { resolveShutdownGroups, shutdownConfigErrors } from './shutdown-config.ts';
import { Ajv, type ValidateFunction } from 'ajv';
import os from 'node:os';
import path from 'node:path';
import { ConfigError } from '../errors.ts';
import { formatAjvErrors } from './ajv-errors.ts';
import { evictionConfigErrors, resolveEvictionSettings, resolveImageGCSettings } from './eviction-config.ts';
import { parseDuration } from '../util/duration.ts';
import { quantityValue } from '../objects/quantity.ts';
import { configSchema } from './schema.ts';
import type { EvictionSignal, KubeletConfig, KubeletConfigInput } from './types.ts';
import { KUBELET_LABEL_RULE, invalidLabelKey, kubeletMaySetLabel } from '../objects/node-labels.ts';
import { PACKAGE_ROOT, RUNS_COMPILED } from '../util/package-root.ts';
import { isKubeletConfiguration, readKubeletConfiguration, showValue, type IgnoredSetting } from './kubelet-configuration.ts';
import { KUBELET_FLAGS, type FlagSetting } from './upstream-flags.ts';
import { UPSTREAM_FIELDS, isZero } from './upstream-fields.ts';
import { readConfigFile, structuredCloneConfig } from './config-file.ts';
import { PATH_FIELDS, getPath, setPath } from './field-paths.ts';
import { leftOutDefaultsNotice, readPluginsConfig } from './plugins-config.ts';
import { configFlagSettings, flagConflicts, type ConfigFlags } from './flag-settings.ts';

export { readConfigFile } from './config-file.ts';
export type { ConfigFlags } from './flag-settings.ts';

export const DEFAULT_CONFIG_FILE = path.join(PACKAGE_ROOT, RUNS_COMPILED ? 'kubelet.config.js' : 'kubelet.config.ts');


/** Something the start should say besides errors: the settings kubelet-ts ignores (one warning), flags accepted without effect. */
export interface ConfigNotice {
  level: 'warn' | 'info';
  msg: string;
  /** For the warning: each ignored setting, its value and what it would need. */
  ignored?: IgnoredSetting[];
}

export interface LoadConfigOptions {
  /** kubelet-ts's own format, or upstream's KubeletConfiguration (kubeadm's /var/lib/kubelet/config.yaml). Default: the package's default bundle. */
  configFile?: string;
  /** With a KubeletConfiguration: kubelet-ts's own file for `plugins` and the fields upstream has no place for. Default: the default bundle's plugins. */
  pluginsConfig?: string;
  /** Flags as typed values (programmatic callers). */
  flags?: ConfigFlags;
  /** Flags from the command line (parseKubeletCommandLine), applied after `flags`. */
  settings?: FlagSetting[];
  /** Filled with what the start should log once the logger exists. */
  notices?: ConfigNotice[];
}

const ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true });
const validateConfig: ValidateFunction = ajv.compile(configSchema);

/**
 * Loads, validates and resolves the configuration: the file (or the package's default
 * bundle), then the flags on top. The file is kubelet-ts's own format, or upstream's
 * KubeletConfiguration read with upstream's defaulting (kubelet-configuration.ts), whose
 * plugins then come from `pluginsConfig` or the default bundle. Every error names its source
 * (file or flag), the field, the bad value and what is allowed; all of them at once, each once.
 */
export async function loadConfig(options: LoadConfigOptions = {}): Promise<KubeletConfig> {
  const file = path.resolve(options.configFile ?? DEFAULT_CONFIG_FILE);
  const raw = structuredCloneConfig(await readConfigFile(file)) as Record<string, unknown>;
  const settings = [...configFlagSettings(options.flags ?? {}), ...(options.settings ?? [])];
  const errors: string[] = flagConflicts(settings);
  const ignored: IgnoredSetting[] = [];
  const infos: string[] = [];
  /** Where a kubelet-ts field's value came from when not from `file`, by dotted path. */
  const sources = new Map<string, string>();

  // Flags are sorted by what they set: an upstream KubeletConfiguration field, a kubelet-ts
  // field, nothing (accepted, said at start).
  const fieldSettings: Array<{ field: string; setting: FlagSetting }> = [];
  const ownSettings: Array<{ field: string; setting: FlagSetting }> = [];
  for (const setting of settings) {
    const spec = KUBELET_FLAGS[setting.flag];
    if (!spec) throw new Error(`no such flag --${setting.flag}`);
    if (spec.info !== undefined) infos.push(`${setting.spelling}=${showValue(setting.value)}: ${spec.info}`);
    else if (spec.needs !== undefined) {
      if (!(spec.honoured ?? isZero)(setting.value)) ignored.push({ name: setting.spelling, value: setting.value, needs: spec.needs });
    } else if (spec.field !== undefined) fieldSettings.push({ field: spec.field, setting });
    else if (spec.kubeletTs !== undefined) {
      ownSettings.push({ field: spec.kubeletTs, setting });
    }
  }
  /** A flag's value, a path made absolute from the working directory. */
  const flagValue = (kubeletTsField: string, value: unknown) => (PATH_FIELDS.has(kubeletTsField) && typeof value === 'string' && value !== '' ? path.resolve(value) : value);

  let input: Record<string, unknown>;
  let pluginsConfigFile: string | undefined;
  if (isKubeletConfiguration(raw)) {
    // Flags override the file, field by field, before upstream's defaulting reads the whole.
    const flagSources = new Map<string, string>();
    for (const { field, setting } of fieldSettings) {
      setPath(raw, field, flagValue(UPSTREAM_TARGETS.get(field) ?? field, setting.value));
      flagSources.set(field, setting.spelling);
    }
    const read = readKubeletConfiguration(raw, file, { sources: flagSources });
    errors.push(...read.errors);
    ignored.push(...read.ignored);
    input = read.input;
    for (const [target, field] of read.origins) if (flagSources.has(field)) sources.set(target, flagSources.get(field)!);
    if (options.pluginsConfig !== undefined) {
      pluginsConfigFile = path.resolve(options.pluginsConfig);
      const own = await readPluginsConfig(pluginsConfigFile, file);
      errors.push(...own.errors);
      for (const [k, v] of Object.entries(own.input)) {
        input[k] = v;
        sources.set(k, pluginsConfigFile);
      }
      const bundle = ((await readConfigFile(DEFAULT_CONFIG_FILE)).plugins ?? []) as unknown[];
      if (!Object.hasOwn(own.input, 'plugins')) {
        // A file of kubelet-ts's fields only (plegRelistPeriod, hookTimeout, ...) keeps the default bundle: it names no plugins to replace it with.
        input.plugins = bundle;
      } else {
        const leftOut = leftOutDefaultsNotice(pluginsConfigFile, own.input.plugins, bundle, DEFAULT_CONFIG_FILE);
        if (leftOut !== undefined) infos.push(leftOut);
      }
    } else {
      pluginsConfigFile = DEFAULT_CONFIG_FILE;
      input.plugins = (await readConfigFile(DEFAULT_CONFIG_FILE)).plugins ?? [];
    }
  } else {
    if (options.pluginsConfig !== undefined) {
      throw new ConfigError(`--plugins-config goes with a KubeletConfiguration --config (kind: KubeletConfiguration); ${file} is kubelet-ts's own format, whose plugins field lists the plugins`);
    }
    input = raw;
    // Flags for upstream's fields, each taken as given over kubelet-ts's format.
    const doc: Record<string, unknown> = {};
    const flagSources = new Map<string, string>();
    for (const { field, setting } of fieldSettings) {
      setPath(doc, field, flagValue(UPSTREAM_TARGETS.get(field) ?? field, setting.value));
      flagSources.set(field, setting.spelling);
    }
    const read = readKubeletConfiguration(doc, file, { sources: flagSources, literal: true });
    errors.push(...read.errors);
    ignored.push(...read.ignored);
    for (const [target, field] of read.origins) {
      setPath(input, target, getPath(read.input, target));
      sources.set(target, flagSources.get(field) ?? file);
    }
  }
  for (const { field, setting } of ownSettings) {
    let value = setting.flag === 'hostname-override' && typeof setting.value === 'string' ? setting.value.trim().toLowerCase() : setting.value;
    // Upstream takes a dual-stack pair (--node-ip=10.0.0.5,fd00::5); kubelet-ts reports one address.
    if (setting.flag === 'node-ip' && typeof value === 'string' && value.includes(',')) {
      const [first, ...others] = value.split(',').map((a) => a.trim());
      ignored.push({ name: setting.spelling, value: others.join(','), needs: `dual-stack node addresses (kubelet-ts reports the first, ${first})` });
      value = first;
    }
    setPath(input, field, flagValue(field, value));
    sources.set(field, setting.spelling);
  }
  const sourceOf = (instancePath: string) => {
    const dotted = instancePath.replace(/^\//, '').split('/');
    for (let n = dotted.length; n > 0; n--) {
      const at = sources.get(dotted.slice(0, n).join('.'));
      if (at !== undefined) return at;
    }
    return file;
  };
  // Every problem at once: what the reading found, then what the schema finds in the rest.
  if (!validateConfig(input)) errors.push(...formatAjvErrors(validateConfig.errors, input, sourceOf).split('\n'));
  if (errors.length) throw new ConfigError(unique(errors).join('\n'));
  const c = input as KubeletConfigInput;
  const semantic = [...nodeFieldErrors(c, file), ...servingFieldErrors(c, file), ...certificateFieldErrors(c, file), ...credentialProviderFieldErrors(c, file), ...evictionConfigErrors(c, file), ...shutdownConfigErrors(c, file)];
  if (semantic.length) throw new ConfigError(unique(semantic).join('\n'));

  if (options.notices) {
    if (ignored.length) {
      options.notices.push({
        level: 'warn',
        msg: `settings kubelet-ts does not implement, ignored: ${ignored.map((i) => `${i.name}: ${showValue(i.value)} (would need ${i.needs})`).join('; ')}`,
        ignored,
      });
    }
    for (const msg of infos) options.notices.push({ level: 'info', msg });
  }
  const resolved = resolve(c as Required<KubeletConfigInput>, file);
  if (pluginsConfigFile !== undefined) resolved.pluginsConfigFile = pluginsConfigFile;
  return resolved;
}

/** The kubelet-ts field an upstream field sets (for path handling of flags). */
const UPSTREAM_TARGETS = new Map(
  Object.entries(UPSTREAM_FIELDS).flatMap(([field, spec]) => (spec.implemented === true && typeof spec.to === 'string' ? [[field, spec.to] as const] : [])),
);

function unique(lines: string[]): string[] {
  return [...new Set(lines)];
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
function nodeFieldErrors(c: KubeletConfigInput, file: string): string[] {
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
  return errors;
}

/** The serving certificate comes as a pair: one file without the other is a mistake, not a request for a self-signed one. */
function servingFieldErrors(c: KubeletConfigInput, file: string): string[] {
  if ((c.tlsCertFile === undefined) !== (c.tlsPrivateKeyFile === undefined)) {
    const [given, missing] = c.tlsCertFile !== undefined ? ['tlsCertFile', 'tlsPrivateKeyFile'] : ['tlsPrivateKeyFile', 'tlsCertFile'];
    return [`${file}: ${given} is set but ${missing} is not; allowed: both (a certificate and its key), or neither (a self-signed pair in certDirectory)`];
  }
  return [];
}

/** The TLS bootstrap writes `kubeconfig`, and a cluster signs the serving certificate: both need a kubeconfig. */
function certificateFieldErrors(c: KubeletConfigInput, file: string): string[] {
  const errors: string[] = [];
  if (c.bootstrapKubeconfig !== undefined && c.kubeconfig === undefined) errors.push(`${file}: bootstrapKubeconfig is set but kubeconfig is not; allowed: both (the TLS bootstrap writes kubeconfig), or neither`);
  if (c.serverTLSBootstrap && c.kubeconfig === undefined) errors.push(`${file}: serverTLSBootstrap is true but kubeconfig is not set; allowed: serverTLSBootstrap with a kubeconfig (the cluster signs the serving certificate), or false`);
  return errors;
}

/** Exec credential providers need both their config and the directory of their executables (upstream fails the start without the directory). */
function credentialProviderFieldErrors(c: KubeletConfigInput, file: string): string[] {
  if (c.imageCredentialProviderConfig !== undefined && c.imageCredentialProviderBinDir === undefined) {
    return [`${file}: imageCredentialProviderConfig (--image-credential-provider-config) is set but imageCredentialProviderBinDir (--image-credential-provider-bin-dir) is not; allowed: both, or neither`];
  }
  return [];
}

function resolve(c: Required<KubeletConfigInput>, file: string): KubeletConfig {
  // Paths in the file are relative to the file; paths from flags (and --plugins-config) are absolute already.
  const fromFile = (p: string | undefined) => (p === undefined ? undefined : path.resolve(path.dirname(file), p));
  return {
    nodeName: c.nodeName ?? os.hostname().toLowerCase(),
    nodeIP: c.nodeIP ?? detectNodeIP(),
    rootDir: fromFile(c.rootDir)!,
    podLogsDir: fromFile(c.podLogsDir)!,
    staticPodPath: fromFile(c.staticPodPath),
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
    enableServer: c.enableServer,
    enableDebuggingHandlers: c.enableDebuggingHandlers,
    maxPods: c.maxPods,
    cgroupsPerQOS: c.cgroupsPerQOS,
    maxPerPodContainer: c.maxPerPodContainer,
    maxContainers: c.maxContainers,
    cgroupRoot: c.cgroupRoot,
    cgroupDriver: c.cgroupDriver,
    enforceNodeAllocatablePods: c.enforceNodeAllocatable.includes('pods'),
    podPidsLimit: c.podPidsLimit > 0 ? c.podPidsLimit : undefined,
    crashLoopBackOff: {
      initialMs: parseDuration(c.crashLoopBackOff.initialContainerRestartPeriod!),
      maxMs: parseDuration(c.crashLoopBackOff.maxContainerRestartPeriod!),
    },
    imagePullBackOff: {
      initialMs: parseDuration(c.imagePullBackOff.initialPeriod!),
      maxMs: parseDuration(c.imagePullBackOff.maxPeriod!),
    },
    hookTimeoutMs: parseDuration(c.hookTimeout),
    runtimeInstance: c.runtimeInstance,
    maxParallelImagePulls: c.serializeImagePulls ? 1 : c.maxParallelImagePulls,
    maxParallelSandboxCreations: c.maxParallelSandboxCreations === 0 ? undefined : (c.maxParallelSandboxCreations ?? defaultMaxParallelSandboxCreations()),
    maxParallelContainerCreations: c.maxParallelContainerCreations === 0 ? undefined : (c.maxParallelContainerCreations ?? defaultMaxParallelSandboxCreations()),
    localObjectsDir: fromFile(c.localObjectsDir),
    kubeconfig: fromFile(c.kubeconfig),
    bootstrapKubeconfig: fromFile(c.bootstrapKubeconfig),
    rotateCertificates: c.rotateCertificates,
    serverTLSBootstrap: c.serverTLSBootstrap,
    registerNode: c.registerNode,
    nodeLabels: c.nodeLabels,
    registerWithTaints: c.registerWithTaints,
    nodeStatusUpdateFrequencyMs: parseDuration(c.nodeStatusUpdateFrequency ?? '10s'),
    // Upstream: "If nodeStatusUpdateFrequency is set explicitly, nodeStatusReportFrequency's
    // default value will be set to nodeStatusUpdateFrequency for backward compatibility."
    nodeStatusReportFrequencyMs: parseDuration(c.nodeStatusReportFrequency ?? c.nodeStatusUpdateFrequency ?? '5m'),
    nodeLeaseDurationSeconds: c.nodeLeaseDurationSeconds,
    shutdownGroups: resolveShutdownGroups(c),
    kubeAPIQPS: c.kubeAPIQPS,
    kubeAPIBurst: c.kubeAPIBurst,
    eventRecordQPS: c.eventRecordQPS,
    eventBurst: c.eventBurst,
    port: c.port,
    ...resolveServing(c, fromFile),
    systemReserved: c.systemReserved,
    kubeReserved: c.kubeReserved,
    evictionHard: c.evictionHard ?? { ...DEFAULT_EVICTION_HARD },
    eviction: resolveEvictionSettings(c),
    imageGC: resolveImageGCSettings(c),
    volumeStatsAggPeriodMs: parseDuration(c.volumeStatsAggPeriod ?? '1m'),
    containerLogs: { maxSizeBytes: Math.floor(quantityValue(c.containerLogMaxSize ?? '10Mi') ?? 10 * 2 ** 20), maxFiles: c.containerLogMaxFiles ?? 5, monitorIntervalMs: parseDuration(c.containerLogMonitorInterval ?? '10s') },
    allowedUnsafeSysctls: c.allowedUnsafeSysctls,
    seccompDefault: c.seccompDefault,
    clusterDNS: c.clusterDNS,
    clusterDomain: c.clusterDomain,
    resolvConf: c.resolvConf === '' ? '' : fromFile(c.resolvConf)!,
    volumePluginDir: fromFile(c.volumePluginDir)!,
    imageCredentialProviderConfig: fromFile(c.imageCredentialProviderConfig),
    imageCredentialProviderBinDir: fromFile(c.imageCredentialProviderBinDir),
    runtimeClassHandlers: c.runtimeClassHandlers,
    healthzPort: c.healthzPort,
    healthzBindAddress: c.healthzBindAddress,
    logLevel: c.logging.level ?? 'info',
    plugins: c.plugins,
    configFile: file,
  };
}

/** The main port's TLS, authentication and authorization settings, resolved (paths as other paths, durations in ms). */
function resolveServing(
  c: Required<KubeletConfigInput>,
  fromFile: (p: string | undefined) => string | undefined,
): Pick<KubeletConfig, 'tlsCertFile' | 'tlsPrivateKeyFile' | 'certDirectory' | 'tlsMinVersion' | 'tlsCipherSuites' | 'authentication' | 'authorization' | 'streamingConnectionIdleTimeoutMs'> {
  const rootDir = fromFile(c.rootDir)!;
  const authn = c.authentication;
  const authz = c.authorization;
  return {
    tlsCertFile: fromFile(c.tlsCertFile),
    tlsPrivateKeyFile: fromFile(c.tlsPrivateKeyFile),
    certDirectory: fromFile(c.certDirectory) ?? path.join(rootDir, 'pki'),
    tlsMinVersion: c.tlsMinVersion,
    tlsCipherSuites: c.tlsCipherSuites ?? [],
    authentication: {
      x509ClientCAFile: fromFile(authn.x509?.clientCAFile),
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
