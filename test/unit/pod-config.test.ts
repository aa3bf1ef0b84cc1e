import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { PodConfig, type PodUpdate } from '../../core/sources/pod-config.ts';

const pod = (uid: string, image = 'busybox', labels: Record<string, string> = {}): V1Pod => ({
  metadata: { name: uid, namespace: 'default', uid, labels },
  spec: { containers: [{ name: 'main', image, env: Array.from({ length: 50 }, (_, i) => ({ name: `E${i}`, value: `${i}` })) }] },
});

/** Counts how often the pod's spec is read (what comparing or serialising it does). */
function countingSpecReads(p: V1Pod): { reads: number } {
  const counter = { reads: 0 };
  const spec = p.spec;
  Object.defineProperty(p, 'spec', { get: () => (counter.reads++, spec), enumerable: true, configurable: true });
  return counter;
}

describe('PodConfig: a source\'s whole set merged into ADD / UPDATE / REMOVE', function () {
  it('an unchanged pod sent again (the same object) is neither an update nor serialised again; a changed copy is an UPDATE, an equal copy nothing', function () {
    const updates: PodUpdate[] = [];
    const config = new PodConfig((u) => updates.push(u));
    const a = pod('a');
    const b = pod('b');
    const reads = countingSpecReads(a);
    config.set('api', [a, b]);
    const afterAdd = reads.reads;
    // A source sends its whole set at every change of any pod: 200 changes of others.
    for (let i = 0; i < 200; i++) config.set('api', [a, b, pod(`c${i}`)]);
    assert.equal(reads.reads, afterAdd, 'the unchanged pod is not serialised at every set');
    assert.deepEqual(updates.filter((u) => u.op === 'UPDATE'), [], 'no UPDATE for unchanged pods');

    config.set('api', [pod('a'), b]); // a copy with the same content
    assert.deepEqual(updates.filter((u) => u.op === 'UPDATE'), [], 'an equal copy is no update');
    config.set('api', [pod('a', 'busybox:2'), b]);
    config.set('api', [pod('a', 'busybox:2', { tier: 'web' }), b]);
    const ups = updates.filter((u) => u.op === 'UPDATE').map((u) => u.pods.map((p) => `${p.metadata!.uid}:${p.spec!.containers[0]!.image}:${JSON.stringify(p.metadata!.labels)}`));
    assert.deepEqual(ups, [['a:busybox:2:{}'], ['a:busybox:2:{"tier":"web"}']], 'a changed image, then a label, each one UPDATE');
    config.set('api', [b]);
    assert.deepEqual(updates.at(-1), { op: 'REMOVE', pods: [updates.at(-2)!.pods[0]], source: 'api' });
  });
});
