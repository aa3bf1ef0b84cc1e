import assert from 'node:assert/strict';
import { CoreV1Api, type V1Pod } from '@kubernetes/client-node';
import { LABEL } from '../../core/runtime/labels.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { kubectl, kubectlOrSkip, type Kubectl, type RunningCommand } from '../support/kubectl.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * Ephemeral containers as an operator uses them: `kubectl debug` on a running pod of a kubelet-ts
 * node of the real control plane, on real containerd. The debugger joins the target's process
 * namespace, shows in ephemeralContainerStatuses, answers kubectl logs, attach and debug -it, is
 * never restarted, and goes with its pod.
 */
describe('ephemeral containers: kubectl debug on a kubelet-ts node', function () {
  this.timeout(180_000);
  const suite = clusterSuite('kts-debug-');
  let k: Kubectl;
  const running = new Set<RunningCommand>();
  before(function () {
    if (suite.cp) k = kubectl(kubectlOrSkip(this), suite.cp.adminKubeconfig);
  });
  afterEach(async () => {
    for (const c of running) await c.stop('SIGKILL');
    running.clear();
  });

  const ephemeralStatus = (p: V1Pod, name: string) => p.status?.ephemeralContainerStatuses?.find((s) => s.name === name);

  it('kubectl debug --target: the debugger sees the target\'s processes, its status and logs are there, debug -it gets a shell, nothing restarts, all go with the pod', async function () {
    const n = suite.node('debug');
    const t = await suite.kubelet(n);
    await suite.nodeReady(n.name);
    const ns = await suite.namespace('debug');
    const core = suite.cp.admin.makeApiClient(CoreV1Api);
    const image = suite.env.images.busybox;
    await core.createNamespacedPod({
      namespace: ns,
      body: {
        metadata: { name: 'target' },
        spec: { nodeName: n.name, automountServiceAccountToken: false, terminationGracePeriodSeconds: 1, containers: [{ name: 'app', image, command: ['sh', '-c', 'exec sleep 31337'] }] },
      },
    });
    const read = () => core.readNamespacedPod({ name: 'target', namespace: ns });
    await waitFor('target Running', async () => (await read()).status?.containerStatuses?.[0]?.state?.running !== undefined, 60_000);

    // Non-interactive: the debugger lists the processes it sees, then stays.
    const debug = await k.run(['debug', '-n', ns, 'target', `--image=${image}`, '-c', 'debugger', '--target=app', '--', 'sh', '-c', 'ps; exec sleep 3600']);
    assert.equal(debug.code, 0, debug.stderr);
    const p = await waitFor('debugger Running', async () => { const x = await read(); return ephemeralStatus(x, 'debugger')?.state?.running && x; }, 60_000);
    const st = ephemeralStatus(p, 'debugger')!;
    assert.equal(st.ready, false);
    assert.equal(st.restartCount, 0);
    assert.match(st.containerID ?? '', /^containerd:\/\//);
    assert.equal(p.status?.phase, 'Running');
    assert.ok(p.status?.conditions?.some((c) => c.type === 'Ready' && c.status === 'True'), 'the pod stays Ready: ephemeral containers are not counted');
    const logs = await waitFor('kubectl logs -c debugger', async () => { const r = await k.run(['logs', '-n', ns, 'target', '-c', 'debugger']); return r.code === 0 && /sleep 31337/.test(r.stdout) && r.stdout; }, 20_000);
    assert.match(logs, /^\s*1 .*sleep 31337/m, 'the target\'s process is PID 1 of the namespace the debugger joined');
    const events = await core.listNamespacedEvent({ namespace: ns, fieldSelector: 'involvedObject.name=target,reason=Started' });
    assert.ok(events.items.some((e) => e.involvedObject.fieldPath === 'spec.ephemeralContainers{debugger}'), JSON.stringify(events.items.map((e) => e.involvedObject.fieldPath)));

    // One that exits is not started again.
    assert.equal((await k.run(['debug', '-n', ns, 'target', `--image=${image}`, '-c', 'once', '--', 'sh', '-c', 'exit 3'])).code, 0);
    await waitFor('once terminated with 3', async () => ephemeralStatus(await read(), 'once')?.state?.terminated?.exitCode === 3, 60_000);
    const created = async () => (await suite.runtime.listContainers({ labelSelector: { [LABEL.podUID]: p.metadata!.uid!, [LABEL.containerName]: 'once' } })).length;
    await new Promise((r) => setTimeout(r, 3000));
    assert.equal(await created(), 1, 'an ephemeral container that exited is never restarted');
    assert.equal(ephemeralStatus(await read(), 'once')?.restartCount, 0);

    // kubectl debug -it: a shell in a new ephemeral container, through attach with a terminal.
    const session = k.startWithTty(['debug', '-it', '-n', ns, 'target', `--image=${image}`, '-c', 'shell', '--', 'sh']);
    running.add(session);
    await session.waitFor('the prompt', (out) => /[#$] $/m.test(out) || out.includes('# '), 60_000);
    session.child.stdin!.write('echo "answer $((6*7))"; exit 0\n');
    await session.waitFor('the answer', (out) => out.includes('answer 42'), 20_000);
    await session.exited;

    // The pod goes, and with it every container, ephemeral ones included.
    await core.deleteNamespacedPod({ name: 'target', namespace: ns, gracePeriodSeconds: 1 });
    await waitFor('the pod gone from the kubelet', () => !t.kubelet.pods().some((x) => x.metadata?.uid === p.metadata!.uid), 60_000);
    await waitFor('no container of the pod left', async () => (await suite.runtime.listContainers({ labelSelector: { [LABEL.podUID]: p.metadata!.uid! } })).length === 0, 30_000);
  });
});
