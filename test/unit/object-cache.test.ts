import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { ApiObjectCache, objectRefsOf } from '../../core/apiserver/object-cache.ts';
import { silentLogger } from '../../core/logger.ts';
import { sendJSON, startFakeApiServer, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

/**
 * The object cache's edge cases against a scripted API server (the real one refuses to store
 * the hostile objects tested here): objects watched by name, changes reaching their pods,
 * hostile objects refused naming them.
 */
describe('ApiObjectCache (ConfigMaps and Secrets watched by name)', function () {
  this.timeout(10_000);
  let server: FakeApiServer;
  let client: ApiClient;
  let cache: ApiObjectCache;
  let changed: string[][];
  let objects: Record<string, unknown>;
  const watches: Array<(event: object) => void> = [];
  let kubeconfigDir: string;

  beforeEach(async () => {
    changed = [];
    objects = {};
    server = await startFakeApiServer((req, res) => {
      const url = new URL(req.url, 'https://x');
      const m = /^\/api\/v1\/namespaces\/([^/]+)\/(configmaps|secrets)$/.exec(url.pathname);
      if (!m) return sendJSON(res, 404, {});
      const name = /^metadata\.name=(.+)$/.exec(url.searchParams.get('fieldSelector') ?? '')?.[1];
      const obj = objects[`${m[2]}/${name}`];
      if (url.searchParams.get('watch') === 'true') {
        res.writeHead(200, { 'content-type': 'application/json' });
        watches.push((event) => res.write(`${JSON.stringify(event)}\n`));
        return;
      }
      sendJSON(res, 200, { metadata: { resourceVersion: '10' }, items: obj ? [obj] : [] });
    });
    const kubeconfig = await writeKubeconfig(server.url);
    client = createApiClient({ kubeconfig, logger: silentLogger(), requestTimeoutMs: 3000 });
    cache = new ApiObjectCache({ client, logger: silentLogger(), onChange: (uids) => changed.push([...uids]) });
    kubeconfigDir = path.dirname(kubeconfig);
  });
  afterEach(async () => {
    await cache.stop();
    client.close();
    watches.length = 0;
    await server.close();
    await fs.rm(kubeconfigDir, { recursive: true, force: true });
  });

  it('finds what a pod refers to: volumes (projected too), env, envFrom, image pull secrets', function () {
    const refs = objectRefsOf({
      metadata: { namespace: 'ns' },
      spec: {
        imagePullSecrets: [{ name: 'pull' }],
        volumes: [{ name: 'a', configMap: { name: 'cm1' } }, { name: 'b', projected: { sources: [{ secret: { name: 's1' } }, { configMap: { name: 'kube-root-ca.crt' } }] } }],
        containers: [{ name: 'c', env: [{ name: 'X', valueFrom: { secretKeyRef: { name: 's2', key: 'k' } } }], envFrom: [{ configMapRef: { name: 'cm2' } }] }],
      },
    });
    assert.deepEqual(refs.map((r) => `${r.kind}/${r.namespace}/${r.name}`).sort(), [
      'configmaps/ns/cm1', 'configmaps/ns/cm2', 'configmaps/ns/kube-root-ca.crt', 'secrets/ns/pull', 'secrets/ns/s1', 'secrets/ns/s2',
    ]);
  });

  it('serves an object from its watch by name; a change tells the pods that refer to it; an unreferenced one is not watched', async function () {
    objects['configmaps/conf'] = { metadata: { name: 'conf', resourceVersion: '10' }, data: { a: '1' } };
    cache.setPodRefs('pod-1', [{ kind: 'configmaps', namespace: 'ns', name: 'conf' }]);
    cache.setPodRefs('pod-2', [{ kind: 'configmaps', namespace: 'ns', name: 'conf' }]);
    assert.deepEqual((await cache.configMap('ns', 'conf'))?.data, { a: '1' });
    assert.equal(cache.watched, 1, 'one watch for both pods');
    for (let i = 0; i < 250 && watches.length === 0; i++) await sleep(20);
    watches[0]!({ type: 'MODIFIED', object: { metadata: { name: 'conf', resourceVersion: '11' }, data: { a: '2' } } });
    for (let i = 0; i < 250 && changed.length === 0; i++) await sleep(20);
    assert.deepEqual(changed[0]!.sort(), ['pod-1', 'pod-2']);
    assert.deepEqual((await cache.configMap('ns', 'conf'))?.data, { a: '2' });
    cache.forgetPod('pod-1');
    cache.forgetPod('pod-2');
    assert.equal(cache.watched, 0);
    assert.equal(await cache.secret('ns', 'absent'), undefined, 'a read of an unreferenced absent object is a GET: undefined');
  });

  it('refuses a hostile object naming it: a key that is no file name, a value of another type, an object over 1 MiB', async function () {
    objects['configmaps/evil'] = { metadata: { name: 'evil' }, data: { '../../etc/passwd': 'x' } };
    objects['secrets/typed'] = { metadata: { name: 'typed' }, data: { k: 42 } };
    objects['configmaps/huge'] = { metadata: { name: 'huge' }, data: { k: 'x'.repeat(1024 * 1024 + 1) } };
    cache.setPodRefs('p', [
      { kind: 'configmaps', namespace: 'ns', name: 'evil' },
      { kind: 'secrets', namespace: 'ns', name: 'typed' },
      { kind: 'configmaps', namespace: 'ns', name: 'huge' },
    ]);
    await assert.rejects(cache.configMap('ns', 'evil'), /configmap "ns\/evil": key "\.\.\/\.\.\/etc\/passwd" is not a valid file name/);
    await assert.rejects(cache.secret('ns', 'typed'), /secret "ns\/typed": data\[k\] is not a string/);
    await assert.rejects(cache.configMap('ns', 'huge'), /configmap "ns\/huge" is larger than 1048576 bytes/);
  });
});
