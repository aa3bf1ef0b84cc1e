import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { ApiClient } from '../../core/apiserver/api-client.ts';
import { credentialsOf } from '../../core/apiserver/credentials.ts';
import { loadKubeconfig } from '../../core/apiserver/kubeconfig.ts';
import { silentLogger } from '../../core/logger.ts';
import { sendJSON, startFakeApiServer, writeKubeconfig, type FakeApiServer } from '../support/fake-apiserver.ts';

/**
 * The kubeconfig's credentials as the kubelet applies them without client-node (token files
 * read again, basic auth, certificates), and through client-node for what only it implements
 * (an exec credential plugin), each against a TLS server that records what it was sent.
 */
describe('kubeconfig credentials on requests', function () {
  this.timeout(20_000);
  const cleanups: Array<() => Promise<unknown>> = [];
  afterEach(async () => {
    for (const c of cleanups.splice(0).reverse()) await c().catch(() => {});
  });

  async function server(): Promise<FakeApiServer> {
    const srv = await startFakeApiServer((_req, res) => sendJSON(res, 200, { kind: 'Status', status: 'Success' }));
    cleanups.push(() => srv.close());
    return srv;
  }

  /** A kubeconfig whose user block is `userBlock` (YAML, indented by four). */
  async function kubeconfigWith(url: string, userBlock: string): Promise<string> {
    const file = await writeKubeconfig(url, 'none');
    cleanups.push(() => fs.rm(path.dirname(file), { recursive: true, force: true }));
    await fs.writeFile(file, (await fs.readFile(file, 'utf8')).replace('    {}\n', userBlock));
    return file;
  }

  const authorization = (srv: FakeApiServer) => srv.requests.map((r) => r.headers.authorization);

  it('a token file is read again after its period (client-go rereads it), and a file gone keeps the last token', async function () {
    const srv = await server();
    const file = await kubeconfigWith(srv.url, '    token-file: token\n');
    const tokenFile = path.join(path.dirname(file), 'token');
    await fs.writeFile(tokenFile, 'first\n');
    const loaded = loadKubeconfig(file);
    assert.equal(loaded.identity.method, 'token');
    const creds = credentialsOf(loaded, { tokenFileCacheMs: 200 });
    assert.equal((await creds.apply()).headers.Authorization, 'Bearer first');
    await fs.writeFile(tokenFile, 'second\n');
    assert.equal((await creds.apply()).headers.Authorization, 'Bearer first', 'within the period: the read is reused');
    await sleep(250);
    assert.equal((await creds.apply()).headers.Authorization, 'Bearer second');
    await fs.rm(tokenFile);
    await sleep(250);
    assert.equal((await creds.apply()).headers.Authorization, 'Bearer second', 'a token file that went away: the last good token');
  });

  it('a token, basic auth, and the client certificate reach the server', async function () {
    const srv = await server();
    for (const [block, expected] of [
      ['    token: "abc"\n', 'Bearer abc'],
      ['    username: admin\n    password: "p@ss"\n', `Basic ${Buffer.from('admin:p@ss').toString('base64')}`],
    ] as const) {
      const client = new ApiClient(loadKubeconfig(await kubeconfigWith(srv.url, block)), { logger: silentLogger() });
      cleanups.push(async () => client.close());
      await client.request('GET', '/version');
      assert.equal(authorization(srv).at(-1), expected);
    }
    const certFile = await writeKubeconfig(srv.url, 'cert');
    cleanups.push(() => fs.rm(path.dirname(certFile), { recursive: true, force: true }));
    const certClient = new ApiClient(loadKubeconfig(certFile), { logger: silentLogger() });
    cleanups.push(async () => certClient.close());
    await certClient.request('GET', '/version');
    assert.equal(authorization(srv).at(-1), undefined, 'a certificate: no header');
  });

  it('an exec credential plugin is run through client-node, loaded for that kubeconfig only, and its token sent', async function () {
    const srv = await server();
    const file = await kubeconfigWith(srv.url, '    exec:\n      apiVersion: client.authentication.k8s.io/v1\n      command: ./plugin.sh\n      interactiveMode: Never\n');
    const plugin = path.join(path.dirname(file), 'plugin.sh');
    await fs.writeFile(plugin, '#!/bin/sh\necho \'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"from-plugin"}}\'\n', { mode: 0o755 });
    const loaded = loadKubeconfig(file);
    assert.equal(loaded.identity.method, 'exec plugin');
    const client = new ApiClient(loaded, { logger: silentLogger() });
    cleanups.push(async () => client.close());
    await client.request('GET', '/version');
    assert.equal(authorization(srv).at(-1), 'Bearer from-plugin');
  });

  it('an unreadable client certificate fails the request with the kubeconfig named, and sends nothing', async function () {
    const srv = await server();
    const file = await writeKubeconfig(srv.url, 'cert');
    cleanups.push(() => fs.rm(path.dirname(file), { recursive: true, force: true }));
    const client = new ApiClient(loadKubeconfig(file), { logger: silentLogger() });
    cleanups.push(async () => client.close());
    await fs.rm(path.join(path.dirname(file), 'node.crt'));
    await assert.rejects(client.request('GET', '/version'), (err: Error) => {
      assert.match(err.message, new RegExp(`^kubeconfig ${file.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}: cannot apply its credentials to GET /version: client-certificate .*node\\.crt: cannot read`));
      return true;
    });
    assert.equal(srv.requests.length, 0);
  });
});
