import { existsSync } from 'node:fs';
import { mkdir, readdir, rm } from 'node:fs/promises';
import path from 'node:path';
import { pidAlive, run } from '../../tools/node-env/util.ts';
import { stopStaleContainerd, stopStaleRegistry } from '../../tools/node-env/index.ts';
import { cgroupV1Mounts } from '../../core/cgroups/cgroup-mounts.ts';
import { removeCgroupRoot } from '../../test/support/cgroups.ts';
import { CONTROL_PLANE_SCRIPT } from './cluster.ts';

/**
 * One run of an API benchmark: its directory `/tmp/kts-bench-api-<pid>` (control plane, node
 * environment, kubelet dirs, the upstream node, the proxy's certificates) and the cleanups of
 * everything it started, run in reverse order at the end, on an error, and on Ctrl-C /
 * SIGTERM. Directories of earlier runs whose process died are swept first: their control
 * plane stopped (`down --wipe`), their containerds stopped and cleaned, the directory removed.
 */

export const RUN_PREFIX = 'kts-bench-api-';
const TMP = '/tmp';

export interface BenchRun {
  dir: string;
  /** A fresh subdirectory of the run's directory. */
  subdir(name: string): Promise<string>;
  /** Registers a cleanup; cleanups run last-in first-out. */
  defer(what: string, fn: () => Promise<unknown>): void;
  /** Runs the cleanups registered since `mark` (from `mark()`), newest first. */
  unwind(mark?: number): Promise<void>;
  mark(): number;
}

export async function withBenchRun<T>(log: (line: string) => void, fn: (run: BenchRun) => Promise<T>): Promise<T> {
  await sweepStaleRuns(log);
  const dir = path.join(TMP, `${RUN_PREFIX}${process.pid}`);
  await mkdir(dir, { recursive: true });
  const cleanups: Array<{ what: string; fn: () => Promise<unknown> }> = [];
  let counter = 0;
  // One unwind at a time: a signal's unwind and the one of the work that ends meanwhile (a
  // fuzz batch under way) would otherwise pop cleanups side by side, and the run's directory
  // could be removed under a control plane still being stopped (which then ran on).
  let unwinding: Promise<void> = Promise.resolve();
  const unwindNow = async (mark: number) => {
    while (cleanups.length > mark) {
      const c = cleanups.pop()!;
      try {
        await c.fn();
      } catch (err) {
        log(`cleanup (${c.what}) failed: ${(err as Error).message}`);
      }
    }
  };
  const unwind = (mark = 0) => (unwinding = unwinding.then(() => unwindNow(mark)));
  const run: BenchRun = {
    dir,
    async subdir(name) {
      const d = path.join(dir, `${name}-${++counter}`);
      await mkdir(d, { recursive: true });
      return d;
    },
    defer(what, fn) {
      cleanups.push({ what, fn });
    },
    unwind,
    mark: () => cleanups.length,
  };
  // Ctrl-C or a kill: the same cleanups, then exit. A second signal while they run is ignored.
  let interrupted: Promise<never> | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (interrupted) return;
    log(`${signal}: cleaning up ...`);
    interrupted = unwind().then(async () => {
      await rm(dir, { recursive: true, force: true }).catch(() => {});
      process.exit(130);
    });
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  try {
    return await fn(run);
  } finally {
    await unwind();
    // Interrupted: the signal's clean-up ends the process once done (exit 130), not this return.
    if (interrupted) await interrupted;
    process.off('SIGINT', onSignal);
    process.off('SIGTERM', onSignal);
    if (!process.env.KUBELET_TS_BENCH_KEEP) await rm(dir, { recursive: true, force: true });
    else log(`kept ${dir} (KUBELET_TS_BENCH_KEEP)`);
  }
}

/** Stops what a dead run left: control plane, containerds, registry; removes its directory. */
async function sweepStaleRuns(log: (line: string) => void): Promise<void> {
  for (const name of await readdir(TMP).catch(() => [] as string[])) {
    if (!name.startsWith(RUN_PREFIX)) continue;
    const pid = Number(name.slice(RUN_PREFIX.length));
    if (!(pid > 0) || pid === process.pid || pidAlive(pid)) continue;
    const dir = path.join(TMP, name);
    log(`sweeping the directory of a dead run: ${dir}`);
    for (const entry of await readdir(dir).catch(() => [] as string[])) {
      const sub = path.join(dir, entry);
      if (entry.startsWith('cp-') && existsSync(path.join(sub, 'run'))) {
        await run('bash', [CONTROL_PLANE_SCRIPT, 'down', sub, '--wipe'], { timeoutMs: 90_000, allowFailure: true });
      }
      if (existsSync(path.join(sub, 'containerd'))) await stopStaleContainerd(path.join(sub, 'containerd'), log).catch(() => {});
      if (existsSync(path.join(sub, 'registry'))) await stopStaleRegistry(path.join(sub, 'registry'), log).catch(() => {});
    }
    await rm(dir, { recursive: true, force: true }).catch(() => {});
  }
  // Pod cgroup roots of dead runs (kubelet-ts: /kts-bench-api-<pid>-<n>, upstream: /kts-bench-api-up-<pid>-<n>).
  const memory = cgroupV1Mounts().get('memory');
  for (const name of memory ? await readdir(memory).catch(() => [] as string[]) : []) {
    const pid = Number(/^kts-bench-api-(?:up-)?(\d+)-\d+$/.exec(name)?.[1]);
    if (pid > 0 && pid !== process.pid && !pidAlive(pid)) await removeCgroupRoot(`/${name}`);
  }
}
