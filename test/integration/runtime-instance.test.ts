import assert from 'node:assert/strict';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { podManifest, isRunning } from '../support/test-kubelet.ts';
import { startKubeletProcess, type KubeletProcess } from '../support/kubelet-process.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Two kubelet-ts processes on one containerd, each with its own `runtimeInstance`: each labels
 * what it creates with its name and runs its own pod; neither lists, stops or removes the
 * other's (without the setting, each removes the other's pod as an orphan no source of its own
 * wants). Their pods go when their own manifests do.
 */
describe('runtimeInstance: two kubelets on one containerd', function () {
  this.timeout(120_000);
  let env: NodeEnv;
  let cri: CriRuntime;
  const kubelets: KubeletProcess[] = [];
  const instance = (side: string) => `kts-instance-${side}-${process.pid}`;

  before(async function () {
    env = await nodeEnvOrSkip(this);
    cri = new CriRuntime(new CriClient(env.containerdEndpoint), { requestTimeoutMs: 10_000, pullTimeoutMs: 60_000 });
  });

  after(async function () {
    for (const k of kubelets) await k.stop();
    // What a stopped kubelet left of its pod (it keeps pods running across its own restarts).
    if (cri) {
      for (const side of ['a', 'b']) {
        const mine = { labelSelector: { [LABEL.managed]: instance(side) } };
        for (const c of await cri.listContainers(mine).catch(() => [])) await cri.removeContainer(c.id).catch(() => {});
        for (const s of await cri.listPodSandboxes(mine).catch(() => [])) {
          await cri.stopPodSandbox(s.id).catch(() => {});
          await cri.removePodSandbox(s.id).catch(() => {});
        }
      }
      await cri.close();
    }
  });

  const start = async (side: string) => {
    const k = await startKubeletProcess(env, { config: { nodeName: `instance-${side}`, runtimeInstance: instance(side) } });
    kubelets.push(k);
    await k.writeManifest('pod.json', podManifest(
      `inst-${side}`,
      [{ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'trap "exit 0" TERM; sleep 3600 & wait'] }],
      { terminationGracePeriodSeconds: 1 },
      { namespace: 'runtime-instance-test' },
    ) as V1Pod);
    const pod = await waitFor(`pod inst-${side} Running`, async () => {
      const p = (await k.pods())?.find((x) => x.metadata?.name?.startsWith(`inst-${side}`));
      return isRunning(p) && p;
    }, 60_000, 200);
    return { k, uid: pod.metadata!.uid! };
  };
  const runtimeView = async (uid: string) => ({
    sandboxes: (await cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } })).map((s) => ({ id: s.id, state: s.state, managed: s.labels[LABEL.managed] })),
    containers: (await cri.listContainers({ labelSelector: { [LABEL.podUID]: uid } })).map((c) => ({ id: c.id, state: c.state, managed: c.labels[LABEL.managed] })),
  });

  it('each runs its own pod and leaves the other\'s alone; each pod goes with its own manifest', async function () {
    const a = await start('a');
    const b = await start('b');
    const before = { a: await runtimeView(a.uid), b: await runtimeView(b.uid) };
    for (const [side, view] of Object.entries(before)) {
      assert.equal(view.sandboxes.length, 1, `one sandbox of pod ${side}`);
      assert.deepEqual([...view.sandboxes, ...view.containers].map((x) => x.managed), [instance(side), instance(side)], `pod ${side} carries its kubelet's name`);
    }
    // Several relists and housekeeping rounds of both kubelets (1 s and 2 s periods).
    await sleep(6000);
    assert.deepEqual(await runtimeView(a.uid), before.a, 'kubelet b did not touch pod a: same sandbox and container, still running');
    assert.deepEqual(await runtimeView(b.uid), before.b, 'kubelet a did not touch pod b');
    for (const [k, side] of [[a.k, 'a'], [b.k, 'b']] as const) {
      assert.deepEqual((await k.pods())?.map((p) => p.metadata?.name), [`inst-${side}-instance-${side}`], `kubelet ${side} lists its own pod only`);
    }

    await a.k.removeManifest('pod.json');
    await waitFor('pod a gone from the runtime', async () => (await runtimeView(a.uid)).sandboxes.length === 0, 30_000, 200);
    assert.deepEqual(await runtimeView(b.uid), before.b, 'pod b still running after kubelet a removed its own');
  });
});
