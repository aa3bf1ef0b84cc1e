import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { errorMessage, loadGrpcClientConstructors, serveHttp2OnUnixSocket, type DeviceManagerView, type GrpcProtoOptions, type Logger, type UnixHttp2Listener } from 'kubelet-ts';
import type { V1Pod } from '@kubernetes/client-node';
import { allocatableDevices, listPodResources, podResources } from './pod-resources.ts';

export const PODRESOURCES_PROTO = fileURLToPath(new URL('./proto/podresources.proto', import.meta.url));
const LOADER_OPTIONS: GrpcProtoOptions = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true };
/** Requests carry at most two names. */
const MAX_REQUEST_BYTES = 64 * 1024;

/** The v1 PodResourcesLister service definition (for the server, and for clients in tests). */
export function loadPodResourcesLister(): grpc.ServiceClientConstructor {
  return loadGrpcClientConstructors(PODRESOURCES_PROTO, ['v1.PodResourcesLister'], LOADER_OPTIONS).PodResourcesLister;
}

/** A token bucket: `qps` tokens a second, at most `burst` saved (upstream's golang.org/x/time/rate limiter). */
class TokenBucket {
  private tokens: number;
  private last = performance.now();
  constructor(private readonly qps: number, private readonly burst: number) {
    this.tokens = burst;
  }

  allow(): boolean {
    const now = performance.now();
    this.tokens = Math.min(this.burst, this.tokens + ((now - this.last) / 1000) * this.qps);
    this.last = now;
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }
}

export interface PodResourcesServerOptions {
  dir: string;
  qps: number;
  burst: number;
  pods: () => V1Pod[];
  devices: () => DeviceManagerView;
  logger: Logger;
}

/**
 * The podresources API v1 on `<dir>/kubelet.sock`, as upstream serves it: List, GetAllocatableResources,
 * Get, each request within upstream's rate limit (refused with ResourceExhausted, "rejected by
 * rate limit"). What it reports comes from the device manager through the SDK.
 */
export class PodResourcesServer {
  private server: grpc.Server | undefined;
  private listener: UnixHttp2Listener | undefined;
  private readonly limiter: TokenBucket;

  constructor(private readonly opts: PodResourcesServerOptions) {
    this.limiter = new TokenBucket(opts.qps, opts.burst);
  }

  get socketPath(): string {
    return path.join(this.opts.dir, 'kubelet.sock');
  }

  async start(): Promise<void> {
    await fs.mkdir(this.opts.dir, { recursive: true, mode: 0o750 });
    const server = new grpc.Server({ 'grpc.max_receive_message_length': MAX_REQUEST_BYTES });
    const handle = <Req, Res>(method: string, answer: (req: Req) => Res) => (call: grpc.ServerUnaryCall<Req, Res>, cb: grpc.sendUnaryData<Res>) => {
      if (!this.limiter.allow()) {
        cb({ code: grpc.status.RESOURCE_EXHAUSTED, details: 'rejected by rate limit' });
        return;
      }
      try {
        cb(null, answer(call.request));
      } catch (err) {
        this.opts.logger.debug({ method, err: errorMessage(err) }, 'podresources request failed');
        cb({ code: grpc.status.UNKNOWN, details: errorMessage(err) });
      }
    };
    server.addService(loadPodResourcesLister().service, {
      List: handle('List', () => ({ podResources: listPodResources(this.opts.pods(), this.opts.devices()) })),
      GetAllocatableResources: handle('GetAllocatableResources', () => ({ devices: allocatableDevices(this.opts.devices()), cpuIds: [], memory: [] })),
      Get: handle<{ podName?: string; podNamespace?: string }, object>('Get', (req) => {
        const pod = this.opts.pods().find((p) => p.metadata?.name === req.podName && (p.metadata?.namespace ?? 'default') === req.podNamespace);
        if (!pod) throw new Error(`pod ${req.podName} in namespace ${req.podNamespace} not found`);
        return { podResources: podResources(pod, this.opts.devices()) };
      }),
    });
    // Go clients (monitoring agents) name the socket path as authority: see serveHttp2OnUnixSocket.
    const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
    this.server = server;
    this.listener = await serveHttp2OnUnixSocket(this.socketPath, (c) => injector.injectConnection(c), { mode: 0o600, maxConnections: 64 });
    this.opts.logger.info({ socket: this.socketPath }, 'serving the podresources API');
  }

  async stop(): Promise<void> {
    await this.listener?.close();
    this.listener = undefined;
    this.server?.forceShutdown();
    this.server = undefined;
  }
}
