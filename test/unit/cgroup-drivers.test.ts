import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { parseCgroupRoot, toCgroupfsPath, toSystemdPath, toSystemdSlice } from '../../core/cgroups/cgroup-name.ts';
import { readCgroupMounts, type CgroupMounts } from '../../core/cgroups/cgroup-mounts.ts';
import { sharesToWeight, v2Files } from '../../core/cgroups/cgroup-resources.ts';
import { CgroupfsDriver } from '../../core/cgroups/cgroupfs-driver.ts';
import { kubepodsResources } from '../../core/cgroups/kubepods-resources.ts';
import { setUpNodeCgroups } from '../../core/cgroups/node-cgroups.ts';
import { PodCgroups, podCgroupName, podResources } from '../../core/cgroups/pod-cgroups.ts';
import { hugePageUnitSize, linuxResources, oomScoreAdj } from '../../core/pod/container-config.ts';
import { SystemdDriver } from '../../core/cgroups/systemd-driver.ts';
import { ConfigError } from '../../core/errors.ts';
import { silentLogger } from '../../core/logger.ts';
import { parseQuantity } from '../../core/node/resource-quantity.ts';
import type { ContainerRuntime } from '../../core/runtime/types.ts';
import { connectSystemd } from '../../core/systemd/systemd-manager.ts';
import { startFakeSystemd, type FakeSystemd } from '../fakes/fake-systemd.ts';

const UID = '1b4e28ba-2fa1-11d2-883f-0016d3cca427';

function pod(containers: V1Pod['spec'] extends infer S ? S extends { containers: infer C } ? C : never : never, more: Partial<NonNullable<V1Pod['spec']>> = {}): V1Pod {
  return { metadata: { name: 'p', namespace: 'ns', uid: UID }, spec: { containers, ...more } };
}
const guaranteed = () => pod([{ name: 'a', resources: { limits: { cpu: '200m', memory: '48Mi' } } }]);
const burstable = () => pod([{ name: 'a', resources: { requests: { cpu: '100m', memory: '16Mi' } } }]);
const besteffort = () => pod([{ name: 'a' }]);

/** A cgroup v2 tree in a temp dir: the root's controllers, as the kernel shows them. */
async function fakeV2(dir: string): Promise<CgroupMounts> {
  const unified = path.join(dir, 'unified');
  await fs.mkdir(unified, { recursive: true });
  await fs.writeFile(path.join(unified, 'cgroup.controllers'), 'cpuset cpu io memory hugetlb pids rdma misc\n');
  await fs.writeFile(path.join(unified, 'cgroup.subtree_control'), '');
  return { version: 2, v1: new Map(), unified };
}

describe('cgroup names, resources and drivers', function () {
  let dir: string;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cgroups-'));
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('names a pod cgroup in both drivers\' forms, the UID\'s dashes as underscores in slice names', () => {
    const name = podCgroupName([], burstable());
    assert.equal(toCgroupfsPath(name), `/kubepods/burstable/pod${UID}`);
    assert.equal(toSystemdSlice(name), `kubepods-burstable-pod${UID.replaceAll('-', '_')}.slice`);
    assert.equal(toSystemdPath(name), `/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod${UID.replaceAll('-', '_')}.slice`);
    assert.equal(toSystemdPath(podCgroupName([], guaranteed())), `/kubepods.slice/kubepods-pod${UID.replaceAll('-', '_')}.slice`);
    assert.equal(toSystemdPath(podCgroupName(['custom'], besteffort())), `/custom.slice/custom-kubepods.slice/custom-kubepods-besteffort.slice/custom-kubepods-besteffort-pod${UID.replaceAll('-', '_')}.slice`);
  });

  it('reads cgroupRoot in the driver\'s form and refuses a root the systemd driver cannot make slices of', () => {
    assert.deepEqual(parseCgroupRoot('/', 'systemd'), []);
    assert.deepEqual(parseCgroupRoot('/custom.slice', 'systemd'), ['custom']);
    assert.deepEqual(parseCgroupRoot('/a.slice/a-b.slice', 'systemd'), ['a', 'b']);
    assert.deepEqual(parseCgroupRoot('/kubelet-ts-test-1/x', 'cgroupfs'), ['kubelet-ts-test-1', 'x']);
    assert.throws(() => parseCgroupRoot('/kubelet-ts-test', 'systemd'), /cgroupRoot '\/kubelet-ts-test' is not a systemd slice path/);
    assert.throws(() => parseCgroupRoot('/a.slice/b.slice', 'systemd'), /a slice's parents must be the slices its name spells \(\/b\.slice\)/);
  });

  it('converts shares to cgroup v2 weights as runc does, and writes unlimited as max', () => {
    assert.deepEqual([sharesToWeight(2), sharesToWeight(1024), sharesToWeight(262_144), sharesToWeight(1)], [1, 39, 10_000, 1]);
    assert.deepEqual(v2Files({ cpuShares: 204, cpuQuotaUs: 20_000, memoryLimitBytes: 48 * 2 ** 20 }), [
      ['cpu.weight', '8'], ['cpu.max', '20000 100000'], ['memory.max', String(48 * 2 ** 20)], ['pids.max', 'max'],
    ]);
    assert.deepEqual(v2Files({ cpuShares: 2 }).map(([, v]) => v), ['1', 'max 100000', 'max', 'max']);
  });

  it('gives a pod upstream\'s pod-level resources: init containers, sidecars and overhead counted, limits only when every container has one', () => {
    assert.deepEqual(podResources(guaranteed()), { cpuShares: 204, cpuPeriodUs: 100_000, cpuQuotaUs: 20_000, memoryLimitBytes: 48 * 2 ** 20 });
    assert.deepEqual(podResources(burstable()), { cpuShares: 102, cpuPeriodUs: 100_000 });
    assert.deepEqual(podResources(besteffort(), 100), { cpuShares: 2, cpuPeriodUs: 100_000, pidsLimit: 100 });
    const withInit = pod([{ name: 'a', resources: { limits: { cpu: '100m', memory: '10Mi' } } }], {
      initContainers: [
        { name: 'side', restartPolicy: 'Always', resources: { limits: { cpu: '50m', memory: '5Mi' } } },
        { name: 'big', resources: { limits: { cpu: '500m', memory: '20Mi' } } },
      ],
      overhead: { cpu: '10m', memory: '1Mi' },
    });
    // Apps + sidecar: 150m / 15Mi; the big init container beside the sidecar: 550m / 25Mi; plus overhead.
    assert.deepEqual(podResources(withInit), { cpuShares: Math.floor((560 * 1024) / 1000), cpuPeriodUs: 100_000, cpuQuotaUs: 56_000, memoryLimitBytes: 26 * 2 ** 20 });
  });

  it('sets kubepods to capacity less systemReserved and kubeReserved when pods are enforced, to capacity otherwise', () => {
    const capacity = { cpu: parseQuantity('4'), memory: parseQuantity('8Gi') };
    const opts = { capacity, systemReserved: { cpu: '500m', memory: '1Gi', pid: '1000' }, kubeReserved: { memory: '512Mi' }, pidMax: 4_194_304 };
    assert.deepEqual(kubepodsResources({ ...opts, enforcePods: true }), { cpuShares: 3584, memoryLimitBytes: (8 * 1024 - 1536) * 2 ** 20, pidsLimit: 4_193_304 });
    assert.deepEqual(kubepodsResources({ ...opts, enforcePods: false }), { cpuShares: 4096, memoryLimitBytes: 8 * 2 ** 30 });
  });

  it('cgroupfs on v2: hands the controllers down each level and writes the v2 files', async () => {
    const mounts = await fakeV2(dir);
    const driver = new CgroupfsDriver(mounts, silentLogger());
    const cgroups = new PodCgroups({ driver, root: [], logger: silentLogger(), kubepods: { cpuShares: 4096, memoryLimitBytes: 2 ** 30 }, activePods: () => [burstable()] });
    await cgroups.ensureQoS();
    const read = (...p: string[]) => fs.readFile(path.join(mounts.unified!, ...p), 'utf8');
    assert.equal(await read('cgroup.subtree_control'), '+cpuset +cpu +io +memory +hugetlb +pids');
    assert.deepEqual([await read('kubepods', 'memory.max'), await read('kubepods', 'cpu.weight')], [String(2 ** 30), String(sharesToWeight(4096))]);
    assert.equal(await read('kubepods', 'burstable', 'cpu.weight'), String(sharesToWeight(102)), 'the Burstable tier weighs its pods\' requests');
    assert.equal(await read('kubepods', 'besteffort', 'cpu.weight'), '1');
    assert.equal(await cgroups.ensurePod(guaranteed()), `/kubepods/pod${UID}`);
    assert.deepEqual([await read('kubepods', `pod${UID}`, 'cpu.max'), await read('kubepods', `pod${UID}`, 'memory.max')], ['20000 100000', String(48 * 2 ** 20)]);
    assert.equal(await cgroups.podPath(UID), `/kubepods/pod${UID}`);
    // A cgroup directory goes with its interface files in the kernel; here they are plain files.
    const leaf = path.join(mounts.unified!, 'kubepods', `pod${UID}`);
    for (const f of await fs.readdir(leaf)) await fs.rm(path.join(leaf, f));
    await cgroups.removePod(UID);
    assert.equal(await cgroups.podPath(UID), undefined);
  });

  it('cgroupfs on v1: a directory per controller with v1 files', async () => {
    const v1 = new Map(['memory', 'cpu', 'pids'].map((c) => [c, path.join(dir, c)]));
    for (const m of v1.values()) await fs.mkdir(m, { recursive: true });
    const driver = new CgroupfsDriver({ version: 1, v1, unified: undefined }, silentLogger());
    await driver.ensure(podCgroupName(['root'], guaranteed()), podResources(guaranteed(), 64));
    const leaf = ['root', 'kubepods', `pod${UID}`];
    assert.equal(await fs.readFile(path.join(v1.get('cpu')!, ...leaf, 'cpu.cfs_quota_us'), 'utf8'), '20000');
    assert.equal(await fs.readFile(path.join(v1.get('cpu')!, ...leaf, 'cpu.shares'), 'utf8'), '204');
    assert.equal(await fs.readFile(path.join(v1.get('memory')!, ...leaf, 'memory.limit_in_bytes'), 'utf8'), String(48 * 2 ** 20));
    assert.equal(await fs.readFile(path.join(v1.get('pids')!, ...leaf, 'pids.max'), 'utf8'), '64');
  });

  it('reads this host\'s hierarchy: a v2-only mountinfo is v2, a hybrid one v1', () => {
    const v2 = '30 23 0:26 / /sys/fs/cgroup rw,nosuid,nodev,noexec,relatime shared:4 - cgroup2 cgroup2 rw,nsdelegate,memory_recursiveprot\n';
    assert.deepEqual(readCgroupMounts(v2), { version: 2, v1: new Map(), unified: '/sys/fs/cgroup' });
    const hybrid = `${v2.replace('/sys/fs/cgroup ', '/sys/fs/cgroup/unified ')}31 23 0:27 / /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n32 23 0:28 / /sys/fs/cgroup/cpu,cpuacct rw - cgroup cgroup rw,cpu,cpuacct\n`;
    const h = readCgroupMounts(hybrid);
    assert.equal(h.version, 1);
    assert.equal(h.v1.get('memory'), '/sys/fs/cgroup/memory');
  });

  describe('systemd driver over D-Bus (a fake systemd on a private bus)', function () {
    let systemd: FakeSystemd;
    let mounts: CgroupMounts;
    beforeEach(async () => {
      mounts = await fakeV2(dir);
      systemd = await startFakeSystemd({ dir, cgroupRoot: mounts.unified! });
    });
    afterEach(async () => {
      await systemd.stop();
    });

    it('makes each cgroup a transient slice with runc\'s properties, updates a loaded one, and stops it on removal', async () => {
      const driver = new SystemdDriver(mounts, await connectSystemd({ busAddress: systemd.address }));
      const cgroups = new PodCgroups({ driver, root: [], logger: silentLogger(), kubepods: { cpuShares: 4096, memoryLimitBytes: 2 ** 30 } });
      try {
        await cgroups.ensureQoS();
        assert.deepEqual([...systemd.units.keys()], ['kubepods.slice', 'kubepods-burstable.slice', 'kubepods-besteffort.slice']);
        const kubepods = systemd.units.get('kubepods.slice')!;
        assert.deepEqual(
          [kubepods.Wants, kubepods.DefaultDependencies, kubepods.MemoryAccounting, kubepods.MemoryMax, kubepods.CPUWeight, kubepods.CPUQuotaPerSecUSec, kubepods.TasksMax],
          [['-.slice'], false, true, BigInt(2 ** 30), BigInt(sharesToWeight(4096)), 2n ** 64n - 1n, 2n ** 64n - 1n],
        );
        assert.equal(systemd.units.get('kubepods-burstable.slice')!.Wants![0 as never], 'kubepods.slice');

        const parent = await cgroups.ensurePod(guaranteed());
        const slice = `kubepods-pod${UID.replaceAll('-', '_')}.slice`;
        assert.equal(parent, `/kubepods.slice/${slice}`, 'the runtime gets the cgroup parent in systemd\'s form');
        const unit = systemd.units.get(slice)!;
        assert.deepEqual([unit.CPUQuotaPerSecUSec, unit.CPUQuotaPeriodUSec, unit.MemoryMax, unit.CPUWeight], [200_000n, 100_000n, BigInt(48 * 2 ** 20), BigInt(sharesToWeight(204))]);
        // The files hold the exact values too (runc writes them after systemd).
        assert.equal(await fs.readFile(path.join(mounts.unified!, parent, 'cpu.max'), 'utf8'), '20000 100000');

        // A kubelet restarted while the pod runs: the slice exists, its properties are set again.
        await cgroups.ensurePod(guaranteed());
        assert.deepEqual(systemd.calls.slice(-2).map((c) => [c.method, c.unit]), [['StartTransientUnit', slice], ['SetUnitProperties', slice]]);

        await cgroups.removePod(UID);
        assert.equal(systemd.units.has(slice), false, 'the pod slice is stopped (and unloaded)');
        assert.equal(await cgroups.podPath(UID), undefined);
      } finally {
        await cgroups.close();
      }
    });

    it('a job that fails is an error naming the unit and systemd\'s result', async () => {
      const driver = new SystemdDriver(mounts, await connectSystemd({ busAddress: systemd.address }));
      try {
        systemd.failNextJob('kubepods.slice', 'failed');
        await assert.rejects(driver.ensure(['kubepods'], { cpuShares: 1024 }), /systemd StartTransientUnit kubepods\.slice: job failed/);
      } finally {
        await driver.close();
      }
    });

    it('no systemd on the bus: the start stops with one line naming the setting', async () => {
      const runtime = { runtimeConfig: async () => undefined } as unknown as ContainerRuntime;
      const config = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'systemd' as const, enforceNodeAllocatablePods: true, podPidsLimit: undefined, systemReserved: {}, kubeReserved: {}, configFile: '/etc/kubelet.yaml' };
      await assert.rejects(
        setUpNodeCgroups({ config, runtime, capacity: {}, activePods: () => [], logger: silentLogger(), mounts, connectSystemd: () => connectSystemd({ busAddress: `unix:path=${path.join(dir, 'none.sock')}`, timeoutMs: 2000 }) }),
        (err: Error) => err instanceof ConfigError && /^\/etc\/kubelet\.yaml: cgroupDriver is systemd, but cannot reach systemd on the system bus \(unix:path=.*none\.sock\): .*; on a node without systemd use cgroupDriver: cgroupfs$/.test(err.message),
      );
    });
  });

  it('a runtime that reports another cgroup driver stops the start with one line saying what to set', async () => {
    const runtime = { runtimeConfig: async () => ({ cgroupDriver: 'systemd' }) } as unknown as ContainerRuntime;
    const config = { cgroupsPerQOS: true, cgroupRoot: '/', cgroupDriver: 'cgroupfs' as const, enforceNodeAllocatablePods: true, podPidsLimit: undefined, systemReserved: {}, kubeReserved: {}, configFile: '/var/lib/kubelet/config.yaml' };
    await assert.rejects(
      setUpNodeCgroups({ config, runtime, capacity: {}, activePods: () => [], logger: silentLogger(), mounts: await fakeV2(dir) }),
      (err: Error) => err instanceof ConfigError && err.message === "/var/lib/kubelet/config.yaml: cgroupDriver is cgroupfs, but the container runtime uses the systemd cgroup driver (SystemdCgroup = true in containerd's runc options); set cgroupDriver: systemd (--cgroup-driver=systemd), as kubeadm does for a runtime with SystemdCgroup = true",
    );
    // A runtime that does not say (containerd 1.x) is trusted to match.
    const quiet = { runtimeConfig: async () => undefined } as unknown as ContainerRuntime;
    const made = await setUpNodeCgroups({ config, runtime: quiet, capacity: {}, activePods: () => [], logger: silentLogger(), mounts: await fakeV2(dir) });
    assert.ok(made);
    await made.close();
  });
});

describe('QoS oom_score_adj (upstream GetContainerOOMScoreAdjust)', function () {
  const GiB = 2 ** 30;
  const c = (memory?: string, more: object = {}) => ({ name: 'c', image: 'x', ...(memory ? { resources: { requests: { memory } } } : {}), ...more });

  it('Guaranteed and node-critical -997, BestEffort 1000, Burstable by its share of the machine within 3..999, a sidecar no higher than the smallest app container', () => {
    assert.equal(oomScoreAdj(guaranteed(), guaranteed().spec!.containers[0]!, 8 * GiB), -997);
    assert.equal(oomScoreAdj(besteffort(), besteffort().spec!.containers[0]!, 8 * GiB), 1000);
    const critical = pod([c()], { priorityClassName: 'system-node-critical', priority: 2_000_001_000 });
    assert.equal(oomScoreAdj(critical, critical.spec!.containers[0]!, 8 * GiB), -997);
    const clusterCritical = pod([c('1Gi')], { priorityClassName: 'system-cluster-critical', priority: 2_000_000_000 });
    assert.equal(oomScoreAdj(clusterCritical, clusterCritical.spec!.containers[0]!, 8 * GiB), 875, 'cluster-critical is not node-critical: its QoS decides');
    const b = pod([c('2Gi')]);
    assert.equal(oomScoreAdj(b, b.spec!.containers[0]!, 8 * GiB), 750);
    const tiny = pod([c('1Mi')]);
    assert.equal(oomScoreAdj(tiny, tiny.spec!.containers[0]!, 8 * GiB), 999, 'never BestEffort\'s 1000');
    const huge = pod([c('8Gi')]);
    assert.equal(oomScoreAdj(huge, huge.spec!.containers[0]!, 8 * GiB), 3, 'never below a Guaranteed container using all memory');
    const side = c('64Mi', { restartPolicy: 'Always' });
    const withSidecar = pod([c('4Gi'), c('2Gi')], { initContainers: [side] });
    assert.equal(oomScoreAdj(withSidecar, side, 8 * GiB), 750, 'the sidecar scores as the smallest app container (2Gi), not its own 64Mi');
  });
});

describe('huge page limits (upstream GetHugepageLimitsFromResources)', function () {
  it('each hugepages-<size> limit reaches CRI as the hugetlb cgroup spells the size; a container without one gets none', () => {
    const p: V1Pod = { metadata: { name: 'h', namespace: 'ns', uid: 'h' }, spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { memory: '64Mi', 'hugepages-2Mi': '4Mi', 'hugepages-1Gi': '2Gi' } } }] } };
    assert.deepEqual(linuxResources(p, p.spec!.containers[0]!, 8 * 2 ** 30).hugepageLimits, [{ pageSize: '1GB', limit: 2 * 2 ** 30 }, { pageSize: '2MB', limit: 4 * 2 ** 20 }]);
    assert.equal(hugePageUnitSize(64 * 1024), '64KB');
    const plain: V1Pod = { metadata: { name: 'p', namespace: 'ns', uid: 'p' }, spec: { containers: [{ name: 'c', image: 'x', resources: { limits: { memory: '64Mi' } } }] } };
    assert.equal(linuxResources(plain, plain.spec!.containers[0]!, 8 * 2 ** 30).hugepageLimits, undefined);
  });
});
