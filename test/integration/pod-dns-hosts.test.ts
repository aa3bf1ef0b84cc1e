import assert from 'node:assert/strict';
import type { V1Pod } from '@kubernetes/client-node';
import fs from 'node:fs/promises';
import path from 'node:path';
import { LABEL } from '../../core/runtime/labels.ts';
import { containerdSuite } from '../support/containerd-suite.ts';
import { isRunning, podManifest } from '../support/test-kubelet.ts';

/**
 * Pod DNS and the kubelet-managed /etc/hosts with the default bundle, where containerd runs CNI
 * itself and no kubelet plugin owns the network: the core gives the sandbox its DNS config from
 * clusterDNS / clusterDomain / resolvConf and each container the managed hosts file, as upstream
 * does whoever owns the network (before, a ClusterFirst pod got the host's resolv.conf here and
 * its hostAliases were ignored).
 */
describe('pod DNS and /etc/hosts on the default bundle (containerd owns CNI)', function () {
  this.timeout(90_000);
  const ns = 'pod-dns-test';
  const suite = containerdSuite({ config: { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local' } });

  const exec = async (pod: V1Pod, container: string, cmd: string[]) => {
    const c = (await suite.cri.listContainers({ labelSelector: { [LABEL.podUID]: pod.metadata!.uid!, [LABEL.containerName]: container } })).find((x) => x.state === 'CONTAINER_RUNNING')!;
    const r = await suite.cri.execSync(c.id, cmd, 10);
    return r.stdout.toString() + r.stderr.toString();
  };
  const sleeper = (name: string, extra: object = {}) => ({ name, image: suite.env.images.busybox, command: ['sleep', '3600'], ...extra });

  it('a ClusterFirst pod gets the cluster DNS, its search path, its FQDN and hostAliases in /etc/hosts', async () => {
    await suite.t.writeManifest('dns.json', podManifest('dns', [sleeper('app')], {
      hostname: 'db-0', subdomain: 'dbs', terminationGracePeriodSeconds: 1,
      hostAliases: [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }],
    }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('dns', isRunning, 60_000, 'Running'))!;
    const resolv = await exec(pod, 'app', ['cat', '/etc/resolv.conf']);
    assert.match(resolv, /^nameserver 10\.96\.0\.10$/m);
    assert.match(resolv, new RegExp(`^search ${ns}\\.svc\\.cluster\\.local svc\\.cluster\\.local cluster\\.local`, 'm'));
    assert.match(resolv, /^options ndots:5$/m);
    const hosts = await exec(pod, 'app', ['cat', '/etc/hosts']);
    assert.match(hosts, /^# Kubernetes-managed hosts file\.\n127\.0\.0\.1\tlocalhost\n/);
    assert.ok(hosts.includes(`${pod.status!.podIP}\tdb-0.dbs.${ns}.svc.cluster.local\tdb-0\n`), hosts);
    assert.ok(hosts.endsWith('\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n'), hosts);
    assert.equal((await exec(pod, 'app', ['hostname'])).trim(), 'db-0');
    await suite.t.removeManifest('dns.json');
    await suite.t.waitForPod('dns', (p) => p === undefined, 30_000, 'removed');
  });

  it('dnsPolicy None takes only the pod\'s dnsConfig; a container with its own /etc/hosts mount keeps it', async () => {
    const ownHosts = path.join(path.dirname(suite.t.config.rootDir), 'own-hosts');
    await fs.writeFile(ownHosts, '# the container\'s own hosts file\n');
    await suite.t.writeManifest('none.json', podManifest('none', [
      sleeper('app'),
      sleeper('own', { volumeMounts: [{ name: 'hosts', mountPath: '/etc/hosts' }] }),
    ], {
      dnsPolicy: 'None', dnsConfig: { nameservers: ['192.0.2.53'], searches: ['example.test'], options: [{ name: 'ndots', value: '2' }] },
      volumes: [{ name: 'hosts', hostPath: { path: ownHosts, type: 'File' } }], terminationGracePeriodSeconds: 1,
    }, { namespace: ns }));
    const pod = (await suite.t.waitForPod('none', isRunning, 60_000, 'Running'))!;
    const resolv = await exec(pod, 'app', ['cat', '/etc/resolv.conf']);
    assert.match(resolv, /^nameserver 192\.0\.2\.53$/m);
    assert.doesNotMatch(resolv, /10\.96\.0\.10/);
    assert.match(resolv, /^search example\.test$/m);
    assert.match(resolv, /^options ndots:2$/m);
    assert.match(await exec(pod, 'app', ['cat', '/etc/hosts']), /^# Kubernetes-managed hosts file\./);
    assert.equal(await exec(pod, 'own', ['cat', '/etc/hosts']), '# the container\'s own hosts file\n');
    await suite.t.removeManifest('none.json');
    await suite.t.waitForPod('none', (p) => p === undefined, 30_000, 'removed');
  });
});
