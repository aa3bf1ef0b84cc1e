import { existsSync } from 'node:fs';
import { mkdir, open, readdir, readFile, rm, unlink, writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { mountsUnder, noLog, pidAlive, run, spawnDaemon, unmountUnder, waitFor, type LineLog } from './util.ts';

/**
 * A private containerd for tests and `npm run up`: its own config, root, state and socket
 * under one directory, so it never touches a system instance, with the CRI plugin set up
 * for this kind of machine (see /work/shared/NODE-ENV.md) and a bridge CNI network.
 *
 * Everything that would otherwise land in a machine-wide place is moved under `dir`:
 * runc state (`Root` of the runc runtime options), pod network namespaces
 * (`netns_mounts_under_state_dir`), host-local IPAM leases (`dataDir`) and the `opt` plugin.
 * What remains shared is the bridge interface (one per instance, see {@link allocateNetwork})
 * and libcni's result cache in /var/lib/cni/results, which stop() cleans for its sandboxes.
 */

/** The pod network written into the CNI conf dir. */
export interface BridgeNetwork {
  /** CNI network name. */
  name: string;
  /** Linux bridge interface (at most 15 characters). */
  bridge: string;
  /** IPv4 subnet for pods, e.g. `10.88.0.0/24`; the bridge gets its first address. */
  subnet: string;
}

/** Options for {@link startContainerd}. */
export interface ContainerdOptions {
  /** Directory for config, root, state, socket and log. */
  dir: string;
  /** The image containerd uses for pod sandboxes (`sandbox_image`). */
  sandboxImage: string;
  /** CNI config directory. Default `<dir>/cni/net.d`. */
  cniConfDir?: string;
  /** CNI plugin binaries. Default `/usr/lib/cni` (Debian package containernetworking-plugins). */
  cniBinDir?: string;
  /**
   * The default network to write into the conf dir (`10-<name>.conflist`), or `false` to
   * write none (another component provides the CNI config). Default: allocate one with
   * {@link allocateNetwork}.
   */
  network?: BridgeNetwork | false;
  /** Start from an empty root and state (after cleaning what a previous run left). Default true. */
  fresh?: boolean;
  /** containerd's log level. Default `info`. */
  logLevel?: string;
  log?: LineLog;
}

/** A running containerd. */
export interface Containerd {
  dir: string;
  rootDir: string;
  stateDir: string;
  /** Path of the gRPC socket. */
  socket: string;
  /** `unix://` + socket: the CRI endpoint. */
  endpoint: string;
  configPath: string;
  logPath: string;
  cniConfDir: string;
  cniBinDir: string;
  /** The network written into cniConfDir, if any. */
  network: BridgeNetwork | undefined;
  pid: number | undefined;
  /** Runs `ctr -a SOCK -n k8s.io ...args` and returns its stdout. */
  ctr(args: string[], opts?: { timeoutMs?: number }): Promise<string>;
  /** Stops containerd and removes everything its pods left on the host. Idempotent. */
  stop(): Promise<void>;
}

/** The containerd namespace of the CRI plugin. */
export const CRI_NAMESPACE = 'k8s.io';

/** `ctr -a SOCKET -n k8s.io ...args` of the containerd on that socket (its stdout); also for a containerd another process started. */
export function ctrAt(socket: string): Containerd['ctr'] {
  return async (args, o = {}) => (await run('ctr', ['-a', socket, '-n', CRI_NAMESPACE, ...args], { timeoutMs: o.timeoutMs ?? 60_000 })).stdout;
}

/** Where per-instance network slot locks live (pid inside; stale when the pid is gone). */
const SLOT_DIR = '/run/kubelet-ts/net-slots';
const MAX_SLOTS = 200;

/** A network slot taken by this process. */
export interface NetworkLease {
  network: BridgeNetwork;
  release(): Promise<void>;
}

async function interfaceExists(name: string): Promise<boolean> {
  return existsSync(`/sys/class/net/${name}`);
}

/**
 * Takes a free network slot N (lock file in /run/kubelet-ts/net-slots), giving bridge
 * `kts<N>` and subnet `10.88.<N>.0/24`, so test runs of several worktrees on one machine do
 * not share a bridge or addresses. Slot 0 (`kts0`, 10.88.0.0/24) is taken first. A stale
 * slot (its owner is dead) is reclaimed and its leftover bridge deleted.
 */
export async function allocateNetwork(owner: string, log: LineLog = noLog): Promise<NetworkLease> {
  await mkdir(SLOT_DIR, { recursive: true });
  for (let n = 0; n < MAX_SLOTS; n++) {
    const lockPath = join(SLOT_DIR, String(n));
    const network: BridgeNetwork = { name: `kubelet-ts-${n}`, bridge: `kts${n}`, subnet: `10.88.${n}.0/24` };
    for (let attempt = 0; attempt < 2; attempt++) {
      try {
        const fh = await open(lockPath, 'wx');
        await fh.writeFile(`${process.pid} ${owner}\n`);
        await fh.close();
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST') throw err;
        const content = await readFile(lockPath, 'utf8').catch(() => '');
        const pid = Number(content.split(' ')[0]);
        if (pid > 0 && (pid === process.pid || pidAlive(pid))) break; // taken
        // Stale: its owner died without stop(). Reclaim the slot once.
        await unlink(lockPath).catch(() => {});
        if (await interfaceExists(network.bridge)) {
          log(`network: removing leftover bridge ${network.bridge} of dead pid ${pid}`);
          await run('ip', ['link', 'del', network.bridge], { allowFailure: true });
        }
        continue;
      }
      // An interface of the same name that is not ours: leave it alone, try the next slot.
      if (await interfaceExists(network.bridge)) {
        await unlink(lockPath).catch(() => {});
        break;
      }
      const routes = await run('ip', ['-4', 'route', 'show', network.subnet], { allowFailure: true });
      if (routes.stdout.trim()) {
        await unlink(lockPath).catch(() => {});
        break;
      }
      let released = false;
      return {
        network,
        async release() {
          if (released) return;
          released = true;
          await unlink(lockPath).catch(() => {});
        },
      };
    }
  }
  throw new Error(`no free network slot in ${SLOT_DIR} (0..${MAX_SLOTS - 1})`);
}

/** Writes the default bridge + loopback network as `10-<name>.conflist` into `confDir`. */
export async function writeBridgeConflist(confDir: string, network: BridgeNetwork, ipamDataDir: string): Promise<string> {
  await mkdir(confDir, { recursive: true });
  const conflist = {
    cniVersion: '1.0.0',
    name: network.name,
    plugins: [
      {
        type: 'bridge',
        bridge: network.bridge,
        isGateway: true,
        ipMasq: false,
        hairpinMode: true,
        ipam: {
          type: 'host-local',
          ranges: [[{ subnet: network.subnet }]],
          routes: [{ dst: '0.0.0.0/0' }],
          dataDir: ipamDataDir,
        },
      },
      { type: 'loopback' },
    ],
  };
  const path = join(confDir, `10-${network.name}.conflist`);
  await writeFile(path, JSON.stringify(conflist, null, 2) + '\n');
  return path;
}

function tomlString(s: string): string {
  return JSON.stringify(s);
}

/** The containerd config (version 2) for a private instance. */
export function containerdConfig(p: {
  rootDir: string;
  stateDir: string;
  socket: string;
  sandboxImage: string;
  cniConfDir: string;
  cniBinDir: string;
  runcRoot: string;
  logLevel: string;
}): string {
  return `# Written by kubelet-ts tools/node-env/containerd.ts
version = 2
root = ${tomlString(p.rootDir)}
state = ${tomlString(p.stateDir)}
oom_score = 0
# Snapshotters that cannot work on this kind of machine; they would only log errors.
disabled_plugins = [
  "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.zfs",
  "io.containerd.snapshotter.v1.devmapper",
  "io.containerd.snapshotter.v1.aufs",
]

[grpc]
  address = ${tomlString(p.socket)}

[ttrpc]
  address = ${tomlString(p.socket + '.ttrpc')}

[debug]
  level = ${tomlString(p.logLevel)}

[metrics]
  address = ""

[plugins]
  [plugins."io.containerd.internal.v1.opt"]
    path = ${tomlString(join(p.rootDir, 'opt'))}

  [plugins."io.containerd.grpc.v1.cri"]
    sandbox_image = ${tomlString(p.sandboxImage)}
    # This machine refuses a negative oom_score_adj: without this every sandbox fails with
    # "runc create failed: ... can't get final child's PID from pipe: EOF".
    restrict_oom_score_adj = true
    # Pod network namespaces under our state dir instead of /var/run/netns.
    netns_mounts_under_state_dir = true
    disable_apparmor = true
    enable_selinux = false
    systemd_cgroup = false
    disable_tcp_service = true
    # A random loopback port for exec/attach/port-forward streaming, so instances coexist.
    stream_server_address = "127.0.0.1"
    stream_server_port = "0"
    stats_collect_period = 10
    max_container_log_line_size = 16384

    [plugins."io.containerd.grpc.v1.cri".cni]
      bin_dir = ${tomlString(p.cniBinDir)}
      conf_dir = ${tomlString(p.cniConfDir)}
      max_conf_num = 1

    [plugins."io.containerd.grpc.v1.cri".containerd]
      snapshotter = "overlayfs"
      default_runtime_name = "runc"

      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
        runtime_type = "io.containerd.runc.v2"

        [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
          # cgroupfs driver: there is no systemd.
          SystemdCgroup = false
          # runc state under our state dir, not /run/containerd/runc.
          Root = ${tomlString(p.runcRoot)}

    [plugins."io.containerd.grpc.v1.cri".registry]
      config_path = ""
`;
}

interface Paths {
  dir: string;
  rootDir: string;
  stateDir: string;
  socket: string;
  configPath: string;
  logPath: string;
  pidPath: string;
  runcRoot: string;
  ipamDir: string;
  criStateDir: string;
  networkPath: string;
}

function paths(dirIn: string): Paths {
  const dir = resolve(dirIn);
  const stateDir = join(dir, 'state');
  return {
    dir,
    rootDir: join(dir, 'root'),
    stateDir,
    socket: join(dir, 'containerd.sock'),
    configPath: join(dir, 'config.toml'),
    logPath: join(dir, 'containerd.log'),
    pidPath: join(dir, 'containerd.pid'),
    runcRoot: join(stateDir, 'runc'),
    ipamDir: join(dir, 'cni-ipam'),
    criStateDir: join(stateDir, 'io.containerd.grpc.v1.cri'),
    networkPath: join(dir, 'network.json'),
  };
}

/** Processes whose command line contains every one of `needles` (as separate arguments). */
async function findProcesses(needles: string[]): Promise<number[]> {
  const pids: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    try {
      const args = (await readFile(`/proc/${entry}/cmdline`, 'utf8')).split('\0');
      if (needles.every((n) => args.includes(n))) pids.push(pid);
    } catch {
      // gone
    }
  }
  return pids;
}

async function killAndWait(pids: number[], signal: NodeJS.Signals, timeoutMs: number): Promise<number[]> {
  for (const pid of pids) {
    try {
      process.kill(pid, signal);
    } catch {
      // gone
    }
  }
  const deadline = Date.now() + timeoutMs;
  let alive = pids.filter(pidAlive);
  while (alive.length && Date.now() < deadline) {
    await sleep(50);
    alive = alive.filter(pidAlive);
  }
  return alive;
}

/**
 * Removes what a containerd instance rooted at `dir` left on the host: its containers
 * (through runc with our runc root), its shims, its mounts, its pod network namespaces,
 * libcni's cached results for its sandboxes and the bridge of its network. Safe to run when
 * nothing is left, and when containerd is already gone. containerd itself must be stopped.
 */
export async function cleanupContainerdLeftovers(dirIn: string, log: LineLog = noLog, bridge?: string): Promise<void> {
  const p = paths(dirIn);
  const sandboxIds = new Set<string>();
  for (const d of [join(p.criStateDir, 'sandboxes'), join(p.rootDir, 'io.containerd.grpc.v1.cri', 'sandboxes')]) {
    for (const id of await readdir(d).catch(() => [] as string[])) sandboxIds.add(id);
  }

  // 1. Containers: kill and delete through runc (also removes their cgroups).
  const runcNsRoot = join(p.runcRoot, CRI_NAMESPACE);
  if (existsSync(runcNsRoot)) {
    const ids = await readdir(runcNsRoot).catch(() => [] as string[]);
    for (const id of ids) {
      const r = await run('runc', ['--root', runcNsRoot, 'delete', '--force', id], { allowFailure: true, timeoutMs: 15_000 });
      if (r.code === 0) log(`containerd cleanup: deleted leftover container ${id.slice(0, 12)}`);
    }
  }

  // 2. Shims of this instance: they carry `-address <our socket>`.
  const shims = await findProcesses(['-address', p.socket]);
  if (shims.length) {
    log(`containerd cleanup: killing ${shims.length} shim(s)`);
    const left = await killAndWait(shims, 'SIGKILL', 5000);
    if (left.length) log(`containerd cleanup: shims still alive: ${left.join(' ')}`);
  }

  // 3. Mounts under root and state (rootfs overlays, shm, pod netns), deepest first.
  await unmountUnder([p.rootDir, p.stateDir]);

  // Pod netns files are empty mount targets; once unmounted they can go.
  const netnsDir = join(p.criStateDir, 'netns');
  if (existsSync(netnsDir) && !(await mountsUnder([netnsDir])).length) {
    await rm(netnsDir, { recursive: true, force: true });
  }

  // 4. libcni's result cache is machine-wide: remove the entries of our sandboxes.
  const resultsDir = '/var/lib/cni/results';
  if (sandboxIds.size && existsSync(resultsDir)) {
    for (const f of await readdir(resultsDir).catch(() => [] as string[])) {
      for (const id of sandboxIds) {
        if (f.includes(`-${id}-`)) await rm(join(resultsDir, f), { force: true });
      }
    }
  }

  // 5. The bridge: its veths went with the network namespaces.
  const bridgeName = bridge ?? (await readNetwork(p.networkPath))?.bridge;
  if (bridgeName && existsSync(`/sys/class/net/${bridgeName}`)) {
    await run('ip', ['link', 'del', bridgeName], { allowFailure: true });
    log(`containerd cleanup: deleted bridge ${bridgeName}`);
  }
}

async function readNetwork(path: string): Promise<BridgeNetwork | undefined> {
  try {
    return JSON.parse(await readFile(path, 'utf8')) as BridgeNetwork;
  } catch {
    return undefined;
  }
}

/** Stops a containerd left running by a previous run in `dir` (its pid file), then cleans up. */
export async function stopStaleContainerd(dirIn: string, log: LineLog = noLog): Promise<void> {
  const p = paths(dirIn);
  const pid = Number((await readFile(p.pidPath, 'utf8').catch(() => '')).trim());
  if (pid > 0 && pidAlive(pid)) {
    const cmd = await readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '');
    if (cmd.split('\0').includes(p.socket)) {
      log(`containerd: stopping stale instance pid ${pid}`);
      const left = await killAndWait([pid], 'SIGTERM', 5000);
      if (left.length) await killAndWait(left, 'SIGKILL', 2000);
    }
  }
  await cleanupContainerdLeftovers(dirIn, log);
  await rm(p.pidPath, { force: true });
}

/** Starts a private containerd and waits until its CRI plugin answers. */
export async function startContainerd(opts: ContainerdOptions): Promise<Containerd> {
  const log = opts.log ?? noLog;
  const p = paths(opts.dir);
  if (Buffer.byteLength(p.socket) > 100) {
    throw new Error(`containerd socket path too long for a unix socket (${p.socket}); use a shorter base dir`);
  }
  const cniConfDir = resolve(opts.cniConfDir ?? join(p.dir, 'cni', 'net.d'));
  const cniBinDir = opts.cniBinDir ?? '/usr/lib/cni';
  const logLevel = opts.logLevel ?? 'info';
  await mkdir(p.dir, { recursive: true });

  // Whatever a crashed previous run left in this dir goes first.
  await stopStaleContainerd(p.dir, log);
  if (opts.fresh ?? true) {
    await rm(p.rootDir, { recursive: true, force: true });
    await rm(p.stateDir, { recursive: true, force: true });
    await rm(p.ipamDir, { recursive: true, force: true });
  }
  await rm(p.socket, { force: true });
  await rm(p.socket + '.ttrpc', { force: true });
  await mkdir(p.rootDir, { recursive: true });
  await mkdir(p.stateDir, { recursive: true });
  await mkdir(cniConfDir, { recursive: true });

  let lease: NetworkLease | undefined;
  let network: BridgeNetwork | undefined;
  if (opts.network === undefined) {
    lease = await allocateNetwork(p.dir, log);
    network = lease.network;
  } else if (opts.network) {
    network = opts.network;
  }
  if (network) {
    // A conflist of an earlier start in this dir (another slot) would sort first and win
    // (containerd loads one: max_conf_num = 1): only this start's network may be there.
    for (const f of await readdir(cniConfDir)) {
      if (/^10-kubelet-ts-\d+\.conflist$/.test(f)) await rm(join(cniConfDir, f), { force: true });
    }
    await writeBridgeConflist(cniConfDir, network, p.ipamDir);
    await writeFile(p.networkPath, JSON.stringify(network));
    log(`containerd: CNI network ${network.name}: bridge ${network.bridge}, subnet ${network.subnet} in ${cniConfDir}`);
  } else {
    await rm(p.networkPath, { force: true });
  }

  await writeFile(
    p.configPath,
    containerdConfig({
      rootDir: p.rootDir,
      stateDir: p.stateDir,
      socket: p.socket,
      sandboxImage: opts.sandboxImage,
      cniConfDir,
      cniBinDir,
      runcRoot: p.runcRoot,
      logLevel,
    }),
  );

  const started = Date.now();
  const daemon = await spawnDaemon('containerd', ['--config', p.configPath, '--root', p.rootDir, '--state', p.stateDir, '--address', p.socket], p.logPath, p.pidPath);

  const ctr = ctrAt(p.socket);

  let stopping: Promise<void> | undefined;
  const stop = (): Promise<void> => {
    stopping ??= (async () => {
      await daemon.stop();
      await cleanupContainerdLeftovers(p.dir, log, network?.bridge);
      await rm(p.socket, { force: true });
      await rm(p.socket + '.ttrpc', { force: true });
      await lease?.release();
      log('containerd: stopped');
    })();
    return stopping;
  };

  const logTail = async (): Promise<string> => {
    const text = await readFile(p.logPath, 'utf8').catch(() => '');
    return text.split('\n').slice(-20).join('\n');
  };

  try {
    await waitFor(
      `containerd socket ${p.socket}`,
      () => {
        const exit = daemon.exitInfo();
        if (exit !== undefined) throw new Error(`containerd exited (${exit})`);
        return existsSync(p.socket);
      },
      15_000,
      25,
    );
    // The CRI plugin must have loaded: without it there is no kubelet runtime.
    let plugins = '';
    await waitFor('containerd plugins', async () => {
      plugins = await ctr(['plugins', 'ls'], { timeoutMs: 5000 });
      return true;
    }, 10_000, 50);
    const cri = plugins.split('\n').find((l) => /\bio\.containerd\.grpc\.v1\s+cri\b/.test(l));
    if (!cri || !/\bok\s*$/.test(cri.trim())) {
      throw new Error(`containerd's CRI plugin did not load: ${cri?.trim() ?? 'missing'}`);
    }
  } catch (err) {
    await stop();
    throw new Error(`${(err as Error).message}\n--- ${p.logPath} (last lines) ---\n${await logTail()}`);
  }
  log(`containerd: ready on ${p.socket} in ${Date.now() - started} ms (pid ${daemon.pid}, log ${p.logPath})`);

  return {
    dir: p.dir,
    rootDir: p.rootDir,
    stateDir: p.stateDir,
    socket: p.socket,
    endpoint: `unix://${p.socket}`,
    configPath: p.configPath,
    logPath: p.logPath,
    cniConfDir,
    cniBinDir,
    network,
    pid: daemon.pid,
    ctr,
    stop,
  };
}
