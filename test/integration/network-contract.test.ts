import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeNetworkContract, startPluginsForTest } from '../../core/sdk/testing/index.ts';
import { startCniExecEnv, type CniExecEnv } from '../support/cni-exec-env.ts';
import { nodeEnvUsableOrSkip } from '../support/node-env.ts';

/**
 * The network contract (kubelet-ts/testing) against the built-in cni-exec on real containerd
 * with the Debian CNI plugins (bridge + host-local + loopback, on a bridge and subnet of this
 * process), applied as a kubelet applies it: containerd's CNI config is cni-exec's delegate, so
 * every sandbox the contract creates through cri-containerd reaches cni-exec, which runs the
 * chain. What a vendor runs against their network plugin.
 */
describe('cni-exec keeps the network contract', function () {
  this.timeout(180_000);
  let dir: string | undefined;
  let cniEnv: CniExecEnv | undefined;
  // Runs before the contract suite's own hooks: without root and the packages the suite is skipped (CI: fails).
  before(async function () {
    nodeEnvUsableOrSkip(this);
    dir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-nc-'));
    cniEnv = await startCniExecEnv(dir, 'nc-bridge', (net, ipamDir) => [
      { type: 'bridge', bridge: net.bridge, isGateway: true, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: net.subnet }]], dataDir: ipamDir } },
      { type: 'loopback' },
    ]);
  });
  after(async function () {
    await cniEnv?.stop();
    if (dir) await fs.rm(dir, { recursive: true, force: true });
  });

  describeNetworkContract('cni-exec on containerd (delegate, bridge + host-local)', async () => {
    const e = cniEnv!;
    const rootDir = path.join(dir!, 'root');
    return {
      workDir: dir!,
      namespace: 'nc-contract',
      reachableFromHost: true,
      leasedIPs: () => e.leasedIPs(),
      start: ({ pods }) => startPluginsForTest(
        [['cri-containerd', { endpoint: e.env.containerdEndpoint }], ['cni-exec', e.cniExecOptions({ execTimeoutSeconds: 20 })]],
        { rootDir, pods, memoryRuntime: false },
      ),
    };
  });
});
