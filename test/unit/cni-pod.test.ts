import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { bandwidth, capabilityArgs, portMappings } from '../../plugins/cni-exec/pod/capabilities.ts';

const pod = (spec: Partial<V1Pod['spec']> = {}, metadata: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u1', ...metadata },
  spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
});

describe('cni-exec: CNI capabilities from the pod', () => {
  describe('capabilities from the pod', () => {
    it('portMappings: container ports with a hostPort, protocol lower case, hostIP when set', () => {
      const p = pod({ containers: [{ name: 'c', image: 'i', ports: [{ containerPort: 80, hostPort: 8080 }, { containerPort: 53, hostPort: 5353, protocol: 'UDP', hostIP: '127.0.0.1' }, { containerPort: 9000 }] }] });
      assert.deepEqual(portMappings(p), [{ hostPort: 8080, containerPort: 80, protocol: 'tcp' }, { hostPort: 5353, containerPort: 53, protocol: 'udp', hostIP: '127.0.0.1' }]);
    });

    it('bandwidth from the annotations in bits per second with an unlimited burst; nonsense is refused', () => {
      assert.deepEqual(bandwidth(pod({}, { annotations: { 'kubernetes.io/ingress-bandwidth': '10M', 'kubernetes.io/egress-bandwidth': '1Mi' } })),
        { ingressRate: 10_000_000, ingressBurst: 4294967295, egressRate: 1048576, egressBurst: 4294967295 });
      assert.equal(bandwidth(pod()), undefined);
      assert.throws(() => bandwidth(pod({}, { annotations: { 'kubernetes.io/ingress-bandwidth': '10' } })), /unreasonably small/);
      assert.throws(() => bandwidth(pod({}, { annotations: { 'kubernetes.io/egress-bandwidth': 'fast' } })), /is not a quantity/);
    });

    it('ips from the cni-exec annotation', () => {
      assert.deepEqual(capabilityArgs(pod({}, { annotations: { 'cni-exec.kubelet-ts.io/ips': '10.0.0.9, 10.0.0.10' } })), { ips: ['10.0.0.9', '10.0.0.10'] });
    });
  });
});
