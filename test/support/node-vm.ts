import { existsSync } from 'node:fs';
import { readdir, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { CoreV1Api, type V1NodeCondition } from '@kubernetes/client-node';
import { CriClient } from '../../plugins/cri-containerd/cri-client.ts';
import { CriRuntime } from '../../plugins/cri-containerd/cri-runtime.ts';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { pidAlive, run } from '../../tools/node-env/util.ts';
import { ensureNodeVmImage, nodeVmHostUnavailableReason, type NodeVmImage } from '../../tools/node-vm/image.ts';
import { buildProjectDisk, GUEST_NODE } from '../../tools/node-vm/project-disk.ts';
import { NodeVm, stopQemuIn, shellQuote, type SshOptions } from '../../tools/node-vm/vm.ts';
import { controlPlaneUnavailableReason, getControlPlane, type ControlPlane } from './control-plane.ts';
import { getNodeEnv } from './node-env.ts';
import { nodeEnvUnavailableReason } from '../../tools/node-env/index.ts';
import { claimOncePerRun, refuseOnPureLane } from './once-per-run.ts';
import { realPartMissing } from './real-part.ts';
import { KUBELET_BIN } from './kubelet-process.ts';
import { shebangNodeFlags } from './shebang-flags.ts';
import { waitFor } from './wait-for.ts';

/**
 * The node VM of a mocha run (test/vm): a systemd + cgroup v2 + containerd 2.1 Debian node
 * booted once per run under qemu (tools/node-vm), with kubelet-ts installed as the systemd
 * unit of docs/operating/node.md and joined to the run's control plane on the host. It starts lazily on the first
 * getNodeVm() and is powered off by the root afterAll hook (stopNodeVm, test/support/root-hooks.ts).
 * Tests share the VM: they restart the kubelet with their configuration rather than reboot
 * (a boot is 1-2 minutes under TCG), use their own namespaces, and delete their pods.
 */

claimOncePerRun('test/support/node-vm.ts');

const PREFIX = 'kubelet-ts-vm-';
/** The kubelet's main port in the guest, forwarded to a free host port. */
const GUEST_KUBELET_PORT = 10250;
const KUBELET_CONFIG = '/etc/kubelet-ts/config.yaml';
const PLUGINS_CONFIG = '/etc/kubelet-ts/plugins-config.json';
/** The unit's EnvironmentFile (kubeadm's /etc/default/kubelet): KUBELET_EXTRA_ARGS. */
const EXTRA_ARGS_FILE = '/etc/default/kubelet-ts';
const CONTAINERD_SOCKET = '/run/containerd/containerd.sock';
/** The guest's address on qemu's user-mode network (`--node-ip`): the Node's InternalIP. */
const GUEST_NODE_IP = '10.0.2.15';

export interface KubeletStartOptions {
  cgroupDriver: 'systemd' | 'cgroupfs';
  /** More KubeletConfiguration fields. */
  extra?: Record<string, unknown>;
  /** Wait for the Node to be Ready (default true). */
  waitReady?: boolean;
  /** kubelet-ts's own fields (plegRelistPeriod, ...): a `--plugins-config` file, given in KUBELET_EXTRA_ARGS as kubeadm's nodes give extra flags. */
  pluginsConfig?: Record<string, unknown>;
}

export interface TestNodeVm {
  vm: NodeVm;
  image: NodeVmImage;
  env: NodeEnv;
  cp: ControlPlane;
  core: CoreV1Api;
  /** The guest's Node name. */
  nodeName: string;
  /** Host port of the guest kubelet's main port. */
  kubeletPort: number;
  /** A CRI client of the guest's containerd (its socket forwarded over ssh to the host). */
  cri: CriRuntime;
  /** That forwarded socket as a CRI endpoint (`unix:///...`), for a plugin of the test's own. */
  criEndpoint: string;
  /** Figures of this run (seconds). */
  timings: { imageSeconds: number; imageBuilt: boolean; projectDiskSeconds: number; bootSeconds: number; kubeletReadySeconds?: number };
  ssh(cmd: string, opts?: SshOptions): Promise<{ code: number | null; stdout: string; stderr: string }>;
  writeFile(path: string, content: string, mode?: string): Promise<void>;
  readFile(path: string): Promise<string>;
  /** `journalctl -u <unit>` since `sinceEpochSeconds` (the guest's clock), message text only. */
  journal(unit: string, sinceEpochSeconds?: number): Promise<string>;
  /** The guest's clock, seconds since the epoch (for journal()). */
  now(): Promise<number>;
  /** Writes containerd's config (version 3) with runc's SystemdCgroup as given and restarts it. */
  configureContainerd(opts: { systemdCgroup: boolean }): Promise<void>;
  /** (Re)starts the kubelet-ts unit with a KubeletConfiguration of `opts`. */
  startKubelet(opts: KubeletStartOptions): Promise<void>;
  stopKubelet(): Promise<void>;
  /**
   * Makes the guest kubelet reachable from the host at the Node's own address and port
   * (`10.0.2.15:10250`, what the API server dials for logs, exec and attach): that address on
   * the host's loopback and an ssh forward from it to the guest. Undone by the returned function
   * (and by stopNodeVm). For a test that needs the API server to reach the kubelet as in a
   * cluster (upstream's e2e tests read pod logs so).
   */
  exposeKubeletAtNodeIp(): Promise<() => Promise<void>>;
}

let vmPromise: Promise<TestNodeVm> | undefined;
let runningVm: NodeVm | undefined;
let criSocketDir: string | undefined;
/** Undoes exposeKubeletAtNodeIp if a test did not. */
let undoExposure: (() => Promise<void>) | undefined;

function log(line: string): void {
  if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[node-vm] ${line}\n`);
}

/** This run's directory: `<os tmp>/kubelet-ts-vm-<pid>`. */
export function nodeVmBaseDir(): string {
  return join(tmpdir(), `${PREFIX}${process.pid}`);
}

/** Why the node VM cannot run here (host packages, root, the node env, the control plane), or undefined. */
export function nodeVmUnavailableReason(): string | undefined {
  return nodeVmHostUnavailableReason() ?? nodeEnvUnavailableReason() ?? controlPlaneUnavailableReason();
}

/** The run's node VM for a test: with CI=true a machine that cannot run it fails the test, elsewhere it is skipped naming what is missing. */
export async function nodeVmOrSkip(ctx: Mocha.Context): Promise<TestNodeVm> {
  const reason = nodeVmUnavailableReason();
  if (reason) realPartMissing(ctx, 'the node VM cannot start', reason);
  return getNodeVm();
}

/**
 * The run's VM as kubeadm's node of 2026 (containerd's runc with `SystemdCgroup = true`), and,
 * unless `kubelet` is false, kubelet-ts running on it with `cgroupDriver: systemd` and the
 * given fields: the `before` of most VM tests. Skips or fails as nodeVmOrSkip.
 */
export async function systemdNodeVmOrSkip(ctx: Mocha.Context, kubelet: Omit<KubeletStartOptions, 'cgroupDriver'> | false = {}): Promise<TestNodeVm> {
  const t = await nodeVmOrSkip(ctx);
  await t.configureContainerd({ systemdCgroup: true });
  if (kubelet) await t.startKubelet({ cgroupDriver: 'systemd', ...kubelet });
  return t;
}

/** Boots the run's VM once (memoized; a failed start is not retried). */
export function getNodeVm(): Promise<TestNodeVm> {
  refuseOnPureLane('the node VM');
  vmPromise ??= start();
  return vmPromise;
}

async function start(): Promise<TestNodeVm> {
  await sweepStale();
  const base = nodeVmBaseDir();
  const [env, cp] = await Promise.all([getNodeEnv(), getControlPlane()]);
  let t0 = performance.now();
  const image = await ensureNodeVmImage(log);
  const imageSeconds = image.built ? image.buildSeconds : (performance.now() - t0) / 1000;
  const project = await buildProjectDisk(base);
  log(`project disk in ${project.seconds.toFixed(1)} s`);
  const apiPort = Number(new URL(cp.server).port);
  const registryPort = Number(env.registry.split(':')[1]);
  const vm = await NodeVm.boot({ image, dir: join(base, 'vm'), projectImg: project.img, guestPorts: [GUEST_KUBELET_PORT], hostPorts: [apiPort, registryPort], log });
  runningVm = vm;
  // The guest's containerd socket on the host, over the ssh master (OpenSSH forwards unix sockets).
  criSocketDir = join(base, 'cri');
  await run('mkdir', ['-p', criSocketDir]);
  const criSocket = join(criSocketDir, 'containerd.sock');
  await run('ssh', [...vmSshControlArgs(vm), '-O', 'forward', '-L', `${criSocket}:${CONTAINERD_SOCKET}`, 'root@127.0.0.1']);
  const cri = new CriRuntime(new CriClient(`unix://${criSocket}`), { requestTimeoutMs: 60_000, pullTimeoutMs: 300_000 });
  const nodeName = `kts-vm-${process.pid}`;
  const core = cp.admin.makeApiClient(CoreV1Api);
  // The guest's clock starts from the host's RTC; set it exactly, so certificates and the journal agree with the host.
  await vm.ssh(`date -s @${Math.floor(Date.now() / 1000)} >/dev/null`);
  await vm.ssh('mkdir -p /etc/kubelet-ts && mountpoint -q /opt/kubelet-ts');
  await vm.writeFile('/etc/kubelet-ts/kubelet.kubeconfig', await readFile(await cp.nodeKubeconfig(nodeName), 'utf8'), '0600');
  await vm.writeFile('/etc/kubelet-ts/ca.crt', await readFile(join(cp.dir, 'pki', 'ca.crt'), 'utf8'));
  await vm.writeFile('/etc/systemd/system/kubelet-ts.service', kubeletUnit(nodeName));
  await vm.writeFile(
    '/etc/cni/net.d/10-kts.conflist',
    JSON.stringify({
      cniVersion: '1.0.0',
      name: 'kts',
      plugins: [{ type: 'bridge', bridge: 'cni0', isGateway: true, ipMasq: false, ipam: { type: 'host-local', ranges: [[{ subnet: '10.88.0.0/16' }]], routes: [{ dst: '0.0.0.0/0' }] } }, { type: 'portmap', capabilities: { portMappings: true } }],
    }),
  );
  // The host's loopback registry reached on the guest's loopback (ssh's reverse forward), over plain HTTP.
  await vm.writeFile(`/etc/containerd/certs.d/${env.registry}/hosts.toml`, `server = "http://${env.registry}"\n\n[host."http://${env.registry}"]\n  capabilities = ["pull", "resolve"]\n`);
  await vm.ssh('systemctl daemon-reload');

  /** The Node's Ready condition as the API server has it (none before the first registration). */
  const readyCondition = async (): Promise<V1NodeCondition | undefined> =>
    (await core.readNode({ name: nodeName }).catch(() => undefined))?.status?.conditions?.find((c) => c.type === 'Ready');

  /** What the guest runs now, so a test asking for the same keeps it. */
  const current: { systemdCgroup?: boolean; kubelet?: string } = {};
  const t: TestNodeVm = {
    vm,
    image,
    env,
    cp,
    core,
    nodeName,
    kubeletPort: vm.ports.get(GUEST_KUBELET_PORT)!,
    cri,
    criEndpoint: `unix://${criSocket}`,
    timings: { imageSeconds, imageBuilt: image.built, projectDiskSeconds: project.seconds, bootSeconds: vm.bootSeconds },
    ssh: (cmd, opts) => vm.ssh(cmd, opts),
    writeFile: (p, c, m) => vm.writeFile(p, c, m),
    readFile: (p) => vm.readFile(p),
    async now() {
      return Number((await vm.ssh('date +%s')).stdout.trim());
    },
    async journal(unit, since) {
      return (await vm.ssh(`journalctl --no-pager -o cat -u ${shellQuote(unit)}${since ? ` --since @${since}` : ''}`)).stdout;
    },
    async configureContainerd({ systemdCgroup }) {
      // The same config again: no restart (tests of one run share the VM's state).
      if (current.systemdCgroup === systemdCgroup) return;
      current.systemdCgroup = undefined;
      current.kubelet = undefined;
      await vm.writeFile('/etc/containerd/config.toml', containerdConfig(env, systemdCgroup));
      await vm.ssh('systemctl restart containerd', { timeoutMs: 120_000 });
      await waitFor('containerd in the guest answers CRI', async () => (await cri.version()).runtimeName !== '', 120_000, 1000);
      current.systemdCgroup = systemdCgroup;
    },
    async startKubelet(opts) {
      const config = kubeletConfiguration(opts);
      /** What the unit runs with: the two files. */
      const running = `${config}\n${JSON.stringify(opts.pluginsConfig ?? null)}`;
      // Already running with this configuration: keep it (a start is ~1 minute under TCG).
      if (current.kubelet === running && (await vm.ssh('systemctl is-active -q kubelet-ts', { allowFailure: true })).code === 0) return;
      current.kubelet = undefined;
      // The Node keeps the last kubelet's Ready for up to the controller's grace period (40 s)
      // after it stopped: only a heartbeat newer than that kubelet's last is the new one's.
      const before = await readyCondition();
      await vm.ssh('systemctl stop kubelet-ts', { timeoutMs: 90_000 });
      await vm.writeFile(KUBELET_CONFIG, config);
      if (opts.pluginsConfig) await vm.writeFile(PLUGINS_CONFIG, JSON.stringify(opts.pluginsConfig, null, 2) + '\n');
      await vm.writeFile(EXTRA_ARGS_FILE, opts.pluginsConfig ? `KUBELET_EXTRA_ARGS=--plugins-config ${PLUGINS_CONFIG}\n` : 'KUBELET_EXTRA_ARGS=\n');
      const t1 = performance.now();
      await vm.ssh('systemctl reset-failed kubelet-ts 2>/dev/null; systemctl start kubelet-ts');
      if (opts.waitReady === false) return;
      await waitFor(
        `Node ${nodeName} Ready (kubelet-ts in the VM; its journal: journalctl -u kubelet-ts)`,
        async () => {
          const ready = await readyCondition();
          return ready?.status === 'True' && heartbeatMs(ready) > heartbeatMs(before);
        },
        600_000,
        2000,
      ).catch(async (err: Error) => {
        throw new Error(`${err.message}\n${(await t.journal('kubelet-ts')).split('\n').slice(-15).join('\n')}`);
      });
      t.timings.kubeletReadySeconds = (performance.now() - t1) / 1000;
      current.kubelet = running;
    },
    async stopKubelet() {
      current.kubelet = undefined;
      await vm.ssh('systemctl stop kubelet-ts', { timeoutMs: 90_000 });
    },
    async exposeKubeletAtNodeIp() {
      const undo = await exposeAtNodeIp(vm);
      undoExposure = undo;
      return async () => {
        if (undoExposure === undo) undoExposure = undefined;
        await undo();
      };
    },
  };
  return t;
}

/** When a condition was last posted (a Date from the client, a string on the wire); never posted sorts first. */
function heartbeatMs(c: V1NodeCondition | undefined): number {
  return c?.lastHeartbeatTime ? new Date(c.lastHeartbeatTime).getTime() : Number.NEGATIVE_INFINITY;
}

/**
 * The guest's node address on the host's loopback (a /32: it routes nothing else) and an ssh
 * forward from it to the guest kubelet's main port. qemu's user-mode network has no route from
 * the host to the guest, and the API server dials the Node's InternalIP at its kubelet port
 * (`--kubelet-preferred-address-types`), never a forwarded loopback port. Refuses when the
 * address is already on the host: that is another VM run's, or a network of the machine's own.
 */
async function exposeAtNodeIp(vm: NodeVm): Promise<() => Promise<void>> {
  const shown = await run('ip', ['-o', 'addr', 'show', 'to', `${GUEST_NODE_IP}/32`]);
  if (shown.stdout.trim()) throw new Error(`${GUEST_NODE_IP} is already an address of this host (${shown.stdout.trim()}): another node VM run, or the machine's own network; not taking it over`);
  await run('ip', ['addr', 'add', `${GUEST_NODE_IP}/32`, 'dev', 'lo']);
  const forward = `${GUEST_NODE_IP}:${GUEST_KUBELET_PORT}:127.0.0.1:${GUEST_KUBELET_PORT}`;
  try {
    await run('ssh', [...vmSshControlArgs(vm), '-O', 'forward', '-L', forward, 'root@127.0.0.1']);
  } catch (err) {
    await run('ip', ['addr', 'del', `${GUEST_NODE_IP}/32`, 'dev', 'lo']).catch(() => {});
    throw err;
  }
  let undone = false;
  return async () => {
    if (undone) return;
    undone = true;
    await run('ssh', [...vmSshControlArgs(vm), '-O', 'cancel', '-L', forward, 'root@127.0.0.1']).catch(() => {});
    await run('ip', ['addr', 'del', `${GUEST_NODE_IP}/32`, 'dev', 'lo']).catch(() => {});
  };
}

function vmSshControlArgs(vm: NodeVm): string[] {
  return ['-o', `ControlPath=${join(vm.dir, 'ssh.ctl')}`, '-o', 'BatchMode=yes', '-o', 'LogLevel=ERROR'];
}

/** The unit of docs/operating/node.md ("As a systemd service"), with the node's own flags and Node.js flags for a guest without KVM. */
function kubeletUnit(nodeName: string): string {
  return `[Unit]
Description=kubelet-ts, a Kubernetes node agent
Wants=network-online.target
After=network-online.target containerd.service
Requires=containerd.service

[Service]
# The project disk's Node 24 with the shebang's flags (--disable-sigusr1 among them), and V8's
# optimizing compilers off: under TCG every page of machine code
# V8 writes is translated again, and TurboFan/Maglev made Node.js 10x slower still than the
# interpreter and baseline compiler alone (measured in this guest: 14 min 52 s against 1 min 21 s
# for loading @grpc/grpc-js and a 3e6-iteration loop, with the host under load).
# Extra flags as kubeadm's nodes have them (its /etc/default/kubelet).
EnvironmentFile=-${EXTRA_ARGS_FILE}
ExecStart=${GUEST_NODE} ${shebangNodeFlags(KUBELET_BIN).join(' ')} --no-opt --no-maglev /opt/kubelet-ts/bin/kubelet-ts.mjs --config ${KUBELET_CONFIG} --kubeconfig /etc/kubelet-ts/kubelet.kubeconfig --hostname-override ${nodeName} --node-ip ${GUEST_NODE_IP} $KUBELET_EXTRA_ARGS
Restart=always
RestartSec=5
TimeoutStopSec=30

[Install]
WantedBy=multi-user.target
`;
}

/** A KubeletConfiguration as kubeadm writes one, with the test's driver. */
function kubeletConfiguration(opts: KubeletStartOptions): string {
  const cfg = {
    apiVersion: 'kubelet.config.k8s.io/v1beta1',
    kind: 'KubeletConfiguration',
    cgroupDriver: opts.cgroupDriver,
    containerRuntimeEndpoint: `unix://${CONTAINERD_SOCKET}`,
    // Client certificates of the cluster CA (the API server's kubelet client, the tests') are trusted; no anonymous access.
    authentication: { anonymous: { enabled: false }, webhook: { enabled: false }, x509: { clientCAFile: '/etc/kubelet-ts/ca.crt' } },
    authorization: { mode: 'AlwaysAllow' },
    healthzPort: 10248,
    readOnlyPort: 0,
    // A guest under TCG is 10-30x slower than the host: a RunPodSandbox took 60 s with the host
    // loaded; upstream's 2 min default cancelled some.
    runtimeRequestTimeout: '10m',
    ...opts.extra,
  };
  return JSON.stringify(cfg, null, 2) + '\n';
}

/** containerd 2.x's config (version 3): the CRI plugin is split in images and runtime. */
function containerdConfig(env: NodeEnv, systemdCgroup: boolean): string {
  return `version = 3

[plugins.'io.containerd.cri.v1.images']
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = ${JSON.stringify(env.images.pause)}
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "/etc/containerd/certs.d"

[plugins.'io.containerd.cri.v1.runtime']
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "/etc/cni/net.d"
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      SystemdCgroup = ${systemdCgroup}
`;
}

/** Powers off the run's VM if it was started, and removes its directory. Idempotent. */
export async function stopNodeVm(): Promise<void> {
  if (!vmPromise) return;
  const p = vmPromise;
  vmPromise = undefined;
  let t: TestNodeVm | undefined;
  try {
    t = await p;
  } catch {
    // start failed: what it left is below
  }
  await undoExposure?.().catch(() => {});
  undoExposure = undefined;
  if (t) {
    await t.cri.close().catch(() => {});
    await t.core.deleteNode({ name: t.nodeName }).catch(() => {});
  }
  if (runningVm) await runningVm.stop({ keepDir: !!process.env.KUBELET_TS_KEEP_TEST_ENV });
  runningVm = undefined;
  await stopQemuIn(join(nodeVmBaseDir(), 'vm'));
  if (!process.env.KUBELET_TS_KEEP_TEST_ENV) await rm(nodeVmBaseDir(), { recursive: true, force: true });
}

/** VMs of earlier runs whose process died: qemu stopped, directory removed. */
async function sweepStale(): Promise<void> {
  for (const name of await readdir(tmpdir()).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length));
    if (!(pid > 0) || pid === process.pid || pidAlive(pid)) continue;
    const dir = join(tmpdir(), name);
    log(`sweeping stale node VM ${dir}`);
    if (existsSync(join(dir, 'vm'))) await stopQemuIn(join(dir, 'vm'), log);
    await rm(dir, { recursive: true, force: true });
  }
}
