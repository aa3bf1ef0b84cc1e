import * as grpc from '@grpc/grpc-js';
import { setTimeout as sleep } from 'node:timers/promises';
import { rpcErrorText, unary, type CallOptions } from 'kubelet-ts';
import { loadCsiProtos, rpcCode } from './protos.ts';

/** Codes worth one more try at once (the driver restarting, a connection being set up). */
const TRANSIENT = new Set<number>([grpc.status.UNAVAILABLE]);

/**
 * A CSI driver's Identity and Node services over its unix socket. Every call has a
 * deadline; a transient failure (UNAVAILABLE) is tried again twice; other failures come
 * back as `<Method>: rpc error: code = ... desc = ...`.
 */
export class CsiDriverClient {
  private readonly identity: grpc.Client;
  private readonly node: grpc.Client;
  private capabilities: Promise<Set<string>> | undefined;

  constructor(readonly name: string, readonly endpoint: string, private readonly timeoutMs: number) {
    const { Identity, Node } = loadCsiProtos();
    const address = endpoint.startsWith('unix:') ? endpoint : `unix:${endpoint}`;
    this.identity = new Identity(address, grpc.credentials.createInsecure());
    this.node = new Node(address, grpc.credentials.createInsecure());
  }

  private async call<T>(client: grpc.Client, method: string, request: object, options?: CallOptions): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await unary<T>(client, method, request, this.timeoutMs, options);
      } catch (err) {
        if (options?.signal?.aborted) throw err;
        if (attempt < 2 && TRANSIENT.has(rpcCode(err) ?? -1)) {
          await sleep(200 * (attempt + 1));
          continue;
        }
        throw Object.assign(new Error(`${method}: ${rpcErrorText(err)}`, { cause: err }), { code: rpcCode(err) });
      }
    }
  }

  getPluginInfo(): Promise<{ name: string; vendorVersion: string }> {
    return this.call(this.identity, 'GetPluginInfo', {});
  }

  nodeGetInfo(options?: CallOptions): Promise<{ nodeId: string; maxVolumesPerNode: string }> {
    return this.call(this.node, 'NodeGetInfo', {}, options);
  }

  /** The Node service's RPC capabilities (asked once per registration). */
  nodeCapabilities(): Promise<Set<string>> {
    this.capabilities ??= this.call<{ capabilities: Array<{ rpc?: { type: string } }> }>(this.node, 'NodeGetCapabilities', {})
      .then((r) => new Set(r.capabilities.map((c) => c.rpc?.type).filter((t): t is string => !!t)))
      .catch((err) => {
        this.capabilities = undefined;
        throw err;
      });
    return this.capabilities;
  }

  nodeStageVolume(req: object, options?: CallOptions): Promise<object> {
    return this.call(this.node, 'NodeStageVolume', req, options);
  }

  nodeUnstageVolume(req: { volumeId: string; stagingTargetPath: string }, options?: CallOptions): Promise<object> {
    return this.call(this.node, 'NodeUnstageVolume', req, options);
  }

  nodePublishVolume(req: object, options?: CallOptions): Promise<object> {
    return this.call(this.node, 'NodePublishVolume', req, options);
  }

  nodeUnpublishVolume(req: { volumeId: string; targetPath: string }, options?: CallOptions): Promise<object> {
    return this.call(this.node, 'NodeUnpublishVolume', req, options);
  }

  /** Figures as the proto loader gives them: int64 as decimal strings, enums as names. */
  nodeGetVolumeStats(req: { volumeId: string; volumePath: string; stagingTargetPath: string }, options?: CallOptions): Promise<{ usage: Array<{ available: string; total: string; used: string; unit: string }>; volumeCondition?: { abnormal: boolean; message: string } | null }> {
    return this.call(this.node, 'NodeGetVolumeStats', req, options);
  }

  /** Grows a published volume's file system (capacity as int64 decimal strings, as the proto loader wants them). */
  nodeExpandVolume(req: { volumeId: string; volumePath: string; stagingTargetPath: string; capacityRange: { requiredBytes: string; limitBytes: string }; volumeCapability: object; secrets: Record<string, string> }, options?: CallOptions): Promise<{ capacityBytes: string }> {
    return this.call(this.node, 'NodeExpandVolume', req, options);
  }

  close(): void {
    this.identity.close();
    this.node.close();
  }
}
