/**
 * Issue 17: `kubelet-ts pods` reads a running kubelet through its local socket
 * (<rootDir>/kubelet-ts.sock), no read-only port, no curl: here a real Kubelet on the fake CRI
 * server, with a running pod and one whose image cannot be pulled.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { Writable } from 'node:stream';
import type { KubeletConfig } from '../../core/config/types.ts';
import { podsCommand } from '../../core/commands/pods.ts';
import { localSocketPath } from '../../core/commands/local-kubelet.ts';
import { FakeCriServer } from '../fakes/fake-cri-server.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

const IMAGE = 'busybox:1.36';

class Collect extends Writable {
  text = '';
  override _write(chunk: Buffer, _enc: string, cb: () => void): void {
    this.text += chunk.toString();
    cb();
  }
}

describe('ux: kubelet-ts pods against a running kubelet', function () {
  this.timeout(30_000);
  let dir: string;
  let fake: FakeCriServer;
  let t: TestKubelet | undefined;

  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'h17-pods-sock-'));
    fake = await FakeCriServer.start(path.join(dir, 'cri.sock'));
    fake.addImage(IMAGE);
  });

  afterEach(async () => {
    await t?.dispose(10_000).catch(() => {});
    t = undefined;
    await fake.stop();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('lists its pods with kubectl\'s STATUS, over the local socket', async () => {
    t = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: fake.endpoint }]] as KubeletConfig['plugins'],
      config: { imagePullBackOff: { initialMs: 60_000, maxMs: 60_000 } },
      dir: path.join(dir, 'kubelet'),
    });
    await t.writeManifest('web.yaml', podManifest('web', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }]));
    await t.writeManifest('nope.yaml', podManifest('nope', [{ name: 'app', image: 'registry.invalid/nope:1' }]));
    await t.waitForPod('web', isRunning, 8000, 'Running');
    await t.waitForPod('nope', (p) => /ImagePull|ErrImagePull/.test(p?.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? ''), 8000, 'a failed pull');

    const out = new Collect();
    const err = new Collect();
    const code = await podsCommand(['-o', 'wide'], { socketPath: localSocketPath(t.config.rootDir), stdout: out, stderr: err });
    assert.equal(code, 0, err.text);
    const lines = out.text.trimEnd().split('\n');
    assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
    assert.match(lines[1]!, /^nope-test-node\s+0\/1\s+(ErrImagePull|ImagePullBackOff)\s+0\s+\d+s\s+\S+\s+test-node\s+<none>\s+<none>$/);
    assert.match(lines[2]!, /^web-test-node\s+1\/1\s+Running\s+0\s+\d+s\s+\S+\s+test-node\s+<none>\s+<none>$/);
  });
});
