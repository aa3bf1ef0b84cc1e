/**
 * What kubelet-ts does with every field of a pod's spec and of its containers (issue 36,
 * "nothing accepted silently"): the one table an operator reads in docs/operating/pods.md
 * (written from it by tools/docs-pod-fields.ts) and that test/unit/pod-field-support.test.ts
 * holds to the code: every field @kubernetes/client-node's models know for the types below must
 * have an entry, so a field a newer client brings can never pass unnoticed, and every refusal
 * listed here is fed to the code that refuses it.
 *
 * The reference is upstream's kubelet v1.28 with its default feature gates. The client library
 * is newer (its models carry fields up to Kubernetes 1.34), so some fields are unknown to 1.28:
 * its API server and its kubelet's decoder drop them. kubelet-ts decodes them, so each says
 * what happens to it here.
 */

/**
 * honoured: kubelet-ts does what upstream's kubelet does with it.
 * refused: a pod that sets it (or the values named) is not run, with the reason it gets.
 * ignored-as-upstream: accepted and not acted on, as upstream's kubelet v1.28 (default gates) does.
 * not-applicable: for the API server or the scheduler; no kubelet acts on it.
 */
export type PodFieldSupport = 'honoured' | 'refused' | 'ignored-as-upstream' | 'not-applicable';

/** Where a refusal happens, and so what the pod shows. */
export type RefusalStage =
  /** Static pods only: the manifest is not run; the file's warning names the field (core/sources/manifest.ts). */
  | 'static-pod-validation'
  /** Admission: the pod is Failed with the reason and message, and a Warning event of that reason. */
  | 'admission'
  /** Sandbox creation: ContainerCreating with the message, and a FailedCreatePodSandBox event; no sandbox is made. */
  | 'sandbox'
  /** Container creation: CreateContainerConfigError with the message, and a Failed event. */
  | 'container-config'
  /** Volume set-up: ContainerCreating with a FailedMount event naming the volume type. */
  | 'volume-setup';

export interface PodFieldRefusal {
  stage: RefusalStage;
  /** The values or cases refused ('any value' when setting it at all is). */
  when: string;
  /** The reason the pod or its container gets (upstream's where upstream has one). */
  reason: string;
  /** What the message names instead of the field (upstream's words name a resource, not `requests`). */
  messageNames?: string;
}

export interface PodFieldEntry {
  support: PodFieldSupport;
  /** What kubelet-ts does with it, and why, in a sentence an operator reads. */
  what: string;
  /** The file that implements or refuses it (relative to the repository). */
  where: string;
  /** The values that are refused; required for 'refused', allowed on others (a refused value of an honoured field). */
  refusal?: PodFieldRefusal;
}

/** The table's sections: the prefix of their keys and the client model whose fields they list. */
export const POD_FIELD_SECTIONS = [
  { prefix: 'spec', model: 'V1PodSpec', title: 'Pod spec (`spec.*`)' },
  { prefix: 'container', model: 'V1Container', title: 'Containers, init containers and ephemeral containers (`spec.containers[*].*`)' },
  { prefix: 'ephemeralContainer', model: 'V1EphemeralContainer', title: 'Ephemeral containers only (`spec.ephemeralContainers[*].*`, fields containers do not have)' },
  { prefix: 'podSecurityContext', model: 'V1PodSecurityContext', title: 'Pod security context (`spec.securityContext.*`)' },
  { prefix: 'securityContext', model: 'V1SecurityContext', title: 'Container security context (`spec.containers[*].securityContext.*`)' },
  { prefix: 'resources', model: 'V1ResourceRequirements', title: 'Container resources (`spec.containers[*].resources.*`)' },
  { prefix: 'volumeMount', model: 'V1VolumeMount', title: 'Volume mounts (`spec.containers[*].volumeMounts[*].*`)' },
  { prefix: 'envSource', model: 'V1EnvVarSource', title: 'Environment variable sources (`env[*].valueFrom.*`)' },
  { prefix: 'envFrom', model: 'V1EnvFromSource', title: 'Environment from objects (`envFrom[*].*`)' },
  { prefix: 'volume', model: 'V1Volume', title: 'Volume sources (`spec.volumes[*].*`)' },
  { prefix: 'projection', model: 'V1VolumeProjection', title: 'Projected volume sources (`spec.volumes[*].projected.sources[*].*`)' },
  { prefix: 'probe', model: 'V1Probe', title: 'Probes (`livenessProbe`, `readinessProbe`, `startupProbe`)' },
  { prefix: 'lifecycle', model: 'V1Lifecycle', title: 'Lifecycle (`spec.containers[*].lifecycle.*`)' },
  { prefix: 'lifecycleHandler', model: 'V1LifecycleHandler', title: 'Lifecycle handlers (`postStart`, `preStop`)' },
] as const;

export type PodFieldSection = (typeof POD_FIELD_SECTIONS)[number]['prefix'];

const NOT_IN_128 = 'not in the v1.28 API (a 1.28 API server and kubelet drop it)';
const SCHEDULER = 'for the scheduler: it placed the pod before the kubelet sees it; upstream\'s kubelet does not read it either';
const NO_VOLUME_PLUGIN: PodFieldRefusal = { stage: 'volume-setup', when: 'any value', reason: 'FailedMount: no volume plugin for type "<kind>"' };
const VOLUMES = 'core/volumes/volume-manager.ts';
const BUILTIN_VOLUMES = 'core/volumes/builtin/index.ts';
const CSI = 'a volume plugin tapping mountVolume for "csi" (plugins/csi-grpc in the default bundle)';

/** Volume kinds upstream's kubelet v1.28 serves itself that kubelet-ts has no plugin for. */
function inTreeVolume(kind: string, upstream: string): PodFieldEntry {
  return { support: 'refused', what: `no ${kind} plugin: the pod waits in ContainerCreating with FailedMount (upstream v1.28 ${upstream})`, where: VOLUMES, refusal: NO_VOLUME_PLUGIN };
}

/** Volume kinds whose in-tree plugin upstream removed before v1.28: refused there too. */
function removedVolume(kind: string, removedIn: string): PodFieldEntry {
  return { support: 'refused', what: `no ${kind} plugin, as upstream (its in-tree plugin was removed in ${removedIn}): FailedMount`, where: VOLUMES, refusal: NO_VOLUME_PLUGIN };
}

/** In-tree cloud volumes that upstream v1.28 translates to a CSI driver (CSI migration). */
function migratedVolume(driver: string): PodFieldEntry {
  return {
    support: 'refused',
    what: `no plugin and no translation to CSI: FailedMount (upstream v1.28 mounts it through the ${driver} CSI driver by CSI migration when that driver runs on the node)`,
    where: VOLUMES,
    refusal: NO_VOLUME_PLUGIN,
  };
}

/** Every field, as `<section>.<field>`. */
export const POD_FIELD_SUPPORT: Record<string, PodFieldEntry> = {
  // V1PodSpec
  'spec.activeDeadlineSeconds': { support: 'honoured', what: 'the pod is Failed with DeadlineExceeded at the deadline, its containers killed', where: 'core/pod/active-deadline.ts' },
  'spec.affinity': { support: 'honoured', what: 'required node affinity is checked at admission (NodeAffinity); pod (anti-)affinity and preferred terms are the scheduler\'s, as upstream', where: 'core/pod/admission.ts' },
  'spec.automountServiceAccountToken': { support: 'not-applicable', what: 'the API server\'s ServiceAccount admission adds (or not) the token volume; the kubelet mounts the volume it finds', where: 'core/volumes/builtin/projection.ts' },
  'spec.containers': { support: 'honoured', what: 'started in parallel after the init containers', where: 'core/pod/pod-sync.ts' },
  'spec.dnsConfig': { support: 'honoured', what: 'appended to the resolv.conf the policy gives, cut to upstream\'s limits', where: 'core/pod/pod-dns.ts' },
  'spec.dnsPolicy': { support: 'honoured', what: 'ClusterFirst, ClusterFirstWithHostNet, Default and None as upstream', where: 'core/pod/pod-dns.ts' },
  'spec.enableServiceLinks': { support: 'honoured', what: 'service environment variables of the namespace (API-server mode)', where: 'core/objects/service-links.ts' },
  'spec.ephemeralContainers': {
    support: 'honoured',
    what: 'added through the ephemeralcontainers subresource, started in the running sandbox; a static pod may not have them',
    where: 'core/pod/pod-sync.ts',
    refusal: { stage: 'static-pod-validation', when: 'in a static pod manifest', reason: 'spec.ephemeralContainers: Forbidden: cannot be set on create' },
  },
  'spec.hostAliases': { support: 'honoured', what: 'written into the kubelet-managed /etc/hosts', where: 'core/pod/etc-hosts.ts' },
  'spec.hostIPC': { support: 'honoured', what: 'the sandbox shares the node\'s IPC namespace', where: 'core/pod/sandbox-config.ts' },
  'spec.hostNetwork': { support: 'honoured', what: 'the sandbox is on the node\'s network', where: 'core/pod/sandbox-config.ts' },
  'spec.hostPID': { support: 'honoured', what: 'the sandbox shares the node\'s PID namespace', where: 'core/pod/sandbox-config.ts' },
  'spec.hostUsers': {
    support: 'honoured',
    what: 'false: a user namespace of the pod\'s own (upstream v1.28 only with the UserNamespacesSupport gate, off by default); never run on the host\'s IDs instead',
    where: 'core/pod/user-namespaces.ts',
    refusal: { stage: 'sandbox', when: 'false, on a runtime handler without user namespace support', reason: 'FailedCreatePodSandBox: RuntimeClass handler "<h>" does not support user namespaces, which hostUsers: false asks for' },
  },
  'spec.hostname': { support: 'honoured', what: 'the pod\'s host name', where: 'core/pod/pod-dns.ts' },
  'spec.hostnameOverride': { support: 'ignored-as-upstream', what: `${NOT_IN_128}; the host name stays \`hostname\` or the pod name`, where: 'core/pod/pod-dns.ts' },
  'spec.imagePullSecrets': { support: 'honoured', what: 'docker config secrets for the pulls; a missing one is a FailedToRetrieveImagePullSecret event', where: 'core/pod/pull-credentials.ts' },
  'spec.initContainers': { support: 'honoured', what: 'run one at a time in order; restartPolicy Always makes a sidecar', where: 'core/pod/pod-sync.ts' },
  'spec.nodeName': { support: 'honoured', what: 'API pods bound to this node are the node\'s; a static pod gets the node\'s name', where: 'core/sources/manifest.ts' },
  'spec.nodeSelector': { support: 'honoured', what: 'checked against the node\'s labels at admission (NodeAffinity)', where: 'core/pod/admission.ts' },
  'spec.os': {
    support: 'honoured',
    what: 'checked at admission; only linux runs here',
    where: 'core/pod/pod-os-admission.ts',
    refusal: { stage: 'admission', when: 'a name other than linux', reason: 'PodOSNotSupported' },
  },
  'spec.overhead': { support: 'honoured', what: 'added to the pod\'s requests at admission and to the pod cgroup\'s limits', where: 'core/pod/admission.ts' },
  'spec.preemptionPolicy': { support: 'not-applicable', what: SCHEDULER, where: '-' },
  'spec.priority': { support: 'honoured', what: 'critical pods (admission, eviction order, graceful shutdown groups)', where: 'core/objects/critical-pods.ts' },
  'spec.priorityClassName': { support: 'honoured', what: 'system-node-critical and system-cluster-critical make a pod critical', where: 'core/objects/critical-pods.ts' },
  'spec.readinessGates': { support: 'honoured', what: 'Ready waits for each gate\'s condition to be True (ReadinessGatesNotReady until then)', where: 'core/status/pod-status.ts' },
  'spec.resourceClaims': {
    support: 'ignored-as-upstream',
    what: 'API pods: not prepared, as upstream v1.28 (DynamicResourceAllocation gate off; its API server drops the field); a static pod may not have them',
    where: 'core/objects/validation/pod-validation.ts',
    refusal: { stage: 'static-pod-validation', when: 'in a static pod manifest', reason: 'spec.resourceClaims: Forbidden: static pods may not use ResourceClaims' },
  },
  'spec.resources': {
    support: 'refused',
    what: `pod-level requests and limits are not applied, so a pod that sets them is not run; ${NOT_IN_128}, and a newer upstream kubelet without the PodLevelResources gate refuses it the same way`,
    where: 'core/pod/admission.ts',
    refusal: { stage: 'admission', when: 'any request or limit', reason: 'PodLevelResourcesNotSupported' },
  },
  'spec.restartPolicy': { support: 'honoured', what: 'Always, OnFailure, Never with upstream\'s phase rules and back-off', where: 'core/pod/pod-actions.ts' },
  'spec.runtimeClassName': { support: 'honoured', what: 'the sandbox\'s runtime handler (the RuntimeClass object, or runtimeClassHandlers standalone)', where: 'core/pod/pod-sync.ts' },
  'spec.schedulerName': { support: 'not-applicable', what: SCHEDULER, where: '-' },
  'spec.schedulingGates': { support: 'not-applicable', what: 'the scheduler places no pod while it has gates (the API server refuses nodeName with gates); upstream\'s kubelet does not read them', where: '-' },
  'spec.securityContext': { support: 'honoured', what: 'see the pod security context', where: 'core/pod/security-context.ts' },
  'spec.serviceAccount': { support: 'honoured', what: 'the deprecated alias: names the service account when serviceAccountName does not (the API server\'s conversion for API pods, the manifest defaults for static pods)', where: 'core/sources/manifest.ts' },
  'spec.serviceAccountName': { support: 'honoured', what: 'projected service account tokens and the downward API', where: 'core/apiserver/token-manager.ts' },
  'spec.setHostnameAsFQDN': { support: 'honoured', what: 'the FQDN becomes the host name', where: 'core/pod/pod-dns.ts' },
  'spec.shareProcessNamespace': { support: 'honoured', what: 'one PID namespace for the pod\'s containers', where: 'core/pod/sandbox-config.ts' },
  'spec.subdomain': { support: 'honoured', what: 'the pod\'s FQDN in /etc/hosts', where: 'core/pod/etc-hosts.ts' },
  'spec.terminationGracePeriodSeconds': { support: 'honoured', what: 'SIGTERM, then SIGKILL after the grace', where: 'core/pod/termination-grace.ts' },
  'spec.tolerations': { support: 'honoured', what: 'NoExecute taints at admission (not for static pods) and the memory-pressure taint under pressure, as upstream', where: 'core/pod/admission.ts' },
  'spec.topologySpreadConstraints': { support: 'not-applicable', what: SCHEDULER, where: '-' },
  'spec.volumes': { support: 'honoured', what: 'see the volume sources', where: VOLUMES },

  // V1Container
  'container.args': { support: 'honoured', what: 'with $(VAR) expansion', where: 'core/pod/container-config.ts' },
  'container.command': { support: 'honoured', what: 'with $(VAR) expansion', where: 'core/pod/container-config.ts' },
  'container.env': { support: 'honoured', what: 'values, ConfigMap and Secret keys, the downward API', where: 'core/pod/container-env.ts' },
  'container.envFrom': { support: 'honoured', what: 'ConfigMaps and Secrets with prefix', where: 'core/pod/container-env.ts' },
  'container.image': { support: 'honoured', what: 'pulled and run', where: 'core/pod/image-puller.ts' },
  'container.imagePullPolicy': { support: 'honoured', what: 'Always, IfNotPresent, Never', where: 'core/pod/image-puller.ts' },
  'container.lifecycle': { support: 'honoured', what: 'see the lifecycle', where: 'core/pod/lifecycle-handlers.ts' },
  'container.livenessProbe': { support: 'honoured', what: 'run by the probes plugin; a failure restarts the container', where: 'core/pod/pod-sync.ts' },
  'container.name': { support: 'honoured', what: 'the container\'s name', where: 'core/pod/container-config.ts' },
  'container.ports': { support: 'honoured', what: 'hostPort and hostIP to the sandbox\'s port mappings; checked at admission (NodePorts)', where: 'core/pod/container-ports.ts' },
  'container.readinessProbe': { support: 'honoured', what: 'run by the probes plugin; the container\'s ready flag', where: 'core/pod/pod-sync.ts' },
  'container.resizePolicy': { support: 'ignored-as-upstream', what: 'in-place resize is not done; upstream v1.28 ignores it too (InPlacePodVerticalScaling gate off; its API server drops the field)', where: '-' },
  'container.resources': { support: 'honoured', what: 'see container resources', where: 'core/pod/container-config.ts' },
  'container.restartPolicy': {
    support: 'honoured',
    what: 'Always on an init container makes a sidecar (upstream v1.28: SidecarContainers gate, alpha); not allowed elsewhere',
    where: 'core/objects/validation/containers.ts',
    refusal: { stage: 'static-pod-validation', when: 'on an app container of a static pod', reason: 'spec.containers[0].restartPolicy: Forbidden: may not be set for non-init containers' },
  },
  'container.restartPolicyRules': { support: 'ignored-as-upstream', what: `${NOT_IN_128}; a container restarts by the pod's restartPolicy`, where: '-' },
  'container.securityContext': { support: 'honoured', what: 'see the container security context', where: 'core/pod/security-context.ts' },
  'container.startupProbe': { support: 'honoured', what: 'run by the probes plugin; holds liveness and readiness until it succeeds', where: 'core/pod/pod-sync.ts' },
  'container.stdin': { support: 'honoured', what: 'to CRI; kubectl attach', where: 'core/pod/container-config.ts' },
  'container.stdinOnce': { support: 'honoured', what: 'to CRI', where: 'core/pod/container-config.ts' },
  'container.terminationMessagePath': { support: 'honoured', what: 'a file per container instance bind-mounted there, read into the terminated state', where: 'core/pod/termination-message.ts' },
  'container.terminationMessagePolicy': { support: 'honoured', what: 'File and FallbackToLogsOnError', where: 'core/pod/termination-message.ts' },
  'container.tty': { support: 'honoured', what: 'to CRI', where: 'core/pod/container-config.ts' },
  'container.volumeDevices': { support: 'honoured', what: 'block volumes as device nodes', where: 'core/pod/block-volume-devices.ts' },
  'container.volumeMounts': { support: 'honoured', what: 'see volume mounts', where: 'core/pod/container-mounts.ts' },
  'container.workingDir': { support: 'honoured', what: 'to CRI', where: 'core/pod/container-config.ts' },

  // V1EphemeralContainer, beyond V1Container's fields
  'ephemeralContainer.targetContainerName': { support: 'honoured', what: 'joins that container\'s process namespace (it must be running, else CreateContainerConfigError)', where: 'core/pod/pod-sync.ts' },

  // V1PodSecurityContext
  'podSecurityContext.appArmorProfile': { support: 'honoured', what: 'the field (v1.30) and the v1.28 annotation; a host without AppArmor refuses the pod (reason AppArmor)', where: 'core/pod/security-context.ts' },
  'podSecurityContext.fsGroup': { support: 'honoured', what: 'supplemental group and the group of emptyDir, configMap, secret, downwardAPI, projected and CSI volumes', where: 'core/volumes/volume-ownership.ts' },
  'podSecurityContext.fsGroupChangePolicy': { support: 'honoured', what: 'Always and OnRootMismatch', where: 'core/volumes/volume-ownership.ts' },
  'podSecurityContext.runAsGroup': { support: 'honoured', what: 'the containers\' default, to CRI', where: 'core/pod/security-context.ts' },
  'podSecurityContext.runAsNonRoot': { support: 'honoured', what: 'checked against the image\'s user (CreateContainerConfigError)', where: 'core/pod/security-context.ts' },
  'podSecurityContext.runAsUser': { support: 'honoured', what: 'the containers\' default, to CRI', where: 'core/pod/security-context.ts' },
  'podSecurityContext.seLinuxChangePolicy': { support: 'ignored-as-upstream', what: `${NOT_IN_128}; volumes are never mounted with an SELinux context option`, where: '-' },
  'podSecurityContext.seLinuxOptions': { support: 'honoured', what: 'to CRI', where: 'core/pod/security-context.ts' },
  'podSecurityContext.seccompProfile': { support: 'honoured', what: 'the containers\' default; Localhost under <rootDir>/seccomp', where: 'core/pod/seccomp-profiles.ts' },
  'podSecurityContext.supplementalGroups': { support: 'honoured', what: 'to CRI, after fsGroup', where: 'core/pod/security-context.ts' },
  'podSecurityContext.supplementalGroupsPolicy': {
    support: 'honoured',
    what: 'Merge (the image\'s groups too) is what the runtime does; Strict is refused (not in v1.28; newer upstream refuses it on a node whose runtime cannot)',
    where: 'core/pod/admission.ts',
    refusal: { stage: 'admission', when: 'Strict', reason: 'SupplementalGroupsPolicyNotSupported' },
  },
  'podSecurityContext.sysctls': { support: 'honoured', what: 'safe sysctls and allowedUnsafeSysctls; others refused', where: 'core/pod/sysctls.ts', refusal: { stage: 'admission', when: 'a sysctl not allowed', reason: 'SysctlForbidden' } },
  'podSecurityContext.windowsOptions': { support: 'ignored-as-upstream', what: 'Windows only; upstream\'s Linux kubelet ignores it', where: '-' },

  // V1SecurityContext
  'securityContext.allowPrivilegeEscalation': { support: 'honoured', what: 'false: no_new_privs', where: 'core/pod/security-context.ts' },
  'securityContext.appArmorProfile': { support: 'honoured', what: 'over the pod\'s; a host without AppArmor refuses the pod (reason AppArmor)', where: 'core/pod/security-context.ts' },
  'securityContext.capabilities': {
    support: 'honoured',
    what: 'add and drop to CRI; a name that is no Linux capability is refused rather than dropped',
    where: 'core/pod/security-context.ts',
    refusal: { stage: 'container-config', when: 'an unknown capability name', reason: 'CreateContainerConfigError: securityContext.capabilities.add: unknown capability' },
  },
  'securityContext.privileged': { support: 'honoured', what: 'to CRI (the sandbox too)', where: 'core/pod/security-context.ts' },
  'securityContext.procMount': {
    support: 'honoured',
    what: 'Default masks /proc as upstream; Unmasked cannot be carried by CRI v1 to containerd, so it is refused rather than masked anyway',
    where: 'core/pod/security-context.ts',
    refusal: { stage: 'container-config', when: 'Unmasked', reason: 'CreateContainerConfigError: procMount Unmasked cannot be honoured' },
  },
  'securityContext.readOnlyRootFilesystem': { support: 'honoured', what: 'to CRI', where: 'core/pod/security-context.ts' },
  'securityContext.runAsGroup': { support: 'honoured', what: 'to CRI', where: 'core/pod/security-context.ts' },
  'securityContext.runAsNonRoot': { support: 'honoured', what: 'checked against the image\'s user (CreateContainerConfigError)', where: 'core/pod/security-context.ts' },
  'securityContext.runAsUser': { support: 'honoured', what: 'to CRI (the image\'s user when unset)', where: 'core/pod/security-context.ts' },
  'securityContext.seLinuxOptions': { support: 'honoured', what: 'to CRI', where: 'core/pod/security-context.ts' },
  'securityContext.seccompProfile': { support: 'honoured', what: 'over the pod\'s; unset is Unconfined unless seccompDefault', where: 'core/pod/seccomp-profiles.ts' },
  'securityContext.windowsOptions': { support: 'ignored-as-upstream', what: 'Windows only; upstream\'s Linux kubelet ignores it', where: '-' },

  // V1ResourceRequirements
  'resources.claims': {
    support: 'ignored-as-upstream',
    what: 'API pods: no claim is prepared, as upstream v1.28 (DynamicResourceAllocation gate off); a static pod may not have them',
    where: 'core/objects/validation/resources.ts',
    refusal: { stage: 'static-pod-validation', when: 'in a static pod manifest', reason: 'spec.containers[0].resources.claims: Forbidden: static pods may not use ResourceClaims' },
  },
  'resources.limits': { support: 'honoured', what: 'CPU quota, memory limit, oom_score_adj, the pod cgroup; hugepages-<size> as the container\'s hugetlb limits (not the pod cgroup\'s); extended resources through device plugins', where: 'core/pod/container-config.ts' },
  'resources.requests': {
    support: 'honoured',
    what: 'admission (cpu, memory, ephemeral-storage, huge pages, extended resources; critical pods preempt others), QoS class, CPU shares',
    where: 'core/pod/admission.ts, core/pod/critical-pod-preemption.ts',
    refusal: { stage: 'admission', when: 'more than the node has left, huge pages of a size the node has not reserved included: an API pod gets OutOf<resource> (OutOfhugepages-1Gi); a critical pod (static, or of system-critical priority) preempts other pods first and gets this reason when none would free enough', reason: 'UnexpectedAdmissionError', messageNames: 'hugepages-1Gi' },
  },

  // V1VolumeMount
  'volumeMount.mountPath': { support: 'honoured', what: 'where the volume is mounted', where: 'core/pod/container-mounts.ts' },
  'volumeMount.mountPropagation': { support: 'honoured', what: 'None, HostToContainer, Bidirectional to CRI', where: 'core/pod/container-mounts.ts' },
  'volumeMount.name': { support: 'honoured', what: 'the pod volume it mounts', where: 'core/pod/container-mounts.ts' },
  'volumeMount.readOnly': { support: 'honoured', what: 'a read-only bind mount', where: 'core/pod/container-mounts.ts' },
  'volumeMount.recursiveReadOnly': {
    support: 'honoured',
    what: `${NOT_IN_128}. Enabled: recursively read-only on a runtime handler that reports support, else refused as upstream (v1.30+) refuses it; IfPossible: recursive where supported`,
    where: 'core/pod/container-mounts.ts',
    refusal: { stage: 'container-config', when: 'Enabled, on a runtime handler without recursive read-only mounts', reason: 'CreateContainerConfigError: volumeMount "<v>": recursiveReadOnly Enabled: requested recursive read-only mode, but it is not supported by the runtime' },
  },
  'volumeMount.subPath': { support: 'honoured', what: 'bound safely (no symlink escapes)', where: 'core/volumes/subpath.ts' },
  'volumeMount.subPathExpr': { support: 'honoured', what: 'expanded from the container\'s env, then as subPath', where: 'core/pod/container-mounts.ts' },

  // V1EnvVarSource
  'envSource.configMapKeyRef': { support: 'honoured', what: 'a ConfigMap key (optional honoured; a missing one is CreateContainerConfigError until it appears)', where: 'core/pod/container-env.ts' },
  'envSource.fieldRef': { support: 'honoured', what: 'the downward API: metadata, labels, annotations, nodeName, serviceAccountName, pod and host IPs', where: 'core/objects/downward-api.ts' },
  'envSource.fileKeyRef': {
    support: 'refused',
    what: `${NOT_IN_128}: a key of a file in an emptyDir is not read, so the container is not created rather than run with an empty value (a 1.28 kubelet would set it empty)`,
    where: 'core/pod/container-env.ts',
    refusal: { stage: 'container-config', when: 'any value', reason: 'CreateContainerConfigError: env <name>: valueFrom.fileKeyRef is not supported by this kubelet' },
  },
  'envSource.resourceFieldRef': { support: 'honoured', what: 'requests and limits, an unset limit as the node\'s allocatable', where: 'core/objects/downward-api.ts' },
  'envSource.secretKeyRef': { support: 'honoured', what: 'a Secret key (optional honoured; a missing one is CreateContainerConfigError until it appears)', where: 'core/pod/container-env.ts' },

  // V1EnvFromSource
  'envFrom.configMapRef': { support: 'honoured', what: 'every key of a ConfigMap; keys that are no env var names skipped with an InvalidEnvironmentVariableNames event', where: 'core/pod/container-env.ts' },
  'envFrom.prefix': { support: 'honoured', what: 'prepended to each key', where: 'core/pod/container-env.ts' },
  'envFrom.secretRef': { support: 'honoured', what: 'every key of a Secret, as configMapRef', where: 'core/pod/container-env.ts' },

  // V1Volume
  'volume.name': { support: 'honoured', what: 'the volume\'s name and directory', where: VOLUMES },
  'volume.awsElasticBlockStore': migratedVolume('ebs.csi.aws.com'),
  'volume.azureDisk': migratedVolume('disk.csi.azure.com'),
  'volume.azureFile': migratedVolume('file.csi.azure.com'),
  'volume.cephfs': inTreeVolume('cephfs', 'mounts it with its in-tree plugin (ceph-fuse or the kernel client), deprecated there; upstream removed it in v1.31: ceph-csi through csi-grpc is the way on both'),
  'volume.cinder': migratedVolume('cinder.csi.openstack.org'),
  'volume.configMap': { support: 'honoured', what: 'files written atomically, updated while the pod runs', where: BUILTIN_VOLUMES },
  'volume.csi': { support: 'honoured', what: `inline CSI volumes, by ${CSI}`, where: CSI },
  'volume.downwardAPI': { support: 'honoured', what: 'files written atomically, updated while the pod runs', where: BUILTIN_VOLUMES },
  'volume.emptyDir': { support: 'honoured', what: 'a directory, or a tmpfs for medium Memory sized by sizeLimit; medium HugePages is not set up (FailedMount: emptyDir medium "HugePages" is not supported; upstream v1.28 mounts a hugetlbfs)', where: BUILTIN_VOLUMES },
  'volume.ephemeral': { support: 'honoured', what: `the generic ephemeral volume's claim, mounted by ${CSI} (csi, hostPath and local PersistentVolumes)`, where: VOLUMES },
  'volume.fc': inTreeVolume('fc', 'attaches it with its in-tree Fibre Channel plugin'),
  'volume.flexVolume': { support: 'honoured', what: 'the driver under volumePluginDir run by the flexvolume plugin (plugins/flexvolume, in the default bundle): init, mount and unmount with upstream\'s options, inline and as a PersistentVolume; a driver that attaches (init without "attach": false) is refused with FailedMount saying so', where: 'plugins/flexvolume/index.ts', refusal: { stage: 'volume-setup', when: 'an attaching driver; an option key under kubernetes.io/', reason: 'FailedMount: FlexVolume driver <driver> attaches volumes / key is reserved' } },
  'volume.flocker': removedVolume('flocker', 'v1.25'),
  'volume.gcePersistentDisk': migratedVolume('pd.csi.storage.gke.io'),
  'volume.gitRepo': inTreeVolume('gitRepo', 'clones the repository with the node\'s git as root, deprecated since v1.11; newer upstream turns it off by default: an init container that clones into an emptyDir does the same without the node'),
  'volume.glusterfs': removedVolume('glusterfs', 'v1.26'),
  'volume.hostPath': { support: 'honoured', what: 'the host path after its type check', where: BUILTIN_VOLUMES },
  'volume.image': { support: 'refused', what: `${NOT_IN_128}: no image volume plugin, FailedMount (a 1.28 kubelet would default the source-less volume to an emptyDir)`, where: VOLUMES, refusal: NO_VOLUME_PLUGIN },
  'volume.iscsi': { support: 'honoured', what: 'logged in to with the node\'s iscsiadm and mounted by the iscsi plugin (plugins/iscsi, in the default bundle), inline and as a Filesystem PersistentVolume, CHAP included; initiatorName and volumeMode Block are refused with FailedMount naming the field', where: 'plugins/iscsi/index.ts', refusal: { stage: 'volume-setup', when: 'initiatorName; a Block PersistentVolume', reason: 'FailedMount: <field> is not supported by kubelet-ts\'s iscsi plugin' } },
  'volume.nfs': { support: 'honoured', what: 'mounted with the node\'s mount.nfs by the nfs plugin (plugins/nfs, in the default bundle), inline and as a PersistentVolume with its mountOptions; a node without mount.nfs fails the mount with FailedMount naming nfs-common', where: 'plugins/nfs/index.ts' },
  'volume.persistentVolumeClaim': { support: 'honoured', what: `the claim's PersistentVolume: csi by ${CSI}, nfs, iscsi and flexVolume by their plugins, hostPath and local by the core`, where: VOLUMES },
  'volume.photonPersistentDisk': removedVolume('photonPersistentDisk', 'a release before v1.28'),
  'volume.portworxVolume': inTreeVolume('portworxVolume', 'mounts it with its in-tree plugin (CSI migration off by default; on by default from v1.31, when the Portworx CSI driver runs on the node)'),
  'volume.projected': { support: 'honoured', what: 'its sources in one directory: see the projected volume sources', where: BUILTIN_VOLUMES },
  'volume.quobyte': removedVolume('quobyte', 'v1.25'),
  'volume.rbd': inTreeVolume('rbd', 'maps it with the node\'s rbd tool, deprecated there; upstream removed it in v1.31: ceph-csi through csi-grpc is the way on both'),
  'volume.scaleIO': removedVolume('scaleIO', 'a release before v1.28'),
  'volume.secret': { support: 'honoured', what: 'files on tmpfs, written atomically, updated while the pod runs', where: BUILTIN_VOLUMES },
  'volume.storageos': removedVolume('storageos', 'v1.25'),
  'volume.vsphereVolume': migratedVolume('csi.vsphere.vmware.com'),

  // V1VolumeProjection
  'projection.clusterTrustBundle': {
    support: 'refused',
    what: 'not in the v1.28 API (v1.29, alpha): an API pod\'s volume is not set up (FailedMount: unsupported projected volume source clusterTrustBundle); a static pod may not have it, as upstream validates',
    where: 'core/volumes/builtin/projection.ts',
    refusal: { stage: 'static-pod-validation', when: 'any value', reason: 'spec.volumes[0].projected.sources[0].clusterTrustBundle: Forbidden: static pods may not use ClusterTrustBundle projected volume sources' },
  },
  'projection.configMap': { support: 'honoured', what: 'a ConfigMap\'s keys as files', where: 'core/volumes/builtin/projection.ts' },
  'projection.downwardAPI': { support: 'honoured', what: 'downward API files', where: 'core/volumes/builtin/projection.ts' },
  'projection.podCertificate': {
    support: 'refused',
    what: `${NOT_IN_128}: an API pod's volume is not set up (FailedMount: unsupported projected volume source podCertificate); a static pod may not have it, as upstream validates`,
    where: 'core/volumes/builtin/projection.ts',
    refusal: { stage: 'static-pod-validation', when: 'any value', reason: 'spec.volumes[0].projected.sources[0].podCertificate: Forbidden: static pods may not use PodCertificate projected volume sources' },
  },
  'projection.secret': { support: 'honoured', what: 'a Secret\'s keys as files', where: 'core/volumes/builtin/projection.ts' },
  'projection.serviceAccountToken': { support: 'honoured', what: 'a bound token, refreshed before it expires (API-server mode; standalone: FailedMount)', where: 'core/apiserver/token-manager.ts' },

  // V1Probe
  'probe.exec': { support: 'honoured', what: 'a command in the container (CRI ExecSync)', where: 'plugins/probes' },
  'probe.failureThreshold': { support: 'honoured', what: 'failures before the probe fails', where: 'plugins/probes' },
  'probe.grpc': { support: 'honoured', what: 'the gRPC health check', where: 'plugins/probes' },
  'probe.httpGet': { support: 'honoured', what: 'an HTTP GET with upstream\'s headers and redirect rules', where: 'plugins/probes' },
  'probe.initialDelaySeconds': { support: 'honoured', what: 'the wait before the first probe', where: 'plugins/probes' },
  'probe.periodSeconds': { support: 'honoured', what: 'the interval', where: 'plugins/probes' },
  'probe.successThreshold': { support: 'honoured', what: 'successes before the probe succeeds again', where: 'plugins/probes' },
  'probe.tcpSocket': { support: 'honoured', what: 'a TCP connect', where: 'plugins/probes' },
  'probe.terminationGracePeriodSeconds': { support: 'honoured', what: 'the grace of a container killed for a failed liveness or startup probe', where: 'core/pod/container-kill-grace.ts' },
  'probe.timeoutSeconds': { support: 'honoured', what: 'each probe\'s timeout', where: 'plugins/probes' },

  // V1Lifecycle
  'lifecycle.postStart': { support: 'honoured', what: 'after the container starts; a failure kills it (FailedPostStartHook)', where: 'core/pod/lifecycle-handlers.ts' },
  'lifecycle.preStop': { support: 'honoured', what: 'before the stop signal, within the grace period', where: 'core/pod/lifecycle-handlers.ts' },
  'lifecycle.stopSignal': { support: 'ignored-as-upstream', what: `${NOT_IN_128}; the image's stop signal (SIGTERM by default) is sent`, where: '-' },

  // V1LifecycleHandler
  'lifecycleHandler.exec': { support: 'honoured', what: 'a command in the container', where: 'core/pod/lifecycle-handlers.ts' },
  'lifecycleHandler.httpGet': { support: 'honoured', what: 'an HTTP GET', where: 'core/pod/lifecycle-handlers.ts' },
  'lifecycleHandler.sleep': { support: 'honoured', what: 'a pause (v1.29; a 1.28 API server drops it)', where: 'core/pod/lifecycle-handlers.ts' },
  'lifecycleHandler.tcpSocket': { support: 'ignored-as-upstream', what: 'deprecated and never run, as upstream v1.28 runs no such handler: the hook fails ("tcpSocket is deprecated and not supported"), a failed postStart kills the container (FailedPostStartHook)', where: 'core/pod/lifecycle-handlers.ts' },
};
