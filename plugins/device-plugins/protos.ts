// Loads the device plugin API v1beta1 (proto/deviceplugin.proto) once, for the plugin and for test plugins.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { loadGrpcClientConstructors, type GrpcProtoOptions } from 'kubelet-ts';

export const DEVICE_PLUGIN_PROTO = fileURLToPath(new URL('./proto/deviceplugin.proto', import.meta.url));

/** camelCase fields (resource_name → resourceName, ID stays ID), int64 as strings, defaults filled. */
export const LOADER_OPTIONS: GrpcProtoOptions = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true };

/** The API version this kubelet speaks (upstream's SupportedVersions). */
export const SUPPORTED_VERSIONS = ['v1beta1'] as const;

export interface DevicePluginProtos {
  Registration: grpc.ServiceClientConstructor;
  DevicePlugin: grpc.ServiceClientConstructor;
}

let cached: DevicePluginProtos | undefined;

export function loadDevicePluginProtos(): DevicePluginProtos {
  if (cached) return cached;
  cached = loadGrpcClientConstructors(DEVICE_PLUGIN_PROTO, ['v1beta1.Registration', 'v1beta1.DevicePlugin'], LOADER_OPTIONS);
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

/** `rpc error: code = Unknown desc = ...`, as Go's gRPC (and so upstream's messages) print a status. */
export function rpcErrorText(err: unknown): string {
  const e = err as Partial<grpc.ServiceError>;
  if (typeof e?.code === 'number') return `rpc error: code = ${CODE_NAMES[e.code] ?? e.code} desc = ${e.details ?? e.message}`;
  return err instanceof Error ? err.message : String(err);
}

/** An error for a gRPC handler to answer: Go's plain errors reach the caller as code Unknown with the message. */
export function handlerError(message: string, code: grpc.status = grpc.status.UNKNOWN): Partial<grpc.ServiceError> {
  return { code, details: message, message };
}
