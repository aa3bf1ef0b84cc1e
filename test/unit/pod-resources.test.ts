import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { loadPodResourcesLister } from '../../plugins/pod-resources/server.ts';
import { MemoryDevices, memoryDevicePlugin } from '../fakes/memory-devices.ts';

/**
 * The pod-resources plugin: the podresources API v1 as a monitoring agent calls it, over its
 * socket with a gRPC client, against allocations an in-process device provider made.
 */

const R = 'example.com/memory-device';
let dir: string;

function call<T>(client: grpc.Client, method: string, req: object = {}): Promise<T> {
  return new Promise((resolve, reject) => (client as unknown as Record<string, Function>)[method]!(req, { deadline: Date.now() + 5000 }, (err: grpc.ServiceError | null, res: T) => (err ? reject(err) : resolve(res))));
}

describe('pod-resources: the podresources API v1', function () {
  let plugins: PluginsUnderTest;
  let client: grpc.Client;
  const pods: V1Pod[] = [];
  const pod = (name: string, containers: Array<[string, number]>, sidecar?: [string, number]): V1Pod => {
    const c = ([n, d]: [string, number]): V1Container => ({ name: n, image: 'x', resources: { limits: d > 0 ? { [R]: String(d) } : {} } });
    const p: V1Pod = { metadata: { name, namespace: 'team-a', uid: `uid-${name}` }, spec: { containers: containers.map(c), initContainers: sidecar ? [{ ...c(sidecar), restartPolicy: 'Always' }, { name: 'setup', image: 'x' }] : [] } };
    pods.push(p);
    return p;
  };

  before(async () => {
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-podres-'));
    const socketDir = path.join(dir, 'pod-resources');
    plugins = await startPluginsForTest([
      memoryDevicePlugin(() => {
        const d = new MemoryDevices(R, ['Dev-1', 'Dev-2', 'Dev-3', 'Dev-4']);
        d.devices[2]!.numaNodes = [1];
        d.devices[3]!.health = 'Unhealthy';
        return d;
      }),
      ['pod-resources', { socketDir, qps: 1, burst: 5 }],
    ], { rootDir: path.join(dir, 'root'), pods: () => pods });
    const Lister = loadPodResourcesLister();
    client = new Lister(`unix:${path.join(socketDir, 'kubelet.sock')}`, grpc.credentials.createInsecure());
    for (const p of [pod('gpu', [['main', 1], ['helper', 0]], ['side', 1]), pod('plain', [['main', 0]])]) assert.equal(await plugins.devices.admit(p), undefined);
  });
  after(async () => {
    client?.close();
    await plugins?.close();
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('List names every pod with its sidecars and containers, and each container\'s devices one entry each, with NUMA nodes where known', async function () {
    const r = await call<{ podResources: Array<{ name: string; namespace: string; containers: Array<{ name: string; devices: Array<{ resourceName: string; deviceIds: string[]; topology: unknown }>; cpuIds: unknown[] }> }> }>(client, 'List');
    assert.deepEqual(r.podResources.map((p) => [p.namespace, p.name, p.containers.map((c) => c.name)]), [['team-a', 'gpu', ['side', 'main', 'helper']], ['team-a', 'plain', ['main']]]);
    const gpu = r.podResources[0]!;
    const ids = (name: string) => gpu.containers.find((c) => c.name === name)!.devices.flatMap((d) => d.deviceIds);
    assert.equal(ids('side').length, 1);
    assert.equal(ids('main').length, 1);
    assert.notDeepEqual(ids('side'), ids('main'));
    assert.deepEqual(ids('helper'), []);
    for (const c of gpu.containers) for (const d of c.devices) assert.equal(d.resourceName, R);
    assert.deepEqual(gpu.containers[0]!.cpuIds, [], 'no exclusive CPUs');
  });

  it('GetAllocatableResources lists the healthy devices, with their NUMA node where known', async function () {
    const r = await call<{ devices: Array<{ resourceName: string; deviceIds: string[]; topology: { nodes: Array<{ ID: string }> } | null }> }>(client, 'GetAllocatableResources');
    assert.deepEqual(r.devices.map((d) => [d.deviceIds[0], d.topology?.nodes.map((n) => n.ID) ?? null]), [['Dev-1', null], ['Dev-2', null], ['Dev-3', ['1']]]);
  });

  it('Get answers one pod, and names a pod it does not know as upstream does', async function () {
    const r = await call<{ podResources: { name: string; containers: Array<{ name: string }> } }>(client, 'Get', { podName: 'gpu', podNamespace: 'team-a' });
    assert.equal(r.podResources.name, 'gpu');
    await assert.rejects(call(client, 'Get', { podName: 'nope', podNamespace: 'team-a' }), (err: grpc.ServiceError) => err.code === grpc.status.UNKNOWN && err.details === 'pod nope in namespace team-a not found');
  });

  it('more requests than the rate limit allows are refused with ResourceExhausted, "rejected by rate limit"', async function () {
    const results = await Promise.allSettled(Array.from({ length: 8 }, () => call(client, 'List')));
    const refused = results.filter((r) => r.status === 'rejected').map((r) => (r as PromiseRejectedResult).reason as grpc.ServiceError);
    assert.ok(refused.length > 0, 'some requests beyond the burst were refused');
    for (const e of refused) assert.equal(`${e.code} ${e.details}`, `${grpc.status.RESOURCE_EXHAUSTED} rejected by rate limit`);
  });
});
