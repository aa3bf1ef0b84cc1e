import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import tls from 'node:tls';
import type { V1Pod } from '@kubernetes/client-node';
import { clusterSuite } from '../support/cluster-suite.ts';
import { kubectl, kubectlOrSkip } from '../support/kubectl.ts';
import { kubeletRequest } from '../support/kubelet-https.ts';
import { procRssBytes, startKubeletProcess } from '../support/kubelet-process.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * A stranger who can reach the main port floods it with sockets that only connect and with
 * sockets that complete a TLS handshake (no client certificate) and then idle, each opened
 * again as soon as the kubelet closes it, from two loopback addresses of its own: 1,100 in
 * all, more than the 1,024 connections the port once held in all. Meanwhile `kubectl logs`
 * (the real API server calling the kubelet with its client certificate from 127.0.0.1) and
 * requests with that certificate on new connections work every time, and the kubelet's
 * memory stays bounded.
 */
describe('security: a connection flood on the main port does not deny kubectl logs', function () {
  this.timeout(300_000);
  const suite = clusterSuite('kts-flood-');

  it('1,100 raw and TLS-idle sockets reopened as they close; kubectl logs through the API server succeeds every time; RSS bounded', async function () {
    const k = kubectl(kubectlOrSkip(this), suite.cp.adminKubeconfig);
    const node = suite.node('flood');
    const kp = await startKubeletProcess(suite.env, { startTimeoutMs: 120_000, config: { kubeconfig: await suite.cp.nodeKubeconfig(node.name), nodeName: node.name, nodeIP: '127.0.0.1' } });
    suite.onCleanup(() => kp.stop());
    await suite.nodeReady(node.name);
    const ns = await suite.namespace('flood');
    const pod: V1Pod = {
      metadata: { name: 'talker' },
      spec: {
        nodeName: node.name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1,
        containers: [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'i=0; while true; do echo "line $i"; i=$((i+1)); sleep 1; done'] }],
      },
    };
    await suite.core.createNamespacedPod({ namespace: ns, body: pod });
    await waitFor('talker logs', async () => /line \d+/.test((await k.run(['logs', '-n', ns, 'talker'])).stdout), 90_000);
    const rssBefore = await procRssBytes(kp.pid);
    const pki = path.join(suite.cp.dir, 'pki');
    const apiServerCert = { cert: await fs.readFile(path.join(pki, 'apiserver-kubelet-client.crt')), key: await fs.readFile(path.join(pki, 'apiserver-kubelet-client.key')) };

    // The flood: from 127.0.0.2 and 127.0.0.3 (the API server's connections come from
    // 127.0.0.1), 450 raw and 100 TLS sockets each; bounded in opens and in time. The bound on
    // opens is far above what the rounds below take (~1,700 a second here): with six rounds and
    // 200,000 it was reached in the last round (200,000 opens in 120 s), which then ran with the
    // flood dying out.
    let stopping = false;
    let opens = 0;
    const MAX_OPENS = 500_000;
    const held = new Set<net.Socket>();
    const open = (from: string, handshake: boolean): void => {
      if (stopping || opens >= MAX_OPENS) return;
      opens++;
      const s: net.Socket = handshake
        ? tls.connect({ host: '127.0.0.1', port: kp.mainPort, localAddress: from, rejectUnauthorized: false } as tls.ConnectionOptions)
        : net.connect({ host: '127.0.0.1', port: kp.mainPort, localAddress: from });
      held.add(s);
      s.on('error', () => {});
      s.once('close', () => {
        held.delete(s);
        // Opened again as it closes (a pause when the port refused it at once keeps the loop bounded).
        setTimeout(() => open(from, handshake), 5);
      });
    };
    for (const from of ['127.0.0.2', '127.0.0.3']) {
      for (let i = 0; i < 450; i++) open(from, false);
      for (let i = 0; i < 100; i++) open(from, true);
    }
    const floodWindow = async (): Promise<{ maxHeld: number; opened: number }> => {
      const opensBefore = opens;
      let maxHeld = held.size;
      for (let i = 0; i < 10; i++) {
        await sleep(100);
        maxHeld = Math.max(maxHeld, held.size);
      }
      return { maxHeld, opened: opens - opensBefore };
    };
    const ROUNDS = 3;
    let rssPeak = rssBefore;
    const sampler = setInterval(() => void procRssBytes(kp.pid).then((r) => (rssPeak = Math.max(rssPeak, r)), () => {}), 500);
    const failures: string[] = [];
    try {
      await sleep(3000);
      assert.ok(held.size > 500, `the flood holds sockets (${held.size})`);
      // kubectl logs through the API server while the flood goes on. The API server keeps its
      // connection to the kubelet alive between requests, and the kubelet closes it after 15 s
      // idle: each round waits past that, so the API server must connect anew through the flood.
      // Between, the API server's client certificate on a new connection each time. Three
      // rounds: three new connections of the API server's through the flood (it was six, 110 s
      // of the run; each further round repeated what the first three showed).
      for (let round = 0; round < ROUNDS; round++) {
        const idleUntil = Date.now() + 16_000;
        while (Date.now() < idleUntil) {
          const r = await kubeletRequest(kp.mainPort, `/containerLogs/${ns}/talker/main?tailLines=1`, { ...apiServerCert, timeoutMs: 15_000 }).catch((err: Error) => ({ status: -1, body: err.message }));
          if (r.status !== 200 || !/line \d+/.test(r.body)) failures.push(`round ${round}: the API server's certificate, new connection: ${r.status} ${r.body.slice(0, 200)}`);
          await sleep(2000);
        }
        // The flood is still on as the API server connects anew: over one second it holds more
        // than 500 sockets at some moment, or the kubelet is closing them as fast as they are
        // reopened (more than 1,100 opens in that second). One snapshot of `held` was not
        // enough: in CI the kubelet churned 3,400 sockets a second and a busy test process's
        // 5 ms reopen timers ran late, so a snapshot caught 400 with the flood at full strength.
        const flood = await floodWindow();
        if (flood.maxHeld <= 500 && flood.opened <= 1_100) failures.push(`round ${round}: the flood held at most ${flood.maxHeld} sockets and opened ${flood.opened} in a second (${opens} opens in all)`);
        for (let i = 0; i < 2; i++) {
          const r = await k.run(['logs', '-n', ns, 'talker', '--tail=3'], { timeoutMs: 30_000 });
          if (r.code !== 0 || !/line \d+/.test(r.stdout)) failures.push(`round ${round}: kubectl logs #${i}: exit ${r.code}: ${r.stderr.trim().slice(0, 300)}`);
        }
      }
    } finally {
      stopping = true;
      clearInterval(sampler);
      for (const s of held) s.destroy();
    }
    assert.deepEqual(failures, [], 'every kubectl logs succeeded during the flood, the flood on in every round');
    assert.ok(opens > 1100, `the kubelet closed strangers to make room (${opens} opens)`);
    const grew = (rssPeak - rssBefore) / 2 ** 20;
    process.stderr.write(`      flood: ${opens} opens; kubelet RSS ${(rssBefore / 2 ** 20).toFixed(0)} MiB before, peak +${grew.toFixed(0)} MiB\n`);
    // Measured here (2 cores): peak +118 to +154 MiB over a 206-213 MiB from-sources kubelet with
    // ~96,000 opens in 2 min when the bound was set; on 2026-11-29, +23 MiB over 126 MiB with
    // 200,000 opens in 2 min (six rounds) and +19 MiB with 93,000 in 1 min (three), so bounded
    // (no growth with the flood's length); in CI on 2026-11-30, compiled, +22 and +23 MiB over
    // 125-127 MiB with 162,634 and 172,075 opens. 200 catches a leak, which grows with every one
    // of the ~90,000 connections.
    assert.ok(grew < 200, `RSS grew by ${grew.toFixed(0)} MiB (from ${(rssBefore / 2 ** 20).toFixed(0)} MiB) during the flood`);
    // After the flood the port serves as before.
    const after = await k.run(['logs', '-n', ns, 'talker', '--tail=1']);
    assert.equal(after.code, 0, after.stderr);
    await suite.core.deleteNamespacedPod({ name: 'talker', namespace: ns, gracePeriodSeconds: 0 });
    await waitFor('the kubelet stopped the pod', async () => ((await kp.pods()) ?? [{}]).length === 0, 60_000);
  });
});
