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

/** An error for a gRPC handler to answer: Go's plain errors reach the caller as code Unknown with the message. */
export function handlerError(message: string, code: grpc.status = grpc.status.UNKNOWN): Partial<grpc.ServiceError> {
  return { code, details: message, message };
}
