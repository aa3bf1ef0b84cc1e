/**
 * Every field of upstream's KubeletConfiguration (kubelet.config.k8s.io/v1beta1, v1.28 to
 * v1.36) and what kubelet-ts does with it: the one table that the config reader
 * (kubelet-configuration.ts), the flags (upstream-flags.ts), the start warning and the docs'
 * list of fields not implemented yet (docs/operating/kubeadm.md) are all made from, so they cannot drift apart.
 *
 * An implemented field sets a kubelet-ts field (most have the same name) and takes effect. Its
 * value is read with upstream's defaulting: a Go field without a pointer (`syncFrequency`,
 * `port`, `clusterDomain`) reads its zero value (`0s`, `0`, `""`) as "the default", which is
 * what kubeadm's files rely on (`syncFrequency: 0s`); a pointer field (`eventRecordQPS`,
 * `resolvConf`) takes its zero value as given, and only absent means the default.
 *
 * A field not implemented is accepted and ignored. It is named in the one warning line at start
 * only when its value asks for something kubelet-ts does not do; values at which kubelet-ts
 * behaves as upstream does (a manager that is off, a period of one, upstream's own constant)
 * pass silently, so a kubeadm file does not warn about `cpuManagerReconcilePeriod: 0s`.
 */
import { parseDuration } from '../util/duration.ts';

export type UpstreamValueType =
  | 'bool'
  | 'int'
  | 'number'
  | 'string'
  | 'duration'
  | 'stringList'
  | 'stringMap'
  | 'list'
  | 'object'
  | 'any';

/** A field kubelet-ts implements. */
export interface ImplementedField {
  implemented: true;
  type: UpstreamValueType;
  /** The kubelet-ts field it sets, a dotted path; default: the same name. null: read by another field's conversion. */
  to?: string | null;
  /** A Go field without a pointer: its zero value means upstream's default, like absence. */
  zeroIsDefault?: boolean;
  /** Upstream's default where kubelet-ts's own default differs: used when the field is absent (or zero, with zeroIsDefault). */
  upstreamDefault?: (whole: Record<string, unknown>) => unknown;
  /** What is allowed, when `value` is of the right type but not allowed (checks kubelet-ts's schema cannot make under the upstream name). */
  check?: (value: unknown) => string | undefined;
  /** The kubelet-ts value for an upstream value spelled differently. */
  convert?: (value: unknown, whole: Record<string, unknown>) => unknown;
}

/** A field kubelet-ts does not implement: accepted, ignored, and named at start when its value matters. */
export interface UnimplementedField {
  implemented: false;
  type: UpstreamValueType;
  /** What kubelet-ts would need to honour the field. */
  needs: string;
  /** True for the values at which kubelet-ts already does what upstream does (no warning). */
  honoured: (value: unknown) => boolean;
  /** Those values in words, for the docs. */
  honouredText: string;
}

/** A struct whose fields are listed under `<name>.`. */
export interface StructField {
  implemented: 'struct';
}

export type UpstreamField = ImplementedField | UnimplementedField | StructField;

/** A zero value as Go's JSON decoder leaves it: 0, '', false, '0s', an empty list or map. */
export function isZero(value: unknown): boolean {
  if (value === undefined || value === null || value === 0 || value === '' || value === false || value === '0') return true;
  if (Array.isArray(value)) return value.length === 0;
  if (typeof value === 'object') return Object.values(value as object).every(isZero);
  if (typeof value === 'string') {
    try {
      return parseDuration(value) === 0;
    } catch {
      return false;
    }
  }
  return false;
}

const zero = (v: unknown) => isZero(v);
const always = () => true;
/** A map or list without entries (a map of `false` gates still asks for something). */
const empty = (v: unknown) => v === undefined || v === null || (typeof v === 'object' && Object.keys(v as object).length === 0);
const same = (x: unknown, v: unknown) => (typeof x === 'string' && typeof v === 'string' ? x.toLowerCase() === v.toLowerCase() : x === v);
/** Honoured at these values (strings compared without case, as upstream compares policy names), or null. */
const only = (...values: unknown[]) => (v: unknown) => v === null || values.some((x) => same(x, v));
/** Honoured at these values or the zero value (which upstream reads as its default, one of them). */
const zeroOr = (...values: unknown[]) => (v: unknown) => isZero(v) || values.some((x) => same(x, v));
const durationOf = (...values: string[]) => (v: unknown) => {
  if (isZero(v)) return true;
  try {
    const ms = parseDuration(v as string);
    return values.some((x) => parseDuration(x) === ms);
  } catch {
    return false;
  }
};

const impl = (type: UpstreamValueType, more: Partial<ImplementedField> = {}): ImplementedField => ({ implemented: true, type, ...more });
/** A Go non-pointer field: zero means upstream's default (which is also kubelet-ts's unless given). */
const implZ = (type: UpstreamValueType, more: Partial<ImplementedField> = {}): ImplementedField => impl(type, { zeroIsDefault: true, ...more });
const not = (type: UpstreamValueType, honoured: (v: unknown) => boolean, honouredText: string, needs: string): UnimplementedField => ({ implemented: false, type, needs, honoured, honouredText });
const struct: StructField = { implemented: 'struct' };

/** klog verbosity (upstream --v, logging.verbosity) as a kubelet-ts log level: 0-2 info, 3-4 debug, 5 and more trace. */
export function verbosityToLevel(v: number): 'info' | 'debug' | 'trace' {
  return v >= 5 ? 'trace' : v >= 3 ? 'debug' : 'info';
}

/** Upstream's hard eviction defaults on Linux (pkg/kubelet/eviction DefaultEvictionHard). */
const EVICTION_HARD_DEFAULTS = { 'memory.available': '100Mi', 'nodefs.available': '10%', 'nodefs.inodesFree': '5%', 'imagefs.available': '15%' };

/**
 * The fields, by dotted path. Order: as upstream's types.go declares them, later additions
 * where upstream put them.
 */
export const UPSTREAM_FIELDS: Readonly<Record<string, UpstreamField>> = {
  enableServer: impl('bool'),
  staticPodPath: implZ('string'),
  podLogsDir: implZ('string'),
  syncFrequency: implZ('duration'),
  fileCheckFrequency: implZ('duration'),
  httpCheckFrequency: implZ('duration'),
  staticPodURL: implZ('string'),
  staticPodURLHeader: implZ('object'),
  address: implZ('string'),
  port: implZ('int'),
  readOnlyPort: impl('int'),
  tlsCertFile: implZ('string'),
  tlsPrivateKeyFile: implZ('string'),
  tlsCipherSuites: implZ('stringList'),
  tlsCurvePreferences: not('list', empty, 'empty', "a choice of TLS key exchange curves (kubelet-ts uses Node's)"),
  tlsMinVersion: implZ('string'),
  rotateCertificates: implZ('bool'),
  serverTLSBootstrap: implZ('bool'),
  authentication: struct,
  'authentication.x509': struct,
  'authentication.x509.clientCAFile': implZ('string'),
  'authentication.webhook': struct,
  'authentication.webhook.enabled': impl('bool'),
  'authentication.webhook.cacheTTL': implZ('duration'),
  'authentication.anonymous': struct,
  'authentication.anonymous.enabled': impl('bool'),
  authorization: struct,
  'authorization.mode': implZ('string'),
  'authorization.webhook': struct,
  'authorization.webhook.cacheAuthorizedTTL': implZ('duration'),
  'authorization.webhook.cacheUnauthorizedTTL': implZ('duration'),
  registryPullQPS: not('int', zero, '0 (no limit)', 'a rate limit on image pulls (kubelet-ts bounds parallel pulls: maxParallelImagePulls)'),
  registryBurst: not('int', always, 'any (it only shapes registryPullQPS)', 'a rate limit on image pulls'),
  imagePullCredentialsVerificationPolicy: not('string', zeroOr('NeverVerify'), 'NeverVerify', 'pull credentials checked again for images already on the node'),
  preloadedImagesVerificationAllowlist: not('stringList', empty, 'empty', 'pull credentials checked again for images already on the node'),
  eventRecordQPS: impl('int'),
  eventBurst: implZ('int'),
  enableDebuggingHandlers: impl('bool'),
  enableContentionProfiling: not('bool', zero, 'false', 'profiling handlers'),
  healthzPort: impl('int', { upstreamDefault: () => 10248 }),
  healthzBindAddress: implZ('string', { upstreamDefault: () => '127.0.0.1' }),
  oomScoreAdj: not('int', zero, '0 (set OOMScoreAdjust= in the systemd unit instead)', 'the kubelet setting its own oom_score_adj'),
  clusterDomain: implZ('string'),
  clusterDNS: implZ('stringList'),
  streamingConnectionIdleTimeout: implZ('duration'),
  nodeStatusUpdateFrequency: implZ('duration'),
  nodeStatusReportFrequency: implZ('duration'),
  nodeLeaseDurationSeconds: implZ('int'),
  imageMinimumGCAge: implZ('duration'),
  imageMaximumGCAge: implZ('duration'),
  imageGCHighThresholdPercent: impl('int'),
  imageGCLowThresholdPercent: impl('int'),
  volumeStatsAggPeriod: implZ('duration'),
  kubeletCgroups: not('string', zero, '""', 'moving the kubelet into its own cgroup (use the systemd unit)'),
  systemCgroups: not('string', zero, '""', 'moving system processes into a cgroup'),
  cgroupRoot: implZ('string'),
  cgroupsPerQOS: impl('bool'),
  cgroupDriver: implZ('string'),
  cpuManagerPolicy: not('string', zeroOr('none'), 'none', 'a CPU manager (exclusive CPUs for Guaranteed pods)'),
  singleProcessOOMKill: not('bool', always, 'any (runc decides memory.oom.group)', 'control of memory.oom.group on cgroup v2'),
  cpuManagerPolicyOptions: not('stringMap', empty, 'empty', 'a CPU manager'),
  cpuManagerReconcilePeriod: not('duration', always, 'any (there is no CPU manager to reconcile)', 'a CPU manager'),
  draManagerReconcilePeriod: not('duration', always, 'any (there is no DRA manager to reconcile)', 'dynamic resource allocation'),
  memoryManagerPolicy: not('string', zeroOr('None'), 'None', 'a memory manager (NUMA-pinned memory for Guaranteed pods)'),
  topologyManagerPolicy: not('string', zeroOr('none'), 'none', 'a topology manager (NUMA alignment)'),
  topologyManagerScope: not('string', always, 'any (there is no topology manager)', 'a topology manager'),
  topologyManagerPolicyOptions: not('stringMap', empty, 'empty', 'a topology manager'),
  qosReserved: not('stringMap', empty, 'empty', 'memory held back for Guaranteed pods in the QoS cgroups'),
  runtimeRequestTimeout: implZ('duration'),
  hairpinMode: not('string', always, "any (with a CRI runtime the CNI plugin's config decides, as upstream)", 'hairpin NAT set up by the kubelet'),
  maxPods: implZ('int'),
  podCIDR: not('string', zero, '""', 'the pod CIDR handed to the runtime (CRI UpdateRuntimeConfig)'),
  podPidsLimit: implZ('int'),
  resolvConf: impl('string'),
  runOnce: not('bool', zero, 'false', 'run-once mode'),
  cpuCFSQuota: not('bool', only(true), 'true', 'CPU limits without a CFS quota'),
  cpuCFSQuotaPeriod: not('duration', durationOf('100ms'), '100ms', 'another CFS quota period'),
  nodeStatusMaxImages: not('int', only(50), '50 (what kubelet-ts reports)', 'another cap on images in the node status'),
  maxOpenFiles: not('int', zero, '0: set LimitNOFILE= in the systemd unit', 'the kubelet raising its own open files limit'),
  contentType: not('string', always, 'any (kubelet-ts speaks JSON to the API server)', 'protobuf requests'),
  kubeAPIQPS: impl('number', { convert: (v) => (v === 0 ? undefined : v) }),
  kubeAPIBurst: implZ('int'),
  serializeImagePulls: impl('bool', {
    // Upstream: true unless maxParallelImagePulls allows more than one.
    upstreamDefault: (whole) => !(typeof whole.maxParallelImagePulls === 'number' && whole.maxParallelImagePulls > 1),
  }),
  maxParallelImagePulls: impl('int'),
  evictionHard: implZ('stringMap', {
    convert: (v, whole) => (whole.mergeDefaultEvictionSettings === true ? { ...EVICTION_HARD_DEFAULTS, ...(v as object) } : v),
  }),
  evictionSoft: implZ('stringMap'),
  evictionSoftGracePeriod: implZ('stringMap'),
  evictionPressureTransitionPeriod: implZ('duration'),
  evictionMaxPodGracePeriod: implZ('int'),
  evictionMinimumReclaim: implZ('stringMap'),
  mergeDefaultEvictionSettings: impl('bool', { to: null }),
  podsPerCore: not('int', zero, '0 (no limit)', 'a per-core pod limit'),
  enableControllerAttachDetach: not('bool', only(true), 'true', 'the kubelet attaching volumes itself'),
  protectKernelDefaults: not('bool', zero, 'false', 'the kernel sysctl check at start'),
  makeIPTablesUtilChains: not('bool', zero, 'false', 'the KUBE-IPTABLES-HINT chain in iptables'),
  iptablesMasqueradeBit: not('int', always, 'any (no effect upstream either)', 'nothing: deprecated'),
  iptablesDropBit: not('int', always, 'any (no effect upstream either)', 'nothing: deprecated'),
  featureGates: not('object', empty, 'empty', 'feature gates (kubelet-ts has none: its features are fixed)'),
  failSwapOn: not('bool', zero, 'false', 'a check at start that swap is off'),
  memorySwap: struct,
  'memorySwap.swapBehavior': not('string', zeroOr('NoSwap'), 'NoSwap', 'swap for containers'),
  containerLogMaxSize: implZ('string'),
  containerLogMaxFiles: impl('int'),
  containerLogMaxWorkers: not('int', always, 'any (rotation is cheap in kubelet-ts)', 'parallel log rotation'),
  containerLogMonitorInterval: impl('duration'),
  configMapAndSecretChangeDetectionStrategy: not('string', zeroOr('Watch'), 'Watch', 'the Get or Cache strategies (kubelet-ts watches)'),
  systemReserved: implZ('stringMap'),
  kubeReserved: implZ('stringMap'),
  reservedSystemCPUs: not('string', zero, '""', 'CPUs reserved by list'),
  showHiddenMetricsForVersion: not('string', zero, '""', 'hidden metrics'),
  systemReservedCgroup: not('string', zero, '""', 'reservations enforced on cgroups'),
  kubeReservedCgroup: not('string', zero, '""', 'reservations enforced on cgroups'),
  enforceNodeAllocatable: impl('stringList'),
  allowedUnsafeSysctls: implZ('stringList'),
  volumePluginDir: implZ('string'),
  providerID: not('string', zero, '""', 'spec.providerID set at registration'),
  kernelMemcgNotification: not('bool', zero, 'false', 'memcg notifications for memory eviction'),
  logging: struct,
  'logging.format': not('string', zeroOr('json'), '"" or json (kubelet-ts writes JSON lines)', 'text logs'),
  'logging.flushFrequency': not('any', always, 'any (each line is written at once)', 'buffered logs'),
  'logging.verbosity': impl('int', { to: 'logging.level', check: (v) => ((v as number) >= 0 ? undefined : 'an integer >= 0'), convert: (v) => verbosityToLevel(Number(v)) }),
  'logging.vmodule': not('any', zero, 'empty', 'per-file verbosity'),
  'logging.options': struct,
  'logging.options.json': struct,
  'logging.options.json.splitStream': not('bool', zero, 'false', 'info lines on stdout'),
  'logging.options.json.infoBufferSize': not('any', zero, '0', 'buffered info lines'),
  'logging.options.text': struct,
  'logging.options.text.splitStream': not('bool', zero, 'false', 'info lines on stdout'),
  'logging.options.text.infoBufferSize': not('any', zero, '0', 'buffered info lines'),
  enableSystemLogHandler: not('bool', zero, 'false', 'the /logs/ endpoint for node logs'),
  enableSystemLogQuery: not('bool', zero, 'false', 'node log queries on /logs/'),
  shutdownGracePeriod: implZ('duration'),
  shutdownGracePeriodCriticalPods: implZ('duration'),
  shutdownGracePeriodByPodPriority: implZ('list'),
  crashLoopBackOff: struct,
  'crashLoopBackOff.maxContainerRestartPeriod': impl('duration'),
  reservedMemory: not('list', empty, 'empty', 'a memory manager'),
  enableProfilingHandler: not('bool', zero, 'false', 'the /debug/pprof endpoints'),
  enableDebugFlagsHandler: not('bool', zero, 'false', 'the /debug/flags/v endpoint'),
  seccompDefault: impl('bool'),
  memoryThrottlingFactor: not('number', always, 'any (memory QoS is off, as upstream by default)', 'memory QoS (memory.high)'),
  memoryReservationPolicy: not('string', zeroOr('None'), 'None', 'memory QoS (memory.min)'),
  registerWithTaints: implZ('list', {
    // v1.Taint has timeAdded, which only NoExecute taints set by controllers carry.
    convert: (v) => (Array.isArray(v) ? v.map((t) => (t && typeof t === 'object' ? Object.fromEntries(Object.entries(t).filter(([k]) => k !== 'timeAdded')) : t)) : v),
  }),
  registerNode: impl('bool'),
  tracing: not('object', zero, 'absent', 'OpenTelemetry tracing'),
  localStorageCapacityIsolation: not('bool', only(true), 'true', 'ephemeral-storage isolation turned off'),
  containerRuntimeEndpoint: implZ('string'),
  imageServiceEndpoint: not('string', zero, '"" (the runtime endpoint serves images)', 'a separate image service endpoint'),
  failCgroupV1: not('bool', always, 'any (kubelet-ts runs on cgroup v1 and v2)', 'refusing to start on cgroup v1'),
  userNamespaces: struct,
  'userNamespaces.idsPerPod': not('int', only(65536), '65536', 'another user namespace size'),
};

/** Fields of the TypeMeta: read, checked, never passed on. */
export const TYPE_META_FIELDS = ['apiVersion', 'kind'] as const;
export const KUBELET_CONFIGURATION_API_VERSION = 'kubelet.config.k8s.io/v1beta1';
export const KUBELET_CONFIGURATION_KIND = 'KubeletConfiguration';

/** The known field names directly under `prefix` ('' for the top level). */
export function childNames(prefix: string): string[] {
  const p = prefix ? `${prefix}.` : '';
  const names = new Set<string>();
  for (const key of Object.keys(UPSTREAM_FIELDS)) if (key.startsWith(p) && !key.slice(p.length).includes('.')) names.add(key.slice(p.length));
  if (!prefix) for (const t of TYPE_META_FIELDS) names.add(t);
  return [...names];
}

/** The upstream top-level field names kubelet-ts's own format shares (for the --plugins-config rule). */
export function upstreamTopLevelNames(): Set<string> {
  return new Set(Object.keys(UPSTREAM_FIELDS).filter((k) => !k.includes('.')));
}
