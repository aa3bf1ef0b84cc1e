import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { cgroupV1Mounts } from '../../core/cgroups/cgroup-mounts.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';
import { removeCgroupRoot, testCgroupRoot } from '../support/cgroups.ts';
import { isRunning, podManifest, startTestKubelet, type TestKubelet } from '../support/test-kubelet.ts';
import { waitFor } from '../support/wait-for.ts';

/**
 * QoS and pod cgroups on containerd with cgroupfs: pods land in kubepods/, burstable/ or
 * besteffort/ by QoS class with their pod-level limits, a container over its memory limit
 * is reported OOMKilled, and a pod's cgroups go with it.
 */
describe('QoS classes and pod cgroups on containerd', function () {
  this.timeout(90_000);
  let env: NodeEnv;
  let t: TestKubelet;
  const ns = 'qos-test';
  const cgroupRoot = testCgroupRoot('qos');
  const mounts = cgroupV1Mounts();
  const memoryDir = (...parts: string[]) => path.join(mounts.get('memory')!, cgroupRoot, 'kubepods', ...parts);

  before(async function () {
    env = await nodeEnvOrSkip(this);
    t = await startTestKubelet({ plugins: [['cri-containerd', { endpoint: env.containerdEndpoint }]], config: { cgroupsPerQOS: true, cgroupRoot, podPidsLimit: 64 } });
  });

  after(async () => {
    await t.dispose();
    // The QoS cgroups outlive pods by design; this run's root goes with the test.
    await removeCgroupRoot(cgroupRoot);
  });

  // Prints its oom_score_adj (upstream's QoS value, as the runtime applied it), then sleeps.
  const sleeper = (resources?: object) => ({ name: 'main', image: env.images.busybox, command: ['sh', '-c', 'cat /proc/self/oom_score_adj; exec sleep 3600'], ...(resources ? { resources } : {}) });
  const oomScoreAdj = async (p: V1Pod) => {
    const file = path.join(t.config.podLogsDir, `${ns}_${p.metadata!.name}_${p.metadata!.uid}`, 'main', '0.log');
    const line = await waitFor(`${p.metadata!.name}'s oom_score_adj in its log`, async () => (await fs.readFile(file, 'utf8').catch(() => '')).split('\n')[0] || undefined, 10_000, 100);
    return Number(line.split(' ').pop());
  };

  it('puts each pod in the cgroup of its QoS class with pod-level limits, and removes it with the pod', async () => {
    await t.writeManifest('guaranteed.json', podManifest('guaranteed', [sleeper({ limits: { cpu: '200m', memory: '48Mi' } })], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await t.writeManifest('burstable.json', podManifest('burstable', [sleeper({ requests: { cpu: '100m', memory: '16Mi' } })], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    await t.writeManifest('besteffort.json', podManifest('besteffort', [sleeper()], { terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const g = (await t.waitForPod('guaranteed', isRunning, 30_000, 'Running'))!;
    const b = (await t.waitForPod('burstable', isRunning, 30_000, 'Running'))!;
    const be = (await t.waitForPod('besteffort', isRunning, 30_000, 'Running'))!;
    assert.equal(g.status!.qosClass, 'Guaranteed');
    assert.equal(b.status!.qosClass, 'Burstable');
    assert.equal(be.status!.qosClass, 'BestEffort');

    const gDir = memoryDir(`pod${g.metadata!.uid}`);
    assert.equal((await fs.readFile(path.join(gDir, 'memory.limit_in_bytes'), 'utf8')).trim(), String(48 * 1024 * 1024));
    const cpuDir = path.join(mounts.get('cpu')!, cgroupRoot, 'kubepods', `pod${g.metadata!.uid}`);
    assert.equal((await fs.readFile(path.join(cpuDir, 'cpu.cfs_quota_us'), 'utf8')).trim(), '20000');
    // The container's own cgroup is inside the pod's: the runtime got it as cgroup parent.
    const containerId = g.status!.containerStatuses![0]!.containerID!.replace('containerd://', '');
    const tasks = (await fs.readFile(path.join(gDir, containerId, 'cgroup.procs'), 'utf8')).trim();
    assert.ok(tasks.length > 0, 'the container process runs in the pod cgroup');
    await fs.access(memoryDir('burstable', `pod${b.metadata!.uid}`));
    // oom_score_adj by QoS class: BestEffort 1000, Burstable 1000 less its request's thousandths
    // of the machine (16Mi here) within 3..999, Guaranteed -997 where the runtime allows a negative value (this
    // machine's containerd restricts it to containerd's own, at most 0).
    assert.equal(await oomScoreAdj(be), 1000);
    // (16Mi of this machine's memory is less than a thousandth: 999, below BestEffort's 1000.)
    assert.equal(await oomScoreAdj(b), Math.min(999, 1000 - Math.trunc((1000 * 16 * 2 ** 20) / os.totalmem())));
    assert.ok((await oomScoreAdj(g)) <= 0, 'Guaranteed: not above containerd\'s own');
    // podPidsLimit on every pod cgroup; the Burstable tier weighs its pods' CPU requests (100m);
    // kubepods holds node allocatable (enforceNodeAllocatable: pods, upstream's default).
    const pids = mounts.get('pids');
    if (pids) assert.equal((await fs.readFile(path.join(pids, cgroupRoot, 'kubepods', 'besteffort', `pod${be.metadata!.uid}`, 'pids.max'), 'utf8')).trim(), '64');
    assert.equal((await fs.readFile(path.join(mounts.get('cpu')!, cgroupRoot, 'kubepods', 'burstable', 'cpu.shares'), 'utf8')).trim(), '102');
    const allocatable = Number((await fs.readFile(memoryDir('memory.limit_in_bytes'), 'utf8')).trim());
    assert.ok(allocatable > 2 ** 28 && allocatable <= os.totalmem(), `kubepods memory limit ${allocatable}: the node's allocatable`);
    await fs.access(memoryDir('besteffort', `pod${be.metadata!.uid}`));

    // With pod cgroups containerd answers ListPodSandboxStats, and its answer carries each
    // container's stats: the kubelet does not ask ListContainerStats as well.
    const statsCalls = async () => {
      const text = await t.kubelet.metrics.registry.metrics();
      const count = (op: string) => Number(new RegExp(`^kubelet_runtime_operations_total\\{operation_type="${op}"\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
      return { sandboxes: count('list_podsandbox_stats'), containers: count('list_container_stats') };
    };
    const before = await statsCalls();
    const { summary, errors } = await t.kubelet.stats.snapshot(0);
    const after = await statsCalls();
    assert.deepEqual(errors, [], 'every source answered');
    assert.equal(after.sandboxes, before.sandboxes + 1, 'ListPodSandboxStats asked once');
    assert.equal(after.containers, before.containers, 'ListContainerStats not asked');
    const gStats = summary.pods.find((p) => p.podRef.uid === g.metadata!.uid)!;
    assert.ok(gStats.memory!.workingSetBytes! > 0, 'the pod\'s figures');
    assert.ok(gStats.containers[0]!.memory!.workingSetBytes! > 0 && gStats.containers[0]!.rootfs !== undefined, 'the container\'s figures, from the sandbox stats');

    for (const f of ['guaranteed.json', 'burstable.json', 'besteffort.json']) await t.removeManifest(f);
    for (const n of ['guaranteed', 'burstable', 'besteffort']) await t.waitForPod(n, (p) => p === undefined, 20_000, 'removed');
    await assert.rejects(fs.access(gDir), 'guaranteed pod cgroup removed');
    await assert.rejects(fs.access(memoryDir('burstable', `pod${b.metadata!.uid}`)), 'burstable pod cgroup removed');
    await assert.rejects(fs.access(memoryDir('besteffort', `pod${be.metadata!.uid}`)), 'besteffort pod cgroup removed');
  });

  it('reports a container that exceeds its memory limit as OOMKilled', async () => {
    // Doubling a shell string allocates without bound; the 16 MiB limit stops it.
    await t.writeManifest('hog.json', podManifest('hog', [{
      name: 'hog', image: env.images.busybox, command: ['sh', '-c', 'x=aaaaaaaaaaaaaaaa; while true; do x=$x$x; done'],
      resources: { limits: { memory: '16Mi', cpu: '500m' } },
    }], { restartPolicy: 'Never', terminationGracePeriodSeconds: 1 }, { namespace: ns }));
    const pod = await t.waitForPod('hog', (p) => !!p?.status?.containerStatuses?.[0]?.state?.terminated, 30_000, 'terminated');
    const term = pod!.status!.containerStatuses![0]!.state!.terminated!;
    assert.equal(term.reason, 'OOMKilled');
    assert.equal(term.exitCode, 137);
    assert.equal(pod!.status!.phase, 'Failed');
  });
});
