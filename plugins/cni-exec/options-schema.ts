/** Options of the cni-exec plugin (validated by the host with ajv before apply). */
export interface CniExecOptions {
  /** Where the kubelet's network configuration lives; the first `.conflist`/`.conf`/`.json` by name is run. */
  confDir: string;
  /** Run the network of this name instead of the first file. */
  networkName?: string;
  /** Where CNI plugin executables are looked up, in order (also `CNI_PATH`). */
  binDirs: string[];
  /** The result cache; default `<plugin state dir>/results`. */
  cacheDir?: string;
  /** How long one plugin invocation may run before it is killed. */
  execTimeoutSeconds: number;
  /** Install the delegate into the runtime (false: the runtime networks pods itself, cni-exec only serves DNS and hosts). */
  delegate: boolean;
  /** The container runtime's CNI config dir (containerd `conf_dir`): the delegate config is written here. */
  runtimeConfDir: string;
  /** The container runtime's CNI bin dir (containerd `bin_dir`): the shim is installed here. */
  runtimeBinDir: string;
  /** File name of the delegate config; must sort first in runtimeConfDir. */
  runtimeConfFile: string;
  /** The network name the runtime sees. */
  runtimeNetworkName: string;
  /** The shim's executable name (the delegate plugin's `type`). */
  shimType: string;
  /** Which shim to install: Perl (a ~25 ms round trip here) or Node (~130 ms); `auto` picks Perl when it runs here. */
  shim: 'auto' | 'perl' | 'node';
  /** The unix socket the kubelet serves delegate requests on. */
  socketPath: string;
  /** How long the shim waits for the kubelet's answer. */
  shimTimeoutSeconds: number;
  /** How often cached attachments of sandboxes the runtime no longer has are torn down. */
  gcIntervalSeconds: number;
}

export const optionsSchema = {
  type: 'object',
  additionalProperties: false,
  properties: {
    confDir: { type: 'string', minLength: 1, default: '/etc/cni/net.d', 'x-allowed': 'a directory path' },
    networkName: { type: 'string', minLength: 1, 'x-allowed': 'a CNI network name' },
    binDirs: { type: 'array', items: { type: 'string', minLength: 1 }, minItems: 1, default: ['/opt/cni/bin', '/usr/lib/cni'], 'x-allowed': 'a non-empty list of directories' },
    cacheDir: { type: 'string', minLength: 1, 'x-allowed': 'a directory path' },
    execTimeoutSeconds: { type: 'number', exclusiveMinimum: 0, default: 30, 'x-allowed': 'a number of seconds > 0' },
    delegate: { type: 'boolean', default: true, 'x-allowed': 'true or false' },
    runtimeConfDir: { type: 'string', minLength: 1, default: '/etc/cni/net.d', 'x-allowed': 'a directory path' },
    runtimeBinDir: { type: 'string', minLength: 1, default: '/opt/cni/bin', 'x-allowed': 'a directory path' },
    runtimeConfFile: { type: 'string', pattern: '^[^/]+\\.conflist$', default: '00-kubelet-ts.conflist', 'x-allowed': 'a file name ending in .conflist' },
    runtimeNetworkName: { type: 'string', minLength: 1, default: 'kubelet-ts', 'x-allowed': 'a CNI network name' },
    shimType: { type: 'string', pattern: '^[A-Za-z0-9_.-]+$', default: 'kubelet-ts-cni-shim', 'x-allowed': 'an executable name' },
    shim: { enum: ['auto', 'perl', 'node'], default: 'auto' },
    socketPath: { type: 'string', pattern: '^/', maxLength: 100, default: '/run/kubelet-ts/cni-exec.sock', 'x-allowed': 'an absolute path of at most 100 characters' },
    shimTimeoutSeconds: { type: 'integer', minimum: 1, default: 240, 'x-allowed': 'an integer number of seconds >= 1' },
    // Moved to the kubelet's config; still known here so that apply can say where they went.
    clusterDNS: { description: 'moved to the kubelet config (clusterDNS)' },
    clusterDomain: { description: 'moved to the kubelet config (clusterDomain)' },
    resolvConf: { description: 'moved to the kubelet config (resolvConf)' },
    hostsFile: { description: 'moved: the core writes /etc/hosts' },
    gcIntervalSeconds: { type: 'number', exclusiveMinimum: 0, default: 600, 'x-allowed': 'a number of seconds > 0' },
  },
} as const;
