import { existsSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { freePort, run } from '../../tools/node-env/util.ts';
import { SHARED_DIR, controlPlaneUnavailableReason } from '../../test/support/control-plane.ts';
import { procCpuSeconds } from '../lib.ts';
import { H2ApiClient } from './h2-client.ts';
import { readKubeconfigTls } from './kubeconfig-tls.ts';

/**
 * The control plane an API benchmark runs against: etcd, kube-apiserver, controller-manager
 * and scheduler v1.28.7 from ../shared/k8s/control-plane.sh, in the run's own directory on
 * free ports (never the script's defaults), stopped with `down --wipe` when the run ends. A
 * caller may pass one already running instead (the test suite's shared control plane): any
 * object with its directory, server, admin kubeconfig and node kubeconfigs.
 */

export const CONTROL_PLANE_SCRIPT = path.join(SHARED_DIR, 'k8s', 'control-plane.sh');
/** `up` from an empty directory unpacks the binaries and makes the PKI; its README allows ~200 s on a slow machine. */
const UP_TIMEOUT_MS = 240_000;

export interface ClusterLike {
  /** The control plane's directory: `bin/kubelet` (the upstream kubelet) is unpacked there by `up`. */
  dir: string;
  server: string;
  adminKubeconfig: string;
  /** A kubeconfig for `system:node:<name>` (group system:nodes). */
  nodeKubeconfig(nodeName: string): Promise<string>;
}

export interface BenchCluster extends ClusterLike {
  /** An HTTP/2 client with the admin identity (system:masters). */
  admin: H2ApiClient;
  /** The upstream kubelet binary (v1.28.7), or undefined when the directory has none. */
  kubeletBinary: string | undefined;
  /** CPU seconds the control plane's processes (etcd, apiserver, controller-manager, scheduler) used so far; undefined if unreadable. */
  cpuSeconds(): Promise<number | undefined>;
}

const COMPONENTS = ['etcd', 'kube-apiserver', 'kube-controller-manager', 'kube-scheduler'];

/** Why no control plane can start here, or undefined. */
export const clusterUnavailableReason = controlPlaneUnavailableReason;

/** Starts a control plane in `dir`; `defer` registers its `down --wipe`. */
export async function startCluster(dir: string, defer: (what: string, fn: () => Promise<unknown>) => void, log: (line: string) => void): Promise<BenchCluster> {
  const reason = clusterUnavailableReason();
  if (reason) throw new Error(`no control plane: ${reason}`);
  const ports = { API_PORT: await freePort(), ETCD_PORT: await freePort(), ETCD_PEER_PORT: await freePort(), KCM_PORT: await freePort(), SCHED_PORT: await freePort() };
  log(`control plane: up in ${dir} (apiserver port ${ports.API_PORT}) ...`);
  defer('control plane down', () => run('bash', [CONTROL_PLANE_SCRIPT, 'down', dir, '--wipe'], { timeoutMs: 90_000, allowFailure: true }));
  const t0 = performance.now();
  const out = await run('bash', [CONTROL_PLANE_SCRIPT, 'up', dir], { env: Object.fromEntries(Object.entries(ports).map(([k, v]) => [k, String(v)])), timeoutMs: UP_TIMEOUT_MS });
  log(`control plane: up in ${Math.round(performance.now() - t0)} ms`);
  const server = /server=(\S+)/.exec(out.stdout)?.[1] ?? `https://127.0.0.1:${ports.API_PORT}`;
  const adminKubeconfig = /kubeconfig=(\S+)/.exec(out.stdout)?.[1] ?? path.join(dir, 'admin.kubeconfig');
  const written = new Map<string, Promise<string>>();
  return withAdmin({
    dir,
    server,
    adminKubeconfig,
    nodeKubeconfig(nodeName) {
      let p = written.get(nodeName);
      if (!p) {
        const file = path.join(dir, 'nodes', `${nodeName}.kubeconfig`);
        p = run('bash', [CONTROL_PLANE_SCRIPT, 'node-kubeconfig', dir, nodeName, file], { timeoutMs: 60_000 }).then(() => file);
        written.set(nodeName, p);
      }
      return p;
    },
  }, defer);
}

/** A running control plane (not ours to stop) with the admin client added. */
export function withAdmin(cluster: ClusterLike, defer: (what: string, fn: () => Promise<unknown>) => void): BenchCluster {
  const admin = new H2ApiClient(readKubeconfigTls(cluster.adminKubeconfig));
  defer('admin client', async () => admin.close());
  const bin = path.join(cluster.dir, 'bin', 'kubelet');
  // On a 2-CPU machine the control plane shares the CPUs with the node: what it uses during a
  // round is CPU the raw side never has to give up.
  const cpuSeconds = async () => {
    let sum = 0;
    for (const c of COMPONENTS) {
      const pid = Number((await readFile(path.join(cluster.dir, 'run', `${c}.pid`), 'utf8').catch(() => '')).trim());
      const s = pid > 0 ? await procCpuSeconds(pid) : undefined;
      if (s === undefined) return undefined;
      sum += s;
    }
    return sum;
  };
  return { ...cluster, nodeKubeconfig: (n) => cluster.nodeKubeconfig(n), admin, kubeletBinary: existsSync(bin) ? bin : undefined, cpuSeconds };
}
