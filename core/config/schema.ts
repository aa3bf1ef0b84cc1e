import { DURATION_PATTERN } from '../util/duration.ts';
import { TLS_CIPHER_SUITES, TLS_VERSIONS } from './tls-names.ts';

const duration = (description: string) => ({
  type: ['string', 'number'],
  pattern: DURATION_PATTERN,
  minimum: 0,
  description,
  'x-allowed': "a Go duration such as '10s', '1m30s', '500ms' (or a number of seconds)",
});

const port = {
  type: 'integer',
  minimum: 0,
  maximum: 65535,
  'x-allowed': 'an integer port 0-65535 (0 disables)',
};

/** A non-negative resource quantity as apimachinery parses it ('500m', '1.5Gi', '100', '1e3'). */
export const QUANTITY_PATTERN = '^(\\d+(\\.\\d*)?|\\.\\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\\d+)?$';
/** An eviction threshold: a quantity or a percentage of capacity ('100Mi', '10%'). */
export const THRESHOLD_PATTERN = '^((\\d+(\\.\\d*)?|\\.\\d+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?\\d+)?|(100(\\.0*)?|\\d{1,2}(\\.\\d*)?)%)$';
/** A label value (also a taint value): at most 63 alphanumerics, '-', '_', '.', starting and ending alphanumeric; may be empty. */
const LABEL_VALUE_PATTERN = '^([A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?)?$';
/** A qualified name as label and taint keys use: an optional DNS subdomain prefix and '/', then a name of at most 63 characters. */
export const QUALIFIED_NAME_PATTERN = '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$';

const quantity = { type: 'string', pattern: QUANTITY_PATTERN, 'x-allowed': "a non-negative quantity such as '500m', '1Gi', '100'" };
const reserved = (description: string) => ({
  type: 'object',
  additionalProperties: false,
  default: {},
  description,
  properties: { cpu: quantity, memory: quantity, 'ephemeral-storage': quantity, pid: quantity },
});
const threshold = { type: 'string', pattern: THRESHOLD_PATTERN, 'x-allowed': "a quantity such as '100Mi' or a percentage such as '10%'" };

/** A map keyed by eviction signal (upstream's Linux signals; any other key is an unknown field). */
const signalMap = (value: object) => ({
  type: 'object',
  additionalProperties: false,
  properties: Object.fromEntries(['memory.available', 'nodefs.available', 'nodefs.inodesFree', 'imagefs.available', 'imagefs.inodesFree', 'pid.available'].map((s) => [s, value])),
});

/** JSON schema of the config file; ajv checks it and fills the defaults. */
export const configSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    nodeName: { type: 'string', pattern: '^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$', maxLength: 253, 'x-allowed': 'a DNS-1123 subdomain (lowercase letters, digits, - and .)' },
    nodeIP: { type: 'string', pattern: '^[0-9a-fA-F.:]+$', 'x-allowed': 'an IPv4 or IPv6 address' },
    rootDir: { type: 'string', minLength: 1, default: '/var/lib/kubelet' },
    podLogsDir: { type: 'string', minLength: 1, default: '/var/log/pods' },
    staticPodPath: { type: 'string', minLength: 1 },
    staticPodURL: { type: 'string', pattern: '^https?://', 'x-allowed': 'an http:// or https:// URL' },
    staticPodURLHeader: {
      type: 'object',
      default: {},
      additionalProperties: { type: 'array', items: { type: 'string' } },
      propertyNames: { pattern: "^[!#$%&'*+.^_`|~0-9A-Za-z-]+$" },
      'x-allowed': "a map of HTTP header names to lists of values, e.g. { Authorization: ['Bearer x'] }",
    },
    httpCheckFrequency: { ...duration('fetch period of staticPodURL'), default: '20s' },
    fileCheckFrequency: { ...duration('rescan period of staticPodPath'), default: '20s' },
    syncFrequency: { ...duration('periodic resync of every pod'), default: '1m' },
    plegRelistPeriod: { ...duration('PLEG relist period'), default: '1s' },
    containerRuntimeEndpoint: { type: 'string', pattern: '^unix://', default: 'unix:///run/containerd/containerd.sock', 'x-allowed': 'a unix:///path/to/socket endpoint' },
    runtimeRequestTimeout: { ...duration('deadline of runtime calls'), default: '2m' },
    address: { type: 'string', default: '0.0.0.0', 'x-allowed': 'an IP address to listen on' },
    readOnlyPort: { ...port, default: 0 },
    enableServer: { type: 'boolean', default: true },
    enableDebuggingHandlers: { type: 'boolean', default: true },
    maxPods: { type: 'integer', minimum: 1, default: 110, 'x-allowed': 'an integer >= 1' },
    cgroupsPerQOS: { type: 'boolean', default: true },
    maxPerPodContainer: { type: 'integer', minimum: -1, default: 1, 'x-allowed': 'an integer >= 0, or -1 to keep all' },
    maxContainers: { type: 'integer', minimum: -1, default: -1, 'x-allowed': 'an integer >= 0, or -1 for no limit' },
    cgroupRoot: { type: 'string', pattern: '^/', default: '/', 'x-allowed': "an absolute cgroup path such as '/'" },
    cgroupDriver: { enum: ['cgroupfs', 'systemd'], default: 'cgroupfs' },
    enforceNodeAllocatable: {
      type: 'array',
      items: { enum: ['pods', 'none'] },
      default: ['pods'],
      'x-allowed': "['pods'], ['none'] or [] (enforcing system-reserved or kube-reserved on their own cgroups is not implemented)",
    },
    podPidsLimit: { type: 'integer', minimum: -1, default: -1, 'x-allowed': 'an integer >= 1, or -1 for no limit' },
    crashLoopBackOff: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        initialContainerRestartPeriod: { ...duration('first restart delay'), default: '10s' },
        maxContainerRestartPeriod: { ...duration('restart delay cap'), default: '300s' },
      },
    },
    imagePullBackOff: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        initialPeriod: { ...duration('first image pull retry delay'), default: '10s' },
        maxPeriod: { ...duration('image pull retry delay cap'), default: '300s' },
      },
    },
    serializeImagePulls: { type: 'boolean', default: false },
    maxParallelImagePulls: { type: 'integer', minimum: 1, 'x-allowed': 'an integer >= 1 (leave unset for no limit)' },
    maxParallelSandboxCreations: { type: 'integer', minimum: 0, 'x-allowed': 'an integer >= 1, or 0 for no limit (unset: twice the number of CPUs)' },
    maxParallelContainerCreations: { type: 'integer', minimum: 0, 'x-allowed': 'an integer >= 1, or 0 for no limit (unset: twice the number of CPUs)' },
    hookTimeout: { ...duration('per-tap deadline'), default: '2m' },
    runtimeInstance: { type: 'string', pattern: '^[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$', 'x-allowed': 'a label value: 1-63 letters, digits, \'-\', \'_\' or \'.\', beginning and ending with a letter or digit' },
    localObjectsDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path (configmaps/<ns>/<name>.yaml, secrets/<ns>/<name>.yaml)' },
    kubeconfig: { type: 'string', minLength: 1, 'x-allowed': 'the path of a kubeconfig file' },
    bootstrapKubeconfig: { type: 'string', minLength: 1, 'x-allowed': 'the path of a kubeconfig file with bootstrap credentials' },
    rotateCertificates: { type: 'boolean', default: false },
    serverTLSBootstrap: { type: 'boolean', default: false },
    registerNode: { type: 'boolean', default: true },
    nodeLabels: {
      type: 'object',
      default: {},
      additionalProperties: { type: 'string', maxLength: 63, pattern: LABEL_VALUE_PATTERN, 'x-allowed': "a label value: at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit (or empty)" },
      'x-allowed': 'a map of label keys to label values',
    },
    registerWithTaints: {
      type: 'array',
      default: [],
      'x-allowed': "a list of taints {key, value?, effect}, e.g. [{key: 'dedicated', value: 'gpu', effect: 'NoSchedule'}]",
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['key', 'effect'],
        properties: {
          key: { type: 'string', maxLength: 316, pattern: QUALIFIED_NAME_PATTERN, 'x-allowed': "a qualified name such as 'dedicated' or 'example.com/gpu'" },
          value: { type: 'string', maxLength: 63, pattern: LABEL_VALUE_PATTERN, 'x-allowed': "a label value: at most 63 letters, digits, '-', '_', '.', starting and ending with a letter or digit (or empty)" },
          effect: { enum: ['NoSchedule', 'PreferNoSchedule', 'NoExecute'] },
        },
      },
    },
    // No schema defaults for the two frequencies: upstream defaults the report frequency to the
    // update frequency when only that one is given, so resolve() needs to see what was set.
    nodeStatusUpdateFrequency: duration('node status computation and post period (default 10s)'),
    nodeStatusReportFrequency: duration('longest time between node status posts (default 5m)'),
    nodeLeaseDurationSeconds: { type: 'integer', minimum: 1, default: 40, 'x-allowed': 'an integer number of seconds >= 1' },
    shutdownGracePeriod: { ...duration('how long a node shutdown waits for the pods (0s: graceful node shutdown off)'), default: '0s' },
    shutdownGracePeriodCriticalPods: { ...duration('of shutdownGracePeriod, the time for critical pods'), default: '0s' },
    shutdownGracePeriodByPodPriority: {
      type: 'array',
      default: [],
      'x-allowed': 'a list of {priority, shutdownGracePeriodSeconds}, e.g. [{priority: 0, shutdownGracePeriodSeconds: 20}, {priority: 2000000000, shutdownGracePeriodSeconds: 10}]',
      items: {
        type: 'object',
        additionalProperties: false,
        required: ['priority', 'shutdownGracePeriodSeconds'],
        properties: {
          priority: { type: 'integer', minimum: -2147483648, maximum: 2147483647, 'x-allowed': 'a pod priority (a 32-bit integer)' },
          shutdownGracePeriodSeconds: { type: 'integer', minimum: 0, 'x-allowed': 'an integer number of seconds >= 0' },
        },
      },
    },
    kubeAPIQPS: { type: 'number', exclusiveMinimum: 0, default: 50, 'x-allowed': 'a number of requests per second > 0' },
    kubeAPIBurst: { type: 'integer', minimum: 1, default: 100, 'x-allowed': 'an integer >= 1' },
    eventRecordQPS: { type: 'number', minimum: 0, default: 50, 'x-allowed': 'a number of events per second >= 0 (0: no limit)' },
    eventBurst: { type: 'integer', minimum: 1, default: 100, 'x-allowed': 'an integer >= 1' },
    port: { type: 'integer', minimum: 1, maximum: 65535, default: 10250, 'x-allowed': 'an integer port 1-65535' },
    tlsCertFile: { type: 'string', minLength: 1, 'x-allowed': 'the path of a PEM certificate file' },
    tlsPrivateKeyFile: { type: 'string', minLength: 1, 'x-allowed': 'the path of a PEM private key file' },
    certDirectory: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    tlsMinVersion: { enum: Object.keys(TLS_VERSIONS) },
    tlsCipherSuites: { type: 'array', items: { enum: Object.keys(TLS_CIPHER_SUITES) }, 'x-allowed': "a list of cipher suite names such as 'TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256'" },
    authentication: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        x509: { type: 'object', additionalProperties: false, default: {}, properties: { clientCAFile: { type: 'string', minLength: 1, 'x-allowed': 'the path of a PEM CA bundle' } } },
        webhook: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: { enabled: { type: 'boolean', default: true }, cacheTTL: { ...duration('token review cache'), default: '2m' } },
        },
        anonymous: { type: 'object', additionalProperties: false, default: {}, properties: { enabled: { type: 'boolean', default: false } } },
      },
    },
    authorization: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: {
        mode: { enum: ['AlwaysAllow', 'Webhook'], default: 'Webhook' },
        webhook: {
          type: 'object',
          additionalProperties: false,
          default: {},
          properties: {
            cacheAuthorizedTTL: { ...duration('allowed SubjectAccessReview cache'), default: '5m' },
            cacheUnauthorizedTTL: { ...duration('denied SubjectAccessReview cache'), default: '30s' },
          },
        },
      },
    },
    streamingConnectionIdleTimeout: { ...duration('idle exec/attach/port-forward stream timeout'), default: '4h' },
    systemReserved: reserved('resources reserved for the OS'),
    kubeReserved: reserved('resources reserved for Kubernetes daemons'),
    // No schema default: a map given in the file replaces upstream's defaults whole (resolve() fills them).
    evictionHard: signalMap(threshold),
    evictionSoft: signalMap(threshold),
    evictionSoftGracePeriod: signalMap(duration('how long a soft threshold must stay crossed')),
    evictionMinimumReclaim: signalMap(threshold),
    evictionPressureTransitionPeriod: { ...duration('how long a pressure condition stays True after its last crossing'), default: '5m' },
    evictionMaxPodGracePeriod: { type: 'integer', minimum: 0, default: 0, 'x-allowed': "an integer number of seconds >= 0 (0: the pod's own)" },
    evictionMonitoringPeriod: { ...duration('how often eviction signals are observed'), default: '10s' },
    evictStaticPods: { type: 'boolean', default: false },
    containerLogMaxSize: { ...quantity, default: '10Mi', 'x-allowed': "a quantity of bytes such as '10Mi'" },
    containerLogMaxFiles: { type: 'integer', minimum: 2, default: 5, 'x-allowed': 'an integer >= 2 (the current file and at least one rotated one)' },
    containerLogMonitorInterval: { ...duration('how often container log sizes are checked'), default: '10s' },
    imageGCHighThresholdPercent: { type: 'integer', minimum: 0, maximum: 100, default: 85, 'x-allowed': 'an integer percentage 0-100' },
    imageGCLowThresholdPercent: { type: 'integer', minimum: 0, maximum: 100, default: 80, 'x-allowed': 'an integer percentage 0-100, below imageGCHighThresholdPercent' },
    imageMinimumGCAge: { ...duration('how long an image is on the node before it may be collected'), default: '2m' },
    imageMaximumGCAge: { ...duration('how long an unused image is kept whatever the disk (0: for ever)'), default: '0s' },
    volumeStatsAggPeriod: { ...duration("how long a volume's measured use is reused (0: volumes are not measured)"), default: '1m' },
    allowedUnsafeSysctls: {
      type: 'array',
      default: [],
      items: { type: 'string', minLength: 1, maxLength: 253, pattern: '^([a-z0-9]([-_a-z0-9]*[a-z0-9])?[./])*([a-z0-9][-_a-z0-9]*)?\\*?$', 'x-allowed': "a sysctl name or a prefix ending in * such as 'kernel.msg*' or 'net.core.somaxconn'" },
      'x-allowed': 'a list of sysctl names or prefixes ending in *',
    },
    seccompDefault: { type: 'boolean', default: false },
    clusterDNS: { type: 'array', items: { type: 'string', pattern: '^[0-9a-fA-F.:]+$' }, default: [], 'x-allowed': 'a list of IPv4 or IPv6 addresses' },
    clusterDomain: { type: 'string', pattern: '^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*)?$', default: '', 'x-allowed': "a DNS domain such as 'cluster.local', or \"\"" },
    resolvConf: { type: 'string', default: '/etc/resolv.conf', 'x-allowed': 'a file path, or "" for none' },
    volumePluginDir: { type: 'string', minLength: 1, default: '/usr/libexec/kubernetes/kubelet-plugins/volume/exec/', 'x-allowed': 'the path of the FlexVolume drivers\' directory' },
    imageCredentialProviderConfig: { type: 'string', minLength: 1, 'x-allowed': 'the path of a CredentialProviderConfig file (or a directory of them)' },
    imageCredentialProviderBinDir: { type: 'string', minLength: 1, 'x-allowed': 'the path of the directory of the credential providers\' executables' },
    runtimeClassHandlers: {
      type: 'object',
      default: {},
      additionalProperties: { type: 'string', maxLength: 63, pattern: '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$', 'x-allowed': "a runtime handler name (a DNS label such as 'runc')" },
      'x-allowed': 'a map of runtimeClassName to runtime handler',
    },
    healthzPort: { ...port, default: 0 },
    healthzBindAddress: { type: 'string', pattern: '^[0-9a-fA-F.:]+$', default: '127.0.0.1', 'x-allowed': 'an IPv4 or IPv6 address to listen on' },
    logging: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' } },
    },
    plugins: { type: 'array', default: [], 'x-allowed': "a list of plugin entries: 'name', ['name', {options}] or a plugin object" },
  },
} as const;
