import * as grpc from '@grpc/grpc-js';
import { errorMessage, rpcErrorText, unary, type CallOptions, type ContainerAllocation, type Device, type DeviceProvider, type DeviceRegistration, type Logger, type PreferredAllocationRequest } from 'kubelet-ts';
import { loadDevicePluginProtos } from './protos.ts';

/** Bounds of one plugin connection. */
export interface PluginClientLimits {
  /** How long the plugin's socket may take to accept a connection and answer GetDevicePluginOptions (upstream dials for 10 s). */
  dialTimeoutMs: number;
  /** Deadline of Allocate, GetPreferredAllocation and PreStartContainer. */
  callTimeoutMs: number;
  /** The largest message the plugin may send (a ListAndWatch list, an Allocate answer). */
  maxMessageBytes: number;
}

interface WireDevice { ID?: string; health?: string; topology?: { nodes?: Array<{ ID?: string }> } | null }
interface WireOptions { preStartRequired?: boolean; getPreferredAllocationAvailable?: boolean }
interface WireMount { containerPath?: string; hostPath?: string; readOnly?: boolean }
interface WireDeviceSpec { containerPath?: string; hostPath?: string; permissions?: string }
interface WireContainerResponse { envs?: Record<string, string>; mounts?: WireMount[]; devices?: WireDeviceSpec[]; annotations?: Record<string, string>; cdiDevices?: Array<{ name?: string }> }

/** A ListAndWatch device as the device manager takes it. */
export function toDevice(d: WireDevice): Device {
  const nodes = d.topology?.nodes?.map((n) => Number(n.ID)).filter((n) => Number.isSafeInteger(n));
  return { id: d.ID ?? '', health: d.health === 'Healthy' ? 'Healthy' : 'Unhealthy', ...(nodes && nodes.length > 0 ? { numaNodes: nodes } : {}) };
}

/** One container's Allocate answer as the device manager takes it (it checks it: allocation-policy). */
export function toAllocation(r: WireContainerResponse): Partial<ContainerAllocation> {
  return {
    envs: { ...(r.envs ?? {}) },
    mounts: (r.mounts ?? []).map((m) => ({ containerPath: m.containerPath ?? '', hostPath: m.hostPath ?? '', readOnly: m.readOnly === true })),
    devices: (r.devices ?? []).map((d) => ({ containerPath: d.containerPath ?? '', hostPath: d.hostPath ?? '', permissions: d.permissions ?? '' })),
    annotations: { ...(r.annotations ?? {}) },
    cdiDevices: (r.cdiDevices ?? []).map((c) => c.name ?? ''),
  };
}

/**
 * The kubelet's side of one registered device plugin (upstream's plugin client and endpoint):
 * the connection to its socket, its options, its ListAndWatch stream fed to the device
 * manager, and a DeviceProvider that turns the manager's calls into RPCs. The stream ending
 * (the plugin stopped, or sent a message over the bound) closes the registration: the
 * plugin must register again, as upstream.
 */
export class PluginClient {
  private readonly client: grpc.Client;
  private stream: grpc.ClientReadableStream<{ devices?: WireDevice[] }> | undefined;
  private registration: DeviceRegistration | undefined;
  private closed = false;
  options: WireOptions = {};

  constructor(
    readonly resourceName: string,
    readonly socket: string,
    private readonly limits: PluginClientLimits,
    private readonly logger: Logger,
  ) {
    const { DevicePlugin } = loadDevicePluginProtos();
    this.client = new DevicePlugin(`unix:${socket}`, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': limits.maxMessageBytes,
      'grpc.max_send_message_length': limits.maxMessageBytes,
      // A unix socket: no reconnect back-off beyond what a restarting plugin needs.
      'grpc.initial_reconnect_backoff_ms': 200,
      'grpc.max_reconnect_backoff_ms': 2000,
    });
  }

  /** Dials the plugin and reads its options (upstream Connect); throws with upstream's words. */
  async connect(): Promise<void> {
    try {
      await new Promise<void>((resolve, reject) => this.client.waitForReady(Date.now() + this.limits.dialTimeoutMs, (err) => (err ? reject(err) : resolve())));
    } catch (err) {
      throw new Error(`failed to dial device plugin: ${errorMessage(err)}`, { cause: err });
    }
    try {
      this.options = await unary<WireOptions>(this.client, 'GetDevicePluginOptions', {}, this.limits.dialTimeoutMs);
    } catch (err) {
      throw new Error(`failed to get device plugin options: ${rpcErrorText(err)}`, { cause: err });
    }
  }

  /** What the device manager calls: Allocate, and GetPreferredAllocation / PreStartContainer when the plugin offers them. */
  provider(): DeviceProvider {
    const p: DeviceProvider = {
      resourceName: this.resourceName,
      allocate: async (ids, options) => {
        const r = await this.call<{ containerResponses?: WireContainerResponse[] }>('Allocate', { containerRequests: [{ devicesIds: ids }] }, options);
        const responses = r.containerResponses ?? [];
        if (responses.length === 0) throw new Error(`no containers return in allocation response ${JSON.stringify(r)}`);
        if (responses.length !== 1) throw new Error(`device plugin answered ${responses.length} container responses to 1 container request`);
        return toAllocation(responses[0]!);
      },
    };
    if (this.options.getPreferredAllocationAvailable) {
      p.preferredAllocation = async (req: PreferredAllocationRequest, options?: CallOptions) => {
        const r = await this.call<{ containerResponses?: Array<{ deviceIDs?: string[] }> }>('GetPreferredAllocation', {
          containerRequests: [{ availableDeviceIDs: req.available, mustIncludeDeviceIDs: req.mustInclude, allocationSize: req.size }],
        }, options);
        return r.containerResponses?.[0]?.deviceIDs ?? [];
      };
    }
    if (this.options.preStartRequired) {
      p.preStart = async (ids, options) => {
        await this.call('PreStartContainer', { devicesIds: ids }, options);
      };
    }
    return p;
  }

  /** Feeds ListAndWatch to `registration`; its end closes the registration and this client. */
  watch(registration: DeviceRegistration): void {
    this.registration = registration;
    const stream = (this.stream = (this.client as unknown as Record<string, (req: object) => grpc.ClientReadableStream<{ devices?: WireDevice[] }>>).ListAndWatch!.call(this.client, {}));
    stream.on('data', (msg: { devices?: WireDevice[] }) => {
      const devices = (msg.devices ?? []).map(toDevice);
      this.logger.debug({ resource: this.resourceName, devices: devices.length }, 'state pushed by device plugin');
      registration.update(devices);
    });
    const ended = (err?: unknown) => {
      if (this.closed) return;
      this.logger.warn({ resource: this.resourceName, socket: this.socket, err: err ? rpcErrorText(err) : 'the stream ended' }, 'ListAndWatch ended unexpectedly for device plugin');
      this.close();
    };
    stream.on('error', (err) => ended(err));
    stream.on('end', () => ended());
  }

  /** Ends the stream and the connection; the registration closes (its devices turn unhealthy). */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    this.stream?.cancel();
    this.client.close();
    this.registration?.close();
  }

  private async call<T>(method: string, request: object, options?: CallOptions): Promise<T> {
    if (this.closed) throw new Error(`the connection to the device plugin of ${this.resourceName} is closed`);
    try {
      return await unary<T>(this.client, method, request, this.limits.callTimeoutMs, options);
    } catch (err) {
      throw new Error(rpcErrorText(err), { cause: err });
    }
  }
}
