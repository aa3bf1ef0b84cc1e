import type { Duration } from '../util/duration.ts';

/**
 * A plugin object as a config lists it: the shape of `KubeletPlugin` (plugins/plugin-api.ts)
 * that a config needs to name, spelled out here so that config types, which every plugin sees
 * through its context, import nothing of the plugin API (no cycle of types). The plugin host
 * checks the rest of a plugin when it loads it.
 */
export interface PluginObject {
  name: string;
  apply(ctx: never, options: never): void | Promise<void>;
}

/**
 * A plugin entry in `plugins`: a name (built-in name, npm module or path), a
 * `[name, options]` pair, or a plugin object imported in the config file.
 */
export type PluginEntry = string | PluginObject | [string | PluginObject] | [string | PluginObject, unknown];

/** One entry of shutdownGracePeriodByPodPriority, as upstream spells it. */
export interface ShutdownGracePeriodByPodPriority {
  priority: number;
  shutdownGracePeriodSeconds: number;
}

/** A group of graceful node shutdown: pods from `priority` up (to the next group's) get `gracePeriodSeconds`. */
export interface ShutdownGroup {
  priority: number;
  gracePeriodSeconds: number;
}

/** A taint as `registerWithTaints` takes it (upstream v1.Taint without timeAdded). */
export interface NodeTaintInput { key: string; value?: string; effect: 'NoSchedule' | 'PreferNoSchedule' | 'NoExecute' }
export type NodeTaint = NodeTaintInput;

/** The resources `systemReserved` / `kubeReserved` may reserve (upstream refuses any other name). */
export type ReservedResources = Partial<Record<'cpu' | 'memory' | 'ephemeral-storage' | 'pid', string>>;

/** The eviction signals `evictionHard` accepts (upstream's Linux signals). */
export type EvictionSignal = 'memory.available' | 'nodefs.available' | 'nodefs.inodesFree' | 'imagefs.available' | 'imagefs.inodesFree' | 'pid.available';

/**
 * The configuration file's shape. Field names follow the upstream KubeletConfiguration
 * (kubelet.config.k8s.io/v1beta1) so operators' knowledge carries over; fields marked
 * "kubelet-ts" have no upstream equivalent.
 */
export interface KubeletConfigInput {
  /** The node's name; defaults to the host name (upstream --hostname-override). */
  nodeName?: string;
  /** The node IP reported as hostIP (upstream flag --node-ip); defaults to the first non-loopback IPv4. */
  nodeIP?: string;
  /** Directory for the kubelet's files (upstream --root-dir). Default /var/lib/kubelet. */
  rootDir?: string;
  /** Directory for container logs. Default /var/log/pods. */
  podLogsDir?: string;
  /** Directory of static pod manifests (upstream staticPodPath); unset disables the file source. */
  staticPodPath?: string;
  /** URL of static pods (upstream staticPodURL, --manifest-url): one Pod or a PodList, fetched every httpCheckFrequency; unset disables the http source. */
  staticPodURL?: string;
  /** HTTP headers sent with the staticPodURL request (upstream staticPodURLHeader): name → values. */
  staticPodURLHeader?: Record<string, string[]>;
  /** How often staticPodURL is fetched (upstream httpCheckFrequency). Default '20s'. */
  httpCheckFrequency?: Duration;
  /** How often the manifest directory is rescanned besides file watching. Default '20s' upstream; '1s' here. */
  fileCheckFrequency?: Duration;
  /** How often every pod is re-synced even without events. Default '1m'. */
  syncFrequency?: Duration;
  /** kubelet-ts: how often PLEG relists the runtime. Default '1s' (the upstream constant). */
  plegRelistPeriod?: Duration;
  /** The CRI endpoint (upstream containerRuntimeEndpoint). Default unix:///run/containerd/containerd.sock. */
  containerRuntimeEndpoint?: string;
  /** Deadline for each runtime call except image pulls. Default '2m'. */
  runtimeRequestTimeout?: Duration;
  /** Address the main port and the read-only port listen on (upstream address). Default 0.0.0.0. */
  address?: string;
  /** Serve the main port (upstream enableServer); false leaves only the local socket. Default true. */
  enableServer?: boolean;
  /** Serve logs, exec, attach, port-forward and run on the main port (upstream enableDebuggingHandlers); false answers 405 there. Default true. */
  enableDebuggingHandlers?: boolean;
  /** Port of the unauthenticated read-only HTTP server (/healthz, /pods, /stats/summary, /metrics...); 0 disables. Default 0. */
  readOnlyPort?: number;
  /** Most pods this kubelet admits. Default 110. */
  maxPods?: number;
  /** kubelet-ts (upstream flag --maximum-dead-containers-per-container): dead instances kept per container besides the newest. Default 1; -1 keeps all. */
  maxPerPodContainer?: number;
  /** kubelet-ts (upstream flag --maximum-dead-containers): dead containers kept on the node, oldest removed first. Default -1 (no limit). */
  maxContainers?: number;
  /** Create the QoS cgroup hierarchy (kubepods/burstable/besteffort, pod<uid>) and run pods in it. Default true. */
  cgroupsPerQOS?: boolean;
  /** The cgroup under which `kubepods` is made. Default '/'; with the systemd driver '/' or a slice path ('/custom.slice'). */
  cgroupRoot?: string;
  /**
   * Who makes the kubelet's cgroups (upstream cgroupDriver): `cgroupfs`, the kubelet writes the
   * cgroup filesystem; `systemd`, systemd makes them as slices over D-Bus. It must be the
   * runtime's (containerd's runc `SystemdCgroup`); a runtime that reports its driver (containerd
   * 2.x) is checked at start. Default cgroupfs, as upstream (kubeadm writes systemd).
   */
  cgroupDriver?: 'cgroupfs' | 'systemd';
  /**
   * Where node allocatable is enforced (upstream enforceNodeAllocatable): `pods` limits the
   * kubepods cgroup to capacity less systemReserved and kubeReserved; `none` or an empty list
   * leaves it at capacity. Default ['pods'], as upstream.
   */
  enforceNodeAllocatable?: Array<'pods' | 'none'>;
  /** Most processes in one pod (pids.max of its cgroup, upstream podPidsLimit); -1: no limit. Default -1. */
  podPidsLimit?: number;
  /** Restart back-off of crashing containers (upstream crashLoopBackOff). */
  crashLoopBackOff?: { initialContainerRestartPeriod?: Duration; maxContainerRestartPeriod?: Duration };
  /** kubelet-ts: back-off of failed image pulls (upstream hard-codes 10s doubling to 300s). */
  imagePullBackOff?: { initialPeriod?: Duration; maxPeriod?: Duration };
  /** Pull one image at a time (upstream default true; here false: pulls run in parallel). */
  serializeImagePulls?: boolean;
  /** At most this many image pulls at once when pulls are parallel; unset = no limit (as upstream). */
  maxParallelImagePulls?: number;
  /**
   * kubelet-ts: at most this many RunPodSandbox calls at once; 0 = no limit (as upstream).
   * Unset: twice the number of CPUs. A creation slower than 10 s stops holding its slot.
   */
  maxParallelSandboxCreations?: number;
  /**
   * kubelet-ts: at most this many CreateContainer + StartContainer calls at once on the node;
   * 0 = no limit (upstream has none). Unset: twice the number of CPUs. One slower than 30 s
   * stops holding its slot.
   */
  maxParallelContainerCreations?: number;
  /** kubelet-ts: how long one plugin tap may run before it fails. Default '2m'. */
  hookTimeout?: Duration;
  /**
   * kubelet-ts: for several kubelets on one container runtime (two nodes of a development
   * cluster on one machine, a test rig). The kubelet writes this name as the value of its managed
   * label (`io.kubernetes-ts.managed`) on what it creates and manages only what carries it:
   * another kubelet's pods are never listed, adopted, stopped or removed as orphans. Unset: the
   * value every kubelet-ts has written, `true`. Changing it on a running node leaves the pods made
   * under the old name alone (stop them first).
   */
  runtimeInstance?: string;
  /**
   * kubelet-ts: where configMap and secret volumes find their objects without an API server:
   * v1 ConfigMap / Secret files at `configmaps/<namespace>/<name>.yaml` and
   * `secrets/<namespace>/<name>.yaml` (or .yml/.json). Unset: such volumes fail unless `optional`.
   */
  localObjectsDir?: string;
  /** Path of the kubeconfig to reach the API server (upstream --kubeconfig; relative to this file). Unset: standalone, no API server. */
  kubeconfig?: string;
  /**
   * TLS bootstrap (upstream --bootstrap-kubeconfig): a kubeconfig with bootstrap credentials (a
   * bootstrap token). When `kubeconfig` is missing, unusable or its client certificate expired,
   * the kubelet asks for a client certificate with it, stores it in certDirectory and writes
   * `kubeconfig` pointing at it. Needs kubeconfig.
   */
  bootstrapKubeconfig?: string;
  /** Renew the client certificate at 70-90 % of its lifetime, with its own identity, without a restart (upstream rotateCertificates, --rotate-certificates). Default false. */
  rotateCertificates?: boolean;
  /** The main port's serving certificate comes from the cluster (signer kubernetes.io/kubelet-serving, approved by an admin) and is renewed likewise (upstream serverTLSBootstrap). Needs kubeconfig. Default false. */
  serverTLSBootstrap?: boolean;
  /** Register the Node with the API server and keep its status and Lease (upstream registerNode). Default true. */
  registerNode?: boolean;
  /** Labels the Node is registered with (upstream nodeLabels); `kubernetes.io`/`k8s.io` keys only where NodeRestriction allows them. */
  nodeLabels?: Record<string, string>;
  /** Taints the Node is registered with (upstream registerWithTaints). Default none. */
  registerWithTaints?: NodeTaintInput[];
  /** How often the node status is computed and posted when it changed (upstream nodeStatusUpdateFrequency). Default '10s'. */
  nodeStatusUpdateFrequency?: Duration;
  /** Most time between two node status posts when nothing changed (upstream nodeStatusReportFrequency). Default '5m', or nodeStatusUpdateFrequency when only that is set (as upstream). */
  nodeStatusReportFrequency?: Duration;
  /** The node Lease's duration (upstream nodeLeaseDurationSeconds); it is renewed every quarter of it. Default 40. */
  nodeLeaseDurationSeconds?: number;
  /**
   * Graceful node shutdown (upstream shutdownGracePeriod): how long a shutdown of the node is held
   * up (a systemd-logind delay lock) while the kubelet terminates its pods. '0s' (the default): off.
   */
  shutdownGracePeriod?: Duration;
  /** Of shutdownGracePeriod, the time kept for critical pods (priority >= 2000000000), terminated last. Default '0s'. */
  shutdownGracePeriodCriticalPods?: Duration;
  /**
   * Graceful node shutdown by pod priority (upstream shutdownGracePeriodByPodPriority): groups of
   * pods from a priority up, terminated the lowest first, each with its seconds. Not with shutdownGracePeriod.
   */
  shutdownGracePeriodByPodPriority?: ShutdownGracePeriodByPodPriority[];
  /** Requests per second to the API server, as a token bucket (upstream kubeAPIQPS). Default 50. */
  kubeAPIQPS?: number;
  /** Burst of the API request token bucket (upstream kubeAPIBurst). Default 100. */
  kubeAPIBurst?: number;
  /**
   * Events posted per second (upstream eventRecordQPS), on a client of their own so that a
   * burst of events never delays pod status updates. 0: no limit. Default 50.
   */
  eventRecordQPS?: number;
  /** Burst of the events token bucket (upstream eventBurst). Default 100. */
  eventBurst?: number;
  /** The kubelet's main port, reported as status.daemonEndpoints.kubeletEndpoint.Port (upstream port): HTTPS, every request authenticated and authorized. Default 10250. */
  port?: number;
  /** The main port's serving certificate, PEM (upstream tlsCertFile); with tlsPrivateKeyFile. Unset: a self-signed pair made once in certDirectory. */
  tlsCertFile?: string;
  /** The serving certificate's private key, PEM (upstream tlsPrivateKeyFile). */
  tlsPrivateKeyFile?: string;
  /** Where the self-signed serving pair is kept (kubelet.crt, kubelet.key; upstream --cert-dir). Default `<rootDir>/pki`. */
  certDirectory?: string;
  /** The lowest TLS version the main port accepts (upstream tlsMinVersion: VersionTLS10..VersionTLS13). Default VersionTLS12. */
  tlsMinVersion?: 'VersionTLS10' | 'VersionTLS11' | 'VersionTLS12' | 'VersionTLS13';
  /** The TLS 1.2 cipher suites the main port allows, by their Go names (upstream tlsCipherSuites). Default: Node's. */
  tlsCipherSuites?: string[];
  /** How requests to the main port are authenticated (upstream authentication). */
  authentication?: {
    /** Client certificates signed by this CA authenticate as their CN, with their O as groups. Unset: the kubeconfig's CA in API-server mode (kubelet-ts; the cluster CA that signs the API server's kubelet client certificate), none standalone. */
    x509?: { clientCAFile?: string };
    /** Bearer tokens checked with the API server's TokenReview, results cached for cacheTTL. Default enabled, '2m'. */
    webhook?: { enabled?: boolean; cacheTTL?: Duration };
    /** Requests without credentials are system:anonymous (group system:unauthenticated) instead of 401. Default false. */
    anonymous?: { enabled?: boolean };
  };
  /** How authenticated requests to the main port are authorized (upstream authorization). */
  authorization?: {
    /** Webhook: a SubjectAccessReview on nodes/<subresource> per request (cached); AlwaysAllow: none. Default Webhook. */
    mode?: 'AlwaysAllow' | 'Webhook';
    webhook?: { cacheAuthorizedTTL?: Duration; cacheUnauthorizedTTL?: Duration };
  };
  /** An exec, attach or port-forward stream with no traffic for this long is closed (upstream streamingConnectionIdleTimeout). Default '4h'. */
  streamingConnectionIdleTimeout?: Duration;
  /** Resources reserved for the OS (upstream systemReserved): cpu, memory, ephemeral-storage, pid quantities. */
  systemReserved?: ReservedResources;
  /** Resources reserved for Kubernetes daemons (upstream kubeReserved): cpu, memory, ephemeral-storage, pid quantities. */
  kubeReserved?: ReservedResources;
  /**
   * Hard eviction thresholds by signal (upstream evictionHard): a quantity or a percentage of capacity.
   * Default (as upstream on Linux) memory.available 100Mi, nodefs.available 10%, nodefs.inodesFree 5%,
   * imagefs.available 15%; a map given here replaces the defaults whole, as upstream 1.28's config file does.
   * memory.available and nodefs.available are also held back from allocatable.
   */
  evictionHard?: Partial<Record<EvictionSignal, string>>;
  /** Soft eviction thresholds by signal (upstream evictionSoft): met once crossed for the signal's evictionSoftGracePeriod. Default none. */
  evictionSoft?: Partial<Record<EvictionSignal, string>>;
  /** How long each soft threshold must stay crossed before pods are evicted (upstream evictionSoftGracePeriod); required for every evictionSoft signal. */
  evictionSoftGracePeriod?: Partial<Record<EvictionSignal, Duration>>;
  /** How much beyond its threshold a signal must recover before eviction for it stops (upstream evictionMinimumReclaim): a quantity or a percentage. Default 0. */
  evictionMinimumReclaim?: Partial<Record<EvictionSignal, string>>;
  /** How long a pressure condition stays True after its last crossing (upstream evictionPressureTransitionPeriod). Default '5m'. */
  evictionPressureTransitionPeriod?: Duration;
  /** The most grace a pod evicted for a soft threshold gets, in seconds (upstream evictionMaxPodGracePeriod); 0: the pod's own. Default 0. */
  evictionMaxPodGracePeriod?: number;
  /** kubelet-ts (upstream hard-codes 10s): how often the eviction manager observes the signals. Default '10s'. */
  evictionMonitoringPeriod?: Duration;
  /**
   * kubelet-ts: static pods may be evicted, and refused under pressure, by the same rules as API
   * pods (upstream treats static and mirror pods as critical, never evicted). For standalone nodes,
   * whose pods are all static. Default false.
   */
  evictStaticPods?: boolean;
  /** A running container's log is rotated once larger than this (upstream containerLogMaxSize). Default '10Mi'. */
  containerLogMaxSize?: string;
  /** At most this many log files per container, the current one included (upstream containerLogMaxFiles, >= 2). Default 5. */
  containerLogMaxFiles?: number;
  /** How often log sizes are checked (upstream containerLogMonitorInterval). Default '10s'. */
  containerLogMonitorInterval?: Duration;
  /** Image GC runs when the image filesystem is at least this full, in percent (upstream imageGCHighThresholdPercent). Default 85; 100 turns it off. */
  imageGCHighThresholdPercent?: number;
  /** Image GC frees space down to this fullness, in percent (upstream imageGCLowThresholdPercent); below the high one. Default 80. */
  imageGCLowThresholdPercent?: number;
  /** An image is never collected before it has been on the node this long (upstream imageMinimumGCAge). Default '2m'. */
  imageMinimumGCAge?: Duration;
  /** An image unused for this long is collected whatever the disk (upstream imageMaximumGCAge). Default '0s': off. */
  imageMaximumGCAge?: Duration;
  /**
   * How long a volume's measured use is reused (upstream volumeStatsAggPeriod): local volumes'
   * disk use, and persistent volumes' figures asked of their providers (CSI NodeGetVolumeStats).
   * Default '1m'; '0s': volumes are not measured (no volume figures in /stats/summary, no
   * eviction for an emptyDir's sizeLimit), as upstream's negative value.
   */
  volumeStatsAggPeriod?: Duration;
  /**
   * Sysctls pods may set besides the safe ones (upstream allowedUnsafeSysctls): names, or
   * prefixes ending in `*` (`kernel.msg*`, `net.core.*`); only namespaced ones (kernel.shm*,
   * kernel.msg*, kernel.sem, fs.mqueue.*, net.*). A pod with any other sysctl is rejected
   * (SysctlForbidden). Default none.
   */
  allowedUnsafeSysctls?: string[];
  /** Containers without a seccomp profile run with the runtime's default one instead of unconfined (upstream seccompDefault). Default false. */
  seccompDefault?: boolean;
  /** DNS servers of `ClusterFirst` pods (upstream clusterDNS); none: such pods fall back to `Default`, with a warning event. Default none. */
  clusterDNS?: string[];
  /** The cluster's DNS domain (upstream clusterDomain), e.g. `cluster.local`: the search path of `ClusterFirst` pods and the FQDN of pods with a subdomain. Default "". */
  clusterDomain?: string;
  /** The resolver config `Default` pods inherit and `ClusterFirst` pods extend (upstream resolvConf); "" for none. Default /etc/resolv.conf. */
  resolvConf?: string;
  /**
   * Where FlexVolume exec drivers are (upstream volumePluginDir, flag --volume-plugin-dir):
   * `<dir>/<vendor>~<driver>/<driver>`; read by the flexvolume plugin. Default upstream's
   * `/usr/libexec/kubernetes/kubelet-plugins/volume/exec/`.
   */
  volumePluginDir?: string;
  /**
   * kubelet-ts (upstream flag --image-credential-provider-config): the CredentialProviderConfig
   * file (`kubelet.config.k8s.io/v1`, YAML or JSON), or a directory of them, listing the exec
   * image credential providers; read by the credential-provider-exec plugin. Default none.
   */
  imageCredentialProviderConfig?: string;
  /** kubelet-ts (upstream flag --image-credential-provider-bin-dir): the directory of the providers' executables; required with imageCredentialProviderConfig. */
  imageCredentialProviderBinDir?: string;
  /**
   * kubelet-ts: runtimeClassName → CRI runtime handler, for a kubelet without an API server
   * (in API-server mode the RuntimeClass objects say it). A pod naming a class not listed waits
   * with an error. Default none.
   */
  runtimeClassHandlers?: Record<string, string>;
  /**
   * The port of the plain-HTTP `/healthz` server on healthzBindAddress (upstream healthzPort),
   * which kubeadm's kubelet-check polls; 0 disables. Default 0 here, 10248 in a
   * KubeletConfiguration file (upstream's default).
   */
  healthzPort?: number;
  /** The address the healthz server listens on (upstream healthzBindAddress). Default 127.0.0.1. */
  healthzBindAddress?: string;
  /** Log level: trace, debug, info, warn, error. Default info. */
  logging?: { level?: string };
  /** The plugins to load, in order. */
  plugins?: PluginEntry[];
}

/** The configuration after defaults, flags and duration parsing: what the core reads. */
export interface KubeletConfig {
  nodeName: string;
  nodeIP: string;
  rootDir: string;
  podLogsDir: string;
  staticPodPath: string | undefined;
  staticPodURL: string | undefined;
  staticPodURLHeader: Record<string, string[]>;
  httpCheckFrequencyMs: number;
  fileCheckFrequencyMs: number;
  syncFrequencyMs: number;
  plegRelistPeriodMs: number;
  containerRuntimeEndpoint: string;
  runtimeRequestTimeoutMs: number;
  address: string;
  readOnlyPort: number;
  enableServer: boolean;
  enableDebuggingHandlers: boolean;
  maxPods: number;
  cgroupsPerQOS: boolean;
  cgroupRoot: string;
  cgroupDriver: 'cgroupfs' | 'systemd';
  /** Whether `pods` is in enforceNodeAllocatable. */
  enforceNodeAllocatablePods: boolean;
  /** pids.max of pod cgroups; undefined: no limit. */
  podPidsLimit: number | undefined;
  maxPerPodContainer: number;
  maxContainers: number;
  crashLoopBackOff: { initialMs: number; maxMs: number };
  imagePullBackOff: { initialMs: number; maxMs: number };
  hookTimeoutMs: number;
  /** The managed label's value on what this kubelet creates (undefined: `true`). */
  runtimeInstance: string | undefined;
  /** Most concurrent image pulls (1 when serialized, undefined for no limit). */
  maxParallelImagePulls: number | undefined;
  /** Most concurrent RunPodSandbox calls; undefined for no limit. */
  maxParallelSandboxCreations: number | undefined;
  /** Most concurrent container creations (create + start); undefined for no limit. */
  maxParallelContainerCreations: number | undefined;
  localObjectsDir: string | undefined;
  /** The kubeconfig path, absolute; undefined: no API server. */
  kubeconfig: string | undefined;
  /** TLS bootstrap: the bootstrap kubeconfig's path, absolute; undefined: none. */
  bootstrapKubeconfig: string | undefined;
  rotateCertificates: boolean;
  serverTLSBootstrap: boolean;
  registerNode: boolean;
  nodeLabels: Record<string, string>;
  registerWithTaints: NodeTaint[];
  nodeStatusUpdateFrequencyMs: number;
  nodeStatusReportFrequencyMs: number;
  nodeLeaseDurationSeconds: number;
  /** Graceful node shutdown's groups, lowest priority first; empty: off. */
  shutdownGroups: ShutdownGroup[];
  kubeAPIQPS: number;
  kubeAPIBurst: number;
  eventRecordQPS: number;
  eventBurst: number;
  /** The main port; 0 (tests only, not allowed in a config file) takes a free one, reported as the Node's kubelet port. */
  port: number;
  tlsCertFile: string | undefined;
  tlsPrivateKeyFile: string | undefined;
  certDirectory: string;
  tlsMinVersion: string | undefined;
  tlsCipherSuites: string[];
  authentication: {
    /** The CA file for client certificates; undefined: the kubeconfig's CA in API-server mode, none standalone. */
    x509ClientCAFile: string | undefined;
    webhookEnabled: boolean;
    webhookCacheTTLMs: number;
    anonymousEnabled: boolean;
  };
  authorization: { mode: 'AlwaysAllow' | 'Webhook'; cacheAuthorizedTTLMs: number; cacheUnauthorizedTTLMs: number };
  streamingConnectionIdleTimeoutMs: number;
  systemReserved: ReservedResources;
  kubeReserved: ReservedResources;
  /** The hard eviction thresholds in force (the defaults unless the file gave a map). */
  evictionHard: Partial<Record<EvictionSignal, string>>;
  /** The eviction manager's settings besides evictionHard (core/eviction), resolved. */
  eviction: EvictionSettings;
  /** Image garbage collection (core/eviction/image-gc.ts), resolved. */
  imageGC: ImageGCSettings;
  /** Container log rotation (core/logs/log-rotation.ts), resolved. */
  containerLogs: { maxSizeBytes: number; maxFiles: number; monitorIntervalMs: number };
  /** How long a volume's measured use is reused; 0: volumes are not measured. */
  volumeStatsAggPeriodMs: number;
  /** Sysctl names and `prefix*` patterns pods may set besides the safe ones. */
  allowedUnsafeSysctls: string[];
  seccompDefault: boolean;
  clusterDNS: string[];
  clusterDomain: string;
  /** The resolv.conf path; "" for none. */
  resolvConf: string;
  /** The FlexVolume drivers' directory, absolute. */
  volumePluginDir: string;
  /** The CredentialProviderConfig file or directory, absolute; undefined: no exec credential providers. */
  imageCredentialProviderConfig: string | undefined;
  /** The directory of the credential providers' executables, absolute. */
  imageCredentialProviderBinDir: string | undefined;
  /** runtimeClassName → runtime handler without an API server. */
  runtimeClassHandlers: Record<string, string>;
  /** The /healthz server's port (0: none) and address. */
  healthzPort: number;
  healthzBindAddress: string;
  logLevel: string;
  plugins: PluginEntry[];
  /** The file `plugins` came from, where relative plugin paths resolve (--plugins-config, or the default bundle, next to a KubeletConfiguration); undefined: configFile. */
  pluginsConfigFile?: string;
  /** The file the config came from (for messages and resolving plugin paths). */
  configFile: string | undefined;
}

/** evictionSoft and the other eviction fields after defaults, durations in milliseconds. */
export interface EvictionSettings {
  soft: Partial<Record<EvictionSignal, string>>;
  softGracePeriodMs: Partial<Record<EvictionSignal, number>>;
  minimumReclaim: Partial<Record<EvictionSignal, string>>;
  pressureTransitionPeriodMs: number;
  maxPodGracePeriodSeconds: number;
  monitoringPeriodMs: number;
  evictStaticPods: boolean;
}

/** Image GC's policy (upstream ImageGCPolicy), durations in milliseconds. */
export interface ImageGCSettings {
  highThresholdPercent: number;
  lowThresholdPercent: number;
  minAgeMs: number;
  /** 0: off. */
  maxAgeMs: number;
}

/** Gives config file authors types and completion: `export default defineConfig({...})`. */
export function defineConfig(config: KubeletConfigInput): KubeletConfigInput {
  return config;
}
