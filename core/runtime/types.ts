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

export type NamespaceMode = 'POD' | 'CONTAINER' | 'NODE' | 'TARGET';

export interface KeyValue { key: string; value: string }

export interface PodSandboxMetadata { name: string; uid: string; namespace: string; attempt: number }

export interface PortMapping { protocol: 'TCP' | 'UDP' | 'SCTP'; containerPort: number; hostPort: number; hostIp: string }

export interface DnsConfig { servers: string[]; searches: string[]; options: string[] }

export interface LinuxSandboxSecurityContext {
  namespaceOptions: { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode };
  privileged?: boolean;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  supplementalGroups?: number[];
  readonlyRootfs?: boolean;
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
  selinuxRelabel?: boolean;
  propagation?: 'PROPAGATION_PRIVATE' | 'PROPAGATION_HOST_TO_CONTAINER' | 'PROPAGATION_BIDIRECTIONAL';
}

export interface LinuxContainerResources {
  cpuPeriod?: number;
  cpuQuota?: number;
  cpuShares?: number;
  memoryLimitInBytes?: number;
  oomScoreAdj?: number;
}

export interface LinuxContainerSecurityContext {
  namespaceOptions?: { network: NamespaceMode; pid: NamespaceMode; ipc: NamespaceMode };
  privileged?: boolean;
  runAsUser?: { value: number };
  runAsGroup?: { value: number };
  runAsUsername?: string;
  readonlyRootfs?: boolean;
  supplementalGroups?: number[];
  noNewPrivs?: boolean;
  capabilities?: { addCapabilities: string[]; dropCapabilities: string[] };
}

export interface ContainerConfig {
  metadata: { name: string; attempt: number };
  image: { image: string };
  command: string[];
  args: string[];
  workingDir: string;
  envs: KeyValue[];
  mounts: Mount[];
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

/** A container as ContainerStatus reports it. */
export interface ContainerStatus extends ContainerSummary {
  startedAt: number;
  finishedAt: number;
  exitCode: number;
  reason: string;
  message: string;
  logPath: string;
}

export interface RuntimeVersion { runtimeName: string; runtimeVersion: string; runtimeApiVersion: string }

export interface ImageInfo { id: string; repoTags: string[]; repoDigests: string[]; size: number }

export interface ExecResult { stdout: Buffer; stderr: Buffer; exitCode: number }

/** One condition of the runtime (CRI RuntimeCondition): RuntimeReady and NetworkReady are the ones the kubelet requires. */
export interface RuntimeCondition { type: string; status: boolean; reason: string; message: string }

export interface PullAuth { username?: string; password?: string; auth?: string; serverAddress?: string; identityToken?: string; registryToken?: string }

/**
 * ContainerRuntime: the runtime slot. One plugin provides it.
 * Each method is one runtime operation; the core times and logs every call.
 */
export interface ContainerRuntime {
  /** version reports the runtime's name and API version; the core calls it at start. */
  version(): Promise<RuntimeVersion>;
  /** runPodSandbox creates and starts a pod sandbox; returns its id. */
  runPodSandbox(config: PodSandboxConfig, runtimeHandler?: string): Promise<string>;
  /** stopPodSandbox stops the sandbox and any containers in it; idempotent. */
  stopPodSandbox(id: string): Promise<void>;
  /** removePodSandbox removes a stopped sandbox and its containers; NotFound counts as done. */
  removePodSandbox(id: string): Promise<void>;
  /** podSandboxStatus returns one sandbox's status with its IPs. */
  podSandboxStatus(id: string): Promise<SandboxStatus>;
  /** listPodSandboxes returns the sandboxes the runtime holds, optionally only those with all the given labels. */
  listPodSandboxes(filter?: { labelSelector?: Record<string, string> }): Promise<SandboxSummary[]>;
  /** createContainer creates (not starts) a container in a sandbox; returns its id. */
  createContainer(sandboxId: string, config: ContainerConfig, sandboxConfig: PodSandboxConfig): Promise<string>;
  /** startContainer starts a created container. */
  startContainer(id: string): Promise<void>;
  /** stopContainer sends the stop signal and kills after timeoutSeconds; idempotent. */
  stopContainer(id: string, timeoutSeconds: number): Promise<void>;
  /** removeContainer removes a container; NotFound counts as done. */
  removeContainer(id: string): Promise<void>;
  /** listContainers returns the containers the runtime holds, optionally filtered by labels or sandbox. */
  listContainers(filter?: { labelSelector?: Record<string, string>; podSandboxId?: string }): Promise<ContainerSummary[]>;
  /** containerStatus returns one container's full status (exit code, times, reason). */
  containerStatus(id: string): Promise<ContainerStatus>;
  /** execSync runs a command in a running container and waits up to timeoutSeconds. */
  execSync(id: string, cmd: string[], timeoutSeconds: number): Promise<ExecResult>;
  /** imageStatus returns the image if present on the node, else null. */
  imageStatus(image: string): Promise<ImageInfo | null>;
  /** pullImage pulls an image and returns its image reference (id or digest). */
  pullImage(image: string, auth?: PullAuth, sandboxConfig?: PodSandboxConfig): Promise<string>;
  /** listImages returns the images on the node (the Node's status lists them). */
  listImages(): Promise<ImageInfo[]>;
  /** status returns the runtime's conditions (RuntimeReady, NetworkReady): the Node's Ready condition follows them. */
  status(): Promise<RuntimeCondition[]>;
  /** close releases connections; called once at shutdown. */
  close(): Promise<void>;
}
