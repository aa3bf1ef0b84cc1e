/**
 * Issue 17, as an operator runs it: `scripts/up.sh 2>&1 | tee log`, pods come up, a pull fails
 * and says why on the console, then Ctrl-C, which reaches tee and up.ts alike. tee dies first,
 * so up.ts's next console write gets EPIPE: before the fix the launcher exited 1 there and left
 * containerd, the registry, the shims with their pods, mounts, the bridge and veths behind; the
 * pods' cgroups survived even a clean stop, and the image cache was left in /tmp.
 */
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { cgroupV1Mounts } from '../../core/cgroups/cgroup-mounts.ts';
import { nodeEnvUsableOrSkip } from '../support/node-env.ts';
import { freePort } from '../../tools/node-env/util.ts';

const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Bound on the node coming up (image build, registry, containerd, the kubelet, one pod). */
const UP_TIMEOUT_MS = 120_000;
/** Bound on the whole stop (the kubelet's, then the pods', containerd's and the registry's). */
const STOP_TIMEOUT_MS = 60_000;

/** PIDs of processes whose command line mentions `needle`. */
function processesMentioning(needle: string): number[] {
  const out: number[] = [];
  for (const pid of readdirSafe('/proc')) {
    if (!/^\d+$/.test(pid) || Number(pid) === process.pid) continue;
    try {
      if (readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(needle)) out.push(Number(pid));
    } catch {
      // gone meanwhile
    }
  }
  return out;
}

function readdirSafe(dir: string): string[] {
  try {
    return readdirSync(dir);
  } catch {
    return [];
  }
}

describe('operator: scripts/up.sh under tee, then Ctrl-C', function () {
  this.timeout(UP_TIMEOUT_MS + STOP_TIMEOUT_MS + 30_000);
  let nodeDir: string;
  let up: ChildProcess | undefined;
  let screen = '';

  before(function () {
    nodeEnvUsableOrSkip(this);
  });

  afterEach(async () => {
    // Whatever the test left: stop it the way up.ts itself would be stopped, once, bounded.
    if (up && up.exitCode === null && up.signalCode === null) {
      up.kill('SIGTERM');
      await Promise.race([new Promise((r) => up!.once('exit', r)), sleep(STOP_TIMEOUT_MS)]);
    }
    up = undefined;
    if (nodeDir) await fs.rm(nodeDir, { recursive: true, force: true });
  });

  it('stops everything of the node, its pod cgroups and its image cache included, and says why a pull failed', async function () {
    nodeDir = await fs.mkdtemp('/tmp/h17-up-');
    const manifests = path.join(nodeDir, 'manifests');
    await fs.mkdir(manifests);
    const registryPort = await freePort();
    const readOnlyPort = await freePort();
    const image = `127.0.0.1:${registryPort}/kubelet-ts/busybox:1.35`;
    await fs.writeFile(path.join(manifests, 'h17-sleeper.yaml'), `apiVersion: v1
kind: Pod
metadata: { name: h17-sleeper }
spec:
  terminationGracePeriodSeconds: 1
  containers:
    - { name: app, image: "${image}", command: ["sleep", "3600"] }
`);
    await fs.writeFile(path.join(manifests, 'h17-nope.yaml'), `apiVersion: v1
kind: Pod
metadata: { name: h17-nope }
spec:
  containers:
    - { name: app, image: "127.0.0.1:${registryPort}/kubelet-ts/does-not-exist:1" }
`);

    // Its own process group, as a shell's foreground job: the Ctrl-C below reaches the group.
    up = spawn(process.execPath, [path.join(REPO, 'bin', 'kubelet-ts-up.mjs'), '--node-dir', nodeDir, '--manifests', manifests, '--registry-port', String(registryPort), '--read-only-port', String(readOnlyPort)], {
      cwd: REPO, stdio: ['ignore', 'pipe', 'pipe'], detached: true,
    });
    const exited = new Promise<number | null>((resolve) => up!.once('exit', (code) => resolve(code)));
    up.stdout!.setEncoding('utf8');
    up.stdout!.on('data', (d: string) => (screen += d));
    let stderr = '';
    up.stderr!.on('data', (d) => (stderr += d));

    const deadline = Date.now() + UP_TIMEOUT_MS;
    // Long lines are wrapped at spaces with a 10-column indent: read them whole again.
    const seen = (re: RegExp) => re.test(screen.replace(/\n {10}/g, ' '));
    while (!(seen(/default\/h17-sleeper-\S+ {2}Running {2}ready 1\/1/) && seen(/warning: default\/h17-nope-\S+: Failed to pull image "[^"]+does-not-exist:1": .*not found/i))) {
      if (Date.now() > deadline || up.exitCode !== null) assert.fail(`the node did not come up as expected within ${UP_TIMEOUT_MS} ms:\n${screen}\n${stderr}`);
      await sleep(200);
    }
    const pods = (await (await fetch(`http://127.0.0.1:${readOnlyPort}/pods`)).json()) as { items: Array<{ metadata: { uid: string } }> };
    const uids = pods.items.map((p) => p.metadata.uid);
    assert.equal(uids.length, 2);
    const bridge = /network {5}bridge (\S+),/.exec(screen)?.[1];
    assert.ok(bridge, screen);
    assert.ok(existsSync(path.join(nodeDir, 'image-cache')), 'the image cache is in the node dir');

    // Ctrl-C under tee: tee dies first (the pipe's reader is gone), then the group gets SIGINT.
    up.stdout!.destroy();
    process.kill(-up.pid!, 'SIGINT');
    const code = await Promise.race([exited, sleep(STOP_TIMEOUT_MS).then(() => 'timeout' as const)]);
    assert.equal(code, 0, `up.ts exit: ${code}; stderr: ${stderr}`);
    assert.doesNotMatch(stderr, /EPIPE/);

    // Nothing of the node is left: processes, mounts, the bridge, the pods' cgroups.
    assert.deepEqual(processesMentioning(nodeDir), [], 'no process of the node (containerd, registry, shims)');
    // The kubelet names itself `kubelet` (its command line no longer holds the node dir): the pid up printed.
    const kubeletPid = Number(/kubelet {5}pid (\d+)/.exec(screen)?.[1]);
    assert.ok(kubeletPid > 0, screen);
    assert.equal(existsSync(`/proc/${kubeletPid}`), false, `the kubelet (pid ${kubeletPid}) has exited`);
    const mounts = readFileSync('/proc/self/mountinfo', 'utf8').split('\n').filter((l) => l.includes(nodeDir));
    assert.deepEqual(mounts, [], 'no mount under the node dir');
    assert.equal(existsSync(`/sys/class/net/${bridge}`), false, `bridge ${bridge} is gone`);
    for (const mount of new Set(cgroupV1Mounts().values())) {
      for (const qos of ['', 'burstable', 'besteffort']) {
        for (const uid of uids) assert.equal(existsSync(path.join(mount, 'kubepods', qos, `pod${uid}`)), false, `cgroup ${mount}/kubepods/${qos}/pod${uid} is gone`);
      }
    }
  });
});
