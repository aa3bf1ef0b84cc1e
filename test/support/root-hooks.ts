import { stopNodeEnv } from './node-env.ts';
import { stopControlPlane } from './control-plane.ts';
import { removeLeftCgroupRoots } from './kubelet-process.ts';
import { stopNodeVm } from './node-vm.ts';
import { existsSync } from 'node:fs';
import { rmdir } from 'node:fs/promises';

/**
 * Upstream's fixed device plugin dir, which kubelets run with the default plugin bundle make (the
 * kubeadm and TLS bootstrap tests run it as an operator would): removed after the run if the run
 * made it and left it empty.
 */
const DEVICE_PLUGIN_DIR = '/var/lib/kubelet/device-plugins';
const devicePluginDirBefore = existsSync(DEVICE_PLUGIN_DIR);

/**
 * Mocha root hook plugin (loaded by `require` in .mocharc.cjs): after all tests, stop the
 * node VM (test/vm) first, its kubelet is a node of the control plane and its images come from
 * the registry, then the shared node environment and the shared control plane if a test started
 * them (unit-only runs never start them), then the cgroups kubelet processes left, and the
 * device plugin dir if the run made it.
 */
export const mochaHooks = {
  async afterAll(this: Mocha.Context): Promise<void> {
    this.timeout(150_000);
    await stopNodeVm();
    await Promise.all([stopNodeEnv(), stopControlPlane()]);
    await removeLeftCgroupRoots();
    if (!devicePluginDirBefore) await rmdir(DEVICE_PLUGIN_DIR).catch(() => {});
  },
};
