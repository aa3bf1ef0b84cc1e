import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import { clampTimerMs, errorMessage, KubeletError, NEVER_ABORTS, type ErrorCode } from 'kubelet-ts';
import { loadContentService, loadCriPackage, type CriServiceClient, type CriServiceClientConstructor } from './proto-loader.ts';
import { cachingListDeserializer } from './list-item-cache.ts';

/**
 * The containerd namespace of everything CRI does (containerd's CRI plugin uses this one, and
 * it cannot be configured): calls to containerd's own services name it in their metadata.
 */
export const CRI_CONTAINERD_NAMESPACE = 'k8s.io';

/**
 * A thin promise wrapper over the generated CRI clients: every call carries a deadline and is
 * cancelled when the caller's signal for it aborts (the call's `options.signal` from the core:
 * runtimeRequestTimeout expired, or the work that made the call was given up on), and gRPC errors become the core's
 * typed errors (NotFound, InvalidInput, Unavailable, ...).
 */
export class CriClient {
  private readonly runtime: CriServiceClient;
  private readonly image: CriServiceClient;
  /** containerd's content service on the same socket (pull progress), made on first use. */
  private content: CriServiceClient | undefined;
  private readonly target: string;
  private readonly options: grpc.ChannelOptions;

  constructor(readonly endpoint: string) {
    const { RuntimeService, ImageService } = loadCriPackage();
    const target = endpoint.startsWith('unix://') ? endpoint : `unix://${endpoint}`;
    const options = {
      // Large lists (hundreds of containers with labels) exceed grpc's 4 MiB default; upstream allows 16 MiB.
      'grpc.max_receive_message_length': 16 * 1024 * 1024,
      // Reconnect within a few seconds of the runtime's return: grpc's default back-off grows to
      // 120 s, and PLEG relists failed for a minute after containerd was back.
      'grpc.initial_reconnect_backoff_ms': 250,
      'grpc.max_reconnect_backoff_ms': 2000,
    };
    this.runtime = new (withListItemCache(RuntimeService))(target, grpc.credentials.createInsecure(), options) as CriServiceClient;
    this.image = new ImageService(target, grpc.credentials.createInsecure(), options, ) as CriServiceClient;
    this.target = target;
    this.options = options;
  }

  /** The socket path of a unix:// endpoint. */
  get socketPath(): string {
    return this.endpoint.replace(/^unix:\/\//, '');
  }

  /** Whether the socket file exists (for a clear message before the first call). */
  socketExists(): boolean {
    try {
      return fs.statSync(this.socketPath).isSocket();
    } catch {
      return false;
    }
  }

  callRuntime<T = any>(method: string, request: object, timeoutMs: number, signal: AbortSignal = NEVER_ABORTS): Promise<T> {
    return this.call(this.runtime, method, request, timeoutMs, signal);
  }

  callImage<T = any>(method: string, request: object, timeoutMs: number, signal: AbortSignal = NEVER_ABORTS): Promise<T> {
    return this.call(this.image, method, request, timeoutMs, signal);
  }

  /**
   * Calls containerd's content service (not CRI) on the same socket, in the CRI namespace. A
   * runtime that is no containerd answers Unimplemented (`unknown service`).
   */
  callContent<T = any>(method: string, request: object, timeoutMs: number, signal: AbortSignal = NEVER_ABORTS): Promise<T> {
    this.content ??= new (loadContentService())(this.target, grpc.credentials.createInsecure(), this.options) as CriServiceClient;
    const metadata = new grpc.Metadata();
    metadata.set('containerd-namespace', CRI_CONTAINERD_NAMESPACE);
    return this.call(this.content, method, request, timeoutMs, signal, metadata, 'containerd content');
  }

  /**
   * A server-streaming call of the runtime service: each message to `onMessage` until the
   * server ends the stream (resolves) or `signal` aborts (resolves: the caller ended it); a
   * failed stream rejects with the core's typed error, UNIMPLEMENTED kept as the cause's code
   * (12). No deadline: such a stream lasts as long as its caller wants it.
   */
  streamRuntime<T = any>(method: string, request: object, onMessage: (message: T) => void, signal: AbortSignal = NEVER_ABORTS): Promise<void> {
    if (signal.aborted) return Promise.resolve();
    return new Promise<void>((resolve, reject) => {
      let call: grpc.ClientReadableStream<T>;
      try {
        call = this.runtime[method](request, new grpc.Metadata());
      } catch (err) {
        reject(new KubeletError('InvalidInput', `CRI ${method}: ${err instanceof Error ? err.message : String(err)}`, { cause: err }));
        return;
      }
      const onAbort = () => call.cancel();
      signal.addEventListener('abort', onAbort, { once: true });
      const settle = (err?: grpc.ServiceError) => {
        signal.removeEventListener('abort', onAbort);
        if (!err || (err.code === grpc.status.CANCELLED && signal.aborted)) resolve();
        else reject(toKubeletError(method, err));
      };
      call.on('data', (message: T) => {
        // A consumer's throw must not end the stream nor escape as an uncaught error.
        try {
          onMessage(message);
        } catch {
          /* the consumer's own affair */
        }
      });
      call.on('error', (err: grpc.ServiceError) => settle(err));
      call.on('end', () => settle());
    });
  }

  close(): void {
    this.runtime.close();
    this.image.close();
    this.content?.close();
  }

  private call<T>(client: CriServiceClient, method: string, request: object, timeoutMs: number, signal: AbortSignal, metadata = new grpc.Metadata(), api = 'CRI'): Promise<T> {
    const cancelled = () => new KubeletError('DeadlineExceeded', `${api} ${method}: cancelled: ${errorMessage(signal.reason)}`, { cause: signal.reason });
    if (signal.aborted) return Promise.reject(cancelled());
    return new Promise<T>((resolve, reject) => {
      // A deadline grpc-js can express and time (it throws for ones past ~3.6e11 s).
      const deadline = new Date(Date.now() + (clampTimerMs(timeoutMs) || 1));
      let onAbort: (() => void) | undefined;
      try {
        const call: grpc.ClientUnaryCall = client[method](request, metadata, { deadline }, (err: grpc.ServiceError | null, response: T) => {
          if (onAbort) signal.removeEventListener('abort', onAbort);
          if (err) reject(err.code === grpc.status.CANCELLED && signal.aborted ? cancelled() : toKubeletError(method, err, api));
          else resolve(response);
        });
        // The core gave up on this call: the runtime stops working on it too.
        onAbort = () => call.cancel();
        signal.addEventListener('abort', onAbort, { once: true });
      } catch (err) {
        // A request the generated client cannot serialise (a value out of a field's range) is refused here, not thrown later.
        reject(new KubeletError('InvalidInput', `${api} ${method}: ${err instanceof Error ? err.message : String(err)}`, { cause: err }));
      }
    });
  }
}

/**
 * RuntimeService with PLEG's two list RPCs decoding only items not seen lately
 * (list-item-cache.ts). The cache is this client's own.
 */
function withListItemCache(RuntimeService: CriServiceClientConstructor): CriServiceClientConstructor {
  const service: Record<string, grpc.MethodDefinition<any, any>> = { ...RuntimeService.service };
  // Map fields: Container's labels (8) and annotations (9), PodSandbox's labels (5) and annotations (6).
  for (const [method, field, mapFields] of [['ListContainers', 'containers', [8, 9]], ['ListPodSandbox', 'items', [5, 6]]] as const) {
    const def = service[method]!;
    service[method] = { ...def, responseDeserialize: cachingListDeserializer(def.responseDeserialize, field, mapFields) };
  }
  // Named as the constructor it wraps (`RuntimeService`, as loadCriPackage names it).
  return grpc.makeGenericClientConstructor(service, RuntimeService.serviceName);
}

const CODE_MAP: Partial<Record<grpc.status, ErrorCode>> = {
  [grpc.status.NOT_FOUND]: 'NotFound',
  [grpc.status.INVALID_ARGUMENT]: 'InvalidInput',
  [grpc.status.FAILED_PRECONDITION]: 'InvalidInput',
  [grpc.status.UNAVAILABLE]: 'Unavailable',
  [grpc.status.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [grpc.status.ALREADY_EXISTS]: 'AlreadyExists',
};

function toKubeletError(method: string, err: grpc.ServiceError, api = 'CRI'): KubeletError {
  let code = CODE_MAP[err.code] ?? 'Internal';
  // containerd reports some missing objects as UNKNOWN with a "not found" message.
  if (code === 'Internal' && /not found/i.test(err.details ?? '')) code = 'NotFound';
  const detail = err.details || err.message;
  return new KubeletError(code, `${api} ${method}: ${detail}`, { cause: err });
}
