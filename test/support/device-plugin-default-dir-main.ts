/**
 * Runs inside `unshare --mount` (device-plugins.test.ts): with a tmpfs over /var/lib, so the
 * host's /var/lib/kubelet is never touched, the device-plugins plugin with its default options
 * and a root dir elsewhere (argv[2]), and upstream's sample device plugin (argv[3]) as an
 * operator runs it, dialling its fixed /var/lib/kubelet/device-plugins/kubelet.sock. Prints one
 * JSON line: the resources registered (with their devices listed) within 30 s, the socket the
 * plugin served, and the sample plugin's output on failure.
 */
import { spawn } from 'node:child_process';
import { readlinkSync } from 'node:fs';
import { setTimeout as sleep } from 'node:timers/promises';
import { startPluginsForTest } from '../../core/sdk/testing/index.ts';
import { run } from '../../tools/node-env/util.ts';

const [rootDir, sampleBin, hostMountNs] = process.argv.slice(2) as [string, string, string];
if (readlinkSync('/proc/self/ns/mnt') === hostMountNs) throw new Error('not in a private mount namespace (run through unshare --mount)');
await run('mount', ['-t', 'tmpfs', '-o', 'size=1m,mode=0755', 'kts-dp-default', '/var/lib']);
const plugins = await startPluginsForTest([['device-plugins']], { rootDir, pods: () => [] });
const served = await import('node:fs').then((fs) => fs.existsSync('/var/lib/kubelet/device-plugins/kubelet.sock'));
// As upstream's e2e DaemonSet runs it: PLUGIN_SOCK_DIR is upstream's fixed dir.
const sample = spawn(sampleBin, [], { stdio: ['ignore', 'pipe', 'pipe'], env: { PATH: process.env.PATH ?? '/usr/bin:/bin', PLUGIN_SOCK_DIR: '/var/lib/kubelet/device-plugins' } });
let output = '';
sample.stdout.on('data', (b: Buffer) => (output += b.toString()));
sample.stderr.on('data', (b: Buffer) => (output += b.toString()));
let resources: Array<{ resource: string; devices: number }> = [];
// Registered comes before the plugin's first ListAndWatch answer: wait for its devices too (CI
// once read the resource registered with 0 devices).
const listed = () => resources.length > 0 && resources.every((r) => r.devices > 0);
for (let i = 0; i < 120 && !listed(); i++) {
  resources = plugins.devices.resources().filter((r) => r.registered).map((r) => ({ resource: r.resourceName, devices: r.devices.length }));
  if (!listed()) await sleep(250);
}
sample.kill('SIGTERM');
await plugins.close();
process.stdout.write(`${JSON.stringify({ served, resources, ...(listed() ? {} : { output: output.slice(-4000) }) })}\n`);
process.exit(0);
