/**
 * `npm run up`: the README's first command. Starts the real node environment (registry on
 * 127.0.0.1:5050 with busybox images, a private containerd with a bridge CNI network) under
 * the node dir (`<repo>/.node`), runs the kubelet on the pod manifests in `examples/`, and
 * prints pod status changes and the kubelet's warnings as they happen. A kubelet that exits
 * (it is crash-only: a bug ends it) is started again, and the console says so; its pods keep
 * running and it takes them over. Ctrl-C (also with the
 * console piped to a tee that dies first) stops the kubelet, then the pods, containerd and the
 * registry, and removes the pods' cgroups: nothing of the node is left.
 */
import { spawn } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import type { V1Pod } from '@kubernetes/client-node';
import { nodeEnvUnavailableReason, startNodeEnv, type NodeEnv } from './node-env/index.ts';
import { UpConsole } from './up/console.ts';
import { PodLineTracker } from './up/pod-lines.ts';
import { KubeletWarningFollower } from './up/kubelet-warnings.ts';
import { parseUpOptions, UP_USAGE, type UpOptions } from './up/options.ts';
import { podUidsUnder, removePodCgroups } from './up/pod-cgroup-cleanup.ts';
import { KubeletSupervisor } from './up/kubelet-supervisor.ts';
import { upKubeletArgs } from './up/kubelet-args.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const POLL_MS = 500;
const KUBELET_STOP_TIMEOUT_MS = 30_000;

const con = new UpConsole(process.stdout);
// stderr is the same pipe under `2>&1 | tee`: it must not kill us either.
process.stderr.on('error', () => {});
const say = (text: string) => con.say(text);
const rel = (p: string) => relative(REPO, p) || p;
/**
 * A path for the kubelet (run in the repo): relative when inside it, as earlier runs passed
 * it, because a static pod's UID is derived from its manifest's path and an absolute path
 * would make every example pod a new pod on the next run.
 */
const kubeletPath = (p: string) => (p.startsWith(`${REPO}/`) ? relative(REPO, p) : p);

async function fetchPods(readOnlyPort: number): Promise<V1Pod[] | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${readOnlyPort}/pods`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return undefined;
    const list = (await res.json()) as { items?: V1Pod[] };
    return list.items ?? [];
  } catch {
    return undefined;
  }
}

async function logTail(path: string, lines = 20): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

function options(): UpOptions {
  try {
    return parseUpOptions(process.argv.slice(2), REPO);
  } catch (err) {
    process.stderr.write(`kubelet-ts up: ${(err as Error).message}\n\n${UP_USAGE}`);
    process.exit(2);
  }
}

async function main(): Promise<void> {
  const opts = options();
  if (opts.help) {
    process.stdout.write(UP_USAGE);
    return;
  }
  const reason = nodeEnvUnavailableReason();
  if (reason) {
    process.stderr.write(`kubelet-ts up: ${reason}\nOn a fresh Debian machine run: sudo scripts/up.sh\n`);
    process.exit(1);
  }
  // KUBELET_TS_KUBELET_BIN: another (executable) kubelet entry point, e.g. a stand-in while developing up.ts.
  const kubeletBin = resolve(REPO, process.env.KUBELET_TS_KUBELET_BIN ?? join('bin', 'kubelet-ts.mjs'));
  if (!existsSync(kubeletBin)) {
    process.stderr.write(`kubelet-ts up: ${rel(kubeletBin)} not found\n`);
    process.exit(1);
  }
  const kubeletRootDir = join(opts.nodeDir, 'kubelet');
  const pods = new PodLineTracker();

  let env: NodeEnv | undefined;
  let envStarting: Promise<unknown> = Promise.resolve();
  let kubelet: KubeletSupervisor | undefined;
  let shuttingDown = false;
  let pollTimer: NodeJS.Timeout | undefined;

  const shutdown = async (code: number): Promise<never> => {
    if (shuttingDown) return new Promise<never>(() => {});
    shuttingDown = true;
    if (pollTimer) clearTimeout(pollTimer);
    await kubelet?.stop(KUBELET_STOP_TIMEOUT_MS);
    // A signal during startup: let the start finish, then clean it up.
    await envStarting.catch(() => {});
    if (env) {
      say('stopping the pods, containerd and the registry...');
      await env.stop().catch((err: Error) => say(`cleanup error: ${err.message}`));
      // The containers are gone now, so their pods' cgroups are empty and can go too.
      await removePodCgroups([...pods.seenUids, ...(await podUidsUnder(kubeletRootDir))]).catch((err: Error) => say(`cleanup error (pod cgroups): ${err.message}`));
    }
    say('stopped');
    process.exit(code);
  };
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 2) {
      say(`${sig} again: exiting without cleanup (run npm run up again to clean up)`);
      process.exit(130);
    }
    if (interrupts === 1) void shutdown(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);
  // The terminal closing (an ssh session lost) is a stop too.
  process.on('SIGHUP', onSignal);

  say(`starting the node environment in ${relative(process.cwd(), opts.nodeDir) || opts.nodeDir} ...`);
  try {
    const starting = startNodeEnv({
      baseDir: opts.nodeDir,
      registryPort: opts.registryPort,
      // The node's own dir: nothing of it in /tmp after a stop.
      imageCacheDir: join(opts.nodeDir, 'image-cache'),
      log: (line) => {
        if (process.env.KUBELET_TS_UP_VERBOSE) say(line);
      },
    });
    envStarting = starting;
    env = await starting;
  } catch (err) {
    // Interrupted during startup: Ctrl-C also hits the helper processes (skopeo, tar).
    if (!shuttingDown) process.stderr.write(`kubelet-ts up: the node environment did not start: ${(err as Error).message}\n`);
    return shutdown(1);
  }
  if (shuttingDown) return;
  say(`registry    ${env.registry}  (images ${env.images.busybox}, ${env.images.pause})`);
  say(`containerd  ${env.containerdEndpoint}  (log ${rel(env.logs.containerd)})`);
  if (env.network) say(`network     bridge ${env.network.bridge}, pods in ${env.network.subnet}`);

  const kubeletLog = join(opts.nodeDir, 'kubelet.log');
  await mkdir(kubeletRootDir, { recursive: true });
  const out = createWriteStream(kubeletLog, { flags: 'w' });
  await once(out, 'open');
  const args = upKubeletArgs({ manifests: kubeletPath(opts.manifests), containerdEndpoint: env.containerdEndpoint, rootDir: kubeletPath(kubeletRootDir), readOnlyPort: opts.readOnlyPort });
  // Executed, not `node FILE`: its shebang carries the kubelet's node flags. Detached: Ctrl-C
  // reaches only us, and we stop the kubelet before containerd. Started again when it exits
  // (tools/up/kubelet-supervisor.ts), writing on to the same log.
  kubelet = new KubeletSupervisor({
    spawn: () => spawn(kubeletBin, args, { cwd: REPO, stdio: ['ignore', out, out], detached: true }),
    say,
    raw: (text) => con.raw(text),
    logTail: () => logTail(kubeletLog),
    giveUp: () => void shutdown(1),
  });
  kubelet.start();
  say(`kubelet     pid ${kubelet.pid}, manifests ${rel(opts.manifests)}/, log ${rel(kubeletLog)}`);
  say(`watching http://127.0.0.1:${opts.readOnlyPort}/pods  (Ctrl-C to stop)`);
  say(`pods: bin/kubelet-ts.mjs pods -w --root-dir ${rel(kubeletRootDir)}   logs: bin/kubelet-ts.mjs logs --root-dir ${rel(kubeletRootDir)} POD`);

  const warnings = new KubeletWarningFollower({ file: kubeletLog, cwd: REPO, say });
  let reachable: boolean | undefined;
  const poll = async (): Promise<void> => {
    if (shuttingDown) return;
    const list = await fetchPods(opts.readOnlyPort);
    await warnings.poll();
    if (shuttingDown) return;
    if (!list) {
      if (reachable) say('kubelet read-only API not answering');
      reachable = false;
    } else {
      if (reachable === false) say('kubelet read-only API answering');
      reachable = true;
      for (const line of pods.update(list)) say(line);
    }
    pollTimer = setTimeout(() => void poll(), POLL_MS);
  };
  // Give the kubelet a moment to open its port before the first poll.
  await sleep(200);
  void poll();
}

await main();
