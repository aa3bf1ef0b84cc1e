import assert from 'node:assert/strict';
import { clusterSuite } from '../support/cluster-suite.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { GUEST_NODE } from '../../tools/node-vm/project-disk.ts';
import { deleteVmPod, runVmPod } from '../support/node-vm-pods.ts';

/**
 * The node VM itself: a Debian trixie node as production runs one in 2026 (systemd as PID 1,
 * cgroup v2 only, containerd 2.1 with runc's systemd cgroup driver), and kubelet-ts on it as the
 * systemd unit of docs/operating/node.md, joined to the host's control plane.
 */
describe('node VM: systemd + cgroup v2 + containerd 2.1 node running kubelet-ts', function () {
  this.timeout(900_000);
  const suite = clusterSuite('kts-vm-smoke-');
  let t: TestNodeVm;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this);
    process.stderr.write(`      node VM: image ${t.image.key} (${t.timings.imageBuilt ? `built in ${t.timings.imageSeconds.toFixed(0)} s` : 'cached'}), project disk ${t.timings.projectDiskSeconds.toFixed(0)} s, boot ${t.timings.bootSeconds.toFixed(0)} s, kubelet Ready ${t.timings.kubeletReadySeconds?.toFixed(0) ?? 'n/a'} s\n`);
  });

  it('boots with cgroup2 at /sys/fs/cgroup and systemd as PID 1', async function () {
    assert.equal((await t.ssh('stat -f -c %T /sys/fs/cgroup')).stdout.trim(), 'cgroup2fs');
    assert.equal((await t.ssh('cat /proc/1/comm')).stdout.trim(), 'systemd');
    assert.match((await t.ssh('cat /sys/fs/cgroup/cgroup.controllers')).stdout, /\bcpu\b.*\bmemory\b.*\bpids\b/);
  });

  it('containerd 2.1 says over CRI that it uses the systemd cgroup driver', async function () {
    const v = await t.cri.version();
    assert.equal(v.runtimeName, 'containerd');
    assert.match(v.runtimeVersion, /^v?2\.1\./);
    assert.deepEqual(await t.cri.runtimeConfig(), { cgroupDriver: 'systemd' });
  });

  it('the kubelet runs on the tests\' Node (24 LTS) with --disable-sigusr1: a SIGUSR1 opens no inspector and the kubelet runs on', async function () {
    const pid = (await t.ssh('systemctl show -p MainPID --value kubelet-ts')).stdout.trim();
    assert.match(pid, /^[1-9]\d*$/, 'the kubelet-ts unit has a main process');
    assert.equal((await t.ssh(`readlink /proc/${pid}/exe`)).stdout.trim(), GUEST_NODE);
    // The Node the tests run on (Node 24 LTS after scripts/install-node.sh), not trixie's 20.
    assert.equal((await t.ssh(`${GUEST_NODE} --version`)).stdout.trim(), process.version);
    // What a pod with hostPID could send it (root in a pod holds CAP_KILL over the kubelet).
    await t.ssh(`kill -USR1 ${pid}`);
    await new Promise((r) => setTimeout(r, 3000));
    assert.doesNotMatch((await t.ssh('ss -Hltn')).stdout, /:9229\b/, 'nothing listens on the inspector port');
    assert.equal((await t.ssh('systemctl show -p MainPID --value kubelet-ts')).stdout.trim(), pid, 'the kubelet is the same process');
    const journal = (await t.ssh('journalctl -u kubelet-ts --no-pager -o cat')).stdout;
    assert.doesNotMatch(journal, /Debugger listening|opens its inspector on SIGUSR1/);
  });

  it('the Node is Ready and a busybox pod from the host registry runs on it', async function () {
    const node = await t.core.readNode({ name: t.nodeName });
    const ready = node.status?.conditions?.find((c) => c.type === 'Ready');
    assert.equal(ready?.status, 'True', `the Node's Ready condition: ${JSON.stringify(ready)}`);
    assert.match(node.status?.nodeInfo?.containerRuntimeVersion ?? '', /^containerd:\/\/v?2\.1\./);
    assert.match(node.status?.nodeInfo?.kernelVersion ?? '', /^6\.12\./);
    const ns = await suite.namespace('vm-smoke');
    const pod = await runVmPod(t, ns, 'hello', { containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'echo hello from the vm; exec sleep 3600'] }] });
    process.stderr.write(`      pod start in the guest: ${(pod as { startSeconds?: number }).startSeconds?.toFixed(1)} s\n`);
    assert.equal(pod.status?.hostIP, '10.0.2.15');
    assert.match(pod.status?.podIP ?? '', /^10\.88\./);
    const logs = await t.ssh(`cat /var/log/pods/${ns}_hello_${pod.metadata!.uid}/c/0.log`);
    assert.match(logs.stdout, /hello from the vm/);
    await deleteVmPod(t, ns, 'hello');
  });
});
