import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { startNodeEnv, type NodeEnv } from '../../tools/node-env/index.ts';
import { pidAlive, run } from '../../tools/node-env/util.ts';

/** A bridge and a subnet of one test process: not tools/node-env's kts<N> / 10.88.<N>.0/24. */
export interface CniTestNetwork {
  bridge: string;
  subnet: string;
  /** The subnet's first three octets and a dot (`10.77.3.`): pod IPs start with it. */
  prefix: string;
  release(): Promise<void>;
}

/** Takes a free bridge/subnet slot, locked by this process's pid (a dead holder's slot is taken over, its bridge removed). */
export async function allocateCniTestNetwork(): Promise<CniTestNetwork> {
  const lockDir = '/run/kubelet-ts/cni-test-slots';
  await fs.mkdir(lockDir, { recursive: true });
  for (let n = 0; n < 200; n++) {
    const lock = path.join(lockDir, String(n));
    try {
      const pid = Number((await fs.readFile(lock, 'utf8')).trim());
      if (pid > 0 && pidAlive(pid)) continue;
      await fs.rm(lock, { force: true });
    } catch {
      // free
    }
    try {
      await fs.writeFile(lock, String(process.pid), { flag: 'wx' });
    } catch {
      continue;
    }
    const bridge = `ktscni${n}`;
    const subnet = `10.77.${n}.0/24`;
    const routes = await run('ip', ['-4', 'route', 'show', subnet], { allowFailure: true });
    if (existsSync(`/sys/class/net/${bridge}`) || routes.stdout.trim()) {
      // Leftover of a dead run: remove its bridge, then use the slot.
      await run('ip', ['link', 'del', bridge], { allowFailure: true });
    }
    return { bridge, subnet, prefix: `10.77.${n}.`, release: () => fs.rm(lock, { force: true }) };
  }
  throw new Error(`no free CNI test slot in ${lockDir}`);
}

/** Where a cni-exec test keeps its network configs, plugin links, leases and socket. */
export interface CniExecPaths {
  /** The chain cni-exec runs (its `confDir`). */
  confDir: string;
  /** containerd's conf dir: cni-exec writes its delegate here. */
  runtimeConfDir: string;
  /** containerd's bin dir: links to the Debian plugins, and cni-exec's shim. */
  runtimeBinDir: string;
  /** host-local's data dir: one file per leased IP under `<ipamDir>/<network>`. */
  ipamDir: string;
  socket: string;
}

/** A containerd of the test's own whose CNI is cni-exec's delegate, and the chain cni-exec runs. */
export interface CniExecEnv {
  env: NodeEnv;
  net: CniTestNetwork;
  paths: CniExecPaths;
  /** cni-exec's options for this environment (plus `extra`). */
  cniExecOptions(extra?: Record<string, unknown>): Record<string, unknown>;
  /** The IPs host-local holds now. */
  leasedIPs(): Promise<string[]>;
  /** Stops containerd (removing its pods) and the registry, deletes the bridge and frees the slot. */
  stop(): Promise<void>;
}

/**
 * Starts, under `dir`, a node environment for cni-exec as an operator wires it: containerd's CNI
 * conf dir empty (cni-exec writes the delegate there at start), its bin dir linking the Debian
 * plugins, and `<confDir>/10-<networkName>.conflist` holding `plugins(net, ipamDir)`: the chain
 * the kubelet runs, on a bridge and subnet of this process.
 */
export async function startCniExecEnv(dir: string, networkName: string, plugins: (net: CniTestNetwork, ipamDir: string) => object[]): Promise<CniExecEnv> {
  const net = await allocateCniTestNetwork();
  try {
    const paths: CniExecPaths = {
      confDir: path.join(dir, 'net.d'),
      runtimeConfDir: path.join(dir, 'runtime-net.d'),
      runtimeBinDir: path.join(dir, 'runtime-bin'),
      ipamDir: path.join(dir, 'ipam'),
      socket: path.join(dir, 'cni.sock'),
    };
    // containerd's bin dir: links to the Debian plugins (containerd runs loopback itself) and, once the kubelet starts, the shim.
    await fs.mkdir(paths.runtimeBinDir, { recursive: true });
    for (const f of await fs.readdir('/usr/lib/cni')) await fs.symlink(path.join('/usr/lib/cni', f), path.join(paths.runtimeBinDir, f));
    await fs.mkdir(paths.confDir, { recursive: true });
    await fs.writeFile(path.join(paths.confDir, `10-${networkName}.conflist`), JSON.stringify({ cniVersion: '1.0.0', name: networkName, plugins: plugins(net, paths.ipamDir) }, null, 2));
    const log = (line: string) => { if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[cni-env] ${line}\n`); };
    const env = await startNodeEnv({ baseDir: path.join(dir, 'env'), network: false, cniConfDir: paths.runtimeConfDir, cniBinDir: paths.runtimeBinDir, log, removeOnStop: true });
    return {
      env,
      net,
      paths,
      cniExecOptions: (extra = {}) => ({ confDir: paths.confDir, binDirs: ['/usr/lib/cni'], runtimeConfDir: paths.runtimeConfDir, runtimeBinDir: paths.runtimeBinDir, socketPath: paths.socket, ...extra }),
      leasedIPs: async () => (await fs.readdir(path.join(paths.ipamDir, networkName)).catch(() => [] as string[])).filter((f) => /^\d+\.\d+\.\d+\.\d+$/.test(f)),
      async stop() {
        await env.stop();
        await run('ip', ['link', 'del', net.bridge], { allowFailure: true });
        await net.release();
      },
    };
  } catch (err) {
    await net.release();
    throw err;
  }
}
