import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { cadvisorMetricsText } from '../../core/stats/cadvisor-metrics.ts';
import type { StatsSnapshot } from '../../core/stats/stats-provider.ts';
import { parsePrometheusText } from '../support/prometheus-text.ts';

describe('/metrics/cadvisor text', () => {
  const time = '2026-01-02T03:04:05.000Z';
  const at = Date.parse(time);
  const snap: StatsSnapshot = {
    collectedAt: at,
    errors: [],
    containerStatsFailed: false,
    summary: {
      node: { nodeName: 'n1', startTime: time },
      pods: [{
        podRef: { name: 'web', namespace: 'ns "q"', uid: 'u1' },
        startTime: time,
        cpu: { time, usageCoreNanoSeconds: 3e9 },
        memory: { time, workingSetBytes: 4096, usageBytes: 8192, rssBytes: 1024 },
        network: { time, name: 'eth0', rxBytes: 10, txBytes: 20, rxErrors: 0, txErrors: 1, interfaces: [{ name: 'eth0', rxBytes: 10, txBytes: 20, rxErrors: 0, txErrors: 1 }, { name: 'net1', rxBytes: 5, txBytes: 6 }] },
        containers: [{ name: 'app', startTime: time, cpu: { time, usageCoreNanoSeconds: 2.5e9 }, memory: { time, workingSetBytes: 2048 }, rootfs: { time, usedBytes: 777 } }],
      }],
    },
  } as unknown as StatsSnapshot;
  const pods: V1Pod[] = [{
    metadata: { uid: 'u1', name: 'web', namespace: 'ns "q"' },
    spec: { containers: [{ name: 'app', image: 'busybox:spec' }] },
    status: { containerStatuses: [{ name: 'app', image: 'registry.local/busybox:1.36', imageID: 'sha256:x', containerID: 'containerd://abc123', ready: true, restartCount: 0 }] },
  }];

  it('gives containers cAdvisor\'s labels and the pod\'s cgroup an empty container, with the sample times', () => {
    const f = parsePrometheusText(cadvisorMetricsText(snap, pods, { cpuCores: 2, memoryBytes: 1024 }));
    const app = { container: 'app', image: 'registry.local/busybox:1.36', name: 'abc123', namespace: 'ns "q"', pod: 'web' };
    assert.deepEqual(f.get('container_cpu_usage_seconds_total')!.samples, [
      { labels: { container: '', image: '', name: '', namespace: 'ns "q"', pod: 'web', cpu: 'total' }, value: 3, timestampMs: at },
      { labels: { ...app, cpu: 'total' }, value: 2.5, timestampMs: at },
    ]);
    assert.equal(f.get('container_cpu_usage_seconds_total')!.type, 'counter');
    assert.deepEqual(f.get('container_memory_working_set_bytes')!.samples.map((s) => [s.labels.container, s.value]), [['', 4096], ['app', 2048]]);
    assert.deepEqual(f.get('container_fs_usage_bytes')!.samples, [{ labels: { ...app, device: '' }, value: 777, timestampMs: at }]);
    assert.deepEqual(f.get('container_network_transmit_errors_total')!.samples.map((s) => [s.labels.interface, s.value]), [['eth0', 1]]);
    assert.deepEqual(f.get('container_network_receive_bytes_total')!.samples.map((s) => [s.labels.interface, s.value]), [['eth0', 10], ['net1', 5]]);
    assert.deepEqual([f.get('machine_cpu_cores')!.samples[0]!.value, f.get('machine_memory_bytes')!.samples[0]!.value], [2, 1024]);
  });

  it('falls back to the spec\'s image, and no id, for a container without a status', () => {
    const f = parsePrometheusText(cadvisorMetricsText(snap, [{ ...pods[0]!, status: {} }], { cpuCores: 1, memoryBytes: 1 }));
    const app = f.get('container_start_time_seconds')!.samples.find((s) => s.labels.container === 'app')!;
    assert.deepEqual([app.labels.image, app.labels.name, app.value], ['busybox:spec', '', Math.floor(at / 1000)]);
  });
});
