/**
 * Registers this node with the API server and keeps its status, as upstream's kubelet does
 * (registerWithAPIServer, then updateNodeStatus every nodeStatusUpdateFrequency).
 *
 * Registration creates the Node, or adopts the existing one of that name (AlreadyExists: GET,
 * reconcile the labels and annotation the kubelet owns, keep its UID), retrying with upstream's
 * back-off (100 ms doubling, capped at 7 s) until it succeeds; it runs in the background so pods
 * from other sources start while the API server is away.
 *
 * Status: every nodeStatusUpdateFrequency the kubelet reads its Node (the server's Node is the
 * base, so conditions another component changed, such as Ready=Unknown set by the node
 * lifecycle controller after an outage, are seen and corrected), computes the status,
 * lets `nodeStatus` taps change it, and PATCHes nodes/NAME/status with a strategic merge patch
 * when it changed, or when nodeStatusReportFrequency passed since the last post. A node may not
 * GET nodes/status, but GET nodes/NAME returns the status too.
 *
 * Reading the Node: upstream GETs it every period (`?resourceVersion=0`); kubelet-ts keeps a
 * watch of it (NodeWatch) and reads the watched copy while the watch is current, so a steady
 * node makes half the requests (the Lease renewals stay). It GETs the Node when the watch is
 * not synced, failed or went quiet, and on every retry within a period (after a conflict or
 * an error), from etcd. The watch also hands admission the Node's labels and taints as soon as
 * an admin changes them, and sees the Node deleted (registered again at once).
 *
 * Readiness changes are posted at once: the manager polls its readiness inputs every second
 * (one CRI Status call and the PLEG health, both cheap) and posts as soon as the Ready
 * condition differs from the one last posted. It polls rather than waiting to be told because
 * the runtime's and the network's readiness change inside the runtime, where the kubelet does
 * not see them; `readinessChanged()` lets the kubelet post at once for what it does see.
 */
import type { V1Node, V1NodeStatus } from '@kubernetes/client-node';
import type { Logger } from '../logger.ts';
import type { KubeletHooks, NodeConditionDraft, NodeStatusDraft } from '../hooks.ts';
import type { EvictionSignal, NodeTaint, ReservedResources } from '../config/types.ts';
import { errorMessage } from '../errors.ts';
import type { ApiClient } from '../apiserver/api-client.ts';
import { PATCH } from '../apiserver/patch-types.ts';
import { isAlreadyExistsError, isConflictError, isNotFoundError, isUnavailableError } from '../apiserver/api-errors.ts';
import { allocatableReservation, formatResourceList, machineCapacity, nodeAllocatable } from './allocatable.ts';
import { goArch, goOS, readMachineInfo, type MachineInfo } from './machine-info.ts';
import { KUBELET_VERSION } from '../version.ts';
import { kubeletMaySetLabel } from '../objects/node-labels.ts';
import {
  PRESSURE_CONDITIONS,
  conditionsWithTimes,
  defaultNodeLabels,
  initialNode,
  ownedStatusChanged,
  readyCondition,
  reconcileExistingNode,
  statusImages,
  statusPatch,
  type OwnedStatus,
  type RuntimeCondition,
} from './node-object.ts';
import { InterruptibleSleep } from '../util/interruptible-sleep.ts';
import { NodeWatch, type NodeWatchOptions } from './node-watch.ts';
import { hookContext } from '../util/cancellation.ts';
import { withTimeout } from '../util/with-timeout.ts';

/**
 * What node status needs from the rest of the kubelet. The kubelet wires these to its runtime
 * and PLEG; tests give fakes.
 */
export interface NodeStatusInputs {
  /** The runtime's name and version (CRI Version): status.nodeInfo.containerRuntimeVersion is `<name>://<version>`. */
  runtimeVersion(): Promise<{ runtimeName: string; runtimeVersion: string }>;
  /** The runtime's conditions (CRI Status: RuntimeReady, NetworkReady); throws when the runtime cannot be reached. */
  runtimeStatus(): Promise<{ conditions: RuntimeCondition[] }>;
  /** PLEG health (relists keep finishing). */
  plegHealthy(): boolean;
  /** When PLEG last finished a relist, ms since the epoch (0: never): for the not-healthy message. */
  plegLastRelist?(): number;
  /** The images on the node (CRI ListImages). */
  images(): Promise<Array<{ repoTags: string[]; repoDigests: string[]; size: number }>>;
  /**
   * The unique names of the volumes in use that the attach/detach controller must not detach
   * (upstream's volume manager GetVolumesInUse: `kubernetes.io/csi/<driver>^<handle>`).
   */
  volumesInUse?(): string[];
  /** True while a graceful node shutdown is under way: Ready is False, "node is shutting down". */
  shuttingDown?(): boolean;
}

export interface NodeStatusOptions {
  /** The heartbeat client (unthrottled, with a timeout). */
  client: ApiClient;
  /** The core's hooks; `nodeStatus` is fired before each post. */
  hooks: Pick<KubeletHooks, 'nodeStatus'>;
  inputs: NodeStatusInputs;
  logger: Logger;
  nodeName: string;
  /** The host name for the kubernetes.io/hostname label and the Hostname address (upstream: the hostname override). Default nodeName. */
  hostname?: string;
  nodeIP: string;
  /** The kubelet's main port (daemonEndpoints.kubeletEndpoint.Port). */
  port: number;
  rootDir: string;
  maxPods: number;
  nodeLabels: Record<string, string>;
  registerWithTaints: NodeTaint[];
  systemReserved: ReservedResources;
  kubeReserved: ReservedResources;
  evictionHard: Partial<Record<EvictionSignal, string>>;
  updateFrequencyMs: number;
  reportFrequencyMs: number;
  /** How often readiness inputs are polled for an immediate post. Default 1000 ms; 0 disables polling. */
  readinessPollMs?: number;
  /** Deadline of each input call (a hung runtime must not hold back the status post). Default 5000 ms. */
  inputTimeoutMs?: number;
  /** Reads the machine (tests give a fixed one). Default readMachineInfo({rootDir}). */
  machineInfo?: () => Promise<MachineInfo>;
  now?: () => number;
  /**
   * The Node was registered again after it disappeared from the API server (deleted, or etcd
   * wiped or restored): what the kubelet watches may be from a past the server no longer has.
   */
  onRegisteredAgain?: () => void;
  /** Records node events (RegisteredNode, NodeReady, NodeNotReady). */
  onEvent?: (type: 'Normal' | 'Warning', reason: string, message: string) => void;
  /** The watch of the Node (default on; false: GET the Node every period, as upstream; tests set the reflector's timings). */
  watchNode?: false | Pick<NodeWatchOptions, 'reflector'>;
}

/** Upstream's registration back-off: 100 ms doubling (the first wait is 200 ms), capped at 7 s. */
const REGISTER_BACKOFF_START_MS = 200;
const REGISTER_BACKOFF_MAX_MS = 7000;
/** Upstream's nodeStatusUpdateRetry: attempts per update period (conflicts and errors other than an unreachable server). */
const UPDATE_RETRIES = 5;

export class NodeStatusManager {
  private readonly log: Logger;
  private readonly now: () => number;
  private readonly hostname: string;
  private stopped = false;
  private startedRegistration: Promise<V1Node | undefined> | undefined;
  private registeredNode: V1Node | undefined;
  /** Registration succeeded once (a later one is a registration again). */
  private registeredOnce = false;
  private timers: NodeJS.Timeout[] = [];
  private syncing: Promise<void> | undefined;
  private syncAgain = false;
  private lastReportMs = 0;
  /** The status of the Ready condition last posted, to post a change at once. */
  private lastPostedReady: string | undefined;
  private polling = false;
  /** Resource names and labels set by an earlier post: dropped ones are removed (null) in the next. */
  private postedResources = new Set<string>();
  private postedLabels = new Set<string>();
  private lastVersion: { runtimeName: string; runtimeVersion: string } | undefined;
  private lastImages: Array<{ names: string[]; sizeBytes: number }> = [];
  private lastError = '';
  /** Labels from taps that NodeRestriction would refuse, warned about once each. */
  private readonly refusedLabels = new Set<string>();
  /** Back-off sleeps, cut short on stop and when the server answers again. */
  private readonly pause = new InterruptibleSleep();
  /** The watch of the Node, read instead of a GET every period while it is current. */
  private readonly watch: NodeWatch | undefined;

  constructor(private readonly opts: NodeStatusOptions) {
    this.log = opts.logger.child({ component: 'node-status', node: opts.nodeName });
    this.now = opts.now ?? Date.now;
    this.hostname = opts.hostname ?? opts.nodeName;
    if (opts.watchNode !== false) {
      this.watch = new NodeWatch({
        client: opts.client,
        nodeName: opts.nodeName,
        logger: opts.logger,
        ...(opts.now ? { now: opts.now } : {}),
        ...opts.watchNode,
        // Deleted by an admin: the sync's GET confirms it and registers the Node again.
        onDeleted: () => this.requestSync(),
      });
    }
  }

  /** The addresses the Node's status reports (a serving certificate names them). */
  addresses(): Array<{ type: 'InternalIP' | 'Hostname'; address: string }> {
    return [
      { type: 'InternalIP', address: this.opts.nodeIP },
      { type: 'Hostname', address: this.hostname },
    ];
  }

  /** The Node's UID once registered (the Lease's owner). */
  get nodeUID(): string | undefined {
    return this.registeredNode?.metadata?.uid;
  }

  /** The Node as the API server last showed it, watched (labels, taints: what admission checks pods against). */
  get node(): V1Node | undefined {
    return this.watch?.node ?? this.registeredNode;
  }

  /** Starts registration (in the background) and the status loops. */
  start(): void {
    this.watch?.start();
    void this.register();
    this.timers.push(setInterval(() => this.requestSync(), this.opts.updateFrequencyMs));
    const poll = this.opts.readinessPollMs ?? 1000;
    if (poll > 0) this.timers.push(setInterval(() => void this.pollReadiness(), poll));
    for (const t of this.timers) t.unref();
  }

  async stop(): Promise<void> {
    this.stopped = true;
    for (const t of this.timers.splice(0)) clearInterval(t);
    this.pause.wake();
    await Promise.all([this.syncing?.catch(() => {}), this.watch?.stop()]);
  }

  /** Resolves with the registered Node (created or adopted) once registration succeeded; undefined if stopped first. */
  register(): Promise<V1Node | undefined> {
    this.startedRegistration ??= this.registerLoop();
    return this.startedRegistration;
  }

  /** The kubelet saw something that may change readiness (runtime, PLEG): post at once if Ready changed. */
  readinessChanged(): void {
    void this.pollReadiness();
  }

  /** Computes the status and posts it if it changed or the report period passed (`force`: post anyway). Resolves when done. */
  async updateNow(force = false): Promise<void> {
    if (force) this.lastReportMs = 0;
    this.requestSync();
    while (this.syncing) await this.syncing;
  }

  private requestSync(): void {
    if (this.stopped || !this.registeredNode) return;
    if (this.syncing) {
      this.syncAgain = true;
      return;
    }
    this.syncing = (async () => {
      try {
        do {
          this.syncAgain = false;
          await this.syncWithRetries();
          // Registering again (the Node was gone): the registration syncs when it is done.
        } while (this.syncAgain && !this.stopped && this.registeredNode);
      } finally {
        this.syncing = undefined;
      }
    })();
  }

  private async registerLoop(): Promise<V1Node | undefined> {
    let backoff = REGISTER_BACKOFF_START_MS;
    while (!this.stopped) {
      try {
        const node = await this.tryRegister();
        this.registeredNode = node;
        this.watch?.observe(node);
        this.lastError = '';
        this.log.info({ uid: node.metadata?.uid }, 'node registered');
        if (this.registeredOnce) {
          this.watch?.relist('the Node was registered again');
          this.opts.onRegisteredAgain?.();
        }
        this.registeredOnce = true;
        this.requestSync();
        return node;
      } catch (err) {
        this.logFailure('node registration failed; retrying', err, backoff);
      }
      await this.pause.sleep(backoff);
      backoff = Math.min(backoff * 2, REGISTER_BACKOFF_MAX_MS);
    }
    return undefined;
  }

  /** One registration attempt (upstream tryRegisterWithAPIServer). */
  private async tryRegister(): Promise<V1Node> {
    const { client, nodeName } = this.opts;
    const owned = await this.computeStatus(undefined);
    const node = initialNode({
      name: nodeName,
      labels: { ...defaultNodeLabels(this.hostname, goOS(), goArch()), ...owned.labels },
      nodeLabels: this.opts.nodeLabels,
      taints: this.opts.registerWithTaints,
      status: ownedToStatus(owned),
    });
    try {
      const created = await client.request<V1Node>('POST', '/api/v1/nodes', { body: node });
      this.rememberPosted(owned);
      this.opts.onEvent?.('Normal', 'RegisteredNode', `Node ${nodeName} registered`);
      this.readinessPosted(readyKey(owned));
      this.lastReportMs = this.now();
      return created;
    } catch (err) {
      if (!isAlreadyExistsError(err)) throw err;
    }
    const existing = await client.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(nodeName)}`);
    const patch = reconcileExistingNode(node, existing);
    if (!patch) return existing;
    this.log.info({ patch }, 'adopting the existing Node: reconciling the labels and annotation the kubelet owns');
    return client.request<V1Node>('PATCH', `/api/v1/nodes/${encodeURIComponent(nodeName)}/status`, { body: patch, contentType: PATCH.strategic });
  }

  private async syncWithRetries(): Promise<void> {
    for (let attempt = 0; attempt < UPDATE_RETRIES && !this.stopped; attempt++) {
      try {
        await this.syncOnce(attempt === 0);
        this.lastError = '';
        return;
      } catch (err) {
        if (isNotFoundError(err)) {
          // The first GET reads the watch cache, which may not have a Node created a moment ago.
          if (attempt === 0) continue;
          // Deleted (kubectl delete node): register it again. Upstream's kubelet keeps failing
          // until it is restarted; re-registering is what its operators do by hand.
          // One registration at a time: a sync queued behind the one that started it finds the
          // Node gone too, and a second registration would tell the pod source twice.
          if (!this.registeredNode) return;
          this.log.warn('the Node was deleted from the API server; registering it again');
          this.registeredNode = undefined;
          this.startedRegistration = undefined;
          this.lastPostedReady = undefined;
          void this.register();
          return;
        }
        // An unreachable server is not retried within the period: the next tick tries again.
        if (isUnavailableError(err) || attempt === UPDATE_RETRIES - 1) {
          this.logFailure('node status update failed', err);
          return;
        }
        if (!isConflictError(err)) this.logFailure('node status update failed; retrying', err);
      }
    }
  }

  /** Read the Node, compute the status, post it when it changed or the report period passed. */
  private async syncOnce(fromCache: boolean): Promise<void> {
    const { client, nodeName } = this.opts;
    const server = (fromCache ? this.watch?.current()?.node : undefined) ?? (await this.getNode(fromCache));
    this.registeredNode = server;
    const owned = await this.computeStatus(server);
    const changed = ownedStatusChanged(server, owned);
    if (!changed && this.now() - this.lastReportMs < this.opts.reportFrequencyMs) return;
    const dropped = {
      resources: [...this.postedResources].filter((r) => !(r in owned.capacity)),
      labels: [...this.postedLabels].filter((l) => !(l in owned.labels)),
    };
    const patch = statusPatch(owned, dropped);
    const updated = await client.request<V1Node>('PATCH', `/api/v1/nodes/${encodeURIComponent(nodeName)}/status`, { body: patch, contentType: PATCH.strategic });
    this.registeredNode = updated;
    this.watch?.observe(updated);
    this.rememberPosted(owned);
    const ready = readyKey(owned);
    if (ready !== this.lastPostedReady) this.log.info({ ready: owned.conditions.find((c) => c.type === 'Ready') }, 'posted a change of node readiness');
    this.readinessPosted(ready);
    this.lastReportMs = this.now();
  }

  /**
   * GET the Node: the watch is not current, says the Node is gone (confirmed here: the watch
   * may lag a Node created a moment ago), or this is a retry. The first try reads the API
   * server's watch cache (resourceVersion=0), as upstream's does; a retry reads etcd.
   */
  private async getNode(fromCache: boolean): Promise<V1Node> {
    const node = await this.opts.client.request<V1Node>('GET', `/api/v1/nodes/${encodeURIComponent(this.opts.nodeName)}`, fromCache ? { query: { resourceVersion: '0' } } : {});
    this.watch?.observe(node);
    return node;
  }

  /** Ready as last posted; a change is an event (NodeReady / NodeNotReady, worded as upstream's). */
  private readinessPosted(ready: string | undefined): void {
    if (ready !== undefined && ready !== this.lastPostedReady) {
      const what = ready === 'True' ? 'NodeReady' : 'NodeNotReady';
      this.opts.onEvent?.(ready === 'True' ? 'Normal' : 'Warning', what, `Node ${this.opts.nodeName} status is now: ${what}`);
    }
    this.lastPostedReady = ready;
  }

  private rememberPosted(owned: OwnedStatus): void {
    this.postedResources = new Set(Object.keys(owned.capacity));
    this.postedLabels = new Set(Object.keys(owned.labels));
  }

  /** Readiness inputs now; posts at once when Ready differs from the last post. */
  private async pollReadiness(): Promise<void> {
    if (this.stopped || !this.registeredNode || this.lastPostedReady === undefined || this.polling) return;
    this.polling = true;
    try {
      // Only True/False flips post at once: a changed message (PLEG's elapsed time, another
      // cause of NotReady) waits for the next period, as upstream's does.
      const ready = await this.readyDraft(['cpu', 'memory', 'pods', 'ephemeral-storage']);
      if (ready.status !== this.lastPostedReady) this.requestSync();
    } finally {
      this.polling = false;
    }
  }

  private async readyDraft(capacity: string[]): Promise<NodeConditionDraft> {
    const { inputs } = this.opts;
    let runtime: { conditions: RuntimeCondition[] } | { error: string };
    try {
      runtime = await this.bounded(inputs.runtimeStatus(), 'the runtime status');
    } catch (err) {
      runtime = { error: errorMessage(err) };
    }
    return readyCondition({ runtime, plegHealthy: inputs.plegHealthy(), plegLastRelistMs: inputs.plegLastRelist?.(), capacity, shuttingDown: inputs.shuttingDown?.() ?? false, now: this.now() });
  }

  /** Everything the kubelet posts about the node, after the `nodeStatus` taps. */
  private async computeStatus(server: V1Node | undefined): Promise<OwnedStatus> {
    const opts = this.opts;
    const inputs = opts.inputs;
    const machine = await (opts.machineInfo ?? (() => readMachineInfo({ rootDir: opts.rootDir })))();
    const capacityQ = machineCapacity(machine, opts.maxPods);
    const allocatableQ = nodeAllocatable(capacityQ, allocatableReservation(capacityQ, opts));
    const capacity = formatResourceList(capacityQ);
    const ready = await this.readyDraft(Object.keys(capacity));
    let draft: NodeStatusDraft = {
      capacity,
      allocatable: formatResourceList(allocatableQ),
      conditions: [...PRESSURE_CONDITIONS.map((c) => ({ ...c })), ready],
      labels: {},
    };
    draft = await opts.hooks.nodeStatus.promise(draft, { nodeName: opts.nodeName, node: server }, hookContext());
    const labels: Record<string, string> = {};
    for (const [k, v] of Object.entries(draft.labels ?? {})) {
      if (kubeletMaySetLabel(k)) labels[k] = v;
      else if (!this.refusedLabels.has(k)) {
        this.refusedLabels.add(k);
        this.log.warn({ label: k }, 'a nodeStatus tap set a label NodeRestriction does not let a node set; not posted');
      }
    }

    try {
      this.lastVersion = await this.bounded(inputs.runtimeVersion(), 'the runtime version');
    } catch (err) {
      this.log.debug({ err: errorMessage(err) }, 'runtime version unavailable');
    }
    try {
      this.lastImages = statusImages(await this.bounded(inputs.images(), 'the image list'));
    } catch (err) {
      // Keep the last list: an empty one would tell the scheduler the node has no images.
      this.log.debug({ err: errorMessage(err) }, 'image list unavailable; keeping the last one');
    }
    const now = this.now();
    return {
      capacity: draft.capacity,
      allocatable: draft.allocatable,
      conditions: conditionsWithTimes(draft.conditions, server?.status?.conditions, now),
      addresses: this.addresses(),
      daemonEndpoints: { kubeletEndpoint: { Port: opts.port } },
      nodeInfo: {
        machineID: machine.machineID,
        systemUUID: machine.systemUUID,
        bootID: machine.bootID,
        kernelVersion: machine.kernelVersion,
        osImage: machine.osImage,
        containerRuntimeVersion: `${this.lastVersion?.runtimeName ?? 'unknown'}://${this.lastVersion?.runtimeVersion ?? 'Unknown'}`,
        kubeletVersion: KUBELET_VERSION,
        kubeProxyVersion: KUBELET_VERSION,
        operatingSystem: goOS(),
        architecture: goArch(),
      },
      images: this.lastImages,
      labels,
      volumesInUse: [...new Set(inputs.volumesInUse?.() ?? [])].sort(),
    };
  }

  /** An input call with the input deadline: a runtime that does not answer counts as down. */
  private bounded<T>(p: Promise<T>, what: string): Promise<T> {
    const ms = this.opts.inputTimeoutMs ?? 5000;
    return withTimeout(p, ms, { unref: true, error: () => new Error(`${what} did not come within ${ms} ms`) });
  }

  /** Logs a failure once per distinct message (an unreachable server is logged once per outage by the client). */
  private logFailure(what: string, err: unknown, retryInMs?: number): void {
    const message = errorMessage(err);
    const fields = { err: message, ...(retryInMs !== undefined ? { retryInMs } : {}) };
    if (isUnavailableError(err) || message === this.lastError) this.log.debug(fields, what);
    else this.log.error(fields, what);
    this.lastError = message;
  }

}

function readyKey(owned: OwnedStatus): string | undefined {
  return owned.conditions.find((c) => c.type === 'Ready')?.status;
}

function ownedToStatus(owned: OwnedStatus): V1NodeStatus {
  return {
    capacity: owned.capacity,
    allocatable: owned.allocatable,
    conditions: owned.conditions,
    addresses: owned.addresses,
    daemonEndpoints: owned.daemonEndpoints,
    nodeInfo: owned.nodeInfo as unknown as V1NodeStatus['nodeInfo'],
    images: owned.images,
    ...(owned.volumesInUse?.length ? { volumesInUse: owned.volumesInUse } : {}),
  };
}
