// Loads csi.proto and pluginregistration.proto once, for the plugin and for test drivers.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadGrpcClientConstructors, type GrpcProtoOptions } from 'kubelet-ts';

const CSI_PROTO = fileURLToPath(new URL('./proto/csi.proto', import.meta.url));
const REGISTRATION_PROTO = fileURLToPath(new URL('./proto/pluginregistration.proto', import.meta.url));

/** camelCase fields, enums as names, int64 as strings, defaults filled, oneof names set. */
export const LOADER_OPTIONS: GrpcProtoOptions = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true };

export interface CsiProtos {
  Identity: grpc.ServiceClientConstructor;
  Node: grpc.ServiceClientConstructor;
  Registration: grpc.ServiceClientConstructor;
}

let cached: CsiProtos | undefined;

export function loadCsiProtos(): CsiProtos {
  if (cached) return cached;
  cached = {
    ...loadGrpcClientConstructors(CSI_PROTO, ['csi.v1.Identity', 'csi.v1.Node'], LOADER_OPTIONS),
    ...loadGrpcClientConstructors(REGISTRATION_PROTO, ['pluginregistration.Registration'], LOADER_OPTIONS),
  };
  return cached;
}

/** A unary call with a deadline, as a promise. */
export function unary<T>(client: grpc.Client, method: string, request: object, timeoutMs: number): Promise<T> {
  return new Promise((resolve, reject) => {
    const fn = (client as unknown as Record<string, Function>)[method];
    if (typeof fn !== 'function') return reject(new Error(`no method ${method}`));
    fn.call(client, request, { deadline: Date.now() + timeoutMs }, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res)));
  });
}

const CODE_NAMES: Record<number, string> = Object.fromEntries(Object.entries(grpc.status).filter(([, v]) => typeof v === 'number').map(([k, v]) => [v as number, k.split('_').map((w) => w[0] + w.slice(1).toLowerCase()).join('')]));

/** `rpc error: code = Internal desc = ...`, as Go's gRPC (and so upstream's events) print a status. */
export function rpcErrorText(err: unknown): string {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code === 'number') return `rpc error: code = ${CODE_NAMES[e.code] ?? e.code} desc = ${e.details ?? e.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** The gRPC status code of an error, if it has one. */
export function rpcCode(err: unknown): number | undefined {
  const c = (err as Partial<grpc.ServiceError>)?.code;
  return typeof c === 'number' ? c : undefined;
}
