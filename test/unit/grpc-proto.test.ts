import assert from 'node:assert/strict';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import * as protoLoader from '@grpc/proto-loader';
import protobuf from 'protobufjs';
import { loadGrpcClientConstructors, loadGrpcServiceDefinitions, lowerCamel, type GrpcProtoOptions } from '../../core/util/grpc-proto.ts';
import { CRI_LOADER_OPTIONS, loadCriPackage } from '../../plugins/cri-containerd/proto-loader.ts';

/**
 * loadGrpcServiceDefinitions replaced @grpc/proto-loader for the plugins' protos to save memory;
 * what a client or server sees must not change. For every proto the plugins ship, with the
 * options each plugin loads it with, the services, methods and the bytes and objects their codecs
 * produce are compared with proto-loader's, on a message with every field set (and an empty one).
 */

const proto = (p: string) => fileURLToPath(new URL(`../../plugins/${p}`, import.meta.url));
const FULL: GrpcProtoOptions = { keepCase: false, longs: String, enums: String, defaults: true, oneofs: true };
const PROTOS: Array<[string, GrpcProtoOptions]> = [
  ['cri-containerd/proto/api.proto', CRI_LOADER_OPTIONS],
  ['cri-containerd/proto/content.proto', CRI_LOADER_OPTIONS],
  ['csi-grpc/proto/csi.proto', FULL],
  ['csi-grpc/proto/pluginregistration.proto', FULL],
  ['device-plugins/proto/deviceplugin.proto', FULL],
  ['pod-resources/proto/podresources.proto', FULL],
  ['probes/proto/health.proto', { keepCase: false, enums: String, defaults: true }],
];

/** A plain object for `type` with every field set (one field of each oneof), nested a few levels. */
function sample(type: protobuf.Type, depth = 0, seed = 1): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const setOneofs = new Set<string>();
  for (const field of type.fieldsArray) {
    const oneof = field.partOf?.name;
    if (oneof) {
      if (setOneofs.has(oneof)) continue;
      setOneofs.add(oneof);
    }
    const one = () => value(field, depth, seed + field.id);
    if (field.map) out[field.name] = { [`k${field.id}`]: one() };
    else if (field.repeated) out[field.name] = [one(), value(field, depth, seed + field.id + 7)];
    else out[field.name] = one();
  }
  return out;
}

function value(field: protobuf.Field, depth: number, seed: number): unknown {
  const t = field.resolvedType;
  if (t instanceof protobuf.Enum) return Object.keys(t.values)[seed % Object.keys(t.values).length];
  if (t instanceof protobuf.Type) return depth < 3 ? sample(t, depth + 1, seed) : {};
  switch (field.type) {
    case 'string': return `s${seed}-é`;
    case 'bool': return seed % 2 === 0;
    case 'bytes': return Buffer.from([seed & 255, 0, 255]);
    case 'double': case 'float': return seed + 0.5;
    case 'int64': case 'sint64': case 'sfixed64': return `-${seed}000000000123`;
    case 'uint64': case 'fixed64': return `${seed}000000000123`;
    default: return field.type.startsWith('u') || field.type.startsWith('fixed') ? seed : -seed;
  }
}

describe('loadGrpcServiceDefinitions (the plugins\' protos without @grpc/proto-loader)', function () {
  for (const [file, options] of PROTOS) {
    it(`${file}: same services, methods and codecs as proto-loader`, function () {
      const ours = loadGrpcServiceDefinitions(proto(file), options);
      const theirs = protoLoader.loadSync(proto(file), options as protoLoader.Options);
      const theirServices = Object.keys(theirs).filter((k) => !('format' in theirs[k]!));
      assert.deepEqual(Object.keys(ours).sort(), theirServices.sort());
      const root = new protobuf.Root().loadSync(proto(file), { keepCase: false });
      root.resolveAll();
      let compared = 0;
      for (const name of theirServices) {
        const a = ours[name]!;
        const b = theirs[name] as protoLoader.ServiceDefinition;
        assert.deepEqual(Object.keys(a), Object.keys(b), `${name}: methods`);
        for (const m of Object.keys(b)) {
          const x = a[m]!;
          const y = b[m]!;
          assert.deepEqual([x.path, x.requestStream, x.responseStream, x.originalName], [y.path, y.requestStream, y.responseStream, y.originalName], `${name}.${m}`);
          const method = root.lookupService(name).methods[m]!;
          for (const [side, type, ser, de, theirSer, theirDe] of [
            ['request', method.resolvedRequestType!, x.requestSerialize, x.requestDeserialize, y.requestSerialize, y.requestDeserialize],
            ['response', method.resolvedResponseType!, x.responseSerialize, x.responseDeserialize, y.responseSerialize, y.responseDeserialize],
          ] as const) {
            for (const message of [sample(type), {}]) {
              const bytes = theirSer(message);
              assert.ok(Buffer.from(ser(message)).equals(Buffer.from(bytes)), `${name}.${m} ${side}: encoded bytes`);
              assert.deepEqual(de(Buffer.from(bytes)), theirDe(Buffer.from(bytes)), `${name}.${m} ${side}: decoded object`);
              compared++;
            }
          }
        }
      }
      assert.ok(compared > 0, 'some messages were compared');
    });
  }

  it('loadCriPackage(): client constructors named as grpc.loadPackageDefinition names them from proto-loader\'s definition', function () {
    const pkg = loadCriPackage();
    const packageDefinition = protoLoader.loadSync(proto('cri-containerd/proto/api.proto'), CRI_LOADER_OPTIONS as protoLoader.Options);
    const reference = (grpc.loadPackageDefinition(packageDefinition) as any).runtime.v1;
    assert.equal(pkg.RuntimeService.serviceName, reference.RuntimeService.serviceName);
    assert.equal(pkg.ImageService.serviceName, reference.ImageService.serviceName);
    assert.deepEqual(Object.keys(pkg.RuntimeService.prototype).sort(), Object.keys(reference.RuntimeService.prototype).sort(), 'the same client methods, camelCase aliases included');
  });

  it('a container config\'s CDIDevices reach the wire as CRI field 17 (CDI_devices), names intact', function () {
    const create = loadCriPackage().RuntimeService.service.CreateContainer!;
    const config = { metadata: { name: 'c', attempt: 0 }, image: { image: 'busybox' }, CDIDevices: [{ name: 'example.com/gpu=gpu0' }] };
    const wire = create.requestSerialize({ podSandboxId: 's', config });
    // ContainerConfig field 17, length-delimited: tag (17 << 3 | 2) as a varint, 0x8a 0x01.
    assert.ok(wire.includes(Buffer.from([0x8a, 0x01])), 'field 17 is on the wire');
    assert.deepEqual((create.requestDeserialize(wire) as { config: { CDIDevices: unknown } }).config.CDIDevices, [{ name: 'example.com/gpu=gpu0' }]);
  });

  it('loadGrpcClientConstructors: a client constructor per service, keyed and named by its short name, serving its definition', function () {
    const file = proto('csi-grpc/proto/csi.proto');
    const { Identity, Node } = loadGrpcClientConstructors(file, ['csi.v1.Identity', 'csi.v1.Node'], FULL);
    const definitions = loadGrpcServiceDefinitions(file, FULL);
    for (const [ctor, name, shortName, method] of [[Identity, 'csi.v1.Identity', 'Identity', 'GetPluginInfo'], [Node, 'csi.v1.Node', 'Node', 'NodeGetInfo']] as const) {
      assert.equal(ctor.serviceName, shortName);
      assert.deepEqual(Object.keys(ctor.service), Object.keys(definitions[name]!), `${name}: the service definition's methods`);
      assert.equal(ctor.service[method]?.path, `/${name}/${method}`);
      assert.equal(typeof (ctor.prototype as Record<string, unknown>)[lowerCamel(method)], 'function', 'camelCase client methods');
    }
  });

  it('loadGrpcClientConstructors: a service the proto does not define is an error naming the file, the service and what it defines', function () {
    const file = proto('probes/proto/health.proto');
    assert.throws(() => loadGrpcClientConstructors(file, ['grpc.health.v1.Health', 'grpc.health.v2.Health']), (err: Error) => {
      assert.equal(err.message, `${file} does not define gRPC service grpc.health.v2.Health (it defines grpc.health.v1.Health)`);
      return true;
    });
  });

  it('a request that is an array is refused, as proto-loader refuses it', function () {
    const def = loadGrpcServiceDefinitions(proto('probes/proto/health.proto'))['grpc.health.v1.Health']!;
    assert.throws(() => def.Check!.requestSerialize([] as any), /expected object with HealthCheckRequest structure, got array/);
  });

  it('lowerCamel splits words as lodash camelCase does', function () {
    assert.equal(lowerCamel('ListPodSandbox'), 'listPodSandbox');
    assert.equal(lowerCamel('GetHTTPStatus'), 'getHttpStatus');
    assert.equal(lowerCamel('NodeGetVolumeStats'), 'nodeGetVolumeStats');
    assert.equal(lowerCamel('ListV1Things'), 'listV1Things');
  });
});
