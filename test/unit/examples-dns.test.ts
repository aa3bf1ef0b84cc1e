/**
 * The example pods start clean on the node `npm run up` makes: a standalone node has no
 * cluster DNS, and a pod left at the default dnsPolicy (ClusterFirst) there gets upstream's
 * MissingClusterDNS warning on every sync, which the first run showed three times.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { V1Pod } from '@kubernetes/client-node';
import yaml from 'js-yaml';
import { loadConfig } from '../../core/config/load.ts';
import { loadOptionsOf, parseKubeletCommandLine } from '../../core/commands/kubelet-command-line.ts';
import { sandboxHostnameAndDns } from '../../core/pod/pod-dns.ts';
import { upKubeletArgs } from '../../tools/up/kubelet-args.ts';

const EXAMPLES = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', 'examples');

describe('examples: a clean start on the up node', function () {
  it('no example pod gets a DNS warning under the up kubelet\'s configuration', async function () {
    const rootDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-examples-dns-'));
    try {
      const line = parseKubeletCommandLine(upKubeletArgs({ manifests: EXAMPLES, containerdEndpoint: 'unix:///run/up/containerd.sock', rootDir, readOnlyPort: 10255 }));
      const config = await loadConfig(loadOptionsOf(line, []));
      // The premise: standalone, so no cluster DNS to point ClusterFirst pods at.
      assert.deepEqual([config.kubeconfig, config.clusterDNS], [undefined, []]);
      const manifests = (await fs.readdir(EXAMPLES)).filter((f) => /\.ya?ml$/.test(f)).sort();
      assert.ok(manifests.length >= 3, manifests.join(' '));
      for (const f of manifests) {
        const pod = yaml.load(await fs.readFile(path.join(EXAMPLES, f), 'utf8')) as V1Pod;
        const dns = sandboxHostnameAndDns(pod, { clusterDNS: config.clusterDNS, clusterDomain: config.clusterDomain, hostResolvConf: 'nameserver 192.0.2.53\nsearch example.test\n' });
        assert.deepEqual(dns.warnings, [], f);
        // What they get is the node's resolver, as the warning's fallback gave them.
        assert.deepEqual(dns.dnsConfig, { servers: ['192.0.2.53'], searches: ['example.test'], options: [] }, f);
      }
    } finally {
      await fs.rm(rootDir, { recursive: true, force: true });
    }
  });
});
