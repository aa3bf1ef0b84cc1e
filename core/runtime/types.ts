/**
 * The container runtime capability: what the core needs from a runtime plugin.
 *
 * The shapes follow the CRI v1 API (field names in camelCase) because every real runtime
 * speaks CRI, so a CRI plugin maps them one to one; a non-CRI runtime (a VM or a remote
 * provider) implements the same narrow interface. Times are milliseconds since the epoch.
 *
 * Error contract: methods throw `KubeletError` from core/errors.ts. `NotFound` for an id the
 * runtime does not know (callers treat it as "already gone" when stopping or removing),
 * `InvalidInput` for a config the runtime refuses (not retried until the pod changes),
 * `Unavailable` / `DeadlineExceeded` for transient failures (retried with backoff).
 */
import type { CallOptions } from '../util/cancellation.ts';

export type { CallOptions } from '../util/cancellation.ts';

export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';
/** CRI IDMapping: `length` IDs from `containerId` in the namespace are `hostId`... on the host. */
export interface IDMapping { hostId: number; containerId: number; length: number }

/** CRI UserNamespace: POD gives the pod a user namespace with these mappings; NODE (or none) keeps the host's. */
export interface UserNamespaceOptions { mode: 'POD' | 'NODE'; uids: IDMapping[]; gids: IDMapping[] }

/**
 * CRI NamespaceOption: `targetId` names the container whose namespace a TARGET mode joins (an
 * ephemeral container's target); `usernsOptions` a user namespace of the pod's own (`hostUsers: false`).
 */
export interface NamespaceOptions { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode; targetId?: string; usernsOptions?: UserNamespaceOptions }

export interface KeyValue { key: string; value: string }

export interface PodSandboxMetadata { name: string; uid: string; namespace: string; attempt: number }

export interface PortMapping { protocol: 'TCP' | 'UDP' | 'SCTP'; containerPort: number; hostPort: number; hostIp: string }

export interface DnsConfig { servers: string[]; searches: string[]; options: string[] }

/** CRI SecurityProfile: a seccomp or AppArmor profile; `localhostRef` only with Localhost. */
export interface SecurityProfile { profileType: 'RuntimeDefault' | 'Unconfined' | 'Localhost'; localhostRef?: string }

/** CRI SELinuxOption (applied by runtimes only where SELinux is enabled). */
export interface SELinuxOption { user: string; role: string; type: string; level: string }

export interface LinuxSandboxSecurityContext {
  namespaceOptions: NamespaceOptions;
  privileged?: boolean;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  supplementalGroups?: number[];
  readonlyRootfs?: boolean;
  selinuxOptions?: SELinuxOption;
  seccomp?: SecurityProfile;
  /** The deprecated spelling of `seccomp` (`runtime/default`, `unconfined`, `localhost/<path>`), for runtimes that read only it. */
  seccompProfilePath?: string;
}

export interface PodSandboxConfig {
  metadata: PodSandboxMetadata;
  hostname: string;
  logDirectory: string;
  dnsConfig?: DnsConfig;
  portMappings: PortMapping[];
  labels: Record<string, string>;
  annotations: Record<string, string>;
  linux: {
    cgroupParent?: string;
    securityContext: LinuxSandboxSecurityContext;
    sysctls?: Record<string, string>;
  };
}

export interface Mount {
  containerPath: string;
  hostPath: string;
  readonly?: boolean;
  /** Submounts read-only too (CRI Mount.recursive_read_only); only on a handler that reports recursiveReadOnlyMounts. */
  recursiveReadOnly?: boolean;
  selinuxRelabel?: boolean;
  propagation?: 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
}

/** A host device node given to a container (CRI Device): what device plugins allocate. */
export interface ContainerDevice {
  containerPath: string;
  hostPath: string;
  /** cgroup permissions: some of `r`, `w`, `m`. */
  permissions: string;
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
  /** Huge page limits by page size as the runtime spells it ('2MB', '1GB'), bytes (CRI HugepageLimit). */
  hugepageLimits?: Array<{ pageSize: string; limit: number }>;
}

export interface LinuxContainerSecurityContext {
  namespaceOptions?: NamespaceOptions;
  privileged?: boolean;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  capabilities?: { addCapabilities: string[]; dropCapabilities: string[] };
  selinuxOptions?: SELinuxOption;
  /** Paths the runtime masks in the container (procMount Default: upstream's list). */
  maskedPaths?: string[];
  /** Paths the runtime makes read-only in the container (procMount Default: upstream's list). */
  readonlyPaths?: string[];
  seccomp?: SecurityProfile;
  /** The deprecated spelling of `seccomp`, for runtimes that read only it. */
  seccompProfilePath?: string;
  apparmor?: SecurityProfile;
  /** The deprecated spelling of `apparmor` (`runtime/default`, `unconfined`, `localhost/<name>`). */
  apparmorProfile?: string;
}

export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command: string[];
  args: string[];
  workingDir: string;
  envs: KeyValue[];
  mounts: Mount[];
  /** Host device nodes (device plugins' allocations). */
  devices?: ContainerDevice[];
  /**
   * CDI devices by fully-qualified name (`vendor.com/gpu=gpu0`) that the runtime resolves from
   * its CDI spec dirs (CRI `CDI_devices`; containerd 1.7 with `enable_cdi`, 2.x by default; a
   * runtime without CDI ignores them).
   */
  CDIDevices?: Array<{ name: string }>;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  /** Relative to the sandbox's logDirectory, as CRI defines it. */
  logPath: string;
  stdin?: boolean;
  stdinOnce?: boolean;
  tty?: boolean;
  linux: { resources: LinuxContainerResources; securityContext: LinuxContainerSecurityContext };
}

export type SandboxState = 'SANDBOX_READY' | 'SANDBOX_NOTREADY';
export type ContainerState = 'CONTAINER_CREATED' | 'CONTAINER_RUNNING' | 'CONTAINER_EXITED' | 'CONTAINER_UNKNOWN';

/** A sandbox as ListPodSandbox reports it. */
export interface SandboxSummary {
  id: string;
  metadata: PodSandboxMetadata;
  state: SandboxState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/** A sandbox as PodSandboxStatus reports it. */
export interface SandboxStatus extends SandboxSummary {
  /** The primary pod IP ('' when the sandbox shares the node's network or has none). */
  ip: string;
  additionalIps: string[];
  /** The path of the sandbox's network namespace, when the runtime tells it. */
  netnsPath?: string;
  /** The pid of the sandbox's process (pause) on the host, when the runtime tells it: a way into its namespaces. */
  pid?: number;
}

/** A container as ListContainers reports it. */
export interface ContainerSummary {
  id: string;
  podSandboxId: string;
  metadata: { name: string; attempt: number };
  image: string;
  imageRef: string;
  state: ContainerState;
  createdAt: number;
  labels: Record<string, string>;
  annotations: Record<string, string>;
}

/**
 * A container as ContainerStatus reports it. CRI's ContainerStatus has no sandbox id: a CRI
 * runtime leaves `podSandboxId` empty here (listContainers has it).
 */
export interface ContainerStatus extends ContainerSummary {
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  logPath: string;
  /** The container's mounts as the runtime holds them (the termination message file is found here). */
  mounts?: Mount[];
}

export interface RuntimeVersion { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }

export interface ImageInfo {
  id: string;
  repoTags: string[];
  repoDigests: string[];
  size: number;
  /** The runtime keeps it whatever happens (CRI Image.pinned: the sandbox image on containerd 1.7+): image GC never removes it. */
  pinned?: boolean;
  /** The image's user when it is numeric (CRI Image.uid); runAsNonRoot is checked against it. */
  uid?: number;
  /** The image's user when it is a name (CRI Image.username). */
  username?: string;
}

export interface ExecResult { stdout: Buffer; stderr: Buffer; exitCode: number }

/** One condition of the runtime (CRI RuntimeCondition): RuntimeReady and NetworkReady are the ones the kubelet requires. */
export interface RuntimeCondition { type: string; status: boolean; reason: string; message: string }

/** The streams of an exec or attach session (CRI ExecRequest / AttachRequest). */
export interface StreamOptions { stdin: boolean; stdout: boolean; stderr: boolean; tty: boolean }

/** CPU use (CRI CpuUsage); times are milliseconds since the epoch. */
export interface CpuUsage { timestamp: number; usageCoreNanoSeconds?: number; usageNanoCores?: number }

/** Memory use (CRI MemoryUsage), in bytes. */
export interface MemoryUsage {
  timestamp: number;
  workingSetBytes?: number;
  availableBytes?: number;
  usageBytes?: number;
  rssBytes?: number;
  pageFaults?: number;
  majorPageFaults?: number;
}

/** A filesystem's use by the runtime (CRI FilesystemUsage): an image filesystem, or a container's writable layer. */
export interface FilesystemUsage { timestamp: number; mountpoint: string; usedBytes?: number; inodesUsed?: number }

export interface NetworkInterfaceUsage { name: string; rxBytes?: number; rxErrors?: number; txBytes?: number; txErrors?: number }

/** A pod's network use (CRI NetworkUsage). */
export interface NetworkUsage { timestamp: number; defaultInterface?: NetworkInterfaceUsage; interfaces: NetworkInterfaceUsage[] }

/** One container's resource use (CRI ContainerStats). */
export interface ContainerStats {
  id: string;
  metadata: { name: string; attempt: number };
  labels: Record<string, string>;
  annotations: Record<string, string>;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  writableLayer?: FilesystemUsage;
}

/** One pod sandbox's resource use (CRI PodSandboxStats, Linux), with its containers'. */
export interface PodSandboxStats {
  id: string;
  metadata: PodSandboxMetadata;
  labels: Record<string, string>;
  annotations: Record<string, string>;
  cpu?: CpuUsage;
  memory?: MemoryUsage;
  network?: NetworkUsage;
  processCount?: number;
  containers: ContainerStats[];
}

/**
 * One download of an image pull in flight, as the runtime reports it (containerd: an active
 * ingest of its content store). Downloads are blobs (layers, configs, manifests), named by
 * digest, not by image: the core attributes them to the pulls it runs. Numbers are checked
 * by the core (a runtime may report anything); times are milliseconds since the epoch, 0 when
 * unknown.
 */
export interface PullProgress {
  /** The runtime's name for the download (containerd: `layer-sha256:…`). */
  ref: string;
  /** Bytes downloaded so far. */
  offsetBytes: number;
  /** The blob's size in bytes, 0 when unknown. */
  totalBytes: number;
  /** When the download began (a resumed download keeps its first start). */
  startedAt: number;
  /** When bytes last arrived. */
  updatedAt: number;
}

export interface PullAuth { username?: string; password?: string; auth?: string; serverAddress?: string; identityToken?: string; registryToken?: string }

/**
 * ContainerRuntime: the runtime slot. One plugin provides it.
 * Each method is one runtime operation; the core times and logs every call.
 *
 * Cancellation: every method takes `options` last, whose `signal` is how the caller gives up on
 * the call. The core's wrapper hands each call a signal of its own that also aborts when
 * runtimeRequestTimeout expires (plus the call's own timeout for stopContainer and execSync;
 * pullImage and close have no deadline of the core's). A runtime honours it: a call whose
 * signal is already aborted is refused without doing anything, and one in flight stops its
 * work (cancels its request) and rejects. The core waits one more second for the runtime's
 * own error, then fails the call with DeadlineExceeded.
 * The runtime contract (`kubelet-ts/testing`) checks it.
 */
/** What a runtime handler can do (CRI RuntimeHandler and its features, from Status). */
export interface RuntimeHandlerInfo {
  /** The handler's name: '' for the runtime's default. */
  name: string;
  /** Pods of this handler can have user namespaces of their own (`hostUsers: false`). */
  userNamespaces: boolean;
  /** Read-only mounts can be made recursively read-only. */
  recursiveReadOnlyMounts: boolean;
}

/** What a runtime reports of its own configuration (CRI RuntimeConfigResponse). */
export interface RuntimeConfig {
  /** The cgroup driver its OCI runtime uses: the kubelet's must be the same. */
  cgroupDriver?: 'systemd' | 'cgroupfs';
}

/**
 * A change of one container the runtime reports as it happens (CRI ContainerEventResponse).
 * The core takes it as a prompt to look again (PLEG relists at once), never as the state
 * itself: a relist reads the state, so a lost or reordered event costs only latency.
 */
export interface ContainerEvent {
  /** The container's id; a sandbox's own events name the sandbox's id. */
  containerId: string;
  type: 'created' | 'started' | 'stopped' | 'deleted';
  /** When it happened (ms since the epoch), 0 when not said. */
  at: number;
}

/** How a container event stream ended: the runtime has none (containerd 1.6), or it closed (the runtime restarted, or the caller's signal aborted). */
export type ContainerEventsEnd = 'unsupported' | 'ended';

export interface ContainerRuntime {
  /** version reports the runtime's name and API version; the core calls it at start. */
  version(options?: CallOptions): Promise<RuntimeVersion>;
  /** runPodSandbox creates and starts a pod sandbox; returns its id. */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string, options?: CallOptions): Promise<string>;
  /** stopPodSandbox stops the sandbox and any containers in it; idempotent. */
  stopPodSandbox(id: string, options?: CallOptions): Promise<void>;
  /** removePodSandbox removes a stopped sandbox and its containers; NotFound counts as done. */
  removePodSandbox(id: string, options?: CallOptions): Promise<void>;
  /** podSandboxStatus returns one sandbox's status with its IPs. */
  podSandboxStatus(id: string, options?: CallOptions): Promise<SandboxStatus>;
  /** listPodSandboxes returns the sandboxes the runtime holds, optionally only those with all the given labels. */
  listPodSandboxes(filter?: { labelSelector?: Record<string, string> }, options?: CallOptions): Promise<SandboxSummary[]>;
  /** createContainer creates (not starts) a container in a sandbox; returns its id. */
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig, options?: CallOptions): Promise<string>;
  /** startContainer starts a created container. */
  startContainer(id: string, options?: CallOptions): Promise<void>;
  /** stopContainer sends the stop signal and kills after timeoutSeconds; idempotent. */
  stopContainer(id: string, timeoutSeconds: number, options?: CallOptions): Promise<void>;
  /** removeContainer removes a container; NotFound counts as done. */
  removeContainer(id: string, options?: CallOptions): Promise<void>;
  /** listContainers returns the containers the runtime holds, optionally filtered by labels or sandbox. */
  listContainers(filter?: { labelSelector?: Record<string, string>; podSandboxId?: string }, options?: CallOptions): Promise<ContainerSummary[]>;
  /** containerStatus returns one container's full status (exit code, times, reason). */
  containerStatus(id: string, options?: CallOptions): Promise<ContainerStatus>;
  /** execSync runs a command in a running container and waits up to timeoutSeconds. */
  execSync(id: string, cmd: string[], timeoutSeconds: number, options?: CallOptions): Promise<ExecResult>;
  /** imageStatus returns the image if present on the node, else null. */
  imageStatus(image: string, options?: CallOptions): Promise<ImageInfo | null>;
  /** pullImage pulls an image and returns its image reference (id or digest). */
  pullImage(image: string, auth?: PullAuth, sandboxConfig?: PodSandboxConfig, options?: CallOptions): Promise<string>;
  /**
   * pullProgress returns the downloads of image pulls in flight on the node, whoever started
   * them (optional: without it pulls show no progress). The core calls it about once a second
   * and only while one of its pulls runs; it should answer within a second or two.
   */
  pullProgress?(options?: CallOptions): Promise<PullProgress[]>;
  /** listImages returns the images on the node (the Node's status lists them). */
  listImages(options?: CallOptions): Promise<ImageInfo[]>;
  /** status returns the runtime's conditions (RuntimeReady, NetworkReady): the Node's Ready condition follows them. */
  status(options?: CallOptions): Promise<RuntimeCondition[]>;
  /**
   * exec prepares a streaming session of a command in a running container and returns the URL
   * of the runtime's streaming server that serves it; the kubelet proxies the client's upgraded
   * connection there. Optional: without it the kubelet answers 501 (so are attach and portForward).
   */
  exec?(req: { containerId: string; cmd: string[] } & StreamOptions, options?: CallOptions): Promise<string>;
  /** attach prepares a streaming session attached to a running container's own stdio; returns its URL. */
  attach?(req: { containerId: string } & StreamOptions, options?: CallOptions): Promise<string>;
  /** portForward prepares a port-forward session into a sandbox's network namespace; returns its URL. */
  portForward?(podSandboxId: string, ports: number[], options?: CallOptions): Promise<string>;
  /** listContainerStats returns the resource use of containers (optional: the stats service then reads cgroups only). */
  listContainerStats?(filter?: { labelSelector?: Record<string, string>; podSandboxId?: string }, options?: CallOptions): Promise<ContainerStats[]>;
  /** listPodSandboxStats returns the resource use of ready pod sandboxes (optional: pod figures are then summed from containers and cgroups). */
  listPodSandboxStats?(filter?: { labelSelector?: Record<string, string> }, options?: CallOptions): Promise<PodSandboxStats[]>;
  /** imageFsInfo returns the filesystems holding images (and container writable layers). */
  imageFsInfo?(options?: CallOptions): Promise<FilesystemUsage[]>;
  /** removeImage removes an image from the node (image GC); removing an absent image is not an error. Optional: without it images are never collected. */
  removeImage?(image: string, options?: CallOptions): Promise<void>;
  /** reopenContainerLog makes the runtime write a running container's log to a new file at its log path (after the kubelet renamed the old one). Optional: without it logs are not rotated. */
  reopenContainerLog?(containerId: string, options?: CallOptions): Promise<void>;
  /**
   * runtimeConfig returns what the runtime says of its own configuration that the kubelet must
   * agree with (CRI RuntimeConfig: the cgroup driver of containerd >= 2.0); undefined when the
   * runtime does not say (containerd 1.x answers Unimplemented). Optional.
   */
  runtimeConfig?(options?: CallOptions): Promise<RuntimeConfig | undefined>;
  /** runtimeHandlers returns the handlers the runtime reports and what each can do (CRI Status); empty when it reports none (containerd 1.x). Optional. */
  runtimeHandlers?(options?: CallOptions): Promise<RuntimeHandlerInfo[]>;
  /** sandboxImage returns the image the runtime makes pod sandboxes from, if it says (image GC never removes it). */
  sandboxImage?(options?: CallOptions): Promise<string | undefined>;
  /**
   * containerEvents streams the runtime's container lifecycle events to `onEvent` until the
   * stream ends: it resolves 'unsupported' at once when the runtime has no such stream
   * (CRI GetContainerEvents is containerd >= 1.7), 'ended' when the runtime closed it or
   * options.signal aborted; it rejects when the stream failed. No deadline: the stream lasts
   * as long as the kubelet. Optional: without it (or 'unsupported') PLEG only relists every
   * plegRelistPeriod; with it PLEG also relists as soon as a container changes.
   */
  containerEvents?(onEvent: (event: ContainerEvent) => void, options?: CallOptions): Promise<ContainerEventsEnd>;
  /** close releases connections. The plugin host calls it once at stop, after every plugin's own cleanup (a runtime plugin does not register it with onClose). */
  close(options?: CallOptions): Promise<void>;
}
