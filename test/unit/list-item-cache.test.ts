import { strict as assert } from 'node:assert';
import { cachingListDeserializer } from '../../plugins/cri-containerd/list-item-cache.ts';
import { loadCriPackage } from '../../plugins/cri-containerd/proto-loader.ts';

// The real CRI v1 messages, encoded and decoded by the generated (de)serializers.
const { RuntimeService } = loadCriPackage();
const containersDef = RuntimeService.service.ListContainers!;
const sandboxesDef = RuntimeService.service.ListPodSandbox!;
const encodeContainers = (containers: object[]): Buffer => containersDef.responseSerialize({ containers });
const decodeContainers = (buf: Buffer) => containersDef.responseDeserialize(buf);

/** Container's map fields: labels (8), annotations (9). */
const CONTAINER_MAPS = [8, 9];

const container = (id: string, state = 'CONTAINER_RUNNING') => ({
  id,
  podSandboxId: `sb-${id}`,
  metadata: { name: `c-${id}`, attempt: 2 },
  image: { image: 'registry.local/busybox:1' },
  imageRef: 'sha256:abc',
  state,
  createdAt: '1764236400123456789',
  labels: { 'io.kubernetes.pod.uid': `uid-${id}`, 'io.kubernetes.container.name': `c-${id}` },
  annotations: { 'io.kubernetes.container.hash': '1234' },
});

describe('CRI list answers: only items not seen are decoded (plugins/cri-containerd/list-item-cache.ts)', function () {
  it('gives what the generated decoder gives, and the second time takes every item from the cache', function () {
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS);
    const buf = encodeContainers([container('a'), container('b'), container('c')]);
    const first = cached(buf);
    assert.deepEqual(first, decodeContainers(buf));
    assert.equal(first.containers[0].createdAt, '1764236400123456789');
    assert.deepEqual(cached.stats, { hits: 0, decoded: 3, fallbacks: 0 });
    const second = cached(Buffer.from(buf));
    assert.deepEqual(second, first);
    assert.equal(second.containers[1], first.containers[1], 'the same decoded item');
    assert.deepEqual(cached.stats, { hits: 3, decoded: 3, fallbacks: 0 });
  });

  it('an item whose labels come in another order (Go writes map entries in random order) is the same item', function () {
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS);
    const one = container('a');
    const reordered = { ...one, labels: Object.fromEntries(Object.entries(one.labels).reverse()), annotations: { y: '2', x: '1' } };
    const first = cached(encodeContainers([{ ...one, annotations: { x: '1', y: '2' } }]));
    assert.notDeepEqual(encodeContainers([reordered]), encodeContainers([{ ...one, annotations: { x: '1', y: '2' } }]), 'the bytes differ');
    const second = cached(encodeContainers([reordered]));
    assert.equal(second.containers[0], first.containers[0]);
    assert.deepEqual(cached.stats, { hits: 1, decoded: 1, fallbacks: 0 });
    // A label's value that changed is another item.
    cached(encodeContainers([{ ...reordered, labels: { ...reordered.labels, 'io.kubernetes.container.name': 'other' } }]));
    assert.equal(cached.stats.decoded, 2);
  });

  it('decodes an item that changed (a container exited) and keeps the answer\'s order', function () {
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS);
    cached(encodeContainers([container('a'), container('b')]));
    const next = cached(encodeContainers([container('b', 'CONTAINER_EXITED'), container('a'), container('new')]));
    assert.deepEqual(next.containers.map((c: { id: string; state: string }) => `${c.id}:${c.state}`), ['b:CONTAINER_EXITED', 'a:CONTAINER_RUNNING', 'new:CONTAINER_RUNNING']);
    assert.deepEqual(cached.stats, { hits: 1, decoded: 4, fallbacks: 0 });
  });

  it('an empty answer is an empty list; sandboxes decode through the same cache', function () {
    assert.deepEqual(cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS)(Buffer.alloc(0)), { containers: [] });
    const decodeSandboxes = (buf: Buffer) => sandboxesDef.responseDeserialize(buf);
    const cached = cachingListDeserializer(decodeSandboxes, 'items', [5, 6]);
    const items = [{ id: 's1', metadata: { name: 'p', uid: 'u', namespace: 'ns', attempt: 0 }, state: 'SANDBOX_READY', createdAt: '5000000', labels: { k: 'v' }, annotations: {}, runtimeHandler: '' }];
    const buf = sandboxesDef.responseSerialize({ items });
    assert.deepEqual(cached(buf), decodeSandboxes(buf));
    cached(buf);
    assert.deepEqual(cached.stats, { hits: 1, decoded: 1, fallbacks: 0 });
  });

  it('an answer in another shape goes whole through the generated decoder: its result, or its error', function () {
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS);
    // Field 2 (unknown to ListContainersResponse): the generated decoder skips it.
    const odd = Buffer.concat([encodeContainers([container('a')]), Buffer.from([0x12, 0x01, 0x00])]);
    assert.deepEqual(cached(odd), decodeContainers(odd));
    // Truncated: the item's length runs past the end.
    const whole = encodeContainers([container('a')]);
    const truncated = whole.subarray(0, whole.length - 5);
    assert.throws(() => decodeContainers(truncated));
    assert.throws(() => cached(truncated));
    assert.equal(cached.stats.fallbacks, 2);
  });

  it('skips a 10-byte varint (a negative int64) inside an item', function () {
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS);
    const buf = encodeContainers([{ ...container('a'), createdAt: '-1' }, container('b')]);
    assert.deepEqual(cached(buf), decodeContainers(buf));
    assert.equal(cached(buf).containers[0].createdAt, '-1');
    assert.deepEqual(cached.stats, { hits: 2, decoded: 2, fallbacks: 0 });
  });

  it('forgets items no answer held for 30 s', function () {
    let t = 0;
    const cached = cachingListDeserializer(decodeContainers, 'containers', CONTAINER_MAPS, () => t);
    cached(encodeContainers([container('a'), container('b')]));
    t = 20_000;
    cached(encodeContainers([container('a')]));
    t = 31_000; // the sweep: b was last seen at 0
    cached(encodeContainers([container('a')]));
    cached(encodeContainers([container('a'), container('b')]));
    assert.deepEqual(cached.stats, { hits: 3, decoded: 3, fallbacks: 0 }, 'b decoded again');
  });
});
