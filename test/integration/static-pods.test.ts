import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LABEL } from '../../core/runtime/labels.ts';
import { freePort } from '../../tools/node-env/util.ts';
import { containerdSuite } from '../support/containerd-suite.ts';
import { httpGet } from '../support/http.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

const get = (url: string, timeoutMs = 3000) => httpGet(url, timeoutMs);

/**
 * Static pods on real containerd: a manifest dropped in the directory runs to Running with
 * a full status, served on /pods; an edit replaces the pod; a removed file removes every
 * container and sandbox; a bad manifest or a missing image affects no other pod.
 */
describe('static pods on containerd', function () {
  this.timeout(90_000);
  const ns = 'static-pods-test';

  const suite = containerdSuite({ config: async () => ({ readOnlyPort: await freePort(), crashLoopBackOff: { initialMs: 500, maxMs: 2000 }, imagePullBackOff: { initialMs: 500, maxMs: 2000 } }) });

  const sandboxesOf = async (uid: string) => suite.cri.listPodSandboxes({ labelSelector: { [LABEL.podUID]: uid } });
  const containersOf = async (uid: string) => suite.cri.listContainers({ labelSelector: { [LABEL.podUID]: uid } });

  it('runs a dropped manifest to Running with a full status, served on GET /pods', async () => {
    const web = podManifest('web', [{
      name: 'httpd',
      image: suite.env.images.busybox,
      command: ['sh', '-c', 'mkdir -p /www && echo served-by-pod > /www/index.html && exec httpd -f -p 8080 -h /www'],
      ports: [{ containerPort: 8080 }],
    }], { terminationGracePeriodSeconds: 1 }, { namespace: ns });
    await suite.t.writeManifest('web.yaml', web);
    const pod = (await suite.t.waitForPod('web', isRunning, 30_000, 'Running'))!;
    const st = pod.status!;
    assert.equal(st.phase, 'Running');
    assert.match(st.podIP ?? '', /^10\.88\.\d+\.\d+$/);
    assert.equal(st.hostIP, '127.0.0.1');
    const cs = st.containerStatuses![0]!;
    assert.equal(cs.name, 'httpd');
    assert.equal(cs.ready, true);
    assert.equal(cs.started, true);
    assert.equal(cs.restartCount, 0);
    assert.match(cs.containerID ?? '', /^containerd:\/\/[0-9a-f]{64}$/);
    assert.match(cs.imageID ?? '', /sha256:[0-9a-f]{64}/);
    assert.ok(cs.state?.running?.startedAt);
    for (const type of ['PodScheduled', 'Initialized', 'ContainersReady', 'Ready']) {
      assert.equal(st.conditions?.find((c) => c.type === type)?.status, 'True', `condition ${type}`);
    }

    // The sandbox and container carry the upstream labels; the log file is where upstream puts it.
    const uid = pod.metadata!.uid!;
    const [sb] = await sandboxesOf(uid);
    assert.equal(sb!.labels[LABEL.podName], 'web-test-node');
    assert.equal(sb!.labels[LABEL.podNamespace], ns);
    const [c] = await containersOf(uid);
    assert.equal(c!.labels[LABEL.containerName], 'httpd');
    const logFile = path.join(suite.t.config.podLogsDir, `${ns}_web-test-node_${uid}`, 'httpd', '0.log');
    await fs.access(logFile);

    // The pod really serves on its IP, and /pods shows it as the upstream read-only port does.
    // Running is the container's process started, not httpd listening yet (no readiness probe here).
    const page = await waitFor(`httpd on ${st.podIP}:8080`, () => get(`http://${st.podIP}:8080/`), 15_000, 200);
    assert.equal(page.body.trim(), 'served-by-pod');
    const list = JSON.parse((await get(`http://127.0.0.1:${suite.t.kubelet.readOnlyPort}/pods`)).body);
    assert.equal(list.kind, 'PodList');
    const listed = list.items.find((p: any) => p.metadata.name === 'web-test-node');
    assert.equal(listed.status.phase, 'Running');
    assert.equal(listed.status.podIP, st.podIP);
    assert.equal((await get(`http://127.0.0.1:${suite.t.kubelet.readOnlyPort}/healthz`)).body, 'ok');
  });

  it('replaces the pod when its manifest is edited', async () => {
    const v1 = podManifest('edited', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns });
    await suite.t.writeManifest('edited.yaml', v1);
    const first = (await suite.t.waitForPod('edited', isRunning, 30_000, 'Running'))!;
    const oldUid = first.metadata!.uid!;
    const v2 = podManifest('edited', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '7200'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns });
    await suite.t.writeManifest('edited.yaml', v2);
    const second = (await suite.t.waitForPod('edited', (p) => isRunning(p) && p!.metadata!.uid !== oldUid, 30_000, 'replaced and Running'))!;
    assert.notEqual(second.metadata!.uid, oldUid);
    assert.equal((await sandboxesOf(oldUid)).length, 0, 'old sandbox removed');
    assert.equal((await containersOf(oldUid)).length, 0, 'old containers removed');
    const [c] = await containersOf(second.metadata!.uid!);
    assert.deepEqual((await suite.cri.containerStatus(c!.id)).state, 'CONTAINER_RUNNING');
  });

  it('removes every container and the sandbox when the manifest goes', async () => {
    await suite.t.writeManifest('gone.yaml', podManifest('gone', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('gone', isRunning, 30_000, 'Running'))!;
    const uid = pod.metadata!.uid!;
    const logDir = path.join(suite.t.config.podLogsDir, `${ns}_gone-test-node_${uid}`);
    await suite.t.removeManifest('gone.yaml');
    await suite.t.waitForPod('gone', (p) => p === undefined, 20_000, 'removed');
    assert.equal((await sandboxesOf(uid)).length, 0);
    assert.equal((await containersOf(uid)).length, 0);
    await assert.rejects(fs.access(logDir), 'log directory removed');
  });

  it('keeps other pods running when a manifest is invalid or an image does not exist', async () => {
    await suite.t.writeManifest('broken.yaml', 'apiVersion: v1\nkind: Pod\nmetadata: {name: broken}\nspec:\n  containers: [ {name: x}\n');
    await suite.t.writeManifest('noimage.yaml', podManifest('noimage', [{ name: 'main', image: `${suite.env.registry}/kubelet-ts/does-not-exist:1` }], {}, { namespace: ns }));
    await suite.t.writeManifest('fine.yaml', podManifest('fine', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await suite.t.waitForPod('fine', isRunning, 30_000, 'Running');
    const waitingReason = (p: any) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason;
    const pulled = await suite.t.waitForPod('noimage', (p) => waitingReason(p) === 'ErrImagePull', 20_000, 'ErrImagePull');
    assert.match(pulled!.status!.containerStatuses![0]!.state!.waiting!.message!, /does-not-exist/);
    assert.equal(pulled!.status!.phase, 'Pending');
    await suite.t.waitForPod('noimage', (p) => waitingReason(p) === 'ImagePullBackOff', 20_000, 'ImagePullBackOff');
    assert.equal(suite.t.pod('broken'), undefined, 'the invalid manifest makes no pod');
    assert.equal(suite.t.kubelet.healthz(), 'ok');
    for (const f of ['broken.yaml', 'noimage.yaml', 'fine.yaml']) await suite.t.removeManifest(f);
    await suite.t.waitForPod('fine', (p) => p === undefined, 20_000, 'removed');
    await suite.t.waitForPod('noimage', (p) => p === undefined, 20_000, 'removed');
  });

  it('restarts a crashing container with a growing restart count and CrashLoopBackOff', async () => {
    await suite.t.writeManifest('crash.yaml', podManifest('crash', [{ name: 'main', image: suite.env.images.busybox, command: ['sh', '-c', 'echo dying; exit 3'] }], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = await suite.t.waitForPod('crash', (p) => (p?.status?.containerStatuses?.[0]?.restartCount ?? 0) >= 2, 30_000, 'restartCount >= 2');
    const cs = pod!.status!.containerStatuses![0]!;
    const last = cs.lastState?.terminated ?? cs.state?.terminated;
    assert.equal(last?.exitCode, 3);
    assert.equal(last?.reason, 'Error');
    await suite.t.waitForPod('crash', (p) => p?.status?.containerStatuses?.[0]?.state?.waiting?.reason === 'CrashLoopBackOff', 20_000, 'CrashLoopBackOff');
    assert.equal(suite.t.pod('crash')!.status!.phase, 'Running', 'a restarting pod with restartPolicy Always is Running, as upstream reports it');
    await suite.t.removeManifest('crash.yaml');
    await suite.t.waitForPod('crash', (p) => p === undefined, 20_000, 'removed');
  });

  it('gives a hostNetwork pod the node IP and no pod network', async () => {
    await suite.t.writeManifest('hostnet.yaml', podManifest('hostnet', [{ name: 'main', image: suite.env.images.busybox, command: ['sleep', '3600'] }], { hostNetwork: true, terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('hostnet', isRunning, 30_000, 'Running'))!;
    assert.equal(pod.status!.podIP, '127.0.0.1');
    const [sb] = await sandboxesOf(pod.metadata!.uid!);
    assert.equal((await suite.cri.podSandboxStatus(sb!.id)).ip, '', 'the runtime gave the sandbox no pod IP');
    await suite.t.removeManifest('hostnet.yaml');
    await suite.t.waitForPod('hostnet', (p) => p === undefined, 20_000, 'removed');
  });
});
