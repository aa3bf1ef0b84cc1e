import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import { clampTimerMs, KubeletError, type ErrorCode } from 'kubelet-ts';
import { loadCriPackage, type CriServiceClient } from './proto-loader.ts';

/**
 * A thin promise wrapper over the generated CRI clients: every call carries a deadline,
 * and gRPC errors become the core's typed errors (NotFound, InvalidInput, Unavailable, ...).
 */
export class CriClient {
  private readonly runtime: CriServiceClient;
  private readonly image: CriServiceClient;

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
    this.runtime = new RuntimeService(target, grpc.credentials.createInsecure(), options) as CriServiceClient;
    this.image = new ImageService(target, grpc.credentials.createInsecure(), options, ) as CriServiceClient;
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

  callRuntime<T = any>(method: string, request: object, timeoutMs: number): Promise<T> {
    return this.call(this.runtime, method, request, timeoutMs);
  }

  callImage<T = any>(method: string, request: object, timeoutMs: number): Promise<T> {
    return this.call(this.image, method, request, timeoutMs);
  }

  close(): void {
    this.runtime.close();
    this.image.close();
  }

  private call<T>(client: CriServiceClient, method: string, request: object, timeoutMs: number): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      // A deadline grpc-js can express and time (it throws for ones past ~3.6e11 s).
      const deadline = new Date(Date.now() + (clampTimerMs(timeoutMs) || 1));
      try {
        client[method](request, new grpc.Metadata(), { deadline }, (err: grpc.ServiceError | null, response: T) => {
          if (err) reject(toKubeletError(method, err));
          else resolve(response);
        });
      } catch (err) {
        // A request the generated client cannot serialise (a value out of a field's range) is refused here, not thrown later.
        reject(new KubeletError('InvalidInput', `CRI ${method}: ${err instanceof Error ? err.message : String(err)}`, { cause: err }));
      }
    });
  }
}

const CODE_MAP: Partial<Record<grpc.status, ErrorCode>> = {
  [grpc.status.NOT_FOUND]: 'NotFound',
  [grpc.status.INVALID_ARGUMENT]: 'InvalidInput',
  [grpc.status.FAILED_PRECONDITION]: 'InvalidInput',
  [grpc.status.UNAVAILABLE]: 'Unavailable',
  [grpc.status.DEADLINE_EXCEEDED]: 'DeadlineExceeded',
  [grpc.status.ALREADY_EXISTS]: 'AlreadyExists',
};

function toKubeletError(method: string, err: grpc.ServiceError): KubeletError {
  let code = CODE_MAP[err.code] ?? 'Internal';
  // containerd reports some missing objects as UNKNOWN with a "not found" message.
  if (code === 'Internal' && /not found/i.test(err.details ?? '')) code = 'NotFound';
  const detail = err.details || err.message;
  return new KubeletError(code, `CRI ${method}: ${detail}`, { cause: err });
}
