import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { definePlugin } from '../../core/sdk/index.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';

/**
 * The order of the hooks over a real pod's life on containerd, pinned: what a plugin author can
 * rely on. A recorder plugin taps every pod hook; the container lifecycle handlers, which the
 * core runs itself, show where they fall between the hooks (the postStart handler has written
 * its file before afterStart fires; the preStop handler has not yet run when beforeKill fires).
 */
describe('hook order over a pod\'s life (real containerd)', function () {
  this.timeout(90_000);
  let env: NodeEnv;
  let t: TestKubelet | undefined;
  let out: string;
  const calls: string[] = [];

  before(async function () {
    env = await nodeEnvOrSkip(this);
    out = await fs.mkdtemp('/tmp/kts-hook-order-');
    const seen = (file: string) => fs.access(path.join(out, file)).then(() => true, () => false);
    const recorder = definePlugin({
      name: 'order-recorder',
      kind: 'observability',
      apply(ctx) {
        const mine = (pod: { metadata?: { name?: string } } | undefined) => pod?.metadata?.name?.startsWith('order-') === true;
        const h = ctx.hooks;
        h.admitPod.tapPromise('order-recorder', async (pod) => void (mine(pod) && calls.push('admitPod')));
        h.beforeSandbox.tapPromise('order-recorder', async (cfg, pod) => (mine(pod) && calls.push('beforeSandbox'), cfg));
        h.afterSandbox.tapPromise('order-recorder', async (e) => void (mine(e.pod) && calls.push('afterSandbox')));
        h.beforeContainerCreate.tapPromise('order-recorder', async (cfg, c) => (mine(c.pod) && calls.push(`beforeContainerCreate:${c.container.name}`), cfg));
        h.afterStart.tapPromise('order-recorder', async (e) => {
          if (mine(e.pod)) calls.push(`afterStart:${e.container.name}${(await seen(`poststart-${e.container.name}`)) ? ' (postStart done)' : ''}`);
        });
        h.beforeKill.tapPromise('order-recorder', async (e) => {
          if (mine(e.pod)) calls.push(`beforeKill:${e.container?.name}${(await seen('prestop')) ? ' (preStop already ran)' : ''}`);
        });
        h.podRemoved.tapPromise('order-recorder', async (pod) => void (mine(pod) && calls.push(`podRemoved${(await seen('prestop')) ? ' (preStop ran)' : ''}`)));
      },
    });
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }], recorder], config: { nodeName: 'order-node' } });
  });

  after(async function () {
    await t?.dispose();
    if (out) await fs.rm(out, { recursive: true, force: true });
  });

  it('admit, sandbox, each container created then started (after its postStart), kill (before preStop), removed', async function () {
    const handlerFile = (name: string) => ({ exec: { command: ['sh', '-c', `touch /out/${name}`] } });
    await t!.writeManifest('order.json', podManifest('order', [{
      name: 'main', image: env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"],
      volumeMounts: [{ name: 'out', mountPath: '/out' }],
      lifecycle: { postStart: handlerFile('poststart-main'), preStop: handlerFile('prestop') },
    }], {
      hostNetwork: true, terminationGracePeriodSeconds: 10,
      initContainers: [{ name: 'init', image: env.images.busybox, command: ['true'] }],
      volumes: [{ name: 'out', hostPath: { path: out, type: 'Directory' } }],
    }));
    await t!.waitForPod('order', isRunning, 60_000, 'Running');
    await t!.removeManifest('order.json');
    await t!.waitForPod('order', (p) => p === undefined, 60_000, 'removed');
    assert.deepEqual(calls, [
      'admitPod',
      'beforeSandbox',
      'afterSandbox',
      'beforeContainerCreate:init',
      'afterStart:init',
      'beforeContainerCreate:main',
      'afterStart:main (postStart done)',
      'beforeKill:main',
      'podRemoved (preStop ran)',
    ]);
  });
});
