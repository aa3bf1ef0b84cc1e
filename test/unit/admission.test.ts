import assert from 'node:assert/strict';
import type { V1Container, V1Pod } from '@kubernetes/client-node';
import { checkAdmission, podRequests, type AdmissionNode } from '../../core/pod/admission.ts';

const node: AdmissionNode = { allocatable: { cpu: 2000, memory: 4 * 2 ** 30, 'ephemeral-storage': 10 * 2 ** 30, pods: 3 }, labels: { 'kubernetes.io/hostname': 'n1', zone: 'a', rank: '5' }, taints: [{ key: 'dedicated', value: 'db', effect: 'NoExecute' }, { key: 'soft', effect: 'NoSchedule' }] };
const c = (name: string, requests: Record<string, string> = {}, extra: Partial<V1Container> = {}): V1Container => ({ name, image: 'x', resources: { requests }, ...extra });
const pod = (uid: string, spec: Partial<V1Pod['spec']> = {}): V1Pod => ({ metadata: { name: uid, namespace: 'ns', uid }, spec: { containers: [c('app')], tolerations: [{ key: 'dedicated', operator: 'Exists' }], ...spec } });
const admit = (p: V1Pod, others: V1Pod[] = [], isStatic = false) => checkAdmission(p, others, node, { nodeName: 'n1', isStatic });

describe('admission (upstream general predicates)', function () {
  it('sums app containers and sidecars, takes the init peak when higher, adds overhead', function () {
    const p = pod('p', {
      initContainers: [c('side', { cpu: '100m' }, { restartPolicy: 'Always' }), c('init', { cpu: '900m', memory: '1Gi' })],
      containers: [c('a', { cpu: '200m', memory: '64Mi' }), c('b', { cpu: '300m' })],
      overhead: { cpu: '10m' },
    });
    assert.deepEqual(podRequests(p), { cpu: 1010, memory: 2 ** 30, 'ephemeral-storage': 0 });
    assert.deepEqual(podRequests(pod('q', { containers: [c('l', {}, { resources: { limits: { cpu: '1' } } })] })).cpu, 1000, 'a limit implies the request');
  });

  it('refuses what does not fit next to the admitted pods, naming resource, request, use and capacity', function () {
    assert.equal(admit(pod('big', { containers: [c('a', { cpu: '1500m' })] }), [pod('o1', { containers: [c('a', { cpu: '1' })] })])?.message, "Node didn't have enough resource: cpu, requested: 1500, used: 1000, capacity: 2000");
    assert.equal(admit(pod('big', { containers: [c('a', { cpu: '3' })] }))?.reason, 'OutOfcpu');
    assert.equal(admit(pod('m', { containers: [c('a', { memory: '5Gi' })] }))?.reason, 'OutOfmemory');
    assert.equal(admit(pod('e', { containers: [c('a', { 'ephemeral-storage': '11Gi' })] }))?.reason, 'OutOfephemeral-storage');
    assert.deepEqual(admit(pod('n'), [pod('1'), pod('2'), pod('3')]), { reason: 'OutOfpods', message: "Node didn't have enough resource: pods, requested: 1, used: 3, capacity: 3" });
    assert.equal(admit(pod('fits', { containers: [c('a', { cpu: '1', memory: '1Gi' })] }), [pod('o1', { containers: [c('a', { cpu: '1' })] })]), undefined);
  });

  it('huge pages: requests fit the node\'s reserved pages of that size, a size it lacks counting as none (OutOfhugepages-<size>)', function () {
    const withPages: AdmissionNode = { ...node, hugePages: { 'hugepages-2Mi': 4 * 2 ** 20 } };
    const huge = (uid: string, q: string, size = '2Mi') => pod(uid, { containers: [c('a', { memory: '64Mi', [`hugepages-${size}`]: q })] });
    const admitOn = (p: V1Pod, others: V1Pod[] = []) => checkAdmission(p, others, withPages, { nodeName: 'n1', isStatic: false });
    assert.equal(admitOn(huge('h1', '2Mi'), [huge('h0', '2Mi')]), undefined);
    assert.deepEqual(admitOn(huge('h2', '4Mi'), [huge('h0', '2Mi')]), { reason: 'OutOfhugepages-2Mi', message: "Node didn't have enough resource: hugepages-2Mi, requested: 4194304, used: 2097152, capacity: 4194304" });
    assert.equal(admitOn(huge('g', '1Gi', '1Gi'))?.reason, 'OutOfhugepages-1Gi', 'a page size the node does not have');
  });

  it('nodeSelector and required node affinity must match the node labels', function () {
    assert.equal(admit(pod('s', { nodeSelector: { zone: 'b' } }))?.reason, 'NodeAffinity');
    assert.equal(admit(pod('s', { nodeSelector: { zone: 'a' } })), undefined);
    const affinity = (operator: string, values: string[], key = 'rank') => ({ nodeAffinity: { requiredDuringSchedulingIgnoredDuringExecution: { nodeSelectorTerms: [{ matchExpressions: [{ key, operator, values }] }] } } });
    assert.equal(admit(pod('g', { affinity: affinity('Gt', ['3']) })), undefined);
    assert.equal(admit(pod('g', { affinity: affinity('Lt', ['3']) }))?.message, "Predicate NodeAffinity failed: node(s) didn't match Pod's node affinity/selector");
    assert.equal(admit(pod('g', { affinity: affinity('NotIn', ['a'], 'zone') }))?.reason, 'NodeAffinity');
    assert.equal(admit(pod('g', { affinity: affinity('DoesNotExist', [], 'gpu') })), undefined);
  });

  it('a host port another pod holds is refused (any address overlaps a specific one)', function () {
    const withPort = (uid: string, hostPort: number, hostIP?: string) => pod(uid, { containers: [c('a', {}, { ports: [{ containerPort: 80, hostPort, ...(hostIP ? { hostIP } : {}) }] })] });
    assert.equal(admit(withPort('b', 8080), [withPort('a', 8080, '127.0.0.1')])?.reason, 'NodePorts');
    assert.equal(admit(withPort('b', 8081), [withPort('a', 8080)]), undefined);
  });

  it('untolerated NoExecute taints refuse API pods, not static pods; NoSchedule taints are not the kubelet\'s', function () {
    const bare = pod('t', { tolerations: [] });
    assert.equal(admit(bare)?.reason, 'TaintToleration');
    assert.match(admit(bare)!.message, /untolerated taint \{dedicated: db\}/);
    assert.equal(admit(bare, [], true), undefined);
    assert.equal(admit(pod('t', { tolerations: [{ key: 'dedicated', operator: 'Equal', value: 'db', effect: 'NoExecute' }] })), undefined);
  });
});

describe('admission: the pod\'s OS (upstream predicate.go)', function () {
  const withOS = (uid: string, os: unknown, labels?: Record<string, string>): V1Pod => ({ ...pod(uid, { os: os as never }), metadata: { name: uid, namespace: 'ns', uid, labels } });

  it('spec.os.name other than the node\'s OS is PodOSNotSupported, with upstream\'s message, before any resource check', function () {
    assert.deepEqual(admit(withOS('w', { name: 'windows' })), { reason: 'PodOSNotSupported', message: "Failed to admit pod as the OS field doesn't match node OS" });
    // Even when it would not fit either: the OS is checked first.
    assert.equal(admit(withOS('w', { name: 'windows' }), [pod('1'), pod('2'), pod('3')])?.reason, 'PodOSNotSupported');
    assert.equal(admit(withOS('l', { name: 'linux' })), undefined);
    assert.equal(admit(withOS('none', undefined)), undefined);
  });

  it('a kubernetes.io/os pod label other than the node\'s OS is PodOSSelectorNodeLabelDoesNotMatch (checked before spec.os)', function () {
    assert.deepEqual(admit(withOS('lbl', undefined, { 'kubernetes.io/os': 'windows' })), { reason: 'PodOSSelectorNodeLabelDoesNotMatch', message: "Failed to admit pod as the `kubernetes.io/os` label doesn't match node label" });
    assert.equal(admit(withOS('both', { name: 'windows' }, { 'kubernetes.io/os': 'windows' }))?.reason, 'PodOSSelectorNodeLabelDoesNotMatch');
    assert.equal(admit(withOS('ok', undefined, { 'kubernetes.io/os': 'linux' })), undefined);
  });

  it('a nodeSelector kubernetes.io/os the node does not carry is upstream\'s NodeAffinity rejection', function () {
    const linuxNode: AdmissionNode = { ...node, labels: { ...node.labels, 'kubernetes.io/os': 'linux' } };
    const p = pod('sel', { nodeSelector: { 'kubernetes.io/os': 'windows' } });
    assert.equal(checkAdmission(p, [], linuxNode, { nodeName: 'n1', isStatic: false })?.reason, 'NodeAffinity');
    assert.equal(checkAdmission(pod('sel2', { nodeSelector: { 'kubernetes.io/os': 'linux' } }), [], linuxNode, { nodeName: 'n1', isStatic: false }), undefined);
  });

  it('hostile input: an os that is not an object, or a name that is not a string, is refused, not crashed on', function () {
    for (const bad of ['windows', 42, { name: 7 }, {}]) assert.equal(admit(withOS('bad', bad))?.reason, 'PodOSNotSupported', JSON.stringify(bad));
  });
});
