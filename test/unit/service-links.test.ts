import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import { serviceLinkEnv, type ServiceLink } from '../../core/objects/service-links.ts';
import { toServiceLink } from '../../core/apiserver/service-cache.ts';
import { containerEnv, machineAllocatable } from '../../core/pod/container-env.ts';

const svc = (namespace: string, name: string, clusterIP: string, ports: ServiceLink['ports']): ServiceLink => ({ namespace, name, clusterIP, ports });
const MASTER = svc('default', 'kubernetes', '10.0.0.1', [{ name: 'https', port: 443, protocol: 'TCP' }]);

describe('service links (upstream envvars.FromServices)', () => {
  it('names every variable as upstream: host, first port, named ports, the Docker link variables per port', () => {
    const env = serviceLinkEnv([svc('shop', 'redis-master', '10.0.0.11', [{ port: 6379 }, { name: 'metrics', port: 9121, protocol: 'UDP' }])], 'shop', true);
    assert.deepEqual([...env], [
      ['REDIS_MASTER_SERVICE_HOST', '10.0.0.11'],
      ['REDIS_MASTER_SERVICE_PORT', '6379'],
      ['REDIS_MASTER_SERVICE_PORT_METRICS', '9121'],
      ['REDIS_MASTER_PORT', 'tcp://10.0.0.11:6379'],
      ['REDIS_MASTER_PORT_6379_TCP', 'tcp://10.0.0.11:6379'],
      ['REDIS_MASTER_PORT_6379_TCP_PROTO', 'tcp'],
      ['REDIS_MASTER_PORT_6379_TCP_PORT', '6379'],
      ['REDIS_MASTER_PORT_6379_TCP_ADDR', '10.0.0.11'],
      ['REDIS_MASTER_PORT_9121_UDP', 'udp://10.0.0.11:9121'],
      ['REDIS_MASTER_PORT_9121_UDP_PROTO', 'udp'],
      ['REDIS_MASTER_PORT_9121_UDP_PORT', '9121'],
      ['REDIS_MASTER_PORT_9121_UDP_ADDR', '10.0.0.11'],
    ]);
    assert.equal(serviceLinkEnv([svc('shop', 'v6', 'fd00::1', [{ port: 80 }])], 'shop', true).get('V6_PORT'), 'tcp://[fd00::1]:80');
  });

  it('links the namespace\'s services only with enableServiceLinks, the master service always, headless and other namespaces never', () => {
    const all = [MASTER, svc('shop', 'web', '10.0.0.5', [{ port: 80 }]), svc('shop', 'headless', 'None', [{ port: 80 }]), svc('other', 'db', '10.0.0.6', [{ port: 5432 }]), svc('default', 'web', '10.0.0.7', [{ port: 80 }])];
    const linked = serviceLinkEnv(all, 'shop', true);
    assert.equal(linked.get('WEB_SERVICE_HOST'), '10.0.0.5');
    assert.equal(linked.get('KUBERNETES_SERVICE_HOST'), '10.0.0.1');
    assert.equal(linked.get('KUBERNETES_SERVICE_PORT_HTTPS'), '443');
    assert.ok(![...linked.keys()].some((k) => k.startsWith('HEADLESS_') || k.startsWith('DB_')));
    const off = serviceLinkEnv(all, 'shop', false);
    assert.deepEqual([...off.keys()].filter((k) => !k.startsWith('KUBERNETES_')), []);
    assert.equal(off.get('KUBERNETES_SERVICE_HOST'), '10.0.0.1');
  });

  it('a namespace\'s own `kubernetes` service wins over the master one, whatever the order', () => {
    const own = svc('shop', 'kubernetes', '10.0.0.99', [{ port: 8443 }]);
    assert.equal(serviceLinkEnv([MASTER, own], 'shop', true).get('KUBERNETES_SERVICE_HOST'), '10.0.0.99');
    assert.equal(serviceLinkEnv([own, MASTER], 'shop', true).get('KUBERNETES_SERVICE_HOST'), '10.0.0.99');
  });

  it('keeps what links need of an API Service and ignores what is not one', () => {
    assert.deepEqual(toServiceLink({ metadata: { namespace: 'a', name: 'b', labels: { x: 'y' } }, spec: { clusterIP: '10.0.0.2', ports: [{ name: 'p', port: 1, protocol: 'SCTP', targetPort: 9 }, { port: 'x' }] } }),
      { namespace: 'a', name: 'b', clusterIP: '10.0.0.2', ports: [{ port: 1, name: 'p', protocol: 'SCTP' }] });
    assert.equal(toServiceLink({ metadata: { name: 'b' } }), undefined);
    assert.equal(toServiceLink(null), undefined);
  });

  it('in the container env: $(VAR) sees links after the container\'s own variables; a variable the container defines is not replaced', () => {
    const pod: V1Pod = { metadata: { name: 'p', namespace: 'shop', uid: 'u' }, spec: { containers: [{ name: 'c', image: 'i', env: [
      { name: 'URL', value: 'http://$(WEB_SERVICE_HOST):$(WEB_SERVICE_PORT)' },
      { name: 'WEB_SERVICE_PORT', value: 'mine' },
      { name: 'LATER', value: '$(WEB_SERVICE_PORT)' },
    ] }] } };
    const links = serviceLinkEnv([svc('shop', 'web', '10.0.0.5', [{ port: 80 }])], 'shop', true);
    const env = new Map(containerEnv(pod, pod.spec!.containers[0]!, new Map(), { podIPs: [], hostIPs: [], allocatable: machineAllocatable }, undefined, links).map((e) => [e.key, e.value]));
    assert.equal(env.get('URL'), 'http://10.0.0.5:80');
    assert.equal(env.get('WEB_SERVICE_PORT'), 'mine');
    assert.equal(env.get('LATER'), 'mine');
    assert.equal(env.get('WEB_PORT_80_TCP_ADDR'), '10.0.0.5');
  });
});
