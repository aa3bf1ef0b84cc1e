import { existsSync } from 'node:fs';
import { mkdir, rm } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { buildTestImages, type BuiltImage } from './images.ts';
import { startRegistry, type Registry } from './registry.ts';
import { startContainerd, type BridgeNetwork, type Containerd } from './containerd.ts';
import { noLog, run, which, type LineLog } from './util.ts';

export { buildImage, buildTestImages, BUSYBOX_IMAGE, PAUSE_IMAGE, type BuiltImage, type ImageSpec } from './images.ts';
export { startRegistry, stopStaleRegistry, pushImage, type Registry, type RegistryOptions } from './registry.ts';
export {
  startContainerd,
  allocateNetwork,
  writeBridgeConflist,
  cleanupContainerdLeftovers,
  stopStaleContainerd,
  CRI_NAMESPACE,
  type BridgeNetwork,
  type Containerd,
  type ContainerdOptions,
} from './containerd.ts';

/**
 * The real node environment used by integration tests, benchmarks and `npm run up`: a
 * loopback registry holding busybox-based images and a private containerd whose CRI
 * plugin pulls from it, with a bridge CNI network. Needs root and the Debian packages
 * listed in {@link REQUIRED_BINARIES}.
 */

/** Options for {@link startNodeEnv}. */
export interface NodeEnvOptions {
  /** Everything lives under this directory (keep it short: it holds a unix socket). */
  baseDir: string;
  /** Registry port on 127.0.0.1. Default: a free port. */
  registryPort?: number;
  log?: (line: string) => void;
  /** Image tarball cache. Default `$KUBELET_TS_IMAGE_CACHE` or `<baseDir>/image-cache`. */
  imageCacheDir?: string;
  /** CNI conf dir handed to containerd. Default `<baseDir>/containerd/cni/net.d`. */
  cniConfDir?: string;
  /** CNI bin dir handed to containerd (`bin_dir`). Default `/usr/lib/cni`. */
  cniBinDir?: string;
  /** The bridge network to write, `false` for none. Default: a free slot (`kts0`, 10.88.0.0/24 first). */
  network?: BridgeNetwork | false;
  /** Remove baseDir on stop(). Default false. */
  removeOnStop?: boolean;
}

/** A running node environment. */
export interface NodeEnv {
  baseDir: string;
  /** `unix:///…/containerd.sock`: the kubelet's `--container-runtime-endpoint`. */
  containerdEndpoint: string;
  /** Path of containerd's socket. */
  containerdSocket: string;
  /** `127.0.0.1:PORT`. */
  registry: string;
  /** Full references in our registry. */
  images: { busybox: string; pause: string };
  /** containerd's CNI conf dir. */
  cniConfDir: string;
  /** The bridge network in cniConfDir, if one was written. */
  network: BridgeNetwork | undefined;
  /** Log files of the components. */
  logs: { containerd: string; registry: string };
  /** The underlying handles, for tests that need more. */
  containerd: Containerd;
  registryServer: Registry;
  /** Built image tarballs (for `ctr images import`, or pushing under other names). */
  imageTarballs: { busybox: BuiltImage; pause: BuiltImage };
  /** Where image tarballs are built (a test building images of its own puts them here too). */
  imageCacheDir: string;
  /** Runs `ctr -a SOCK -n k8s.io ...args`, returns stdout; rejects with stderr on failure. */
  ctr(args: string[]): Promise<string>;
  /** Stops containerd (removing whatever pods are left) and the registry. Idempotent. */
  stop(): Promise<void>;
}

/** Binaries the environment runs, with the Debian package that provides each. */
export const REQUIRED_BINARIES: ReadonlyArray<{ bin: string; pkg: string }> = [
  { bin: 'containerd', pkg: 'containerd' },
  { bin: 'containerd-shim-runc-v2', pkg: 'containerd' },
  { bin: 'ctr', pkg: 'containerd' },
  { bin: 'runc', pkg: 'runc' },
  { bin: 'docker-registry', pkg: 'docker-registry' },
  { bin: 'skopeo', pkg: 'skopeo' },
  { bin: 'busybox', pkg: 'busybox-static' },
  { bin: 'iptables', pkg: 'iptables' },
  { bin: 'ip', pkg: 'iproute2' },
  { bin: 'tar', pkg: 'tar' },
  { bin: 'umount', pkg: 'mount' },
];

/** The Debian packages to `apt-get install` for the node environment. */
export const DEBIAN_PACKAGES = ['containerd', 'runc', 'containernetworking-plugins', 'docker-registry', 'skopeo', 'busybox-static', 'iptables', 'iproute2'];

/** Why the node environment cannot start here, or undefined if it can. */
export function nodeEnvUnavailableReason(): string | undefined {
  if (process.platform !== 'linux') return `the node environment needs Linux (this is ${process.platform})`;
  if (typeof process.getuid === 'function' && process.getuid() !== 0) {
    return 'the node environment needs root (containerd, mounts, network namespaces): run as root';
  }
  const missing = REQUIRED_BINARIES.filter(({ bin }) => !which(bin));
  if (missing.length) {
    return missing
      .map(({ bin, pkg }) => `${bin} not found: install the Debian package ${pkg} (the README's first command does this)`)
      .join('\n');
  }
  for (const plugin of ['bridge', 'host-local', 'loopback']) {
    if (!existsSync(join('/usr/lib/cni', plugin))) {
      return `CNI plugin /usr/lib/cni/${plugin} not found: install the Debian package containernetworking-plugins (the README's first command does this)`;
    }
  }
  if (!existsSync('/bin/busybox')) {
    return '/bin/busybox not found: install the Debian package busybox-static (the README\'s first command does this)';
  }
  return undefined;
}

/** Throws a clear error if not root or a needed binary is missing. */
export function requireRoot(): void {
  const reason = nodeEnvUnavailableReason();
  if (reason) throw new Error(reason);
}

/** Builds the images, starts the registry, pushes the images and starts containerd. */
export async function startNodeEnv(opts: NodeEnvOptions): Promise<NodeEnv> {
  requireRoot();
  const log: LineLog = opts.log ?? noLog;
  const baseDir = resolve(opts.baseDir);
  await mkdir(baseDir, { recursive: true });
  const started = Date.now();
  // In the environment's own directory (gone with it): a build takes ~0.1 s, nothing worth
  // keeping in /tmp between runs.
  const imageCacheDir = opts.imageCacheDir ?? process.env.KUBELET_TS_IMAGE_CACHE ?? join(baseDir, 'image-cache');

  const built = await buildTestImages({ cacheDir: imageCacheDir, log });
  const registryServer = await startRegistry({
    dir: join(baseDir, 'registry'),
    ...(opts.registryPort !== undefined ? { port: opts.registryPort } : {}),
    log,
  });
  let containerd: Containerd | undefined;
  try {
    const images = {
      busybox: `${registryServer.host}/${built.busybox.name}`,
      pause: `${registryServer.host}/${built.pause.name}`,
    };
    await Promise.all([
      registryServer.pushImage(built.busybox.tarPath, images.busybox),
      registryServer.pushImage(built.pause.tarPath, images.pause),
    ]);
    containerd = await startContainerd({
      dir: join(baseDir, 'containerd'),
      sandboxImage: images.pause,
      ...(opts.cniConfDir !== undefined ? { cniConfDir: opts.cniConfDir } : {}),
      ...(opts.cniBinDir !== undefined ? { cniBinDir: opts.cniBinDir } : {}),
      ...(opts.network !== undefined ? { network: opts.network } : {}),
      log,
    });
    const cd = containerd;
    let stopping: Promise<void> | undefined;
    const env: NodeEnv = {
      baseDir,
      containerdEndpoint: cd.endpoint,
      containerdSocket: cd.socket,
      registry: registryServer.host,
      images,
      cniConfDir: cd.cniConfDir,
      network: cd.network,
      logs: { containerd: cd.logPath, registry: registryServer.logPath },
      containerd: cd,
      registryServer,
      imageTarballs: built,
      imageCacheDir,
      ctr: (args) => cd.ctr(args),
      stop() {
        stopping ??= (async () => {
          const t = Date.now();
          await removeAllPods(cd, log);
          await cd.stop();
          await registryServer.stop();
          if (opts.removeOnStop) await rm(baseDir, { recursive: true, force: true });
          log(`node env: stopped in ${Date.now() - t} ms`);
        })();
        return stopping;
      },
    };
    log(`node env: ready in ${Date.now() - started} ms (registry ${registryServer.host}, ${cd.endpoint})`);
    return env;
  } catch (err) {
    await containerd?.stop().catch(() => {});
    await registryServer.stop().catch(() => {});
    throw err;
  }
}

/**
 * Kills and removes every task and container in the k8s.io namespace while containerd is
 * still up (pods that tests leaked). What this misses, stop() removes from the host.
 */
async function removeAllPods(cd: Containerd, log: LineLog): Promise<void> {
  try {
    const ids = (await cd.ctr(['containers', 'ls', '-q'], { timeoutMs: 10_000 })).split('\n').filter(Boolean);
    if (!ids.length) return;
    log(`node env: removing ${ids.length} leftover container(s)`);
    for (const id of ids) {
      await run('ctr', ['-a', cd.socket, '-n', 'k8s.io', 'tasks', 'kill', '-a', '-s', 'SIGKILL', id], { allowFailure: true, timeoutMs: 10_000 });
    }
    for (const id of ids) {
      await run('ctr', ['-a', cd.socket, '-n', 'k8s.io', 'tasks', 'rm', '-f', id], { allowFailure: true, timeoutMs: 10_000 });
      await run('ctr', ['-a', cd.socket, '-n', 'k8s.io', 'containers', 'rm', id], { allowFailure: true, timeoutMs: 10_000 });
    }
  } catch (err) {
    log(`node env: could not list containers: ${(err as Error).message}`);
  }
}
