/**
 * What a kubelet with a kubeconfig runs against the API server, built from its config in one
 * place: the three API clients (main, throttled; heartbeat, with a timeout; events, throttled on
 * its own), the `api` pod source,
 * and, with registerNode, the node status manager and the node Lease. The kubelet adds
 * `podSource` to its sources and calls start() / stop(); it passes its runtime and PLEG as
 * NodeStatusInputs and its hooks (for `nodeStatus`).
 */
import type { KubeletConfig } from '../config/types.ts';
import type { KubeletHooks } from '../hooks.ts';
import type { Logger } from '../logger.ts';
import { createKubeletApiClients, type ApiClient, type SharedClientOptions } from '../apiserver/api-client.ts';
import { KubeconfigError, loadKubeconfig, type KubeconfigOverrides, type LoadedKubeconfig } from '../apiserver/kubeconfig.ts';
import { ApiPodSource } from '../sources/api-pods.ts';
import { NodeLease } from './node-lease.ts';
import { NodeStatusManager, type NodeStatusInputs } from './node-status.ts';
import type { MachineInfo } from './machine-info.ts';

export interface ApiNode {
  /** The throttled client (pods, and whatever else the kubelet reads: secrets, configmaps, tokens). */
  main: ApiClient;
  /** The heartbeat client (node status, Lease). */
  heartbeat: ApiClient;
  /** The events client (eventRecordQPS / eventBurst). */
  events: ApiClient;
  /** The `api` pod source, for the kubelet's sources. */
  podSource: ApiPodSource;
  /** Node registration and status; undefined when registerNode is false. */
  nodeStatus: NodeStatusManager | undefined;
  /** The node Lease; undefined when registerNode is false. */
  lease: NodeLease | undefined;
  /** Starts registration, status posts and Lease renewals (the pod source is started by the kubelet with its other sources). */
  start(): void;
  /** Stops status and Lease and closes the clients' connections (after the kubelet stopped the pod source). */
  stop(): Promise<void>;
}

/**
 * Loads and checks the kubeconfig before anything else starts (the kubelet calls it first):
 * an unreadable or invalid file, or a node identity of another node, is a KubeconfigError
 * naming the file. Under the Node authorizer a `system:node:X` identity may act only as node
 * X: another node name would fail every request with Forbidden.
 */
export function checkKubeconfig(kubeconfig: string, nodeName: string, overrides: KubeconfigOverrides = {}, preloaded?: LoadedKubeconfig): void {
  const loaded = preloaded ?? loadKubeconfig(kubeconfig, overrides);
  const certNode = /^system:node:(.+)$/.exec(loaded.identity.user ?? '')?.[1];
  if (certNode !== undefined && certNode !== nodeName) {
    throw new KubeconfigError(
      kubeconfig,
      `it authenticates as system:node:${certNode}, but this node's name is "${nodeName}" (nodeName / --node-name): the API server lets it act only as node "${certNode}"; set --node-name ${certNode}, or use the kubeconfig of node "${nodeName}"`,
    );
  }
}

/** Builds the API side of the node from the config. Throws KubeconfigError for an unusable kubeconfig. */
export function createApiNode(deps: {
  config: KubeletConfig & { kubeconfig: string };
  hooks: Pick<KubeletHooks, 'nodeStatus'>;
  inputs: NodeStatusInputs;
  logger: Logger;
  /** Records node events (registration, readiness changes). */
  onEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** With rotateCertificates: the clients' credentials are the certificate store's current pair. */
  kubeconfigOverrides?: KubeconfigOverrides;
  /** A transport shared with other nodes of the process, an identity to act as (`kubelet-ts hollow`). */
  shared?: SharedClientOptions;
  /** Reads the machine for the node status; default readMachineInfo of the root dir (hollow nodes share one read). */
  machineInfo?: () => Promise<MachineInfo>;
  /** The pod watch's silence check (tests); default the reflector's 150 s. */
  watchSilenceMs?: number;
}): ApiNode {
  const { config, logger } = deps;
  checkKubeconfig(config.kubeconfig, config.nodeName, deps.kubeconfigOverrides, deps.shared?.kubeconfig);
  const { main, heartbeat, events } = createKubeletApiClients(config, logger, deps.kubeconfigOverrides, deps.shared);
  const podSource = new ApiPodSource({ client: main, nodeName: config.nodeName, logger, ...(deps.watchSilenceMs !== undefined ? { silenceMs: deps.watchSilenceMs } : {}) });
  const nodeStatus = config.registerNode
    ? new NodeStatusManager({
      client: heartbeat,
      hooks: deps.hooks,
      inputs: deps.inputs,
      logger,
      nodeName: config.nodeName,
      nodeIP: config.nodeIP,
      port: config.port,
      rootDir: config.rootDir,
      maxPods: config.maxPods,
      nodeLabels: config.nodeLabels,
      registerWithTaints: config.registerWithTaints,
      systemReserved: config.systemReserved,
      kubeReserved: config.kubeReserved,
      evictionHard: config.evictionHard,
      ...(deps.machineInfo ? { machineInfo: deps.machineInfo } : {}),
      updateFrequencyMs: config.nodeStatusUpdateFrequencyMs,
      reportFrequencyMs: config.nodeStatusReportFrequencyMs,
      ...(deps.onEvent ? { onEvent: deps.onEvent } : {}),
      // The Node disappeared and is back: the pods bound to it are read again from etcd (a
      // watch resuming from before an etcd wipe or restore would see nothing).
      onRegisteredAgain: () => podSource.relist('the Node was registered again (it had disappeared from the API server)'),
    })
    : undefined;
  const lease = config.registerNode
    ? new NodeLease({ client: heartbeat, nodeName: config.nodeName, leaseDurationSeconds: config.nodeLeaseDurationSeconds, logger, nodeUID: () => nodeStatus?.nodeUID })
    : undefined;
  return {
    main,
    heartbeat,
    events,
    podSource,
    nodeStatus,
    lease,
    start() {
      logger.info({ server: main.server, identity: main.describeIdentity(), registerNode: config.registerNode }, 'connecting to the API server');
      nodeStatus?.start();
      lease?.start();
    },
    async stop() {
      await Promise.all([nodeStatus?.stop(), lease?.stop()]);
      main.close();
      heartbeat.close();
      events.close();
    },
  };
}
