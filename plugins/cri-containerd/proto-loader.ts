// Loads the CRI v1 protocol (proto/api.proto) once and hands out grpc-js
// client constructors / service definitions for RuntimeService and ImageService.
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';

/** Absolute path of the CRI v1 api.proto shipped with this plugin. */
export const CRI_PROTO_PATH: string = fileURLToPath(new URL('./proto/api.proto', import.meta.url));

/**
 * proto-loader options used for CRI. Fields are camelCased (created_at -> createdAt);
 * int64/uint64 come back as decimal strings (nanosecond timestamps exceed 2^53);
 * enums as their names ('SANDBOX_READY'); unset scalars get their defaults.
 */
export const CRI_LOADER_OPTIONS: protoLoader.Options = {
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
  /** The raw proto-loader package definition (e.g. for reflection or message types). */
  packageDefinition: protoLoader.PackageDefinition;
}

let cached: CriPackage | undefined;

/** Loads api.proto (memoized) and returns the CRI v1 service constructors. */
export function loadCriPackage(): CriPackage {
  if (cached) return cached;
  const packageDefinition = protoLoader.loadSync(CRI_PROTO_PATH, CRI_LOADER_OPTIONS);
  const root = grpc.loadPackageDefinition(packageDefinition) as any;
  const v1 = root?.runtime?.v1;
  if (!v1?.RuntimeService || !v1?.ImageService) {
    throw new Error(`CRI proto at ${CRI_PROTO_PATH} does not define runtime.v1.RuntimeService/ImageService`);
  }
  cached = {
    RuntimeService: v1.RuntimeService as CriServiceClientConstructor,
    ImageService: v1.ImageService as CriServiceClientConstructor,
    packageDefinition,
  };
  return cached;
}

/** Names of the RPCs defined on a service (e.g. ['Version', 'RunPodSandbox', ...]). */
export function criMethodNames(ctor: CriServiceClientConstructor): string[] {
  return Object.keys(ctor.service);
}

/** Absolute path of the slice of containerd's content service this plugin uses (pull progress). */
export const CONTENT_PROTO_PATH: string = fileURLToPath(new URL('./proto/content.proto', import.meta.url));

let contentCached: CriServiceClientConstructor | undefined;

/** Loads content.proto (memoized) and returns the `containerd.services.content.v1.Content` client constructor. */
export function loadContentService(): CriServiceClientConstructor {
  if (contentCached) return contentCached;
  const root = grpc.loadPackageDefinition(protoLoader.loadSync(CONTENT_PROTO_PATH, CRI_LOADER_OPTIONS)) as any;
  const Content = root?.containerd?.services?.content?.v1?.Content;
  if (!Content) throw new Error(`proto at ${CONTENT_PROTO_PATH} does not define containerd.services.content.v1.Content`);
  contentCached = Content as CriServiceClientConstructor;
  return contentCached;
}
