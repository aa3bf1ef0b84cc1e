import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { silentLogger } from '../../core/logger.ts';
import { LABEL } from '../../core/runtime/labels.ts';
import type { ContainerRuntime, ContainerStats, ContainerSummary, PodSandboxStats, SandboxSummary } from '../../core/runtime/types.ts';
import { diskUsage } from '../../core/stats/disk-usage.ts';
import { CgroupReader, defaultInterface, parseBootTimeMs, parseLoadavgTasks, parseNetDev, parseProcStatCpuNs } from '../../core/stats/host-readers.ts';
import { StatsProvider, type StatsProviderDeps } from '../../core/stats/stats-provider.ts';
import { resourceMetricsText } from '../../core/stats/stats-routes.ts';

describe('stats: host readers', () => {
  it('parses /proc/net/dev (loopback left out), picks eth0, else the default route\'s interface', () => {
    const text = `Inter-|   Receive                                                |  Transmit
 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
    lo: 229845657  350603    0    0    0     0          0         0 229845657  350603    0    0    0     0       0          0
  ens3: 128605382    3420    2    0    0     0          0         0   377902    2525    5    0    0     0       0          0
  kts0:       528       8    0    0    0     0          0         0      744      10    0    0    0     0       0          0
`;
    const ifaces = parseNetDev(text);
    assert.deepEqual(ifaces.map((i) => i.name), ['ens3', 'kts0']);
    assert.deepEqual(ifaces[0], { name: 'ens3', rxBytes: 128605382, rxErrors: 2, txBytes: 377902, txErrors: 5 });
    const route = 'Iface\tDestination\tGateway\nkts0\t00580A0A\t00000000\nens3\t00000000\t0102000A\n';
    assert.equal(defaultInterface(ifaces, route)?.name, 'ens3');
    assert.equal(defaultInterface([...ifaces, { name: 'eth0' }], route)?.name, 'eth0');
  });

  it('parses CPU time, boot time and task counts from /proc', () => {
    assert.equal(parseProcStatCpuNs('cpu  100 5 50 9999 7 3 2 1 0 0\ncpu0 1 1 1 1\n'), (100 + 5 + 50 + 3 + 2 + 1) * 1e7);
    assert.equal(parseBootTimeMs('cpu 1 2\nbtime 1795369523\n'), 1795369523000);
    assert.equal(parseLoadavgTasks('2.15 2.18 2.06 5/142 18686\n'), 142);
  });

  it('reads cgroup v1 counters: working set = usage - inactive file, hierarchical counters first', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cg-'));
    try {
      await fs.mkdir(path.join(dir, 'memory', 'kubepods'), { recursive: true });
      await fs.mkdir(path.join(dir, 'cpuacct', 'kubepods'), { recursive: true });
      await fs.writeFile(path.join(dir, 'cpuacct', 'kubepods', 'cpuacct.usage'), '123456789\n');
      await fs.writeFile(path.join(dir, 'memory', 'kubepods', 'memory.usage_in_bytes'), '1000000\n');
      await fs.writeFile(path.join(dir, 'memory', 'kubepods', 'memory.limit_in_bytes'), '9223372036854771712\n');
      await fs.writeFile(path.join(dir, 'memory', 'kubepods', 'memory.stat'), 'inactive_file 5\nrss 7\ntotal_inactive_file 200000\ntotal_rss 300000\ntotal_pgfault 11\ntotal_pgmajfault 2\n');
      const cg = new CgroupReader(new Map([['memory', path.join(dir, 'memory')], ['cpuacct', path.join(dir, 'cpuacct')]]));
      assert.equal(await cg.cpuUsageNs('/kubepods'), 123456789);
      assert.deepEqual(await cg.memory('/kubepods'), { usageBytes: 1000000, workingSetBytes: 800000, rssBytes: 300000, pageFaults: 11, majorPageFaults: 2, limitBytes: 9223372036854771712 });
      assert.equal(await cg.memory('/gone'), undefined);
      assert.equal(await cg.exists('/kubepods'), true);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('reads cgroup v2 counters with v1\'s semantics: cpu.stat, memory.current less inactive_file, anon as RSS, max as no limit', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-cg2-'));
    try {
      const pod = path.join(dir, 'kubepods.slice', 'kubepods-pod1.slice');
      const ctr = path.join(pod, 'cri-containerd-abc.scope');
      await fs.mkdir(ctr, { recursive: true });
      await fs.writeFile(path.join(dir, 'cpu.stat'), 'usage_usec 9000000\nuser_usec 1\nsystem_usec 2\n');
      await fs.writeFile(path.join(pod, 'cpu.stat'), 'usage_usec 1234567\nuser_usec 1000000\nsystem_usec 234567\nnr_periods 0\n');
      await fs.writeFile(path.join(pod, 'memory.current'), '1000000\n');
      await fs.writeFile(path.join(pod, 'memory.max'), 'max\n');
      await fs.writeFile(path.join(pod, 'memory.stat'), 'anon 300000\nfile 600000\ninactive_file 200000\nactive_file 400000\npgfault 11\npgmajfault 2\n');
      await fs.writeFile(path.join(pod, 'cgroup.procs'), '');
      await fs.writeFile(path.join(ctr, 'cgroup.procs'), '4242\n');
      const cg = new CgroupReader({ version: 2, v1: new Map(), unified: dir });
      assert.equal(cg.version, 2);
      assert.equal(cg.hasCpuacct, true);
      assert.equal(cg.hasMemory, false, 'v2\'s root has no memory.current: the node\'s memory comes from /proc/meminfo');
      assert.equal(await cg.cpuUsageNs('/'), 9e9);
      assert.equal(await cg.cpuUsageNs('/kubepods.slice/kubepods-pod1.slice'), 1234567000);
      assert.deepEqual(await cg.memory('/kubepods.slice/kubepods-pod1.slice'), { usageBytes: 1000000, workingSetBytes: 800000, rssBytes: 300000, pageFaults: 11, majorPageFaults: 2, limitBytes: undefined });
      await fs.writeFile(path.join(pod, 'memory.max'), '52428800\n');
      assert.equal((await cg.memory('/kubepods.slice/kubepods-pod1.slice'))!.limitBytes, 52428800);
      assert.equal(await cg.firstPid('/kubepods.slice/kubepods-pod1.slice'), 4242, 'a process of the pod\'s containers (only leaves hold processes on v2)');
      assert.equal(await cg.exists('/kubepods.slice/kubepods-pod1.slice'), true);
      assert.equal(await cg.exists('/kubepods.slice/gone.slice'), false);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });

  it('measures a tree in blocks and inodes, and stops at its bound with a partial figure', async () => {
    const dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-du-'));
    try {
      await fs.mkdir(path.join(dir, 'sub'));
      await fs.writeFile(path.join(dir, 'sub', 'big'), Buffer.alloc(256 * 1024, 1));
      for (let i = 0; i < 30; i++) await fs.writeFile(path.join(dir, `f${i}`), 'x');
      await fs.symlink('/etc', path.join(dir, 'link'));
      const all = (await diskUsage(dir))!;
      assert.ok(all.bytes >= 256 * 1024, String(all.bytes));
      assert.equal(all.inodes, 1 + 1 + 1 + 30 + 1, 'the dir, sub, big, 30 files, the link (not followed)');
      assert.equal(all.partial, false);
      const bounded = (await diskUsage(dir, { maxEntries: 10, maxMs: 5000 }))!;
      assert.equal(bounded.partial, true);
      assert.ok(bounded.inodes <= 11);
      assert.equal(await diskUsage(path.join(dir, 'nope')), undefined);
    } finally {
      await fs.rm(dir, { recursive: true, force: true });
    }
  });
});

describe('stats: the provider', function () {
  let dir: string;
  let clock: number;
  let calls: Record<string, number>;
  let cpuNs: number;
  let sandboxStatsMode: 'ok' | 'unimplemented';
  let containerStatsFail: boolean;
  /** The sandboxes' stats carry their containers' (as containerd's do). */
  let sandboxCarriesContainers: boolean;
  const uid = 'uid-1';

  const sandbox: SandboxSummary = { id: 'sb1', metadata: { name: 'web', namespace: 'ns "q"', uid, attempt: 0 }, state: 'SANDBOX_READY', createdAt: 1_700_000_000_000, labels: { [LABEL.managed]: 'true' }, annotations: {} };
  const ctr = (id: string, name: string): ContainerSummary => ({
    id, podSandboxId: 'sb1', metadata: { name, attempt: 0 }, image: 'busybox', imageRef: 'sha256:x', state: 'CONTAINER_RUNNING', createdAt: 1_700_000_001_000,
    labels: { [LABEL.managed]: 'true', [LABEL.podUID]: uid, [LABEL.containerName]: name }, annotations: {},
  });
  const cstats = (id: string, name: string): ContainerStats => ({
    id, metadata: { name, attempt: 0 }, labels: { [LABEL.podUID]: uid, [LABEL.containerName]: name }, annotations: {},
    cpu: { timestamp: clock, usageCoreNanoSeconds: cpuNs },
    memory: { timestamp: clock, workingSetBytes: 4096, usageBytes: 8192 },
    writableLayer: { timestamp: clock, mountpoint: dir, usedBytes: 1000, inodesUsed: 3 },
  });

  function runtime(): ContainerRuntime {
    const count = (m: string) => (calls[m] = (calls[m] ?? 0) + 1);
    return {
      async listPodSandboxes() {
        count('listPodSandboxes');
        return [sandbox];
      },
      async listContainers() {
        count('listContainers');
        return [ctr('c1', 'app'), ctr('c2', 'side')];
      },
      async listContainerStats() {
        count('listContainerStats');
        if (containerStatsFail) throw new Error('CRI ListContainerStats: deadline exceeded');
        return [cstats('c1', 'app'), cstats('c2', 'side')];
      },
      async listPodSandboxStats(): Promise<PodSandboxStats[]> {
        count('listPodSandboxStats');
        if (sandboxStatsMode === 'unimplemented') throw new Error('CRI ListPodSandboxStats: unknown method ListPodSandboxStats (Unimplemented)');
        return [{
          id: 'sb1', metadata: sandbox.metadata, labels: {}, annotations: {},
          cpu: { timestamp: clock, usageCoreNanoSeconds: 3 * cpuNs },
          memory: { timestamp: clock, workingSetBytes: 10_000 },
          network: { timestamp: clock, defaultInterface: { name: 'eth0', rxBytes: 10, txBytes: 20 }, interfaces: [] },
          processCount: 4,
          containers: sandboxCarriesContainers ? [cstats('c1', 'app'), cstats('c2', 'side')] : [],
        }];
      },
      async imageFsInfo() {
        count('imageFsInfo');
        return [{ timestamp: clock, mountpoint: dir, usedBytes: 5000, inodesUsed: 50 }];
      },
    } as unknown as ContainerRuntime;
  }

  let provider: StatsProvider;
  let makeProvider: (more?: Partial<StatsProviderDeps>) => StatsProvider;
  beforeEach(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-stats-'));
    clock = 1_800_000_000_000;
    calls = {};
    cpuNs = 1e9;
    sandboxStatsMode = 'ok';
    containerStatsFail = false;
    sandboxCarriesContainers = false;
    const podLogs = path.join(dir, 'logs', `${sandbox.metadata.namespace}_web_${uid}`, 'app');
    await fs.mkdir(podLogs, { recursive: true });
    await fs.writeFile(path.join(podLogs, '0.log'), Buffer.alloc(8192, 65));
    const vol = path.join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data');
    await fs.mkdir(vol, { recursive: true });
    await fs.writeFile(path.join(vol, 'blob'), Buffer.alloc(64 * 1024, 1));
    // A CSI volume is the driver's to measure: never walked.
    await fs.mkdir(path.join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~csi', 'remote', 'mount'), { recursive: true });
    const cg = path.join(dir, 'cg');
    await fs.mkdir(path.join(cg, 'cpuacct'), { recursive: true });
    await fs.mkdir(path.join(cg, 'memory'), { recursive: true });
    await fs.writeFile(path.join(cg, 'cpuacct', 'cpuacct.usage'), '5000000000');
    await fs.writeFile(path.join(cg, 'memory', 'memory.usage_in_bytes'), String(3 * 2 ** 20));
    await fs.writeFile(path.join(cg, 'memory', 'memory.limit_in_bytes'), String(2 ** 30));
    await fs.writeFile(path.join(cg, 'memory', 'memory.stat'), `total_inactive_file ${2 ** 20}\n`);
    makeProvider = (more = {}) => new StatsProvider({
      nodeName: 'n1', rootDir: path.join(dir, 'root'), podLogsDir: path.join(dir, 'logs'), cgroups: undefined,
      runtime: () => runtime(), pods: () => [{ metadata: { name: 'web', namespace: sandbox.metadata.namespace, uid }, status: { startTime: new Date(1_700_000_000_500) } }],
      logger: silentLogger(), cgroupReader: new CgroupReader(new Map([['cpuacct', path.join(cg, 'cpuacct')], ['memory', path.join(cg, 'memory')]])), now: () => clock,
      ...more,
    });
    provider = makeProvider();
  });
  afterEach(async () => {
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('puts the node, its filesystems and the pods with containers, volumes and ephemeral storage together', async () => {
    const { summary: s, errors, containerStatsFailed } = await provider.snapshot();
    assert.deepEqual(errors, []);
    assert.equal(containerStatsFailed, false);
    assert.equal(s.node.nodeName, 'n1');
    assert.equal(s.node.cpu!.usageCoreNanoSeconds, 5e9);
    assert.equal(s.node.memory!.workingSetBytes, 2 * 2 ** 20);
    assert.equal(s.node.memory!.availableBytes, 2 ** 30 - 2 * 2 ** 20, 'the cgroup limit bounds it below the machine');
    assert.ok(s.node.fs!.capacityBytes! > 0 && s.node.fs!.inodes! > 0);
    assert.equal(s.node.runtime!.imageFs!.usedBytes, 5000, "the runtime's own figure");
    assert.ok(s.node.runtime!.imageFs!.capacityBytes! > 0, 'the capacity of its filesystem');
    assert.deepEqual(s.node.runtime!.containerFs, s.node.runtime!.imageFs);
    assert.equal(s.pods.length, 1);
    const p = s.pods[0]!;
    assert.deepEqual(p.podRef, { name: 'web', namespace: 'ns "q"', uid });
    assert.equal(p.startTime, new Date(1_700_000_000_500).toISOString(), 'the pod status start time');
    assert.deepEqual(p.containers.map((c) => c.name), ['app', 'side']);
    assert.equal(p.cpu!.usageCoreNanoSeconds, 3e9, 'the sandbox\'s figures');
    assert.equal(p.network!.name, 'eth0');
    assert.equal(p.process_stats!.process_count, 4);
    const app = p.containers[0]!;
    assert.equal(app.rootfs!.usedBytes, 1000);
    assert.equal(app.rootfs!.capacityBytes, s.node.runtime!.imageFs!.capacityBytes);
    assert.ok(app.logs!.usedBytes! >= 8192);
    assert.deepEqual(p.volume!.map((v) => v.name), ['data'], 'local volumes only');
    assert.ok(p.volume![0]!.usedBytes! >= 64 * 1024);
    assert.equal(p['ephemeral-storage']!.usedBytes, 2 * 1000 + app.logs!.usedBytes! + p.volume![0]!.usedBytes!);
  });

  it('volumeStatsAggPeriod: a volume is measured again once the period passed, not before; 0 measures no volume', async () => {
    const blob = path.join(dir, 'root', 'pods', uid, 'volumes', 'kubernetes.io~empty-dir', 'data', 'more');
    const used = async (p: StatsProvider) => (await p.snapshot(0)).summary.pods[0]!.volume?.find((v) => v.name === 'data')?.usedBytes;
    const slow = makeProvider();
    const fast = makeProvider({ volumeStatsPeriodMs: 50 });
    const [slowBefore, fastBefore] = [await used(slow), await used(fast)];
    await fs.writeFile(blob, Buffer.alloc(256 * 1024, 2));
    await new Promise((r) => setTimeout(r, 80));
    clock += 1000; // a new collection (the snapshot's own clock), not the one just made
    assert.equal(await used(slow), slowBefore, 'the default period (1m) reuses the figure');
    const fastAfter = await used(fast);
    assert.ok(fastAfter! >= fastBefore! + 256 * 1024, `a 50 ms period measures again: ${fastBefore} then ${fastAfter}`);
    const off = makeProvider({ volumeStatsPeriodMs: 0 });
    assert.deepEqual((await off.snapshot(0)).summary.pods[0]!.volume ?? [], [], 'no volume figures');
  });

  it('CPU rates from two collections a second or more apart; one collection serves callers within its max age', async () => {
    const first = await provider.snapshot();
    assert.equal(first.summary.node.cpu!.usageNanoCores, undefined, 'no rate from one sample');
    assert.equal(await provider.snapshot(), first, 'within the max age: the same collection');
    assert.equal(calls.listContainerStats, 1);
    clock += 2000;
    cpuNs += 1e9;
    const [a, b] = await Promise.all([provider.snapshot(), provider.snapshot()]);
    assert.equal(a, b, 'concurrent callers share one collection');
    assert.equal(calls.listContainerStats, 2);
    const app = a.summary.pods[0]!.containers[0]!;
    assert.equal(app.cpu!.usageNanoCores, 5e8, 'a second of CPU over two seconds: half a core');
    assert.equal(a.summary.pods[0]!.cpu!.usageNanoCores, 15e8);
  });

  it('containers measured once: ListContainerStats is not asked when the sandboxes\' stats carry every running container', async () => {
    sandboxCarriesContainers = true;
    const first = await provider.snapshot();
    assert.equal(calls.listContainerStats, undefined);
    assert.equal(calls.listPodSandboxStats, 1);
    assert.deepEqual(first.summary.pods[0]!.containers.map((c) => [c.name, c.memory?.workingSetBytes, c.rootfs?.usedBytes]), [['app', 4096, 1000], ['side', 4096, 1000]]);
    clock += 2000;
    cpuNs += 1e9;
    const second = await provider.snapshot();
    assert.equal(second.summary.pods[0]!.containers[0]!.cpu!.usageNanoCores, 5e8);
    assert.equal(calls.listContainerStats, undefined);
  });

  it('a node-only snapshot asks the runtime for the image filesystem alone, keeps the pods\' CPU samples, and a full one fresh enough serves it', async () => {
    await provider.snapshot();
    clock += 2000;
    cpuNs += 1e9;
    const nodeOnly = await provider.snapshot(1000, { pods: false });
    assert.deepEqual(nodeOnly.summary.pods, []);
    assert.equal(nodeOnly.containerStatsFailed, false);
    assert.ok(nodeOnly.summary.node.memory && nodeOnly.summary.node.fs, 'the node\'s signals are there');
    assert.equal(nodeOnly.summary.node.runtime!.imageFs!.usedBytes, 5000);
    assert.deepEqual(calls, { listPodSandboxes: 1, listContainers: 1, listContainerStats: 1, listPodSandboxStats: 1, imageFsInfo: 2 }, 'no pod figures asked for');
    assert.equal(await provider.snapshot(1000, { pods: false }), nodeOnly, 'within the max age: the same collection');
    clock += 2000;
    cpuNs += 1e9;
    const full = await provider.snapshot();
    // Two seconds of CPU over four since the last full collection: the node-only one between
    // did not make the provider forget the containers' samples.
    assert.equal(full.summary.pods[0]!.containers[0]!.cpu!.usageNanoCores, 5e8);
    assert.equal(await provider.snapshot(1000, { pods: false }), full, 'a fresh full collection serves a node-only caller');
  });

  it('without ListPodSandboxStats (Unimplemented) the pod is summed from its containers, and the call is not made again', async () => {
    sandboxStatsMode = 'unimplemented';
    const s1 = await provider.snapshot();
    assert.deepEqual(s1.errors, []);
    const p = s1.summary.pods[0]!;
    assert.equal(p.cpu!.usageCoreNanoSeconds, 2e9, 'the two containers');
    assert.equal(p.memory!.workingSetBytes, 8192);
    clock += 5000;
    await provider.snapshot();
    assert.equal(calls.listPodSandboxStats, 1);
  });

  it('/metrics/resource: upstream names, escaped labels, sample times; a failed container listing is a scrape error', async () => {
    const text = resourceMetricsText(await provider.snapshot());
    assert.match(text, /^# TYPE node_cpu_usage_seconds_total counter$/m);
    assert.match(text, new RegExp(`^node_cpu_usage_seconds_total 5 ${clock}$`, 'm'));
    assert.match(text, new RegExp(`^container_cpu_usage_seconds_total\\{container="app",namespace="ns \\\\"q\\\\"",pod="web"\\} 1 ${clock}$`, 'm'));
    assert.match(text, new RegExp(`^pod_memory_working_set_bytes\\{namespace="ns \\\\"q\\\\"",pod="web"\\} 10000 ${clock}$`, 'm'));
    assert.match(text, /^container_start_time_seconds\{container="side",namespace="ns \\"q\\"",pod="web"\} 1700000001 1700000001000$/m);
    assert.match(text, /^scrape_error 0$/m);
    assert.match(text, /^resource_scrape_error 0$/m);
    containerStatsFail = true;
    clock += 5000;
    const failed = await provider.snapshot();
    assert.equal(failed.containerStatsFailed, true);
    assert.match(resourceMetricsText(failed), /^scrape_error 1$/m);
  });

  it('only_cpu_and_memory leaves out network, filesystems and volumes', async () => {
    const s = await provider.summary({ onlyCpuAndMemory: true });
    assert.equal(s.node.fs, undefined);
    assert.equal(s.node.network, undefined);
    assert.ok(s.node.cpu && s.node.memory);
    const p = s.pods[0]!;
    assert.deepEqual(Object.keys(p).sort(), ['containers', 'cpu', 'memory', 'podRef', 'startTime']);
    assert.deepEqual(Object.keys(p.containers[0]!).sort(), ['cpu', 'memory', 'name', 'startTime']);
  });
});
