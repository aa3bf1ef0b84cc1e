import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/** Static pods from a URL (--manifest-url) on real containerd: followed, and kept through a bad answer. */
describe('static pods from a URL (staticPodURL)', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let server: http.Server;
  let body = '';
  let status = 200;
  let t: TestKubelet | undefined;
  let dir: string;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-url-'));
    server = http.createServer((_req, res) => res.writeHead(status).end(body));
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  });

  after(async function () {
    await t?.dispose();
    server?.closeAllConnections();
    await new Promise((r) => server?.close(r));
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  const pod = (name: string) => ({ metadata: { name, namespace: 'url-test' }, spec: { hostNetwork: true, terminationGracePeriodSeconds: 0, containers: [{ name: 'c', image: env.images.busybox, command: ['sleep', '3600'] }] } });

  it('runs the pods of a PodList, follows its changes, and keeps them through a failing URL', async function () {
    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('url-a'), pod('url-b')] });
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]],
      config: { staticPodURL: `http://127.0.0.1:${(server.address() as AddressInfo).port}/`, httpCheckFrequencyMs: 1000, nodeName: 'url-node' },
      dir,
    });
    const a = await t.waitForPod('url-a', isRunning, 60_000, 'url-a Running');
    await t.waitForPod('url-b', isRunning, 60_000, 'url-b Running');
    assert.equal(a!.metadata!.annotations!['kubernetes.io/config.source'], 'http');
    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [pod('url-a')] });
    await t.waitForPod('url-b', (p) => p === undefined, 30_000, 'url-b removed');
    status = 503;
    await sleep(2500);
    status = 200;
    body = 'kind: PodList\nitems: [';
    await sleep(2500);
    const still = t.pod('url-a');
    assert.ok(isRunning(still), 'the last good set keeps running');
    assert.equal(still!.metadata!.uid, a!.metadata!.uid);
    body = JSON.stringify({ apiVersion: 'v1', kind: 'PodList', items: [] });
    await t.waitForPod('url-a', (p) => p === undefined, 30_000, 'url-a removed');
  });
});
