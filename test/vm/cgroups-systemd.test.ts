import assert from 'node:assert/strict';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { milliCPUToShares, sharesToWeight } from '../../core/cgroups/cgroup-resources.ts';
import { clusterSuite } from '../support/cluster-suite.ts';
import { kubeletRequest } from '../support/kubelet-https.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';
import { containerPid, deleteVmPod, podSliceDir, runVmPod } from '../support/node-vm-pods.ts';
import { waitFor } from '../support/wait-for.ts';

const MiB = 1024 * 1024;

/**
 * kubeadm's pair on a cgroup v2 node: `cgroupDriver: systemd` in the kubelet and
 * `SystemdCgroup = true` in containerd. The pod cgroups are systemd slices with the limits
 * upstream's kubelet gives them, as the guest's kernel and systemd see them.
 */
describe('node VM: cgroupDriver systemd on cgroup v2', function () {
  this.timeout(600_000);
  const suite = clusterSuite('kts-vm-cgroups-');
  let t: TestNodeVm;
  let ns: string;

  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this);
  });
  beforeEach(async function () {
    ns = await suite.namespace('vm-cg');
  });

  const cat = async (path: string) => (await t.ssh(`cat ${path}`)).stdout.trim();

  it('kubepods.slice holds node allocatable; the QoS tiers are slices under it', async function () {
    const max = await cat('/sys/fs/cgroup/kubepods.slice/memory.max');
    assert.match(max, /^\d+$/, `kubepods.slice memory.max is a number (node allocatable), not ${max}`);
    const total = Number((/MemTotal:\s+(\d+) kB/.exec(await cat('/proc/meminfo')))![1]) * 1024;
    assert.ok(Number(max) <= total && Number(max) > total / 2, `memory.max ${max} is allocatable of ${total}`);
    assert.equal((await t.ssh('systemctl show kubepods.slice -p MemoryMax --value')).stdout.trim(), max);
    for (const tier of ['burstable', 'besteffort']) {
      assert.equal((await t.ssh(`test -d /sys/fs/cgroup/kubepods.slice/kubepods-${tier}.slice && echo yes`)).stdout.trim(), 'yes', `kubepods-${tier}.slice`);
    }
  });

  it('a Guaranteed pod: its slice has cpu.max, memory.max and cpu.weight of its limits; its container scope is in it; oom_score_adj -997', async function () {
    const pod = await runVmPod(t, ns, 'guaranteed', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sleep', '3600'], resources: { limits: { cpu: '200m', memory: '64Mi' } } }],
    });
    assert.equal(pod.status?.qosClass, 'Guaranteed');
    const slice = podSliceDir('guaranteed', pod.metadata!.uid!);
    assert.equal(await cat(`${slice}/cpu.max`), '20000 100000');
    assert.equal(await cat(`${slice}/memory.max`), String(64 * MiB));
    assert.equal(await cat(`${slice}/cpu.weight`), String(sharesToWeight(milliCPUToShares(200))));
    const unit = slice.split('/').pop()!;
    assert.equal((await t.ssh(`systemctl show ${unit} -p MemoryMax --value`)).stdout.trim(), String(64 * MiB));
    const { pid, scope } = await containerPid(t, pod);
    assert.ok(scope.startsWith(`${slice}/`), `the container's scope ${scope} is under the pod slice`);
    const procCgroup = await cat(`/proc/${pid}/cgroup`);
    assert.match(procCgroup, new RegExp(`^0::/kubepods\\.slice/${unit.replace(/\./g, '\\.')}/cri-containerd-[0-9a-f]+\\.scope$`));
    assert.equal(await cat(`/proc/${pid}/oom_score_adj`), '-997');
    await deleteVmPod(t, ns, 'guaranteed');
    await waitFor(`pod slice ${unit} removed`, async () => (await t.ssh(`test -e ${slice} || echo gone`)).stdout.trim() === 'gone', 60_000, 2000);
  });

  it('a Burstable pod: its slice under kubepods-burstable.slice, cpu.weight from its request, no quota', async function () {
    const pod = await runVmPod(t, ns, 'burstable', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sleep', '3600'], resources: { requests: { cpu: '100m', memory: '16Mi' } } }],
    });
    assert.equal(pod.status?.qosClass, 'Burstable');
    const slice = podSliceDir('burstable', pod.metadata!.uid!);
    assert.equal(await cat(`${slice}/cpu.weight`), String(sharesToWeight(milliCPUToShares(100))));
    assert.equal(await cat(`${slice}/cpu.max`), 'max 100000');
    assert.equal(await cat(`${slice}/memory.max`), 'max');
    const { pid } = await containerPid(t, pod);
    const adj = Number(await cat(`/proc/${pid}/oom_score_adj`));
    assert.ok(adj >= 2 && adj <= 999, `burstable oom_score_adj ${adj} in 2..999`);
    await deleteVmPod(t, ns, 'burstable');
  });

  it('/stats/summary: the pod working set is memory.current less inactive_file of its slice; its network is eth0', async function () {
    const pod = await runVmPod(t, ns, 'stats', {
      containers: [{ name: 'c', image: t.env.images.busybox, command: ['sh', '-c', 'head -c 8000000 /dev/urandom > /tmp/f; exec sleep 3600'], resources: { limits: { cpu: '100m', memory: '48Mi' } } }],
    });
    const slice = podSliceDir('guaranteed', pod.metadata!.uid!);
    const pki = join(t.cp.dir, 'pki');
    const creds = { cert: await readFile(join(pki, 'apiserver-kubelet-client.crt')), key: await readFile(join(pki, 'apiserver-kubelet-client.key')) };
    // The kubelet's stats come from its own reads: poll until it lists the pod with memory.
    const summary = await waitFor('the pod in /stats/summary with memory', async () => {
      const r = await kubeletRequest(t.kubeletPort, '/stats/summary', { ...creds, timeoutMs: 60_000 });
      assert.equal(r.status, 200, r.body);
      const s = JSON.parse(r.body) as { pods?: Array<{ podRef: { name: string; namespace: string }; memory?: { workingSetBytes?: number }; network?: { name?: string; rxBytes?: number } }> };
      return s.pods?.find((p) => p.podRef.namespace === ns && p.podRef.name === 'stats' && p.memory?.workingSetBytes !== undefined && p.network !== undefined);
    }, 120_000, 3000);
    // The pod's network figures: containerd 2.1's sandbox stats, or read in the sandbox's network
    // namespace through the pid its verbose PodSandboxStatus gives (containerd 1.6's way).
    assert.equal(summary.network!.name, 'eth0', JSON.stringify(summary.network));
    assert.ok(Number.isInteger(summary.network!.rxBytes) && summary.network!.rxBytes! >= 0, JSON.stringify(summary.network));
    const current = Number(await cat(`${slice}/memory.current`));
    const inactive = Number(/^inactive_file (\d+)$/m.exec(await cat(`${slice}/memory.stat`))![1]);
    const expected = Math.max(0, current - inactive);
    const got = summary.memory!.workingSetBytes!;
    assert.ok(Math.abs(got - expected) <= 4 * MiB, `workingSetBytes ${got} vs memory.current - inactive_file ${expected} (within 4 MiB)`);
    await deleteVmPod(t, ns, 'stats');
  });

  it('a container over its memory limit is OOMKilled', async function () {
    const pod = await runVmPod(
      t,
      ns,
      'oom',
      {
        restartPolicy: 'Never',
        // dd's 64 MiB block buffer, filled from /dev/zero, is more than the 24 MiB limit.
        containers: [{ name: 'c', image: t.env.images.busybox, command: ['dd', 'if=/dev/zero', 'of=/dev/null', 'bs=64M', 'count=4'], resources: { limits: { cpu: '100m', memory: '24Mi' } } }],
      },
      { until: (p) => !!p.status?.containerStatuses?.[0]?.state?.terminated },
    );
    const term = pod.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(term.reason, 'OOMKilled', JSON.stringify(term));
    assert.equal(term.exitCode, 137);
    assert.equal(pod.status?.phase, 'Failed');
    await deleteVmPod(t, ns, 'oom');
  });
});
