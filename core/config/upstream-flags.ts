/**
 * The command-line flags of `kubelet-ts [run]` and `kubelet-ts plugins`: every flag of the
 * upstream kubelet v1.28 (`kubelet --help`), so a systemd unit written for it (kubeadm's
 * 10-kubeadm.conf, kubeadm-flags.env, /etc/default/kubelet) starts kubelet-ts unchanged, and
 * kubelet-ts's own few. A flag sets either a field of upstream's KubeletConfiguration (and
 * then upstream-fields.ts says whether kubelet-ts implements it), or a kubelet-ts field that
 * upstream has only as a flag (--hostname-override, --node-ip, --kubeconfig). A flag kubelet-ts
 * does not implement is accepted and named in the start warning when its value asks for
 * something; a flag upstream does not have is refused with the nearest name.
 */

/** How a flag's value is written on the command line (pflag's types, as upstream's --help names them). */
export type FlagType =
  | 'string'
  | 'bool'
  | 'int'
  | 'number'
  | 'duration'
  /** Comma-separated, repeatable: `--cluster-dns=10.0.0.10,10.0.0.11`. */
  | 'stringList'
  /** `key=value,key=value`, repeatable. */
  | 'stringMap'
  /** `key<value,key<value` (upstream's eviction thresholds), repeatable. */
  | 'langleMap'
  /** `Name=true,Name=false` (feature gates), repeatable. */
  | 'boolMap'
  /** `key=value:Effect,key:Effect`, repeatable. */
  | 'taints'
  /** `a:hello,b:again`, repeatable: HTTP headers for --manifest-url. */
  | 'headers';

export interface FlagSpec {
  type: FlagType;
  /** One-letter form (`-v`, `-h`). */
  short?: string;
  /** The upstream KubeletConfiguration field it sets: upstream-fields.ts decides what kubelet-ts does with it. */
  field?: string;
  /** The kubelet-ts field it sets, for a flag that has no KubeletConfiguration field. */
  kubeletTs?: string;
  /** A flag kubelet-ts does not implement, without a field: what it would need. */
  needs?: string;
  /** With `needs`: the values at which kubelet-ts already does what upstream does. Default: the zero value. */
  honoured?: (value: unknown) => boolean;
  /** Those values in words, for the docs. Default: unset or empty. */
  honouredText?: string;
  /** Accepted without effect; the info line at start says why. */
  info?: string;
  /** The value of the flag given without `=value` (pflag's NoOptDefVal); bool flags take 'true'. */
  noValue?: string;
  /** Read by the command line itself (--config, --help, --version). */
  command?: true;
  /** kubelet-ts's own flag, not upstream's. */
  own?: true;
}

const CADVISOR = 'a cAdvisor flag (upstream registered it by mistake and ignores most of them; kubelet-ts has no cAdvisor)';
export const CADVISOR_NEEDS = CADVISOR;
const cadvisor = (type: FlagType): FlagSpec => ({ type, needs: CADVISOR, honoured: () => false, honouredText: 'never (a warning whenever given)' });

/** Every flag, by its long name without the dashes. */
export const KUBELET_FLAGS: Readonly<Record<string, FlagSpec>> = {
  // Read by the command line.
  config: { type: 'string', command: true },
  'plugins-config': { type: 'string', command: true, own: true },
  help: { type: 'bool', short: 'h', command: true },
  version: { type: 'string', noValue: 'true', command: true },

  // kubelet-ts's own.
  'node-name': { type: 'string', kubeletTs: 'nodeName', own: true },
  'log-level': { type: 'string', kubeletTs: 'logging.level', own: true },

  // Upstream's flags without a KubeletConfiguration field.
  // Upstream reads the bootstrap kubeconfig only while --kubeconfig does not exist (kubeadm's
  // drop-in keeps passing it after the join deleted the file).
  'bootstrap-kubeconfig': { type: 'string', kubeletTs: 'bootstrapKubeconfig' },
  'cert-dir': { type: 'string', kubeletTs: 'certDirectory' },
  'cloud-config': { type: 'string', needs: 'an in-tree cloud provider (removed upstream in 1.29)' },
  'cloud-provider': { type: 'string', needs: "a cloud provider: for 'external', the node.cloudprovider.kubernetes.io/uninitialized taint at registration and addresses left to the cloud controller manager" },
  'config-dir': { type: 'string', needs: 'drop-in config files merged over --config' },
  'exit-on-lock-contention': { type: 'bool', needs: 'a lock file' },
  'experimental-allocatable-ignore-eviction': { type: 'bool', needs: 'allocatable that ignores the hard eviction thresholds' },
  'experimental-mounter-path': { type: 'string', needs: 'a mount helper binary' },
  'hostname-override': { type: 'string', kubeletTs: 'nodeName' },
  'image-credential-provider-bin-dir': { type: 'string', kubeletTs: 'imageCredentialProviderBinDir' },
  'image-credential-provider-config': { type: 'string', kubeletTs: 'imageCredentialProviderConfig' },
  'keep-terminated-pod-volumes': { type: 'bool', needs: "terminated pods' volumes kept mounted" },
  kubeconfig: { type: 'string', kubeletTs: 'kubeconfig' },
  'lock-file': { type: 'string', needs: 'a lock file' },
  'maximum-dead-containers': { type: 'int', kubeletTs: 'maxContainers' },
  'maximum-dead-containers-per-container': { type: 'int', kubeletTs: 'maxPerPodContainer' },
  'minimum-container-ttl-duration': { type: 'duration', needs: 'a minimum age of dead containers before they are removed' },
  'node-ip': { type: 'string', kubeletTs: 'nodeIP' },
  'node-labels': { type: 'stringMap', kubeletTs: 'nodeLabels' },
  'pod-infra-container-image': {
    type: 'string',
    info: 'accepted and ignored, as upstream deprecated it (and removed it in 1.35): the pod sandbox image comes from the runtime (containerd: sandbox_image), which also keeps it from image GC',
  },
  'register-schedulable': { type: 'bool', needs: 'registering the node unschedulable', honoured: (v) => v === true, honouredText: 'true' },
  'reserved-memory': { type: 'string', needs: 'a memory manager' },
  'root-dir': { type: 'string', kubeletTs: 'rootDir' },
  'runtime-cgroups': { type: 'string', needs: 'moving the runtime into a cgroup' },
  v: { type: 'int', short: 'v', field: 'logging.verbosity' },

  // Upstream's flags for KubeletConfiguration fields.
  address: { type: 'string', field: 'address' },
  'allowed-unsafe-sysctls': { type: 'stringList', field: 'allowedUnsafeSysctls' },
  'anonymous-auth': { type: 'bool', field: 'authentication.anonymous.enabled' },
  'authentication-token-webhook': { type: 'bool', field: 'authentication.webhook.enabled' },
  'authentication-token-webhook-cache-ttl': { type: 'duration', field: 'authentication.webhook.cacheTTL' },
  'authorization-mode': { type: 'string', field: 'authorization.mode' },
  'authorization-webhook-cache-authorized-ttl': { type: 'duration', field: 'authorization.webhook.cacheAuthorizedTTL' },
  'authorization-webhook-cache-unauthorized-ttl': { type: 'duration', field: 'authorization.webhook.cacheUnauthorizedTTL' },
  'cgroup-driver': { type: 'string', field: 'cgroupDriver' },
  'cgroup-root': { type: 'string', field: 'cgroupRoot' },
  'cgroups-per-qos': { type: 'bool', field: 'cgroupsPerQOS' },
  'client-ca-file': { type: 'string', field: 'authentication.x509.clientCAFile' },
  'cluster-dns': { type: 'stringList', field: 'clusterDNS' },
  'cluster-domain': { type: 'string', field: 'clusterDomain' },
  'container-log-max-files': { type: 'int', field: 'containerLogMaxFiles' },
  'container-log-max-size': { type: 'string', field: 'containerLogMaxSize' },
  'container-runtime-endpoint': { type: 'string', field: 'containerRuntimeEndpoint' },
  'contention-profiling': { type: 'bool', field: 'enableContentionProfiling' },
  'cpu-cfs-quota': { type: 'bool', field: 'cpuCFSQuota' },
  'cpu-cfs-quota-period': { type: 'duration', field: 'cpuCFSQuotaPeriod' },
  'cpu-manager-policy': { type: 'string', field: 'cpuManagerPolicy' },
  'cpu-manager-policy-options': { type: 'stringMap', field: 'cpuManagerPolicyOptions' },
  'cpu-manager-reconcile-period': { type: 'duration', field: 'cpuManagerReconcilePeriod' },
  'enable-controller-attach-detach': { type: 'bool', field: 'enableControllerAttachDetach' },
  'enable-debugging-handlers': { type: 'bool', field: 'enableDebuggingHandlers' },
  'enable-server': { type: 'bool', field: 'enableServer' },
  'enforce-node-allocatable': { type: 'stringList', field: 'enforceNodeAllocatable' },
  'event-burst': { type: 'int', field: 'eventBurst' },
  'event-qps': { type: 'int', field: 'eventRecordQPS' },
  'eviction-hard': { type: 'langleMap', field: 'evictionHard' },
  'eviction-max-pod-grace-period': { type: 'int', field: 'evictionMaxPodGracePeriod' },
  'eviction-minimum-reclaim': { type: 'stringMap', field: 'evictionMinimumReclaim' },
  'eviction-pressure-transition-period': { type: 'duration', field: 'evictionPressureTransitionPeriod' },
  'eviction-soft': { type: 'langleMap', field: 'evictionSoft' },
  'eviction-soft-grace-period': { type: 'stringMap', field: 'evictionSoftGracePeriod' },
  'fail-swap-on': { type: 'bool', field: 'failSwapOn' },
  'feature-gates': { type: 'boolMap', field: 'featureGates' },
  'file-check-frequency': { type: 'duration', field: 'fileCheckFrequency' },
  'hairpin-mode': { type: 'string', field: 'hairpinMode' },
  'healthz-bind-address': { type: 'string', field: 'healthzBindAddress' },
  'healthz-port': { type: 'int', field: 'healthzPort' },
  'http-check-frequency': { type: 'duration', field: 'httpCheckFrequency' },
  'image-gc-high-threshold': { type: 'int', field: 'imageGCHighThresholdPercent' },
  'image-gc-low-threshold': { type: 'int', field: 'imageGCLowThresholdPercent' },
  'image-service-endpoint': { type: 'string', field: 'imageServiceEndpoint' },
  'kernel-memcg-notification': { type: 'bool', field: 'kernelMemcgNotification' },
  'kube-api-burst': { type: 'int', field: 'kubeAPIBurst' },
  'kube-api-content-type': { type: 'string', field: 'contentType' },
  'kube-api-qps': { type: 'int', field: 'kubeAPIQPS' },
  'kube-reserved': { type: 'stringMap', field: 'kubeReserved' },
  'kube-reserved-cgroup': { type: 'string', field: 'kubeReservedCgroup' },
  'kubelet-cgroups': { type: 'string', field: 'kubeletCgroups' },
  'local-storage-capacity-isolation': { type: 'bool', field: 'localStorageCapacityIsolation' },
  'log-flush-frequency': { type: 'duration', field: 'logging.flushFrequency' },
  'log-json-info-buffer-size': { type: 'string', field: 'logging.options.json.infoBufferSize' },
  'log-json-split-stream': { type: 'bool', field: 'logging.options.json.splitStream' },
  'logging-format': { type: 'string', field: 'logging.format' },
  'make-iptables-util-chains': { type: 'bool', field: 'makeIPTablesUtilChains' },
  'manifest-url': { type: 'string', field: 'staticPodURL' },
  'manifest-url-header': { type: 'headers', field: 'staticPodURLHeader' },
  'max-open-files': { type: 'int', field: 'maxOpenFiles' },
  'max-pods': { type: 'int', field: 'maxPods' },
  'memory-manager-policy': { type: 'string', field: 'memoryManagerPolicy' },
  'minimum-image-ttl-duration': { type: 'duration', field: 'imageMinimumGCAge' },
  'node-status-max-images': { type: 'int', field: 'nodeStatusMaxImages' },
  'node-status-update-frequency': { type: 'duration', field: 'nodeStatusUpdateFrequency' },
  'oom-score-adj': { type: 'int', field: 'oomScoreAdj' },
  'pod-cidr': { type: 'string', field: 'podCIDR' },
  'pod-manifest-path': { type: 'string', field: 'staticPodPath' },
  'pod-max-pids': { type: 'int', field: 'podPidsLimit' },
  'pods-per-core': { type: 'int', field: 'podsPerCore' },
  port: { type: 'int', field: 'port' },
  'protect-kernel-defaults': { type: 'bool', field: 'protectKernelDefaults' },
  'provider-id': { type: 'string', field: 'providerID' },
  'qos-reserved': { type: 'stringMap', field: 'qosReserved' },
  'read-only-port': { type: 'int', field: 'readOnlyPort' },
  'register-node': { type: 'bool', field: 'registerNode' },
  'register-with-taints': { type: 'taints', field: 'registerWithTaints' },
  'registry-burst': { type: 'int', field: 'registryBurst' },
  'registry-qps': { type: 'int', field: 'registryPullQPS' },
  'reserved-cpus': { type: 'string', field: 'reservedSystemCPUs' },
  'resolv-conf': { type: 'string', field: 'resolvConf' },
  'rotate-certificates': { type: 'bool', field: 'rotateCertificates' },
  'rotate-server-certificates': { type: 'bool', field: 'serverTLSBootstrap' },
  runonce: { type: 'bool', field: 'runOnce' },
  'runtime-request-timeout': { type: 'duration', field: 'runtimeRequestTimeout' },
  'seccomp-default': { type: 'bool', field: 'seccompDefault' },
  'serialize-image-pulls': { type: 'bool', field: 'serializeImagePulls' },
  'streaming-connection-idle-timeout': { type: 'duration', field: 'streamingConnectionIdleTimeout' },
  'sync-frequency': { type: 'duration', field: 'syncFrequency' },
  'system-cgroups': { type: 'string', field: 'systemCgroups' },
  'system-reserved': { type: 'stringMap', field: 'systemReserved' },
  'system-reserved-cgroup': { type: 'string', field: 'systemReservedCgroup' },
  'tls-cert-file': { type: 'string', field: 'tlsCertFile' },
  'tls-cipher-suites': { type: 'stringList', field: 'tlsCipherSuites' },
  'tls-min-version': { type: 'string', field: 'tlsMinVersion' },
  'tls-private-key-file': { type: 'string', field: 'tlsPrivateKeyFile' },
  'topology-manager-policy': { type: 'string', field: 'topologyManagerPolicy' },
  'topology-manager-policy-options': { type: 'stringMap', field: 'topologyManagerPolicyOptions' },
  'topology-manager-scope': { type: 'string', field: 'topologyManagerScope' },
  vmodule: { type: 'string', field: 'logging.vmodule' },
  'volume-plugin-dir': { type: 'string', field: 'volumePluginDir' },
  'volume-stats-agg-period': { type: 'duration', field: 'volumeStatsAggPeriod' },

  // cAdvisor's, registered on upstream's kubelet by mistake.
  'application-metrics-count-limit': cadvisor('int'),
  'boot-id-file': cadvisor('string'),
  'container-hints': cadvisor('string'),
  containerd: cadvisor('string'),
  'containerd-namespace': cadvisor('string'),
  'enable-load-reader': cadvisor('bool'),
  'event-storage-age-limit': cadvisor('string'),
  'event-storage-event-limit': cadvisor('string'),
  'global-housekeeping-interval': cadvisor('duration'),
  'housekeeping-interval': cadvisor('duration'),
  'log-cadvisor-usage': cadvisor('bool'),
  'machine-id-file': cadvisor('string'),
  'storage-driver-buffer-duration': cadvisor('duration'),
  'storage-driver-db': cadvisor('string'),
  'storage-driver-host': cadvisor('string'),
  'storage-driver-password': cadvisor('string'),
  'storage-driver-secure': cadvisor('bool'),
  'storage-driver-table': cadvisor('string'),
  'storage-driver-user': cadvisor('string'),
};

/** One flag as given on the command line (repeats merged), its value typed. */
export interface FlagSetting {
  /** The flag's long name, without dashes. */
  flag: string;
  /** How it is named in messages: `--cluster-dns`. */
  spelling: string;
  value: unknown;
}

/** The long name of a one-letter flag. */
export function longNameOf(short: string): string | undefined {
  return Object.entries(KUBELET_FLAGS).find(([, spec]) => spec.short === short)?.[0];
}
