import os from 'node:os';
import fs from 'node:fs/promises';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { NodeEnv } from '../../tools/node-env/index.ts';
import { run as runCmd } from '../../tools/node-env/util.ts';
import { DEFAULT_RESULTS_DIR } from '../lib.ts';
import { startKubeletProcess } from '../../test/support/kubelet-process.ts';
import type { BenchRun } from './bench-run.ts';
import type { BenchCluster } from './cluster.ts';
import type { H2ApiClient } from './h2-client.ts';
import { startUpstreamNode, upstreamUnavailableReason } from './upstream-node.ts';

/**
 * The two kinds of node an API benchmark runs, behind one interface: kubelet-ts as its own
 * process (bin/kubelet-ts.mjs with a JSON config, as an operator runs it: the compiled build
 * when `npm run build` made a fresh one) on the environment's containerd, and the upstream
 * kubelet in its own mount namespace with its own containerd (upstream-node.ts). Each joins
 * the cluster with its own node identity; `withNode` starts one, waits until its Node is Ready,
 * and afterwards stops it and deletes its Node and Lease.
 */

export type NodeKind = 'kubelet-ts' | 'upstream';

export interface BenchNode {
  kind: NodeKind;
  name: string;
  /** The kubelet's pid (CPU and RSS from /proc). */
  pid: number;
  /** The pid of the containerd it uses. */
  containerdPid: number | undefined;
  /** What runs: kubelet-ts 'compiled' or 'sources'; upstream 'v1.28.7'. */
  code: string;
  logFile: string;
  /** The kubelet's read-only port on 127.0.0.1 (/pods, /metrics). */
  readOnlyPort: number;
  /** kubelet-ts: its local socket (`<rootDir>/kubelet-ts.sock`), which serves its debugging views (/debug/pods/.../timeline). */
  localSocket: string | undefined;
}

export interface NodeContext {
  run: BenchRun;
  env: NodeEnv;
  cluster: BenchCluster;
  log: (line: string) => void;
  maxPods: number;
}

const READY_TIMEOUT_MS = 90_000;

/** The host's address on its default route (the upstream kubelet refuses a loopback node IP for its Node). */
export async function hostNodeIP(): Promise<string> {
  const route = await runCmd('ip', ['-4', '-o', 'route', 'show', 'default'], { allowFailure: true, timeoutMs: 5000 });
  const dev = /\bdev (\S+)/.exec(route.stdout)?.[1];
  const candidates = [...(dev ? [dev] : []), ...Object.keys(os.networkInterfaces())];
  for (const name of candidates) {
    const a = os.networkInterfaces()[name]?.find((x) => x.family === 'IPv4' && !x.internal);
    if (a) return a.address;
  }
  throw new Error('no non-loopback IPv4 address for the upstream kubelet\'s --node-ip');
}

/** Why this kind of node cannot run here, or undefined. */
export function nodeKindUnavailable(kind: NodeKind, cluster: BenchCluster): string | undefined {
  return kind === 'upstream' ? upstreamUnavailableReason(cluster.kubeletBinary) : undefined;
}

/** Polls the Node (setup, not measured) until its Ready condition is True. */
export async function waitNodeReady(admin: H2ApiClient, name: string, timeoutMs = READY_TIMEOUT_MS): Promise<void> {
  const deadline = performance.now() + timeoutMs;
  let last = 'not registered';
  while (performance.now() < deadline) {
    const res = await admin.request<{ status?: { conditions?: Array<{ type: string; status: string; reason?: string }> } }>('GET', `/api/v1/nodes/${name}`, undefined, { allow: [404] });
    const ready = res.status === 200 ? res.body.status?.conditions?.find((c) => c.type === 'Ready') : undefined;
    if (ready?.status === 'True') return;
    if (ready) last = `Ready ${ready.status} (${ready.reason ?? ''})`;
    await sleep(250);
  }
  throw new Error(`Node ${name}: not Ready within ${timeoutMs} ms (${last})`);
}

export async function deleteNodeObjects(admin: H2ApiClient, name: string): Promise<void> {
  await admin.request('DELETE', `/api/v1/nodes/${name}`, undefined, { allow: [404] });
  await admin.request('DELETE', `/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/${name}`, undefined, { allow: [404] });
}

/**
 * Runs `fn` with a node of `kind` named `name` whose Node is Ready; `kubeconfig` defaults to
 * the node's own (a counting proxy passes its redirected one). The node is stopped and its
 * Node and Lease deleted afterwards, also when `fn` fails.
 */
export async function withNode<T>(kind: NodeKind, ctx: NodeContext, opts: { name: string; kubeconfig?: string }, fn: (node: BenchNode) => Promise<T>): Promise<T> {
  const { run, env, cluster, log } = ctx;
  const kubeconfig = opts.kubeconfig ?? (await cluster.nodeKubeconfig(opts.name));
  const mark = run.mark();
  let node: BenchNode;
  if (kind === 'kubelet-ts') {
    const kp = await startKubeletProcess(env, {
      dir: await run.subdir('kts'),
      maxPods: ctx.maxPods,
      cgroupPrefix: 'kts-bench-api',
      config: { nodeName: opts.name, nodeIP: '127.0.0.1', kubeconfig },
    });
    run.defer(`kubelet-ts ${opts.name}`, () => kp.stop());
    node = { kind, name: opts.name, pid: kp.pid, containerdPid: env.containerd.pid, code: kp.code, logFile: kp.logFile, readOnlyPort: kp.port, localSocket: path.join(kp.dir, 'root', 'kubelet-ts.sock') };
  } else {
    const up = await startUpstreamNode({
      dir: await run.subdir('upstream'),
      kubeletBinary: cluster.kubeletBinary!,
      kubeconfig,
      nodeName: opts.name,
      nodeIP: await hostNodeIP(),
      sandboxImage: env.images.pause,
      maxPods: ctx.maxPods,
      log,
    });
    run.defer(`upstream node ${opts.name}`, () => up.stop());
    node = { kind, name: opts.name, pid: up.pid, containerdPid: up.containerdPid, code: 'v1.28.7', logFile: up.logFile, readOnlyPort: up.readOnlyPort, localSocket: undefined };
  }
  run.defer(`Node ${opts.name}`, () => deleteNodeObjects(cluster.admin, opts.name));
  try {
    log(`${kind}: node ${opts.name} started (pid ${node.pid}, ${node.code}); waiting for Ready`);
    await waitNodeReady(cluster.admin, opts.name);
    return await fn(node);
  } catch (err) {
    // The run's directory goes with the run: keep the failed node's log where it can be read.
    const kept = path.join(DEFAULT_RESULTS_DIR, `failed-${opts.name}-${new Date().toISOString().replace(/[:.]/g, '-')}.log`);
    await fs.mkdir(DEFAULT_RESULTS_DIR, { recursive: true }).then(() => fs.copyFile(node.logFile, kept)).then(
      () => log(`${kind}: the run failed; the node's log is kept in ${kept}`),
      () => {},
    );
    throw err;
  } finally {
    // Stop the node, then delete its Node and Lease (a running kubelet would register again).
    await run.unwind(mark);
  }
}
