import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { createWriteStream, existsSync, readlinkSync } from 'node:fs';
import { mkdir, readFile, rmdir, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { cgroupV1Mounts } from '../../core/cgroups/cgroup-mounts.ts';
import { removeCgroupRoot } from '../../test/support/cgroups.ts';
import { stopStaleContainerd } from '../../tools/node-env/index.ts';
import { freePort, pidAlive, which } from '../../tools/node-env/util.ts';
import type { UpstreamSpec } from './upstream-node-main.ts';

/**
 * The upstream kubelet v1.28.7 as a node of the benchmark's cluster, isolated from the host:
 * its own private mount namespace and its own containerd (upstream-node-main.ts says what is
 * inside and why). This side prepares what must exist before (the pod cgroup root, which
 * upstream refuses to start without; /var/lib/kubelet as a mount point), starts the namespace,
 * and after it stopped removes the cgroup root; if the process inside did not stop in time it
 * is killed and its containerd cleaned from here.
 */

const MAIN = path.join(path.dirname(fileURLToPath(import.meta.url)), 'upstream-node-main.ts');
const PROJECT_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const STOP_TIMEOUT_MS = 90_000;
let instances = 0;

export interface UpstreamNode {
  name: string;
  /** The kubelet's pid (for /proc CPU and RSS). */
  pid: number;
  containerdPid: number | undefined;
  logFile: string;
  readOnlyPort: number;
  stop(): Promise<void>;
}

/** What the caller says of the node: the spec the process inside gets, less what this side works out (ports, cgroup root, namespace). */
export type UpstreamNodeOptions = Pick<UpstreamSpec, 'dir' | 'kubeletBinary' | 'kubeconfig' | 'staticPodPath' | 'nodeName' | 'nodeIP' | 'sandboxImage' | 'maxPods' | 'extraConfig' | 'varLogSize'> & {
  log: (line: string) => void;
};

const SHARED_K8S = path.resolve(PROJECT_ROOT, '..', 'shared', 'k8s');

/**
 * The upstream kubelet without a control plane (a standalone node): `bin/kubelet.gz` of
 * ../shared/k8s unpacked into `dir` and checked against its SHA256SUMS line, as `control-plane.sh
 * up` does for its own bin/. Undefined (with the reason) when the shared tree has no kubelet.
 */
export async function unpackUpstreamKubelet(dir: string): Promise<{ binary?: string; reason?: string }> {
  const gz = path.join(SHARED_K8S, 'bin', 'kubelet.gz');
  if (!existsSync(gz)) return { reason: `no upstream kubelet (${gz} missing)` };
  const want = (await readFile(path.join(SHARED_K8S, 'SHA256SUMS'), 'utf8').catch(() => '')).split('\n').find((l) => /\s+kubelet$/.test(l))?.split(/\s+/)[0];
  if (!want) return { reason: `no SHA256SUMS line for kubelet in ${SHARED_K8S}` };
  const binary = path.join(dir, 'kubelet');
  const bytes = gunzipSync(await readFile(gz));
  const got = createHash('sha256').update(bytes).digest('hex');
  if (got !== want) return { reason: `SHA256 mismatch for ${gz} (got ${got}, SHA256SUMS says ${want})` };
  await writeFile(binary, bytes, { mode: 0o755 });
  return { binary };
}

export function upstreamUnavailableReason(kubeletBinary: string | undefined): string | undefined {
  if (!kubeletBinary) return 'no upstream kubelet binary (the control plane directory has no bin/kubelet)';
  if (!which('unshare')) return 'unshare not found (Debian package util-linux)';
  return undefined;
}

/** Creates `root` in every cgroup v1 hierarchy; cpuset gets its parent's cpus and mems, without which no task may join it. */
async function createCgroupRoot(root: string): Promise<void> {
  for (const [controller, mount] of cgroupV1Mounts()) {
    if (controller === 'unified') continue;
    const dir = path.join(mount, root);
    await mkdir(dir, { recursive: true });
    if (controller === 'cpuset') {
      for (const f of ['cpuset.cpus', 'cpuset.mems']) {
        const own = (await readFile(path.join(dir, f), 'utf8')).trim();
        if (!own) await writeFile(path.join(dir, f), await readFile(path.join(mount, f), 'utf8'));
      }
    }
  }
}

export async function startUpstreamNode(opts: UpstreamNodeOptions): Promise<UpstreamNode> {
  const cgroupRoot = `/kts-bench-api-up-${process.pid}-${++instances}`;
  await createCgroupRoot(cgroupRoot);
  // The tmpfs inside needs a mount point; made here only if the host has none, and removed after.
  const madeVarLibKubelet = !existsSync('/var/lib/kubelet');
  if (madeVarLibKubelet) await mkdir('/var/lib/kubelet', { recursive: true });
  const spec: UpstreamSpec = {
    dir: opts.dir,
    kubeletBinary: opts.kubeletBinary,
    ...(opts.kubeconfig ? { kubeconfig: opts.kubeconfig } : {}),
    ...(opts.staticPodPath ? { staticPodPath: opts.staticPodPath } : {}),
    nodeName: opts.nodeName,
    nodeIP: opts.nodeIP,
    sandboxImage: opts.sandboxImage,
    cgroupRoot,
    maxPods: opts.maxPods,
    ports: { port: await freePort(), healthz: await freePort(), readOnly: await freePort() },
    hostMountNamespace: readlinkSync('/proc/self/ns/mnt'),
    verbosity: 1,
    ...(opts.extraConfig ? { extraConfig: opts.extraConfig } : {}),
    ...(opts.varLogSize ? { varLogSize: opts.varLogSize } : {}),
  };
  const specFile = path.join(opts.dir, 'spec.json');
  await writeFile(specFile, JSON.stringify(spec));
  const helperLog = createWriteStream(path.join(opts.dir, 'helper.log'), { flags: 'a' });
  await once(helperLog, 'open');
  const child = spawn('unshare', ['--mount', '--propagation', 'private', '--', process.execPath, '--import', 'tsx', MAIN, specFile], {
    cwd: PROJECT_ROOT,
    stdio: ['pipe', 'pipe', helperLog],
  });
  const exited = once(child, 'exit');
  const lines = createInterface({ input: child.stdout! });
  const events: Array<Record<string, unknown>> = [];
  let onEvent: ((e: Record<string, unknown>) => void) | undefined;
  lines.on('line', (line) => {
    let e: Record<string, unknown>;
    try {
      e = JSON.parse(line) as Record<string, unknown>;
    } catch {
      return;
    }
    events.push(e);
    if (e.event === 'kubelet-exited') opts.log(`upstream kubelet exited unexpectedly (${String(e.code ?? e.signal)}); log ${path.join(opts.dir, 'kubelet.log')}`);
    onEvent?.(e);
  });

  let stopped: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      if (child.exitCode === null && child.signalCode === null) {
        child.stdin!.end();
        const timer = setTimeout(() => child.kill('SIGKILL'), STOP_TIMEOUT_MS);
        await exited;
        clearTimeout(timer);
      }
      if (!events.some((e) => e.event === 'stopped')) {
        // The process inside did not finish its teardown: finish it from here.
        opts.log('upstream node: the namespace did not stop cleanly; cleaning up from outside');
        const kubeletPid = Number(events.find((e) => e.event === 'ready')?.kubeletPid);
        if (kubeletPid > 0 && pidAlive(kubeletPid)) process.kill(kubeletPid, 'SIGKILL');
        await stopStaleContainerd(path.join(opts.dir, 'containerd'), opts.log).catch(() => {});
      }
      // Pod cgroups empty out as their processes go; a few tries.
      for (let i = 0; i < 10; i++) {
        await removeCgroupRoot(cgroupRoot);
        if (!existsSync(path.join(cgroupV1Mounts().get('memory') ?? '/nonexistent', cgroupRoot))) break;
        await new Promise((r) => setTimeout(r, 500));
      }
      if (madeVarLibKubelet) await rmdir('/var/lib/kubelet').catch(() => {});
      helperLog.end();
    })();
    return stopped;
  };

  const ready = await new Promise<Record<string, unknown>>((resolve, reject) => {
    const check = (e: Record<string, unknown>) => {
      if (e.event === 'ready') resolve(e);
      else if (e.event === 'failed') reject(new Error(`upstream node failed to start: ${String(e.error)} (logs in ${opts.dir})`));
    };
    for (const e of events) check(e);
    onEvent = check;
    void exited.then(() => reject(new Error(`upstream node exited during start (logs in ${opts.dir})`)));
  }).catch(async (err: unknown) => {
    await stop();
    throw err;
  });
  onEvent = undefined;
  return {
    name: opts.nodeName,
    pid: Number(ready.kubeletPid),
    containerdPid: typeof ready.containerdPid === 'number' ? ready.containerdPid : undefined,
    logFile: String(ready.logFile),
    readOnlyPort: spec.ports.readOnly,
    stop,
  };
}
