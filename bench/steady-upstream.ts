import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../tools/node-env/index.ts';
import { which } from '../tools/node-env/util.ts';
import { startUpstreamNode, unpackUpstreamKubelet } from './api/upstream-node.ts';
import { benchPodManifest, podRunning, round } from './lib.ts';

/**
 * The upstream side of `bench:steady`: the upstream kubelet v1.28.7 standalone (no kubeconfig,
 * the same N pods as static pods from its own manifest directory), isolated as the API
 * benchmarks run it (bench/api/upstream-node.ts: a private mount namespace, its own root dir
 * and a containerd of its own — the same binary and config as the environment's, fresh: it
 * must see the kubelet's private /var/log, and a kubelet removes runtime pods it does not
 * know). `--node-ip 127.0.0.1`, cgroupfs driver as NODE-ENV.md says. The caller measures the
 * window from /proc exactly as for kubelet-ts.
 */

export interface UpstreamSteadyNode {
  pid: number;
  containerdPid: number | undefined;
  logFile: string;
  /** ms until all N pods ran (manifests written at once), seen through its /pods every 500 ms. */
  startAllMs: number;
  runningCount(): Promise<number>;
  /** Its /metrics (read-only port), undefined when it could not be read. */
  metrics(): Promise<string | undefined>;
  stop(): Promise<void>;
}

export async function startUpstreamSteady(env: NodeEnv, n: number, ns: string, log: (line: string) => void): Promise<UpstreamSteadyNode> {
  if (!which('unshare')) throw new Error('steady: upstream side: unshare not found (Debian package util-linux)');
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ktsb-up-'));
  const unpacked = await unpackUpstreamKubelet(dir);
  if (!unpacked.binary) {
    await rm(dir, { recursive: true, force: true });
    throw new Error(`steady: upstream side: ${unpacked.reason}`);
  }
  const manifests = path.join(dir, 'manifests');
  await mkdir(manifests);
  const nodeName = `bench-steady-up-${process.pid}`;
  const up = await startUpstreamNode({
    dir,
    kubeletBinary: unpacked.binary,
    staticPodPath: manifests,
    nodeName,
    nodeIP: '127.0.0.1',
    sandboxImage: env.images.pause,
    maxPods: Math.max(110, n),
    log,
  }).catch(async (err: unknown) => {
    await rm(dir, { recursive: true, force: true });
    throw err;
  });
  const stop = async () => {
    await up.stop();
    await rm(dir, { recursive: true, force: true });
  };
  const pods = async (): Promise<V1Pod[]> => {
    const res = await fetch(`http://127.0.0.1:${up.readOnlyPort}/pods`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
    if (!res?.ok) return [];
    return ((await res.json()) as { items?: V1Pod[] }).items ?? [];
  };
  const runningCount = async () => (await pods()).filter((p) => podRunning(p)).length;
  try {
    log(`steady: upstream kubelet pid ${up.pid}, log ${up.logFile}; starting ${n} pods`);
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: n }, (_, i) => writeFile(path.join(manifests, `st-${i}.json`), JSON.stringify(benchPodManifest(`st-${i}`, ns, env.images.busybox)))),
    );
    const deadline = t0 + 60_000 + n * 2000;
    let running = 0;
    while ((running = await runningCount()) < n) {
      if (performance.now() > deadline) throw new Error(`steady: upstream: ${running}/${n} pods Running after ${round(performance.now() - t0)} ms (log ${up.logFile})`);
      await sleep(500);
    }
    const metrics = async () => {
      const res = await fetch(`http://127.0.0.1:${up.readOnlyPort}/metrics`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
      return res?.ok ? res.text() : undefined;
    };
    return { pid: up.pid, containerdPid: up.containerdPid, logFile: up.logFile, startAllMs: performance.now() - t0, runningCount, metrics, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
