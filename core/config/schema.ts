import { DURATION_PATTERN } from './duration.ts';

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
    fileCheckFrequency: { ...duration('rescan period of staticPodPath'), default: '1s' },
    syncFrequency: { ...duration('periodic resync of every pod'), default: '1m' },
    plegRelistPeriod: { ...duration('PLEG relist period'), default: '1s' },
    containerRuntimeEndpoint: { type: 'string', pattern: '^unix://', default: 'unix:///run/containerd/containerd.sock', 'x-allowed': 'a unix:///path/to/socket endpoint' },
    runtimeRequestTimeout: { ...duration('deadline of runtime calls'), default: '2m' },
    address: { type: 'string', default: '127.0.0.1', 'x-allowed': 'an IP address to listen on' },
    readOnlyPort: { ...port, default: 0 },
    maxPods: { type: 'integer', minimum: 1, default: 110, 'x-allowed': 'an integer >= 1' },
    cgroupsPerQOS: { type: 'boolean', default: true },
    maxPerPodContainer: { type: 'integer', minimum: -1, default: 1, 'x-allowed': 'an integer >= 0, or -1 to keep all' },
    maxContainers: { type: 'integer', minimum: -1, default: -1, 'x-allowed': 'an integer >= 0, or -1 for no limit' },
    cgroupRoot: { type: 'string', pattern: '^/', default: '/', 'x-allowed': "an absolute cgroup path such as '/'" },
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
    hookTimeout: { ...duration('per-tap deadline'), default: '2m' },
    localObjectsDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path (configmaps/<ns>/<name>.yaml, secrets/<ns>/<name>.yaml)' },
    logging: {
      type: 'object',
      additionalProperties: false,
      default: {},
      properties: { level: { enum: ['trace', 'debug', 'info', 'warn', 'error', 'fatal', 'silent'], default: 'info' } },
    },
    plugins: { type: 'array', default: [], 'x-allowed': "a list of plugin entries: 'name', ['name', {options}] or a plugin object" },
  },
} as const;
