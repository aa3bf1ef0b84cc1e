import { mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import type { NodeEnv } from '../tools/node-env/index.ts';
import { run as sh } from '../tools/node-env/util.ts';
import { startUpstreamNode, unpackUpstreamKubelet, upstreamUnavailableReason } from './api/upstream-node.ts';
import {
  benchPodManifest, isMain, isSmoke, logTo, machineInfo, podRunning, printTo, RawCri, round, runMain, runTag, startBenchKubelet, table,
  withNodeEnv, writeResults, envWindowSeconds, type BenchOptions,
} from './lib.ts';

/**
 * log-flood: one container writes its log as fast as it can for SECONDS (`yes` of 100-byte
 * lines), under containerLogMaxSize 5Mi, containerLogMaxFiles 3 and upstream's default
 * containerLogMonitorInterval (10 s), side by side in one run:
 *
 *   - raw CRI: no kubelet, nothing rotates: what the writer writes through containerd;
 *   - kubelet-ts (in-process, the environment's containerd);
 *   - the upstream kubelet v1.28.7, standalone (bench/api/upstream-node.ts: its own containerd
 *     of the same binary and config in a private mount namespace).
 *
 * Each side's pod logs are on a tmpfs of the same size (the disk is not what is measured). Every
 * 250 ms the container's log dir is read: the current file's size, the total of its files and
 * their count, during the flood and for SETTLE seconds after. Printed per side: the peak of the
 * current file and of the total, the total's mean over the samples (how close to the limits the
 * logs were held), and the total at the end (what stays on the node).
 *
 *   npm run bench:log-flood                      30 s of flood per side, then 15 s to settle
 *   SECONDS=10 UPSTREAM=0 npm run bench:log-flood
 */

const MAX_SIZE = 5 * 2 ** 20;
const MAX_FILES = 3;
const MONITOR_MS = 10_000;
const SAMPLE_MS = 250;
/** Each side's pod logs tmpfs: room for the raw side's whole flood at this machine's rates. */
const TMPFS_SIZE = '6g';
const MiB = 2 ** 20;

export interface FloodSide {
  side: string;
  peakCurrentMiB: number;
  peakTotalMiB: number;
  /** The total's mean over all samples. */
  meanTotalMiB: number;
  endTotalMiB: number;
  /** The most files seen at once (the current one, rotated, compressed, temporary). */
  peakFiles: number;
  /** Written by the container, for the raw side (nothing is removed there). */
  writtenMiB?: number;
}

export interface FloodResult { seconds: number; settleSeconds: number; sides: FloodSide[]; upstreamSkipped?: string }

/** The flooding pod: `yes` of 100-byte lines for `seconds`, then idle (so the container runs on while the logs settle). */
const floodPod = (name: string, namespace: string, image: string, seconds: number): V1Pod =>
  benchPodManifest(name, namespace, image, { container: 'flood', work: `timeout -s KILL ${seconds} yes ${'0'.repeat(99)}` });

/** The container's log dir under `podLogsDir` (`<ns>_<pod>_<uid>/flood`), once it exists. */
async function findLogDir(podLogsDir: string, ns: string, timeoutMs: number): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (Date.now() < end) {
    const pod = (await readdir(podLogsDir).catch(() => [] as string[])).find((d) => d.startsWith(`${ns}_`));
    if (pod) {
      const dir = path.join(podLogsDir, pod, 'flood');
      if (await stat(path.join(dir, '0.log')).then(() => true, () => false)) return dir;
    }
    await sleep(200);
  }
  throw new Error(`log-flood: no container log under ${podLogsDir} after ${timeoutMs} ms`);
}

/** Samples `dir` every SAMPLE_MS for `ms`: the figures of one side. */
async function sampleLogDir(side: string, dir: string, ms: number): Promise<FloodSide> {
  let peakCurrent = 0;
  let peakTotal = 0;
  let peakFiles = 0;
  let samples = 0;
  let sum = 0;
  let total = 0;
  const end = Date.now() + ms;
  while (Date.now() < end) {
    const names = await readdir(dir).catch(() => [] as string[]);
    total = 0;
    let current = 0;
    for (const n of names) {
      const size = (await stat(path.join(dir, n)).catch(() => undefined))?.size ?? 0;
      total += size;
      if (n === '0.log') current = size;
    }
    peakCurrent = Math.max(peakCurrent, current);
    peakTotal = Math.max(peakTotal, total);
    peakFiles = Math.max(peakFiles, names.length);
    samples++;
    sum += total;
    await sleep(SAMPLE_MS);
  }
  return {
    side, peakCurrentMiB: round(peakCurrent / MiB), peakTotalMiB: round(peakTotal / MiB), meanTotalMiB: round(sum / Math.max(1, samples) / MiB),
    endTotalMiB: round(total / MiB), peakFiles,
  };
}

/** A tmpfs of TMPFS_SIZE at a new dir under /tmp; unmounted and removed by the returned function. */
async function tmpfsDir(prefix: string): Promise<{ dir: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(os.tmpdir(), prefix));
  await sh('mount', ['-t', 'tmpfs', '-o', `size=${TMPFS_SIZE},mode=0755`, 'kts-log-flood', dir]);
  return {
    dir,
    remove: async () => {
      await sh('umount', [dir], { allowFailure: true });
      await rm(dir, { recursive: true, force: true });
    },
  };
}

async function rawSide(env: NodeEnv, seconds: number, settle: number, log: (l: string) => void): Promise<FloodSide> {
  const logs = await tmpfsDir('ktsb-flood-raw-');
  const raw = new RawCri(env.containerdEndpoint, logs.dir);
  const ns = `flood-raw-${runTag()}`;
  try {
    const pod = await raw.startPod(floodPod('flood', ns, env.images.busybox, seconds));
    try {
      const dir = await findLogDir(logs.dir, ns, 30_000);
      log(`log-flood: raw CRI flooding ${dir}`);
      const r = await sampleLogDir('raw CRI (no rotation)', dir, (seconds + settle) * 1000);
      return { ...r, writtenMiB: r.endTotalMiB };
    } finally {
      await raw.removePod(pod);
    }
  } finally {
    await raw.close();
    await logs.remove();
  }
}

async function kubeletTsSide(env: NodeEnv, seconds: number, settle: number, log: (l: string) => void): Promise<FloodSide> {
  const logs = await tmpfsDir('ktsb-flood-kts-');
  const ns = `flood-kts-${runTag()}`;
  const k = await startBenchKubelet(env, { podLogsDir: logs.dir, containerLogs: { maxSizeBytes: MAX_SIZE, maxFiles: MAX_FILES, monitorIntervalMs: MONITOR_MS } });
  try {
    await k.writeManifest('flood.json', floodPod('flood', ns, env.images.busybox, seconds));
    const dir = await findLogDir(logs.dir, ns, 60_000);
    log(`log-flood: kubelet-ts flooding ${dir}`);
    const r = await sampleLogDir('kubelet-ts', dir, (seconds + settle) * 1000);
    await k.removeManifest('flood.json');
    for (let i = 0; i < 60 && k.pod('flood'); i++) await sleep(500);
    return r;
  } finally {
    await k.stop();
    await logs.remove();
  }
}

async function upstreamSide(env: NodeEnv, seconds: number, settle: number, log: (l: string) => void): Promise<FloodSide> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'ktsb-flood-up-'));
  try {
    const { binary, reason } = await unpackUpstreamKubelet(dir);
    const why = reason ?? upstreamUnavailableReason(binary);
    if (why || !binary) throw new Error(`log-flood: upstream side: ${why}`);
    const manifests = path.join(dir, 'manifests');
    await mkdir(manifests);
    const up = await startUpstreamNode({
      dir, kubeletBinary: binary, staticPodPath: manifests, nodeName: `bench-flood-up-${process.pid}`, nodeIP: '127.0.0.1',
      sandboxImage: env.images.pause, maxPods: 110, log, varLogSize: TMPFS_SIZE,
      extraConfig: { containerLogMaxSize: '5Mi', containerLogMaxFiles: MAX_FILES, containerLogMonitorInterval: `${MONITOR_MS / 1000}s` },
    });
    try {
      const ns = `flood-up-${runTag()}`;
      await writeFile(path.join(manifests, 'flood.json'), JSON.stringify(floodPod('flood', ns, env.images.busybox, seconds)));
      // Its /var/log is a tmpfs of its own mount namespace: seen from here through its root.
      const logDir = await findLogDir(`/proc/${up.pid}/root/var/log/pods`, ns, 90_000);
      log(`log-flood: upstream kubelet flooding ${logDir}`);
      const r = await sampleLogDir('upstream kubelet v1.28.7', logDir, (seconds + settle) * 1000);
      await rm(path.join(manifests, 'flood.json'), { force: true });
      for (let i = 0; i < 60; i++) {
        const res = await fetch(`http://127.0.0.1:${up.readOnlyPort}/pods`, { signal: AbortSignal.timeout(5000) }).catch(() => undefined);
        const items = res?.ok ? (((await res.json()) as { items?: V1Pod[] }).items ?? []) : [];
        if (!items.some((p) => podRunning(p))) break;
        await sleep(500);
      }
      return r;
    } finally {
      await up.stop();
    }
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}

export async function run(opts: BenchOptions = {}): Promise<FloodResult> {
  const log = logTo(opts);
  const print = printTo(opts);
  const smoke = opts.smoke ?? isSmoke();
  const seconds = smoke ? 3 : envWindowSeconds() ?? 30;
  const settle = smoke ? 2 : Number(process.env.SETTLE ?? 15);
  const withUpstream = !smoke && process.env.UPSTREAM !== '0';
  return withNodeEnv(opts, async (env) => {
    const sides: FloodSide[] = [];
    sides.push(await rawSide(env, seconds, settle, log));
    sides.push(await kubeletTsSide(env, seconds, settle, log));
    let upstreamSkipped: string | undefined;
    if (withUpstream) sides.push(await upstreamSide(env, seconds, settle, log));
    else upstreamSkipped = smoke ? 'smoke mode' : 'UPSTREAM=0';
    print(`log-flood: ${seconds} s of flood, then ${settle} s; containerLogMaxSize 5Mi, containerLogMaxFiles ${MAX_FILES} (limit ${(MAX_SIZE * MAX_FILES) / MiB} MiB), monitor interval ${MONITOR_MS / 1000} s`);
    print(table([
      ['side', 'peak current MiB', 'peak total MiB', 'mean total MiB', 'peak files', 'end total MiB'],
      ...sides.map((s) => [s.side, s.peakCurrentMiB, s.peakTotalMiB, s.meanTotalMiB, s.peakFiles, s.endTotalMiB]),
    ]));
    const result: FloodResult = { seconds, settleSeconds: settle, sides, ...(upstreamSkipped ? { upstreamSkipped } : {}) };
    const file = await writeResults({ ...opts, smoke }, 'log-flood', { machine: await machineInfo(env), ...result });
    if (file) log(`results: ${file}`);
    return result;
  });
}

if (await isMain(import.meta.url)) await runMain(() => run());
