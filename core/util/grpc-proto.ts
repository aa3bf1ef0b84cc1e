import { createRequire } from 'node:module';
import type * as Grpc from '@grpc/grpc-js';
import type { ServiceClientConstructor, ServiceDefinition } from '@grpc/grpc-js';
import type * as Protobuf from 'protobufjs';

/**
 * How decoded messages look (protobufjs's parse and conversion options, the same names and
 * meaning as @grpc/proto-loader's `Options`): `keepCase: false` camelCases field names,
 * `longs: String` gives int64 as decimal strings, `enums: String` enum names, `defaults` fills
 * unset scalars, `oneofs` sets a oneof's virtual property to the name of the field that is set.
 */
export interface GrpcProtoOptions {
  keepCase?: boolean;
  longs?: typeof String | typeof Number;
  enums?: typeof String;
  bytes?: typeof String | typeof Array;
  defaults?: boolean;
  arrays?: boolean;
  objects?: boolean;
  oneofs?: boolean;
  json?: boolean;
}

/**
 * Loads a .proto file and returns the gRPC service definitions it declares, by fully qualified
 * name (`runtime.v1.RuntimeService`), for `grpc.makeClientConstructor` or `server.addService`.
 *
 * What @grpc/proto-loader's `loadSync` + `grpc.loadPackageDefinition` give a client or server,
 * without what they build for reflection: proto-loader also turns every message, enum and
 * method's request and response into a descriptor object and encodes each file's descriptor,
 * which for the CRI api.proto cost about 4.5 MiB of RSS a node never reads (bench/README.md,
 * 2026-11-27). The codecs are proto-loader's: requests are `fromObject` + `encode`, responses
 * `decode` + `toObject(options)`, so messages decode to the same objects as before.
 * protobufjs is loaded on the first call, so a kubelet whose plugins speak no gRPC never loads it.
 */
export function loadGrpcServiceDefinitions(protoPath: string, options: GrpcProtoOptions = {}): Record<string, ServiceDefinition> {
  const protobuf = createRequire(import.meta.url)('protobufjs') as typeof Protobuf;
  const root = new protobuf.Root().loadSync(protoPath, { keepCase: options.keepCase ?? false });
  root.resolveAll();
  const out: Record<string, ServiceDefinition> = {};
  for (const service of servicesOf(root, protobuf)) {
    const name = service.fullName.replace(/^\./, '');
    const def: Record<string, ServiceDefinition[string]> = {};
    for (const method of service.methodsArray) {
      const request = method.resolvedRequestType!;
      const response = method.resolvedResponseType!;
      def[method.name] = {
        path: `/${name}/${method.name}`,
        requestStream: !!method.requestStream,
        responseStream: !!method.responseStream,
        requestSerialize: serializer(request),
        requestDeserialize: deserializer(request, options),
        responseSerialize: serializer(response),
        responseDeserialize: deserializer(response, options),
        originalName: lowerCamel(method.name),
      };
    }
    out[name] = def as ServiceDefinition;
  }
  return out;
}

/** The last component of a fully qualified service name (`runtime.v1.RuntimeService` → `RuntimeService`). */
export type GrpcServiceShortName<S extends string> = S extends `${string}.${infer Rest}` ? GrpcServiceShortName<Rest> : S;

/** What loadGrpcClientConstructors returns: a client constructor per service, by its short name. */
export type GrpcClientConstructors<N extends string> = { [K in N as GrpcServiceShortName<K>]: ServiceClientConstructor };

/**
 * Loads a .proto file (loadGrpcServiceDefinitions) and returns a grpc-js client constructor for
 * each named service, keyed and named by the last component of its name, as
 * `grpc.loadPackageDefinition` names them: `loadGrpcClientConstructors(p, ['csi.v1.Identity',
 * 'csi.v1.Node'])` gives `{ Identity, Node }`. A constructor's `.service` is the service
 * definition a server passes to `server.addService`. A service the file does not define is an
 * error that names the file, the service and the services it does define (a proto shipped with
 * the wrong package name fails at load, not as `undefined` at the first call).
 *
 * The constructors come from the @grpc/grpc-js that kubelet-ts depends on (loaded on the first
 * call): a plugin that creates clients with credentials from its own copy must use a version npm
 * deduplicates with it.
 */
export function loadGrpcClientConstructors<const N extends readonly string[]>(protoPath: string, serviceNames: N, options: GrpcProtoOptions = {}): GrpcClientConstructors<N[number]> {
  const definitions = loadGrpcServiceDefinitions(protoPath, options);
  const grpc = createRequire(import.meta.url)('@grpc/grpc-js') as typeof Grpc;
  const out: Record<string, ServiceClientConstructor> = {};
  for (const fullName of serviceNames) {
    const definition = definitions[fullName];
    if (!definition) {
      const defined = Object.keys(definitions);
      throw new Error(`${protoPath} does not define gRPC service ${fullName} (it defines ${defined.length ? defined.join(', ') : 'no service'})`);
    }
    const shortName = fullName.slice(fullName.lastIndexOf('.') + 1);
    if (shortName in out) throw new Error(`${protoPath}: two of the gRPC services asked for are named ${shortName} (${fullName}): load them in separate calls`);
    out[shortName] = grpc.makeClientConstructor(definition, shortName);
  }
  return out as GrpcClientConstructors<N[number]>;
}

function servicesOf(ns: Protobuf.NamespaceBase, protobuf: typeof Protobuf): Protobuf.Service[] {
  const out: Protobuf.Service[] = [];
  for (const child of ns.nestedArray) {
    if (child instanceof protobuf.Service) out.push(child);
    else if (child instanceof protobuf.Namespace) out.push(...servicesOf(child, protobuf));
  }
  return out;
}

function serializer(type: Protobuf.Type): (value: object) => Buffer {
  return (value) => {
    if (Array.isArray(value)) throw new Error(`Failed to serialize message: expected object with ${type.name} structure, got array instead`);
    // protobufjs's writer hands out a Buffer under Node.
    return type.encode(type.fromObject(value)).finish() as Buffer;
  };
}

function deserializer(type: Protobuf.Type, options: GrpcProtoOptions): (bytes: Buffer) => any {
  return (bytes) => type.toObject(type.decode(bytes), options as Protobuf.IConversionOptions);
}

/**
 * The method's name as grpc-js's generated client also offers it (`ListContainers` →
 * `listContainers`): lodash's camelCase, as proto-loader computes it, for the names gRPC methods
 * have (words split at lower→upper and at an acronym's last capital, digits kept).
 */
export function lowerCamel(name: string): string {
  const words = name.match(/[A-Z]{2,}(?=[A-Z][a-z]|\d|$)|[A-Z]?[a-z]+|[A-Z]+|\d+/g) ?? [name];
  return words.map((w, i) => (i === 0 ? w.toLowerCase() : w[0]!.toUpperCase() + w.slice(1).toLowerCase())).join('');
}
