import assert from 'node:assert/strict';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { notFound, type PodNetwork } from '../../core/sdk/index.ts';
import { checkNetworkContract, describeNetworkContract, startPluginsForTest, type NetworkContractSubject } from '../../core/sdk/testing/index.ts';
import { hookContext } from '../../core/util/cancellation.ts';
import { memoryNetworkPlugins, type MemoryNetwork, type NetworkedMemoryRuntime } from '../fakes/memory-network.ts';

/**
 * The network contract's own logic, against an in-memory network plugin (test/fakes) that keeps
 * it, and against copies broken on purpose, one promise each: the contract must fail each naming
 * the broken rule. The proof that a real plugin keeps it is cni-exec on containerd with the
 * Debian CNI plugins (test/integration/network-contract.test.ts).
 */

let workDir: string;
let starts = 0;

/** A subject over a fresh fake; `breakIt` replaces one step of each new network instance. */
function subject(breakIt?: (n: MemoryNetwork, r: NetworkedMemoryRuntime) => void): NetworkContractSubject {
  const fake = memoryNetworkPlugins(breakIt);
  const rootDir = path.join(workDir, `root-${++starts}`);
  return {
    workDir,
    namespace: 'nc-unit',
    reachableFromHost: true,
    start: ({ pods }) => startPluginsForTest(fake.plugins, { rootDir, pods, memoryRuntime: false }),
    leasedIPs: async () => [...fake.store.leases.keys()],
    breakAttachment: async (a) => void fake.store.broken.add(a.sandboxId),
  };
}

describe('the network contract', function () {
  before(async () => {
    workDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-nc-'));
  });
  after(async () => {
    await fs.rm(workDir, { recursive: true, force: true });
  });

  describeNetworkContract('in-memory network (test fake)', async () => subject());

  /** A network breaking one promise of the contract, and the rule that must name it. */
  const broken: Array<{ what: string; rule: RegExp; breakIt: (n: MemoryNetwork, r: NetworkedMemoryRuntime) => void }> = [
    {
      what: 'reports attachments without IPs',
      rule: /^a pod sandbox created through the runtime gets an attachment with at least one IP/,
      breakIt: (n) => {
        const attachment = n.attachment.bind(n);
        n.attachment = async (id, ifName) => {
          const a = await attachment(id, ifName);
          return a && { ...a, ips: [] };
        };
      },
    },
    {
      what: 'fires networkSetUp twice',
      rule: /^networkSetUp fires once for a new sandbox/,
      breakIt: (n) => {
        const fire = n.fireSetUp.bind(n);
        n.fireSetUp = async (e) => {
          await fire(e);
          await fire(e);
        };
      },
    },
    {
      what: 'gives every pod the same IP',
      rule: /^two pods get different IPs/,
      breakIt: (n) => {
        n.allocate = (id) => {
          n.store.leases.set('127.0.0.2', id);
          return '127.0.0.2';
        };
      },
    },
    {
      what: 'passes check() on a broken interface',
      rule: /^check\(\) fails with a coded error once the attachment's interface is broken/,
      breakIt: (n) => {
        n.check = async (id) => {
          if (!n.store.attachments.has(id)) throw notFound(`no attachment ${id}`);
        };
      },
    },
    {
      what: 'answers check() of an unknown sandbox without NotFound',
      rule: /^check\(\) passes on a healthy attachment and rejects NotFound/,
      breakIt: (n) => {
        const check = n.check.bind(n);
        n.check = async (id) => {
          if (!n.store.attachments.has(id)) throw new Error('no such attachment');
          await check(id);
        };
      },
    },
    {
      what: 'fires networkTearDown on every stop and remove',
      rule: /^stopping the sandbox fires networkTearDown once/,
      breakIt: (n) => {
        const tearDown = n.tearDown.bind(n);
        n.tearDown = async (id) => {
          await n.hooks.networkTearDown.promise({ pod: undefined, podRef: undefined, sandboxId: id, netns: '', ifName: 'eth0', network: 'memory' }, hookContext());
          await tearDown(id);
        };
      },
    },
    {
      what: 'keeps reporting an attachment after tear-down',
      rule: /^after tear-down attachment\(\) is undefined/,
      breakIt: (n) => {
        const seen = new Map<string, PodNetwork>();
        const attachment = n.attachment.bind(n);
        n.attachment = async (id, ifName) => {
          const a = await attachment(id, ifName);
          if (a) seen.set(id, a);
          return a ?? seen.get(id);
        };
      },
    },
    {
      what: 'leaks the IP on tear-down',
      rule: /^after tear-down the pod's IPs are released/,
      breakIt: (n) => {
        n.release = () => {};
      },
    },
    {
      what: 'keeps the attachment of a failed set-up',
      rule: /^a networkSetUp tap that throws fails the sandbox and leaves no attachment/,
      breakIt: (n) => {
        n.rollback = () => {};
      },
    },
    {
      what: 'networks sandboxes on the node\'s network too',
      rule: /^a sandbox on the node's network gets no attachment/,
      breakIt: (_n, r) => {
        r.needsNetwork = () => true;
      },
    },
    {
      what: 'forgets its attachments across a restart',
      rule: /^after a kubelet restart attachment\(\) still reports the sandbox/,
      breakIt: (n) => {
        // A second start finds an empty store, as a plugin that kept its attachments only in memory.
        if (n.store.leases.size > 0) n.store.attachments.clear();
      },
    },
  ];
  for (const b of broken) {
    it(`fails a network that ${b.what}, naming the broken rule`, async function () {
      const failures = await checkNetworkContract(subject(b.breakIt));
      assert.ok(failures.length >= 1, 'the contract passed a broken network');
      assert.ok(failures.some((f) => b.rule.test(f.rule)), `no failure of the rule ${b.rule}: ${JSON.stringify(failures, null, 1)}`);
      for (const f of failures) assert.ok(f.message.length > 0, `rule "${f.rule}" failed without saying how`);
    });
  }

  it('skips, not fails, the rules about what a plugin does not offer (no check(), no leases, not reachable)', async function () {
    const s = subject((n) => {
      (n as { check?: unknown }).check = undefined;
    });
    const failures = await checkNetworkContract({ ...s, reachableFromHost: false, leasedIPs: undefined });
    assert.deepEqual(failures, []);
  });
});
