import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { localStorageViolations } from '../../core/eviction/local-storage.ts';
import { observeSignals } from '../../core/eviction/signals.ts';
import type { PodStats } from '../../core/stats/summary-types.ts';
import { binaryQuantity } from '../../core/objects/quantity.ts';

const time = new Date().toISOString();
const Mi = 2 ** 20;

describe('eviction signals and local storage limits', function () {
  it('observes every signal from one stats summary, as upstream computes them', function () {
    const obs = observeSignals({
      node: {
        nodeName: 'n', startTime: time,
        memory: { time, availableBytes: 300 * Mi, workingSetBytes: 700 * Mi },
        fs: { time, availableBytes: 10, capacityBytes: 100, inodesFree: 5, inodes: 50 },
        runtime: { imageFs: { time, availableBytes: 20, capacityBytes: 200, inodesFree: 7, inodes: 70 } },
        rlimit: { time, maxpid: 4194304, curproc: 304 },
      },
      pods: [],
    });
    assert.deepEqual(Object.fromEntries(obs), {
      'memory.available': { available: 300 * Mi, capacity: 1000 * Mi },
      'nodefs.available': { available: 10, capacity: 100 },
      'nodefs.inodesFree': { available: 5, capacity: 50 },
      'imagefs.available': { available: 20, capacity: 200 },
      'imagefs.inodesFree': { available: 7, capacity: 70 },
      'pid.available': { available: 4194000, capacity: 4194304 },
    });
  });

  it('a signal the collection could not read is not observed (no threshold of it is met)', function () {
    assert.deepEqual([...observeSignals({ node: { nodeName: 'n', startTime: time }, pods: [] }).keys()], []);
  });

  describe('localStorageViolations', function () {
    const pod = (name: string, spec: Partial<V1Pod['spec']>): V1Pod => ({ metadata: { name, uid: name }, spec: { containers: [{ name: 'c', image: 'x' }], ...spec } as V1Pod['spec'] });
    const stats = (uid: string, c: { rootfs?: number; logs?: number }, volumes: Record<string, number> = {}): PodStats => ({
      podRef: { name: uid, namespace: 'h15', uid }, startTime: time,
      containers: [{ name: 'c', startTime: time, ...(c.rootfs !== undefined ? { rootfs: { time, usedBytes: c.rootfs } } : {}), ...(c.logs !== undefined ? { logs: { time, usedBytes: c.logs } } : {}) }],
      volume: Object.entries(volumes).map(([name, usedBytes]) => ({ time, name, usedBytes })),
    });

    it('emptyDir sizeLimit first, then the pod total of container limits, then a container limit; upstream messages', function () {
      const limits = (q: string) => [{ name: 'c', image: 'x', resources: { limits: { 'ephemeral-storage': q } } }];
      const pods = [
        pod('dir', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '1Mi' } }], containers: limits('1Mi') }),
        pod('total', { volumes: [{ name: 'scratch', emptyDir: {} }], containers: limits('2Mi') }),
        pod('fine', { volumes: [{ name: 'scratch', emptyDir: { sizeLimit: '10Mi' } }], containers: limits('10Mi') }),
        pod('nolimits', {}),
      ];
      const out = localStorageViolations(pods, [
        stats('dir', { rootfs: 5 * Mi }, { scratch: 2 * Mi }),
        stats('total', { rootfs: Mi, logs: 0 }, { scratch: 2 * Mi }),
        stats('fine', { rootfs: Mi, logs: Mi }, { scratch: Mi }),
        stats('nolimits', { rootfs: 100 * Mi }, {}),
      ]);
      assert.deepEqual(out.map((v) => [v.pod.metadata!.name, v.message]), [
        ['dir', 'Usage of EmptyDir volume "scratch" exceeds the limit "1Mi". '],
        ['total', 'Pod ephemeral local storage usage exceeds the total limit of containers 2Mi. '],
      ]);
    });

    it('a container over its own limit (its writable layer and logs)', function () {
      const p = pod('ctr', { containers: [{ name: 'c', image: 'x', resources: { limits: { 'ephemeral-storage': '1Mi' } } }, { name: 'd', image: 'x', resources: { limits: { 'ephemeral-storage': '100Mi' } } }] });
      const s = stats('ctr', { rootfs: Mi, logs: 1 });
      // The pod total (101Mi) is not exceeded; container c is.
      assert.deepEqual(localStorageViolations([p], [s]).map((v) => v.message), ['Container c exceeded its local ephemeral storage limit "1Mi". ']);
    });
  });

  it('prints byte counts as apimachinery prints BinarySI quantities', function () {
    for (const f of [binaryQuantity]) {
      assert.equal(f(100 * Mi), '100Mi');
      assert.equal(f(1536 * 1024), '1536Ki');
      assert.equal(f(2 ** 30), '1Gi');
      assert.equal(f(1234567), '1234567');
    }
  });
});
