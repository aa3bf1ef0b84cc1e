import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { captureLogger } from '../support/capture-logger.ts';
import { startTcpProxy } from '../support/tcp-proxy.ts';
import { startTestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A watch of the API server that dies without a word (a half-open connection, a proxy that
 * black-holed it) is noticed by its silence, not by its timeout: against the real control
 * plane, through a proxy that stops carrying the kubelet's open connections but keeps them
 * open, a pod created afterwards still reaches Running within the silence time and a margin.
 */
describe('API watches: a black-holed pod watch is restarted after its silence', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-podwatch-');
  /** The test's silence time (the default, 150 s, is for real nodes). */
  const SILENCE_MS = 8000;
  /** A pod that is known to the kubelet starts in a few seconds (the image is in the local registry). */
  const MARGIN_MS = 40_000;

  it('a pod created while the pod watch is black-holed reaches Running within the silence time and a margin', async function () {
    const node = suite.node('podwatch');
    const server = new URL(suite.cp.server);
    const proxy = await startTcpProxy({ host: server.hostname, port: Number(server.port) });
    suite.onCleanup(() => proxy.close());
    const kubeconfig = path.join(suite.dir, `${node.name}.kubeconfig`);
    await fs.writeFile(kubeconfig, (await fs.readFile(await suite.cp.nodeKubeconfig(node.name), 'utf8')).replace(suite.cp.server, `https://127.0.0.1:${proxy.port}`));
    const { logger, lines } = captureLogger<{ level: number; msg: string; path?: string; silentMs?: number }>('info');
    const kubelet = await startTestKubelet({
      plugins: [['cri-containerd', { endpoint: suite.env.containerdEndpoint }]],
      config: { kubeconfig, nodeName: node.name, nodeIP: '127.0.0.1', syncFrequencyMs: 10_000, nodeStatusUpdateFrequencyMs: 2000 },
      dir: node.dir,
      logger,
      testHooks: { watchSilenceMs: SILENCE_MS },
    });
    suite.onCleanup(() => kubelet.dispose());
    await suite.nodeReady(node.name);
    const ns = await suite.namespace('podwatch');
    const pod = (name: string): V1Pod => ({
      metadata: { name },
      spec: {
        nodeName: node.name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 2,
        containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', "trap 'exit 0' TERM; while true; do sleep 1; done"] }],
      },
    });
    const running = async (name: string) => (await suite.core.readNamespacedPod({ name, namespace: ns })).status?.phase === 'Running';
    // A first pod: the pod watch is established and delivering.
    await suite.core.createNamespacedPod({ namespace: ns, body: pod('podwatch-before') });
    await waitFor('the first pod Running', () => running('podwatch-before'), 60_000);

    const silentBefore = lines.filter((l) => /the watch went silent/.test(l.msg) && l.path === '/api/v1/pods').length;
    const holes = proxy.blackHole();
    assert.ok(holes >= 1, 'the kubelet\'s open connections (its watches among them) are black-holed');
    await suite.core.createNamespacedPod({ namespace: ns, body: pod('podwatch-late') });
    // Without the silence check, the black-holed watch would hide the pod until its timeout (30–60 min).
    await waitFor('the pod created during the black hole Running', () => running('podwatch-late'), SILENCE_MS * 1.2 + MARGIN_MS, 250);
    const silent = lines.filter((l) => /the watch went silent/.test(l.msg) && l.path === '/api/v1/pods');
    assert.ok(silent.length > silentBefore, 'the kubelet said the pod watch went silent');
    assert.ok(silent.at(-1)!.silentMs! >= SILENCE_MS);
    assert.equal(silent.at(-1)!.level, 30, 'at info');
    assert.ok(proxy.blackHolesClosedByClient >= 1, 'the kubelet gave up a black-holed connection');
  });
});
