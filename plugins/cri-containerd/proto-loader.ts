// Loads the CRI v1 protocol (proto/api.proto) once and hands out grpc-js
// client constructors / service definitions for RuntimeService and ImageService.
// The .proto text is parsed by the SDK's loadGrpcClientConstructors (protobufjs, with
// proto-loader's codecs) rather than @grpc/proto-loader, whose descriptor objects for
// reflection cost a node about 4.5 MiB of RSS it never reads (bench/README.md, 2026-11-27).
import { fileURLToPath } from 'node:url';
import type * as grpc from '@grpc/grpc-js';
import { loadGrpcClientConstructors, type GrpcProtoOptions } from 'kubelet-ts';

/** Absolute path of the CRI v1 api.proto shipped with this plugin. */
export const CRI_PROTO_PATH: string = fileURLToPath(new URL('./proto/api.proto', import.meta.url));

/**
 * proto-loader options used for CRI. Fields are camelCased (created_at -> createdAt);
 * int64/uint64 come back as decimal strings (nanosecond timestamps exceed 2^53);
 * enums as their names ('SANDBOX_READY'); unset scalars get their defaults.
 */
export const CRI_LOADER_OPTIONS: GrpcProtoOptions = {
  keepCase: false,
  longs: String,
  enums: String,
  defaults: true,
  oneofs: true,
};

/** Fully qualified gRPC service names, as containerd serves them. */
export const CRI_RUNTIME_SERVICE = 'runtime.v1.RuntimeService';
export const CRI_IMAGE_SERVICE = 'runtime.v1.ImageService';

/** A generated client constructor; `.service` is the service definition for `server.addService`. */
export type CriServiceClientConstructor = grpc.ServiceClientConstructor;
/** An instance of a generated CRI client (methods take (request, [metadata], [options], callback)). */
export type CriServiceClient = grpc.Client & Record<string, any>;

/** What loadCriPackage() returns. */
export interface CriPackage {
  /** runtime.v1.RuntimeService client constructor (`.service` = definition). */
  RuntimeService: CriServiceClientConstructor;
  /** runtime.v1.ImageService client constructor (`.service` = definition). */
  ImageService: CriServiceClientConstructor;
}

let cached: CriPackage | undefined;

/** Loads api.proto (memoized) and returns the CRI v1 service constructors. */
export function loadCriPackage(): CriPackage {
  if (cached) return cached;
  const { RuntimeService, ImageService } = loadGrpcClientConstructors(CRI_PROTO_PATH, [CRI_RUNTIME_SERVICE, CRI_IMAGE_SERVICE], CRI_LOADER_OPTIONS);
  cached = { RuntimeService, ImageService };
  return cached;
}

/** Names of the RPCs defined on a service (e.g. ['Version', 'RunPodSandbox', ...]). */
export function criMethodNames(ctor: CriServiceClientConstructor): string[] {
  return Object.keys(ctor.service);
}

/** Absolute path of the slice of containerd's content service this plugin uses (pull progress). */
export const CONTENT_PROTO_PATH: string = fileURLToPath(new URL('./proto/content.proto', import.meta.url));

const CONTENT_SERVICE = 'containerd.services.content.v1.Content';
let contentCached: CriServiceClientConstructor | undefined;

/** Loads content.proto (memoized) and returns the `containerd.services.content.v1.Content` client constructor. */
export function loadContentService(): CriServiceClientConstructor {
  if (contentCached) return contentCached;
  contentCached = loadGrpcClientConstructors(CONTENT_PROTO_PATH, [CONTENT_SERVICE], CRI_LOADER_OPTIONS).Content;
  return contentCached;
}
