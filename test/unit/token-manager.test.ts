import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { createApiClient, type ApiClient } from '../../core/apiserver/api-client.ts';
import { TokenManager } from '../../core/apiserver/token-manager.ts';
import { silentLogger } from '../../core/logger.ts';
import { sendJSON, startFakeApiServer, status, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

describe('TokenManager (TokenRequest for serviceAccountToken projections)', function () {
  let server: FakeApiServer;
  let client: ApiClient;
  let kubeconfig: string;
  let issued = 0;
  let failing = false;
  const clock = { t: Date.parse('2026-01-01T00:00:00Z') };
  const pod: V1Pod = { metadata: { name: 'web', namespace: 'shop', uid: 'u1' }, spec: { containers: [] } };

  beforeEach(async () => {
    issued = 0;
    failing = false;
    server = await startFakeApiServer((req, res) => {
      if (failing) return sendJSON(res, 503, status(503, 'ServiceUnavailable', 'down'));
      const body = JSON.parse(req.body);
      issued++;
      const exp = new Date(clock.t + body.spec.expirationSeconds * 1000).toISOString();
      sendJSON(res, 201, { status: { token: `token-${issued}`, expirationTimestamp: exp }, spec: body.spec, url: req.url });
    });
    kubeconfig = await writeKubeconfig(server.url);
    client = createApiClient({ kubeconfig, logger: silentLogger(), requestTimeoutMs: 2000 });
  });
  afterEach(async () => {
    client.close();
    await server.close();
    await fs.rm(path.dirname(kubeconfig), { recursive: true, force: true });
  });

  it('asks for a token bound to the pod with the audience and lifetime; hands it out again until 80 % of its life', async function () {
    const tm = new TokenManager({ client, logger: silentLogger(), now: () => clock.t });
    const spec = { serviceAccountName: 'builder', audience: 'vault', expirationSeconds: 1000 };
    assert.equal(await tm.token(pod, spec), 'token-1');
    const req = JSON.parse(server.requests[0]!.body);
    assert.equal(server.requests[0]!.url, '/api/v1/namespaces/shop/serviceaccounts/builder/token');
    assert.deepEqual(req.spec, { audiences: ['vault'], expirationSeconds: 1000, boundObjectRef: { apiVersion: 'v1', kind: 'Pod', name: 'web', uid: 'u1' } });
    clock.t += 790_000;
    assert.equal(await tm.token(pod, spec), 'token-1', 'before 80 %: the same token');
    clock.t += 20_000;
    assert.equal(await tm.token(pod, spec), 'token-2', 'after 80 %: a new one');
    tm.stop();
  });

  it('keeps a still-valid token when a refresh fails; fails when there is none', async function () {
    const tm = new TokenManager({ client, logger: silentLogger(), now: () => clock.t });
    const spec = { serviceAccountName: 'default', audience: undefined, expirationSeconds: 1000 };
    assert.equal(await tm.token(pod, spec), 'token-1');
    clock.t += 900_000;
    failing = true;
    assert.equal(await tm.token(pod, spec), 'token-1');
    await assert.rejects(tm.token({ ...pod, metadata: { ...pod.metadata, uid: 'u2' } }, spec), /serviceAccountToken for service account "default": /);
    tm.stop();
  });
});
