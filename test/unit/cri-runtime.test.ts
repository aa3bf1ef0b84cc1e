import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';

describe('cri-containerd CriRuntime: the node-level calls (Status, ListImages)', function () {
  let dir: string;
  let fake: FakeCriServer;
  let rt: CriRuntime;
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'kts-crirt-'));
    fake = await FakeCriServer.start(join(dir, 'cri.sock'), { localImages: ['busybox:1.36'], images: ['nginx:1.25'] });
    rt = new CriRuntime(new CriClient(fake.endpoint), { requestTimeoutMs: 5000, pullTimeoutMs: 5000 });
  });
  afterEach(async () => {
    await rt.close();
    await fake.stop();
    rmSync(dir, { recursive: true, force: true });
  });

  it('status() gives the runtime conditions, with the reason of one that is false', async () => {
    assert.deepEqual(await rt.status(), [
      { type: 'RuntimeReady', status: true, reason: '', message: '' },
      { type: 'NetworkReady', status: true, reason: '', message: '' },
    ]);
    fake.setCondition('NetworkReady', false, 'NetworkPluginNotReady', 'cni config uninitialized');
    const net = (await rt.status()).find((c) => c.type === 'NetworkReady');
    assert.deepEqual(net, { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'cni config uninitialized' });
  });

  it('listImages() gives the images present on the node, with tags and sizes', async () => {
    const before = await rt.listImages();
    assert.deepEqual(before.map((i) => i.repoTags), [['docker.io/library/busybox:1.36']]);
    assert.ok(before[0]!.size > 0);
    await rt.pullImage('nginx:1.25');
    assert.deepEqual((await rt.listImages()).map((i) => i.repoTags[0]).sort(), ['docker.io/library/busybox:1.36', 'docker.io/library/nginx:1.25']);
  });
});
