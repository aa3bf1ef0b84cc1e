import { readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { nodeEnvUnavailableReason, startNodeEnv, stopStaleContainerd, stopStaleRegistry, type NodeEnv } from '../../tools/node-env/index.ts';
import { pushImage } from '../../tools/node-env/registry.ts';
import { ctrAt } from '../../tools/node-env/containerd.ts';
import { claimOncePerRun, refuseOnPureLane, SHARED_PARTS_ENV } from './once-per-run.ts';
import { realPartMissing } from './real-part.ts';

/**
 * The real node environment (registry + containerd) shared by all integration tests of one
 * mocha run. It starts lazily on the first getNodeEnv() call, so unit-only runs never start
 * containerd, and stops in the root afterAll hook (test/support/root-hooks.ts).
 *
 * Tests share containerd: each test uses its own pod names, namespaces and directories, and
 * removes what it creates.
 */

const PREFIX = 'kubelet-ts-test-';

claimOncePerRun('test/support/node-env.ts');

let envPromise: Promise<NodeEnv> | undefined;

/** Log lines of the environment go to stderr when KUBELET_TS_TEST_LOG=1. */
function log(line: string): void {
  if (process.env.KUBELET_TS_TEST_LOG) process.stderr.write(`[node-env] ${line}\n`);
}

/** The base dir of this run's environment: `<os tmp>/kubelet-ts-test-<pid>`. */
export function nodeEnvBaseDir(): string {
  return join(tmpdir(), `${PREFIX}${process.pid}`);
}

/** Starts the shared environment once per run (memoized) and returns it. */
export function getNodeEnv(): Promise<NodeEnv> {
  refuseOnPureLane('the node environment (containerd, registry)');
  const shared = process.env[SHARED_PARTS_ENV];
  if (shared) return (envPromise ??= attachNodeEnv(shared));
  envPromise ??= (async () => {
    await sweepStaleTestEnvs();
    return startNodeEnv({ baseDir: nodeEnvBaseDir(), log, removeOnStop: !process.env.KUBELET_TS_KEEP_TEST_ENV });
  })();
  // A failed start is not retried by later callers: they get the same error.
  return envPromise;
}

/** What test/support/shared-parts-main.ts writes of the node environment: its data, no handles. */
export function describeNodeEnv(env: NodeEnv): object {
  const { containerd, registryServer, ctr: _ctr, stop: _stop, ...data } = env;
  const { ctr: _c, stop: _s, ...cd } = containerd;
  const { pushImage: _p, stop: _r, ...reg } = registryServer;
  return { ...data, containerd: cd, registryServer: reg };
}

/** The environment another process started and owns: the same data, `stop()` left to its owner. */
async function attachNodeEnv(file: string): Promise<NodeEnv> {
  const d = JSON.parse(await readFile(file, 'utf8')).nodeEnv;
  const ctr = ctrAt(d.containerd.socket);
  const notOurs = async () => {};
  return {
    ...d,
    ctr,
    containerd: { ...d.containerd, ctr, stop: notOurs },
    registryServer: { ...d.registryServer, pushImage: (tar: string, ref: string, creds?: string) => pushImage(tar, ref, creds), stop: notOurs },
    stop: notOurs,
  };
}

/** True if getNodeEnv() was called in this run. */
export function nodeEnvStarted(): boolean {
  return envPromise !== undefined;
}

/** Stops the shared environment if it was started. Idempotent. */
export async function stopNodeEnv(): Promise<void> {
  if (!envPromise) return;
  const p = envPromise;
  let env: NodeEnv;
  try {
    env = await p;
  } catch {
    return; // start failed and cleaned up after itself
  }
  await env.stop();
}

/** Removes environments of earlier runs whose process died without stopping them. */
async function sweepStaleTestEnvs(): Promise<void> {
  const dir = tmpdir();
  for (const name of await readdir(dir).catch(() => [] as string[])) {
    if (!name.startsWith(PREFIX)) continue;
    const pid = Number(name.slice(PREFIX.length));
    if (!(pid > 0) || pid === process.pid || alive(pid)) continue;
    const base = join(dir, name);
    log(`sweeping stale test env ${base}`);
    try {
      await stopStaleContainerd(join(base, 'containerd'), log);
      await stopStaleRegistry(join(base, 'registry'), log);
      await rm(base, { recursive: true, force: true });
    } catch (err) {
      log(`could not sweep ${base}: ${(err as Error).message}`);
    }
  }
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * For a test that brings up a node stack of its own (its own containerd, or the launcher):
 * the shared environment's checks (root, packages) without starting it. With `CI=true` a
 * machine that cannot run it fails the test; elsewhere the test is skipped with a message
 * saying what is missing.
 */
export function nodeEnvUsableOrSkip(ctx: Mocha.Context): void {
  const reason = nodeEnvUnavailableReason();
  if (reason) realPartMissing(ctx, 'the node environment cannot start', reason);
}

/** The shared environment for a test that needs it, started once per run (see nodeEnvUsableOrSkip for a machine that cannot run it). */
export async function nodeEnvOrSkip(ctx: Mocha.Context): Promise<NodeEnv> {
  nodeEnvUsableOrSkip(ctx);
  return getNodeEnv();
}
