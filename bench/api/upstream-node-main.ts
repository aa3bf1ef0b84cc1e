/**
 * The upstream node, from inside its private mount namespace (started by upstream-node.ts as
 * `unshare --mount --propagation private -- node --import tsx upstream-node-main.ts SPEC`):
 * the upstream kubelet v1.28.7 and a containerd of its own, isolated from the host as
 * ../shared/k8s/README.md prescribes.
 *
 * Why its own containerd, started in here: a kubelet removes runtime pods it does not know,
 * so it must not share a containerd with kubelet-ts or the raw CRI side; and upstream 1.28
 * writes container logs under the fixed /var/log/pods, which containerd opens itself, so
 * containerd must see the same private /var/log as the kubelet.
 *
 * In here:
 *   - tmpfs over /var/log (pod logs, /var/log/containers links) and /var/lib/kubelet (its root
 *     dir, pki, device-plugins, whatever --root-dir says);
 *   - the kernel tunables the kubelet sets at start (vm.overcommit_memory, vm.panic_on_oom,
 *     kernel.panic, kernel.panic_on_oops, kernel.keys.root_max*) bind-mounted from files
 *     holding their current values, so its writes land in those files;
 *   - volumePluginDir in the node's directory instead of /usr/libexec/kubernetes.
 * The mounts vanish with the namespace when the last process in it exits.
 *
 * Protocol: one JSON line on stdout when ready (`{"event":"ready",...}`) or failed; then it
 * runs until stdin ends, SIGTERM or SIGINT, stops the kubelet and containerd (removing what
 * their pods left), prints `{"event":"stopped"}` and exits.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, readlinkSync } from 'node:fs';
import { mkdir, readFile, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { startContainerd, type Containerd } from '../../tools/node-env/containerd.ts';
import { run } from '../../tools/node-env/util.ts';

export interface UpstreamSpec {
  dir: string;
  kubeletBinary: string;
  /** The node's kubeconfig; absent, the kubelet runs standalone (static pods from `staticPodPath` only). */
  kubeconfig?: string;
  /** A directory of static pod manifests (`staticPodPath`), e.g. for a standalone node. */
  staticPodPath?: string;
  nodeName: string;
  nodeIP: string;
  /** The pause image in the loopback registry (the environment's). */
  sandboxImage: string;
  cgroupRoot: string;
  maxPods: number;
  ports: { port: number; healthz: number; readOnly: number };
  /** `readlink /proc/self/ns/mnt` of the starting process: this process must be in another. */
  hostMountNamespace: string;
  /** klog verbosity. */
  verbosity: number;
  /** KubeletConfiguration fields over the benchmark's (e.g. containerLogMaxSize for bench:log-flood). */
  extraConfig?: Record<string, unknown>;
  /** The size of the tmpfs over /var/log (pod logs); default 512m. */
  varLogSize?: string;
}

/** The tunables upstream's container manager sets (setupKernelTunables), as /proc/sys paths. */
const KERNEL_TUNABLES = ['vm/overcommit_memory', 'vm/panic_on_oom', 'kernel/panic', 'kernel/panic_on_oops', 'kernel/keys/root_maxkeys', 'kernel/keys/root_maxbytes'];

const emit = (obj: object) => process.stdout.write(`${JSON.stringify(obj)}\n`);
const sh = (cmd: string, args: string[]) => run(cmd, args, { timeoutMs: 30_000 });

function kubeletConfig(spec: UpstreamSpec, endpoint: string): string {
  // JSON is YAML. Fields as ../shared/k8s/README.md used them for its side-by-side figures.
  return JSON.stringify({
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    containerRuntimeEndpoint: endpoint,
    cgroupDriver: 'cgroupfs',
    cgroupsPerQOS: true,
    cgroupRoot: spec.cgroupRoot,
    failSwapOn: false,
    makeIPTablesUtilChains: false,
    // Loopback only: its API is open (anonymous, AlwaysAllow) for the benchmark's reads of /pods.
    address: '127.0.0.1',
    port: spec.ports.port,
    healthzBindAddress: '127.0.0.1',
    healthzPort: spec.ports.healthz,
    readOnlyPort: spec.ports.readOnly,
    authentication: { anonymous: { enabled: true }, webhook: { enabled: false } },
    authorization: { mode: 'AlwaysAllow' },
    // No image is removed during a run.
    imageGCHighThresholdPercent: 100,
    imageGCLowThresholdPercent: 99,
    // Without clusterDNS every sync of a ClusterFirst pod records a MissingClusterDNS event,
    // which would inflate its API load; kubelet-ts records none.
    clusterDNS: ['10.0.0.10'],
    clusterDomain: 'cluster.local',
    volumePluginDir: path.join(spec.dir, 'volume-plugins'),
    maxPods: spec.maxPods,
    ...(spec.staticPodPath ? { staticPodPath: spec.staticPodPath } : {}),
    ...spec.extraConfig,
  });
}

async function main(): Promise<void> {
  const spec = JSON.parse(await readFile(process.argv[2]!, 'utf8')) as UpstreamSpec;
  // Never touch the host: refuse to run in the mount namespace of the process that started us.
  if (readlinkSync('/proc/self/ns/mnt') === spec.hostMountNamespace) throw new Error('not in a private mount namespace (run through unshare --mount)');

  for (const dir of ['/var/log', '/var/lib/kubelet']) await sh('mount', ['-t', 'tmpfs', '-o', `mode=0755,size=${dir === '/var/log' ? spec.varLogSize ?? '512m' : '512m'}`, 'kts-bench-api', dir]);
  const sysctlDir = path.join(spec.dir, 'sysctl');
  for (const key of KERNEL_TUNABLES) {
    const file = path.join(sysctlDir, key.replace(/\//g, '.'));
    await mkdir(sysctlDir, { recursive: true });
    await writeFile(file, await readFile(`/proc/sys/${key}`, 'utf8'));
    await sh('mount', ['--bind', file, `/proc/sys/${key}`]);
  }

  let containerd: Promise<Containerd> | undefined;
  let kubelet: ChildProcess | undefined;
  let stopping: Promise<void> | undefined;
  const stop = () => {
    stopping ??= (async () => {
      if (kubelet && kubelet.exitCode === null && kubelet.signalCode === null) {
        kubelet.kill('SIGTERM');
        const timer = setTimeout(() => kubelet?.kill('SIGKILL'), 20_000);
        await once(kubelet, 'exit').catch(() => {});
        clearTimeout(timer);
      }
      // A stop during the start waits for containerd to be up, so it is never left behind.
      await (await containerd?.catch(() => undefined))?.stop();
      emit({ event: 'stopped' });
    })();
    return stopping;
  };
  const stopAndExit = () => void stop().finally(() => process.exit(0));
  process.on('SIGTERM', stopAndExit);
  process.on('SIGINT', stopAndExit);
  process.stdin.on('end', stopAndExit);
  process.stdin.on('error', stopAndExit);
  process.stdin.resume();

  try {
    containerd = startContainerd({ dir: path.join(spec.dir, 'containerd'), sandboxImage: spec.sandboxImage, log: (l) => process.stderr.write(`${l}\n`) });
    const cd = await containerd;
    if (stopping) return;
    const configFile = path.join(spec.dir, 'kubelet-config.yaml');
    await writeFile(configFile, kubeletConfig(spec, cd.endpoint));
    const logFile = path.join(spec.dir, 'kubelet.log');
    const out = createWriteStream(logFile, { flags: 'a' });
    await once(out, 'open');
    kubelet = spawn(spec.kubeletBinary, [
      `--config=${configFile}`,
      ...(spec.kubeconfig ? [`--kubeconfig=${spec.kubeconfig}`] : []),
      `--hostname-override=${spec.nodeName}`,
      `--node-ip=${spec.nodeIP}`,
      '--root-dir=/var/lib/kubelet',
      `--v=${spec.verbosity}`,
    ], { stdio: ['ignore', out, out], detached: true });
    // A stop that began while it was being spawned did not see it.
    if (stopping) kubelet.kill('SIGKILL');
    kubelet.on('exit', (code, signal) => {
      if (!stopping) {
        emit({ event: 'kubelet-exited', code, signal });
        stopAndExit();
      }
    });
    // Ready = its healthz answers ok (the API side, Node Ready, is the caller's to wait for).
    const deadline = performance.now() + 60_000;
    for (;;) {
      if (stopping) return;
      const ok = await fetch(`http://127.0.0.1:${spec.ports.healthz}/healthz`, { signal: AbortSignal.timeout(2000) }).then((r) => r.ok, () => false);
      if (ok) break;
      if (performance.now() > deadline) throw new Error(`the upstream kubelet's healthz did not answer within 60 s (log: ${logFile})`);
      await sleep(200);
    }
    emit({ event: 'ready', kubeletPid: kubelet.pid, containerdPid: cd.pid, containerdEndpoint: cd.endpoint, network: cd.network, logFile });
  } catch (err) {
    emit({ event: 'failed', error: (err as Error).message });
    stopAndExit();
  }
}

main().catch((err: unknown) => {
  emit({ event: 'failed', error: (err as Error).message });
  process.exit(1);
});
