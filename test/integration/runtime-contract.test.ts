import fs from 'node:fs/promises';
import path from 'node:path';
import { describeRuntimeContract, startPluginsForTest, type PluginsUnderTest } from '../../core/sdk/testing/index.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { nodeEnvOrSkip } from '../support/node-env.ts';

/**
 * The runtime contract (kubelet-ts/testing) against the built-in cri-containerd plugin on real
 * containerd, applied as a kubelet applies it: what a vendor runs against their runtime plugin.
 */
describe('cri-containerd keeps the runtime contract', function () {
  let env: NodeEnv;
  let plugins: PluginsUnderTest | undefined;
  let dir: string | undefined;
  // Runs before the contract suite's own hooks: without containerd the whole suite is skipped (CI: fails).
  before(async function () {
    env = await nodeEnvOrSkip(this);
  });
  describeRuntimeContract(
    'cri-containerd on real containerd',
    async () => {
      dir = await fs.mkdtemp('/tmp/kts-runtime-contract-');
      plugins = await startPluginsForTest([['cri-containerd', { endpoint: env.containerdEndpoint }]], { rootDir: path.join(dir, 'root'), memoryRuntime: false });
      return {
        runtime: plugins.slot('runtime'),
        image: env.images.busybox,
        workDir: dir,
        commands: { run: () => ['sleep', '3600'], exit: (code) => ['sh', '-c', `exit ${code}`], print: (line) => ['echo', line] },
      };
    },
    async () => {
      await plugins?.close();
      if (dir) await fs.rm(dir, { recursive: true, force: true });
    },
  );
});
