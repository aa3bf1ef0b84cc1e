import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { describeRuntimeContract, startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import { shellQuote } from '../../tools/node-vm/vm.ts';
import { systemdNodeVmOrSkip, type TestNodeVm } from '../support/node-vm.ts';

/**
 * The runtime contract (kubelet-ts/testing), rule by rule, against the built-in cri-containerd
 * plugin on the guest's containerd 2.1 + runc 1.3 (systemd cgroups), through its socket
 * forwarded to the host: the same suite test/integration/runtime-contract.test.ts runs on the
 * host's containerd 1.6. The containers' logs are the guest's files, read over ssh.
 */
describe('node VM: cri-containerd keeps the runtime contract on containerd 2.1', function () {
  let t: TestNodeVm;
  let plugins: PluginsUnderTest | undefined;
  let hostDir: string | undefined;
  before(async function () {
    this.timeout(1_200_000);
    t = await systemdNodeVmOrSkip(this, false);
    // Not beside the guest's kubelet (an earlier file of the run started it): the contract's
    // sandboxes carry the kubelet's labels, so that kubelet would take them for pods it does not
    // have and remove them under the rules (a stopped sandbox's containers were NotFound at once).
    await t.stopKubelet();
  });
  describeRuntimeContract(
    'cri-containerd on containerd 2.1 in the node VM',
    async () => {
      hostDir = await fs.mkdtemp(path.join(os.tmpdir(), 'kts-vm-contract-'));
      // Under TCG a RunPodSandbox takes 10-60 s: upstream's 2 min deadline per call, as the guest's kubelet has 10 min.
      plugins = await startPluginsForTest([['cri-containerd', { endpoint: t.criEndpoint, connectTimeoutSeconds: 60 }]], { rootDir: path.join(hostDir, 'root'), memoryRuntime: false, config: { runtimeRequestTimeout: '5m' } });
      return {
        runtime: plugins.slot('runtime'),
        image: t.env.images.busybox,
        workDir: '/var/tmp/kts-contract',
        commands: { run: () => ['sleep', '3600'], exit: (code) => ['sh', '-c', `exit ${code}`], print: (line) => ['echo', line] },
        stateTimeoutMs: 180_000,
        // containerd 2.1 with SystemdCgroup refuses a sandbox without a slice ("expected cgroupsPath to be of format slice:prefix:name").
        cgroupParent: 'system.slice',
        files: {
          read: async (file) => (await t.ssh(`cat ${shellQuote(file)}`)).stdout,
          remove: async (dir) => void (await t.ssh(`rm -rf ${shellQuote(dir)}`)),
        },
      };
    },
    async () => {
      await plugins?.close();
      if (hostDir) await fs.rm(hostDir, { recursive: true, force: true });
    },
    { timeoutMs: 600_000 },
  );
});
