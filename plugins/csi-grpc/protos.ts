// Loads csi.proto and pluginregistration.proto once, for the plugin and for test drivers.
// Calls go through the SDK's `unary`, errors print with its `rpcErrorText`.
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

/** The gRPC status code of an error, if it has one. */
export function rpcCode(err: unknown): number | undefined {
  const c = (err as Partial<grpc.ServiceError>)?.code;
  return typeof c === 'number' ? c : undefined;
}
