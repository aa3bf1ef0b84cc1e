import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import type { V1Pod } from '@kubernetes/client-node';
import { parseResolvConf, podDnsConfig, podHostnameAndDomain, readHostResolvConf, sandboxHostnameAndDns } from '../../core/pod/pod-dns.ts';
import { etcHostsMount, managedHostsFile, nodeHostsFile } from '../../core/pod/etc-hosts.ts';

const HOST_RESOLV = '# generated\nnameserver 192.0.2.53\nnameserver 192.0.2.54\nsearch example.com. corp.example.com\noptions timeout:2 attempts:3\n';
const settings = { clusterDNS: ['10.96.0.10'], clusterDomain: 'cluster.local', hostResolvConf: HOST_RESOLV };
const pod = (spec: Partial<V1Pod['spec']> = {}, metadata: Partial<V1Pod['metadata']> = {}): V1Pod => ({
  metadata: { name: 'web', namespace: 'shop', uid: 'u1', ...metadata },
  spec: { containers: [{ name: 'c', image: 'i' }], ...spec },
});

describe('pod DNS and the managed /etc/hosts (the core, whoever owns the network)', () => {
  describe('DNS (upstream GetPodDNS)', () => {
    it('parses resolv.conf as upstream: nameservers accumulate, last search/options win, trailing dots dropped', () => {
      assert.deepEqual(parseResolvConf(HOST_RESOLV + 'search other.org\n'), { servers: ['192.0.2.53', '192.0.2.54'], searches: ['other.org'], options: ['timeout:2', 'attempts:3'] });
    });

    it('ClusterFirst (the default): cluster DNS, the cluster search list before the host\'s, ndots:5', () => {
      assert.deepEqual(podDnsConfig(pod(), settings).config, {
        servers: ['10.96.0.10'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'example.com', 'corp.example.com'],
        options: ['ndots:5'],
      });
    });

    it('ClusterFirst on the host network is Default; ClusterFirstWithHostNet keeps the cluster DNS', () => {
      assert.deepEqual(podDnsConfig(pod({ hostNetwork: true }), settings).config.servers, ['192.0.2.53', '192.0.2.54']);
      assert.deepEqual(podDnsConfig(pod({ hostNetwork: true, dnsPolicy: 'ClusterFirstWithHostNet' }), settings).config.servers, ['10.96.0.10']);
    });

    it('ClusterFirst without cluster DNS falls back to Default, with a warning', () => {
      const r = podDnsConfig(pod(), { ...settings, clusterDNS: [] });
      assert.deepEqual(r.config, { servers: ['192.0.2.53', '192.0.2.54'], searches: ['example.com', 'corp.example.com'], options: ['timeout:2', 'attempts:3'] });
      assert.equal(r.warnings[0]!.reason, 'MissingClusterDNS');
      assert.match(r.warnings[0]!.message, /^pod: "web_shop\(.*\)"\. kubelet does not have ClusterDNS IP configured/);
    });

    it('Default with resolvConf "" uses the local machine only', () => {
      assert.deepEqual(podDnsConfig(pod({ dnsPolicy: 'Default' }), { ...settings, hostResolvConf: undefined }).config, { servers: ['127.0.0.1'], searches: ['.'], options: [] });
    });

    it('None starts empty; dnsConfig is appended, duplicates dropped, options merged with the pod winning', () => {
      const dnsConfig = { nameservers: ['1.1.1.1'], searches: ['a.example'], options: [{ name: 'ndots', value: '2' }, { name: 'edns0' }] };
      assert.deepEqual(podDnsConfig(pod({ dnsPolicy: 'None', dnsConfig }), settings).config, { servers: ['1.1.1.1'], searches: ['a.example'], options: ['ndots:2', 'edns0'] });
      assert.deepEqual(podDnsConfig(pod({ dnsConfig: { nameservers: ['10.96.0.10', '1.1.1.1'], searches: ['svc.cluster.local', 'x.example'], options: [{ name: 'ndots', value: '1' }] } }), settings).config, {
        servers: ['10.96.0.10', '1.1.1.1'],
        searches: ['shop.svc.cluster.local', 'svc.cluster.local', 'cluster.local', 'example.com', 'corp.example.com', 'x.example'],
        options: ['ndots:1'],
      });
    });

    it('cuts to 3 nameservers, 32 search paths and 2048 characters, saying so', () => {
      const many = Array.from({ length: 40 }, (_, i) => `d${i}.${'x'.repeat(60)}.example`);
      const r = podDnsConfig(pod({ dnsPolicy: 'None', dnsConfig: { nameservers: ['1.1.1.1', '2.2.2.2', '3.3.3.3', '4.4.4.4'], searches: many } }), settings);
      assert.deepEqual(r.config.servers, ['1.1.1.1', '2.2.2.2', '3.3.3.3']);
      assert.ok(r.config.searches.length <= 32 && r.config.searches.join(' ').length <= 2048);
      assert.deepEqual(r.warnings.map((w) => w.reason), ['DNSConfigForming', 'DNSConfigForming']);
    });

    it('host name and domain as upstream: hostname/subdomain, long names cut to 63 without a trailing dash', () => {
      assert.deepEqual(podHostnameAndDomain(pod({ hostname: 'db-0', subdomain: 'db' }), 'cluster.local'), { hostname: 'db-0', domain: 'db.shop.svc.cluster.local' });
      assert.deepEqual(podHostnameAndDomain(pod({ subdomain: 'db' }), ''), { hostname: 'web', domain: '' });
      const long = `${'a'.repeat(62)}-bcd`;
      assert.equal(podHostnameAndDomain(pod({}, { name: long }), '').hostname, 'a'.repeat(62));
    });
  });

  describe('/etc/hosts (upstream managedHostsFileContent)', () => {
    it('writes localhost entries, the pod IP with its FQDN, then hostAliases', () => {
      assert.equal(managedHostsFile(['10.0.0.5'], 'db-0', 'db.shop.svc.cluster.local', [{ ip: '192.0.2.10', hostnames: ['foo.local', 'bar.local'] }]),
        '# Kubernetes-managed hosts file.\n127.0.0.1\tlocalhost\n::1\tlocalhost ip6-localhost ip6-loopback\nfe00::0\tip6-localnet\nfe00::0\tip6-mcastprefix\nfe00::1\tip6-allnodes\nfe00::2\tip6-allrouters\n' +
        '10.0.0.5\tdb-0.db.shop.svc.cluster.local\tdb-0\n\n# Entries added by HostAliases.\n192.0.2.10\tfoo.local\tbar.local\n');
      assert.match(managedHostsFile(['10.0.0.5'], 'web', '', undefined), /\n10\.0\.0\.5\tweb\n$/);
    });

    it('a hostNetwork pod gets the node\'s file with the aliases appended', () => {
      assert.equal(nodeHostsFile('127.0.0.1 localhost\n', [{ ip: '192.0.2.1', hostnames: ['a'] }]), '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n\n# Entries added by HostAliases.\n192.0.2.1\ta\n');
    });
  });

  describe('the sandbox and the container mount', () => {
    let dir: string;
    beforeEach(async () => { dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-dns-')); });
    afterEach(async () => { await fs.rm(dir, { recursive: true, force: true }); });

    it('the sandbox gets the host name and DNS; setHostnameAsFQDN makes the FQDN its host name, refused over 64 characters', () => {
      const r = sandboxHostnameAndDns(pod({ hostname: 'db-0', subdomain: 'db', setHostnameAsFQDN: true }), settings);
      assert.equal(r.hostname, 'db-0.db.shop.svc.cluster.local');
      assert.deepEqual(r.dnsConfig.servers, ['10.96.0.10']);
      assert.equal(sandboxHostnameAndDns(pod({ hostNetwork: true }), settings).hostname, '', 'a host-network pod keeps the node name');
      assert.throws(() => sandboxHostnameAndDns(pod({ hostname: 'h'.repeat(40), subdomain: 's'.repeat(20), setHostnameAsFQDN: true }), settings), /FQDN .* is too long \(64 characters is the max/);
    });

    it('resolvConf "" is none; a file that cannot be read names itself', async () => {
      assert.equal(await readHostResolvConf(''), undefined);
      await fs.writeFile(path.join(dir, 'resolv.conf'), HOST_RESOLV);
      assert.equal(await readHostResolvConf(path.join(dir, 'resolv.conf')), HOST_RESOLV);
      await assert.rejects(readHostResolvConf(path.join(dir, 'missing.conf')), /could not read the node's resolv.conf .*missing\.conf \(resolvConf\)/);
    });

    it('mounts <pod dir>/etc-hosts read-write with the pod IPs and aliases; none without an IP or over a container\'s own /etc/hosts', async () => {
      const p = pod({ hostname: 'db-0', subdomain: 'db', hostAliases: [{ ip: '192.0.2.10', hostnames: ['foo.local'] }] });
      const m = await etcHostsMount(p, p.spec!.containers[0]!, { podDir: path.join(dir, 'pod'), podIPs: ['10.0.0.5', 'fd00::5'], clusterDomain: 'cluster.local' });
      assert.deepEqual(m, { containerPath: '/etc/hosts', hostPath: path.join(dir, 'pod', 'etc-hosts'), readonly: false });
      const text = await fs.readFile(m!.hostPath, 'utf8');
      assert.match(text, /^# Kubernetes-managed hosts file\.\n/);
      assert.match(text, /\n10\.0\.0\.5\tdb-0\.db\.shop\.svc\.cluster\.local\tdb-0\nfd00::5\tdb-0\.db\.shop\.svc\.cluster\.local\tdb-0\n/);
      assert.match(text, /# Entries added by HostAliases\.\n192\.0\.2\.10\tfoo\.local\n$/);
      assert.equal((await fs.stat(m!.hostPath)).mode & 0o777, 0o644);
      assert.equal(await etcHostsMount(p, p.spec!.containers[0]!, { podDir: path.join(dir, 'pod2'), podIPs: [], clusterDomain: '' }), undefined);
      const own = { name: 'c', image: 'i', volumeMounts: [{ name: 'h', mountPath: '/etc/hosts' }] };
      assert.equal(await etcHostsMount(p, own, { podDir: path.join(dir, 'pod3'), podIPs: ['10.0.0.5'], clusterDomain: '' }), undefined);
    });

    it('a host-network pod gets the node\'s hosts file, marked as such, with its aliases', async () => {
      await fs.writeFile(path.join(dir, 'hosts'), '127.0.0.1 localhost\n10.1.1.1 node-a\n');
      const p = pod({ hostNetwork: true, hostAliases: [{ ip: '192.0.2.1', hostnames: ['a'] }] });
      const m = await etcHostsMount(p, p.spec!.containers[0]!, { podDir: path.join(dir, 'pod'), podIPs: ['10.1.1.1'], clusterDomain: 'cluster.local', nodeHostsFile: path.join(dir, 'hosts') });
      assert.equal(await fs.readFile(m!.hostPath, 'utf8'), '# Kubernetes-managed hosts file (host network).\n127.0.0.1 localhost\n10.1.1.1 node-a\n\n# Entries added by HostAliases.\n192.0.2.1\ta\n');
    });
  });
});
