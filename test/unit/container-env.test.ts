import assert from 'node:assert/strict';
import type { V1ConfigMap, V1Container, V1Pod, V1Secret } from '@kubernetes/client-node';
import { ContainerConfigError, containerEnv, fetchEnvObjects, type InvalidEnvKeys } from '../../core/pod/container-env.ts';
import { DownwardApiError, fieldRefValue, resourceFieldValue } from '../../core/objects/downward-api.ts';
import type { ObjectSource } from '../../core/apiserver/object-cache.ts';

const inputs = { podIPs: ['10.88.0.7', 'fd00::7'], hostIPs: ['192.168.1.10'], allocatable: () => ({ cpu: 2, memory: 4 * 2 ** 30, 'ephemeral-storage': 10 * 2 ** 30 }) };
const b64 = (s: string) => Buffer.from(s).toString('base64');

function source(cms: Record<string, V1ConfigMap>, secrets: Record<string, V1Secret>): ObjectSource & { asked: string[] } {
  const asked: string[] = [];
  return {
    asked,
    async configMap(ns, name) {
      asked.push(`cm ${ns}/${name}`);
      return cms[name];
    },
    async secret(ns, name) {
      asked.push(`secret ${ns}/${name}`);
      return secrets[name];
    },
  };
}

const pod = (container: V1Container, extra: Partial<V1Pod['spec']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u1', labels: { app: 'web' }, annotations: { 'a/b': 'c' } },
  spec: { nodeName: 'n1', serviceAccountName: 'builder', containers: [container], ...extra },
});

describe('container env: envFrom, ConfigMap and Secret keys, the downward API', function () {
  const objects = source(
    { conf: { data: { LOG: 'debug', 'bad key': 'x', '1ST': 'y' }, binaryData: { BIN: b64('bytes') } } },
    { creds: { data: { user: b64('admin'), pass: b64('s3cret') } } },
  );

  it('builds envFrom first (with prefix), then env in order with $(VAR) expansion, ConfigMap and Secret keys', async function () {
    const c: V1Container = {
      name: 'app',
      envFrom: [{ configMapRef: { name: 'conf' }, prefix: 'CM_' }, { secretRef: { name: 'creds' } }],
      env: [
        { name: 'USER', valueFrom: { secretKeyRef: { name: 'creds', key: 'user' } } },
        { name: 'LEVEL', valueFrom: { configMapKeyRef: { name: 'conf', key: 'LOG' } } },
        { name: 'URL', value: 'http://$(USER):$(pass)@db/$(CM_LOG)/$$(LEVEL)' },
      ],
    };
    const p = pod(c);
    const invalid: InvalidEnvKeys[] = [];
    const env = containerEnv(p, c, await fetchEnvObjects(p, c, objects), inputs, (r) => invalid.push(r));
    assert.deepEqual(Object.fromEntries(env.map((e) => [e.key, e.value])), {
      CM_LOG: 'debug', 'CM_1ST': 'y', CM_BIN: 'bytes', user: 'admin', pass: 's3cret',
      USER: 'admin', LEVEL: 'debug', URL: 'http://admin:s3cret@db/debug/$(LEVEL)',
    });
    assert.deepEqual(invalid, [{ source: 'ConfigMap shop/conf', keys: ['CM_bad key'] }]);
  });

  it('names a missing object or key as upstream does; optional ones are skipped', async function () {
    const run = async (c: V1Container) => {
      const p = pod(c);
      return containerEnv(p, c, await fetchEnvObjects(p, c, objects), inputs);
    };
    await assert.rejects(run({ name: 'a', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'gone', key: 'k' } } }] }), (e: unknown) => e instanceof ContainerConfigError && e.message === 'configmap "gone" not found');
    await assert.rejects(run({ name: 'a', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'nope' } } }] }), /^Error: couldn't find key nope in Secret shop\/creds$/);
    await assert.rejects(run({ name: 'a', envFrom: [{ secretRef: { name: 'gone' } }] }), /secret "gone" not found/);
    assert.deepEqual(await run({
      name: 'a',
      envFrom: [{ configMapRef: { name: 'gone', optional: true } }],
      env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 'creds', key: 'nope', optional: true } } }, { name: 'Y', value: 'y' }],
    }), [{ key: 'Y', value: 'y' }]);
  });

  it('an object that could not be read fails with its name and the reason', async function () {
    const broken: ObjectSource = { configMap: async () => { throw new Error('too large'); }, secret: async () => undefined };
    const c: V1Container = { name: 'a', env: [{ name: 'X', valueFrom: { configMapKeyRef: { name: 'big', key: 'k' } } }] };
    const p = pod(c);
    assert.throws(() => containerEnv(p, c, new Map([['configmaps/big', new Error('too large')]]), inputs), /configmap "big": too large/);
    const fetched = await fetchEnvObjects(p, c, broken);
    assert.ok(fetched.get('configmaps/big') instanceof Error);
  });

  it('the downward API gives env every field upstream allows, and volumes theirs', function () {
    const p = pod({ name: 'app', resources: { limits: { memory: '256Mi' }, requests: { cpu: '250m' } } });
    const env = (f: string) => fieldRefValue(p, f, 'env', inputs);
    assert.equal(env('metadata.name'), 'web');
    assert.equal(env('metadata.namespace'), 'shop');
    assert.equal(env('metadata.uid'), 'u1');
    assert.equal(env('spec.nodeName'), 'n1');
    assert.equal(env('spec.serviceAccountName'), 'builder');
    assert.equal(env('status.podIP'), '10.88.0.7');
    assert.equal(env('status.podIPs'), '10.88.0.7,fd00::7');
    assert.equal(env('status.hostIP'), '192.168.1.10');
    assert.equal(env("metadata.labels['app']"), 'web');
    assert.equal(env("metadata.annotations['a/b']"), 'c');
    assert.throws(() => env('metadata.labels'), DownwardApiError);
    assert.equal(fieldRefValue(p, 'metadata.labels', 'volume', inputs), 'app="web"');
    assert.throws(() => fieldRefValue(p, 'status.podIP', 'volume', inputs), /not supported in a downwardAPI volume/);
    const c = p.spec!.containers[0]!;
    assert.equal(resourceFieldValue(p, c, { resource: 'limits.memory', divisor: '1Mi' }, inputs), '256');
    assert.equal(resourceFieldValue(p, c, { resource: 'requests.cpu', divisor: '1m' }, inputs), '250');
    assert.equal(resourceFieldValue(p, c, { resource: 'requests.cpu' }, inputs), '1', 'rounded up to whole cores');
    assert.equal(resourceFieldValue(p, c, { resource: 'limits.cpu' }, inputs), '2', 'an unset limit is the node allocatable');
    assert.throws(() => resourceFieldValue(p, c, { resource: 'limits.gpu' }, inputs), /unsupported resource/);
    // The API server defaults an unset divisor to "0"; upstream reads it as 1.
    assert.equal(resourceFieldValue(p, c, { resource: 'requests.memory', divisor: '0' }, inputs), resourceFieldValue(p, c, { resource: 'requests.memory' }, inputs));
    assert.equal(resourceFieldValue(p, c, { resource: 'limits.cpu', divisor: '0' }, inputs), '2');
    assert.throws(() => resourceFieldValue(p, c, { resource: 'limits.cpu', divisor: 'x' }, inputs), /divisor "x" is not a quantity/);
  });
});
