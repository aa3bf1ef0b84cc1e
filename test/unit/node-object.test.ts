import assert from 'node:assert/strict';
import type { V1Node } from '@kubernetes/client-node';
import {
  apiTime, conditionsWithTimes, initialNode, ownedStatusChanged, readyCondition, reconcileExistingNode, statusImages, statusPatch, type OwnedStatus,
} from '../../core/node/node-object.ts';
import { microTime } from '../../core/node/node-lease.ts';
import { KUBELET_VERSION } from '../../core/version.ts';
import { invalidLabelKey, kubeletMaySetLabel } from '../../core/objects/node-labels.ts';

const UP = { conditions: [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady', status: true }] };
const CAPACITY = ['cpu', 'memory', 'pods', 'ephemeral-storage'];

describe('node object', function () {
  describe('Ready condition', function () {
    const ready = (over: Partial<Parameters<typeof readyCondition>[0]>) => readyCondition({ runtime: UP, plegHealthy: true, plegLastRelistMs: 1, capacity: CAPACITY, now: 0, ...over });

    it('is True with upstream\'s reason and message when all is well', function () {
      assert.deepEqual(ready({}), { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet is posting ready status' });
    });

    it('is False with upstream\'s messages: runtime down, network not ready, runtime not ready, PLEG, capacity', function () {
      assert.equal(ready({ runtime: { error: 'connect ECONNREFUSED' } }).message, 'container runtime is down: connect ECONNREFUSED');
      const net = ready({ runtime: { conditions: [{ type: 'RuntimeReady', status: true }, { type: 'NetworkReady', status: false, reason: 'NetworkPluginNotReady', message: 'Network plugin returns error: cni plugin not initialized' }] } });
      assert.deepEqual([net.status, net.reason, net.message], ['False', 'KubeletNotReady', 'container runtime network not ready: NetworkReady=false reason:NetworkPluginNotReady message:Network plugin returns error: cni plugin not initialized']);
      assert.equal(ready({ runtime: { conditions: [] } }).message, '[container runtime not ready: <nil>, container runtime network not ready: <nil>]');
      assert.equal(ready({ plegHealthy: false, plegLastRelistMs: 1000, now: 1000 + 185_000 }).message, 'PLEG is not healthy: pleg was last seen active 3m5s ago; threshold is 3m0s');
      assert.equal(ready({ plegHealthy: false, plegLastRelistMs: 0 }).message, 'PLEG is not healthy: pleg has yet to be successful');
      assert.equal(ready({ capacity: ['cpu', 'memory'] }).message, 'missing node capacity for resources: pods, ephemeral-storage');
    });
  });

  it('keeps lastTransitionTime while the status holds and moves it when it changes; heartbeat is now', function () {
    const now = Date.parse('2026-01-01T00:10:00Z');
    const current = [
      { type: 'Ready', status: 'True', lastTransitionTime: '2026-01-01T00:00:00Z' as unknown as Date, lastHeartbeatTime: '2026-01-01T00:05:00Z' as unknown as Date },
      { type: 'DiskPressure', status: 'False', lastTransitionTime: '2026-01-01T00:00:00Z' as unknown as Date },
    ];
    const out = conditionsWithTimes([
      { type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'ok' },
      { type: 'DiskPressure', status: 'True', reason: 'KubeletHasDiskPressure', message: 'kubelet has disk pressure' },
      { type: 'PIDPressure', status: 'False', reason: 'KubeletHasSufficientPID', message: 'kubelet has sufficient PID available' },
    ], current, now);
    assert.deepEqual(out.map((c) => [c.type, c.lastTransitionTime, c.lastHeartbeatTime]), [
      ['Ready', '2026-01-01T00:00:00Z', '2026-01-01T00:10:00Z'],
      ['DiskPressure', '2026-01-01T00:10:00Z', '2026-01-01T00:10:00Z'],
      ['PIDPressure', '2026-01-01T00:10:00Z', '2026-01-01T00:10:00Z'],
    ]);
    assert.equal(apiTime(Date.parse('2026-01-01T00:00:00.999Z')), '2026-01-01T00:00:00Z');
    assert.equal(microTime(Date.parse('2026-01-01T00:00:00.123Z')), '2026-01-01T00:00:00.123000Z');
  });

  it('the initial Node carries the default labels, nodeLabels, the attach/detach annotation and taints', function () {
    const node = initialNode({
      name: 'n1',
      labels: { 'kubernetes.io/hostname': 'n1', 'kubernetes.io/os': 'linux' },
      nodeLabels: { 'kubernetes.io/os': 'override', pool: 'a' },
      taints: [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'x', effect: 'NoExecute' }],
      status: {},
    });
    assert.deepEqual(node.metadata!.labels, { 'kubernetes.io/hostname': 'n1', 'kubernetes.io/os': 'override', pool: 'a' });
    assert.deepEqual(node.metadata!.annotations, { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' });
    assert.deepEqual(node.spec!.taints, [{ key: 'dedicated', value: 'gpu', effect: 'NoSchedule' }, { key: 'x', effect: 'NoExecute' }]);
  });

  it('reconciles an existing Node: default labels, the annotation, huge pages; nothing else', function () {
    const initial = initialNode({
      name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', 'kubernetes.io/arch': 'amd64' }, nodeLabels: { pool: 'b' }, taints: [{ key: 't', effect: 'NoSchedule' }],
      status: { capacity: { cpu: '2', 'hugepages-2Mi': '0' }, allocatable: { cpu: '2', 'hugepages-2Mi': '0' } },
    });
    const existing: V1Node = {
      metadata: { name: 'n1', labels: { 'kubernetes.io/hostname': 'n1', 'kubernetes.io/arch': 'arm64', pool: 'a', mine: 'x' } },
      status: { capacity: { cpu: '4', 'hugepages-1Gi': '2Gi' }, allocatable: { cpu: '4', 'hugepages-1Gi': '2Gi' } },
    };
    assert.deepEqual(reconcileExistingNode(initial, existing), {
      metadata: { labels: { 'kubernetes.io/arch': 'amd64' }, annotations: { 'volumes.kubernetes.io/controller-managed-attach-detach': 'true' } },
      status: { capacity: { 'hugepages-2Mi': '0', 'hugepages-1Gi': null }, allocatable: { 'hugepages-2Mi': '0', 'hugepages-1Gi': null } },
    });
    const same: V1Node = { metadata: { labels: initial.metadata!.labels, annotations: initial.metadata!.annotations }, status: initial.status };
    assert.equal(reconcileExistingNode(initial, same), undefined);
  });

  it('images: largest first, at most 50, digests then tags, at most 5 names, nameless ones left out', function () {
    const many = Array.from({ length: 60 }, (_, i) => ({ repoTags: [`img${i}:1`], repoDigests: [], size: i }));
    const images = statusImages([
      ...many,
      { repoTags: ['a:1', 'a:2', 'a:3', 'a:4'], repoDigests: ['a@sha256:1', 'a@sha256:2'], size: 1000 },
      { repoTags: [], repoDigests: [], size: 5000 },
    ]);
    assert.equal(images.length, 50);
    assert.deepEqual(images[0], { names: ['a@sha256:1', 'a@sha256:2', 'a:1', 'a:2', 'a:3'], sizeBytes: 1000 });
    assert.deepEqual(images[1], { names: ['img59:1'], sizeBytes: 59 });
  });

  it('the status patch replaces addresses, nulls what was dropped, and compares without heartbeat times', function () {
    const owned: OwnedStatus = {
      capacity: { cpu: '2' }, allocatable: { cpu: '2' },
      conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'm', lastHeartbeatTime: 'h2' as unknown as Date, lastTransitionTime: 't1' as unknown as Date }],
      addresses: [{ type: 'InternalIP', address: '10.0.0.2' }], daemonEndpoints: { kubeletEndpoint: { Port: 10250 } },
      nodeInfo: { kubeletVersion: KUBELET_VERSION }, images: [], labels: { 'example.com/a': '1' },
    };
    const patch = statusPatch(owned, { resources: ['example.com/dongle', 'cpu'], labels: ['example.com/gone'] }) as { metadata: { labels: object }; status: Record<string, unknown> };
    assert.deepEqual(patch.metadata.labels, { 'example.com/gone': null, 'example.com/a': '1' });
    assert.deepEqual(patch.status.capacity, { 'example.com/dongle': null, cpu: '2' });
    assert.deepEqual(patch.status.addresses, [{ $patch: 'replace' }, { type: 'InternalIP', address: '10.0.0.2' }]);
    const server: V1Node = {
      metadata: { labels: { 'example.com/a': '1', other: 'x' } },
      status: {
        capacity: { cpu: '2', 'example.com/theirs': '1' }, allocatable: { cpu: '2' },
        conditions: [{ type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'm', lastHeartbeatTime: 'h1' as unknown as Date, lastTransitionTime: 't1' as unknown as Date }, { type: 'NetworkUnavailable', status: 'False' }],
        addresses: [{ type: 'InternalIP', address: '10.0.0.2' }], daemonEndpoints: { kubeletEndpoint: { Port: 10250 } }, nodeInfo: { kubeletVersion: KUBELET_VERSION } as never, images: [],
      },
    };
    assert.equal(ownedStatusChanged(server, owned), false, 'only the heartbeat differs; others\' resources and conditions do not count');
    assert.equal(ownedStatusChanged(server, { ...owned, addresses: [{ type: 'InternalIP', address: '10.0.0.3' }] }), true);
    assert.equal(ownedStatusChanged(undefined, owned), true);
    // volumesInUse: a change is a change; posted as a list, null once empty (the API drops it).
    const inUse = { ...owned, volumesInUse: ['kubernetes.io/csi/d^h'] };
    assert.equal(ownedStatusChanged(server, inUse), true);
    assert.equal(ownedStatusChanged({ ...server, status: { ...server.status, volumesInUse: ['kubernetes.io/csi/d^h'] } }, inUse), false);
    assert.deepEqual((statusPatch(inUse, { resources: [], labels: [] }) as { status: Record<string, unknown> }).status.volumesInUse, ['kubernetes.io/csi/d^h']);
    assert.equal((statusPatch(owned, { resources: [], labels: [] }) as { status: Record<string, unknown> }).status.volumesInUse, null);
  });

  it('kubeletVersion is v1.28.7 with kubelet-ts as semver build metadata', function () {
    assert.match(KUBELET_VERSION, /^v1\.28\.7\+kubelet-ts\.\d+\.\d+\.\d+$/);
  });

  it('node labels: qualified names, and only those NodeRestriction lets a node set', function () {
    assert.equal(invalidLabelKey('example.com/pool'), undefined);
    assert.match(invalidLabelKey('bad key')!, /qualified name/);
    assert.deepEqual(
      ['pool', 'example.com/pool', 'node.kubernetes.io/role', 'x.kubelet.kubernetes.io/a', 'kubernetes.io/hostname', 'topology.kubernetes.io/zone', 'node-role.kubernetes.io/worker', 'kubernetes.io/role', 'k8s.io/x'].map(kubeletMaySetLabel),
      [true, true, true, true, true, true, false, false, false],
    );
  });
});
