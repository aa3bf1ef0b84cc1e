import { spawn, spawnSync } from 'node:child_process';
import { once } from 'node:events';
import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import type { ControlPlane } from './control-plane.ts';
import { realPartMissing } from './real-part.ts';

/**
 * Upstream's sample device plugin (`sample-device-plugin`, v1.28.7, unpacked with the control
 * plane: ../shared/k8s/README.md): resource `example.com/resource`, devices Dev-1 and Dev-2,
 * `Allocate` mounts /tmp/Dev-N (which it creates on the host). It registers at upstream's fixed
 * /var/lib/kubelet/device-plugins/kubelet.sock; so that no test touches the host's
 * /var/lib/kubelet, it runs in a mount namespace of its own (unshare -m) where a tmpfs covers
 * /var/lib and the test's device plugin dir is bound at /var/lib/kubelet/device-plugins. The
 * namespace ends with the process: nothing of it is left on the host but the /tmp/Dev-N files,
 * removed at stop unless they were there before this run started one.
 *
 * Version 1.28.7 registers once: it does not watch for a kubelet restart (its binary has only the
 * REGISTER_CONTROL_FILE watch; the restart watch came to upstream's stub later), and the
 * restarted kubelet removes its socket. As upstream's own e2e tests do with it, a test restarts
 * the plugin after restarting the kubelet.
 */
export const SAMPLE_RESOURCE = 'example.com/resource';
const DEVICE_FILES = ['/tmp/Dev-1', '/tmp/Dev-2'];
/** The device files there before this run's first plugin: those are never removed. */
let preexisting: string[] | undefined;

export interface SampleDevicePlugin {
  pid: number;
  /** What it printed (klog on stderr). */
  output(): string;
  /** SIGTERM (SIGKILL after 5 s), then the /tmp/Dev-N files this run's plugins made are removed (kept with `keepDeviceFiles`: pods still mount them). */
  stop(opts?: { keepDeviceFiles?: boolean }): Promise<void>;
}

/** The plugin's binary, or why it cannot run here. */
export function sampleDevicePluginBinary(cp: ControlPlane): { bin: string } | { reason: string } {
  const bin = path.join(cp.dir, 'bin', 'sample-device-plugin');
  if (!existsSync(bin)) return { reason: `${bin} not found: ../shared/k8s/control-plane.sh up unpacks it` };
  if (spawnSync('unshare', ['--version']).status !== 0) return { reason: 'unshare not found: install the Debian package util-linux' };
  if (process.getuid?.() !== 0) return { reason: 'the sample device plugin runs in a mount namespace of its own: that needs root' };
  return { bin };
}

/** With `CI=true` a machine that cannot run it fails the test; elsewhere the test is skipped saying why. */
export function sampleDevicePluginOrSkip(ctx: Mocha.Context, cp: ControlPlane): string {
  const found = sampleDevicePluginBinary(cp);
  if ('bin' in found) return found.bin;
  return realPartMissing(ctx, 'the sample device plugin cannot run', found.reason);
}

/** Starts the plugin against the device plugin dir `socketDir` (a kubelet must serve its kubelet.sock there already). */
export async function startSampleDevicePlugin(bin: string, socketDir: string): Promise<SampleDevicePlugin> {
  preexisting ??= DEVICE_FILES.filter((f) => existsSync(f));
  const script = 'mount -t tmpfs -o size=1m,mode=0755 kts-sample-dp /var/lib && mkdir -p /var/lib/kubelet/device-plugins && mount --bind "$DP_DIR" /var/lib/kubelet/device-plugins && exec "$DP_BIN"';
  const child = spawn('unshare', ['--mount', '--propagation', 'private', 'sh', '-c', script], {
    env: { PATH: process.env.PATH ?? '/usr/sbin:/usr/bin:/sbin:/bin', DP_DIR: socketDir, DP_BIN: bin, PLUGIN_SOCK_DIR: '/var/lib/kubelet/device-plugins' },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const keep = (b: Buffer) => {
    output = (output + b.toString()).slice(-64 * 1024);
  };
  child.stdout.on('data', keep);
  child.stderr.on('data', keep);
  const exited = once(child, 'exit');
  return {
    pid: child.pid!,
    output: () => output,
    async stop(opts = {}) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      if (!opts.keepDeviceFiles) for (const f of DEVICE_FILES) if (!preexisting?.includes(f)) await fs.rm(f, { force: true });
    },
  };
}
