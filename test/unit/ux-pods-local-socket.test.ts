/**
 * Issue 17: `kubelet-ts pods` reads a running kubelet through its local socket
 * (<rootDir>/kubelet-ts.sock), no read-only port, no curl: here a real Kubelet on the fake CRI
 * server, with a running pod and one whose image cannot be pulled.
 */
import assert from 'node:assert/strict';
import { podsCommand } from '../../core/commands/pods.ts';
import { localSocketPath } from '../../core/commands/local-kubelet.ts';
import { fakeCriSuite } from '../support/fake-cri-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';
import { TextSink } from '../support/text-sink.ts';

const IMAGE = 'busybox:1.36';

describe('ux: kubelet-ts pods against a running kubelet', function () {
  this.timeout(30_000);
  const suite = fakeCriSuite({ prefix: 'h17-pods-sock-', images: [IMAGE] });

  it('lists its pods with kubectl\'s STATUS, over the local socket', async () => {
    const t = await suite.start({ imagePullBackOff: { initialMs: 60_000, maxMs: 60_000 } });
    await t.writeManifest('web.yaml', podManifest('web', [{ name: 'app', image: IMAGE, command: ['sleep', '3600'] }]));
    await t.writeManifest('nope.yaml', podManifest('nope', [{ name: 'app', image: 'registry.invalid/nope:1' }]));
    await t.waitForPod('web', isRunning, 8000, 'Running');
    await t.waitForPod('nope', (p) => /ImagePull|ErrImagePull/.test(p?.status?.containerStatuses?.[0]?.state?.waiting?.reason ?? ''), 8000, 'a failed pull');

    const out = new TextSink();
    const err = new TextSink();
    const code = await podsCommand(['-o', 'wide'], { socketPath: localSocketPath(t.config.rootDir), stdout: out, stderr: err });
    assert.equal(code, 0, err.text);
    const lines = out.text.trimEnd().split('\n');
    assert.match(lines[0]!, /^NAME\s+READY\s+STATUS\s+RESTARTS\s+AGE\s+IP\s+NODE\s+NOMINATED NODE\s+READINESS GATES$/);
    assert.match(lines[1]!, /^nope-test-node\s+0\/1\s+(ErrImagePull|ImagePullBackOff)\s+0\s+\d+s\s+\S+\s+test-node\s+<none>\s+<none>$/);
    assert.match(lines[2]!, /^web-test-node\s+1\/1\s+Running\s+0\s+\d+s\s+\S+\s+test-node\s+<none>\s+<none>$/);
  });
});
