/**
 * `npm run up`: the README's first command. Starts the real node environment (registry on
 * 127.0.0.1:5050 with busybox images, a private containerd with a bridge CNI network) under
 * `<repo>/.node`, runs the kubelet on the pod manifests in `examples/`, and prints pod status
 * changes as they happen. Ctrl-C stops the kubelet, then the environment.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { createWriteStream, existsSync } from 'node:fs';
import { mkdir, readFile } from 'node:fs/promises';
import { once } from 'node:events';
import { dirname, join, relative, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { setTimeout as sleep } from 'node:timers/promises';
import { nodeEnvUnavailableReason, startNodeEnv, type NodeEnv } from './node-env/index.ts';

const REPO = resolve(dirname(fileURLToPath(import.meta.url)), '..');
const BASE_DIR = join(REPO, '.node');
const REGISTRY_PORT = Number(process.env.KUBELET_TS_REGISTRY_PORT ?? 5050);
const READ_ONLY_PORT = Number(process.env.KUBELET_TS_READ_ONLY_PORT ?? 10255);
const MANIFESTS = process.env.KUBELET_TS_MANIFESTS ?? 'examples';
const POLL_MS = 500;
const KUBELET_STOP_TIMEOUT_MS = 30_000;

/** The fields of a v1 Pod this view prints. */
interface PodView {
  metadata?: { name?: string; namespace?: string; deletionTimestamp?: string };
  spec?: { containers?: Array<{ name: string }> };
  status?: {
    phase?: string;
    reason?: string;
    podIP?: string;
    containerStatuses?: ContainerStatusView[];
    initContainerStatuses?: ContainerStatusView[];
  };
}

interface ContainerStatusView {
  name: string;
  ready?: boolean;
  restartCount?: number;
  state?: {
    waiting?: { reason?: string; message?: string };
    terminated?: { reason?: string; exitCode?: number };
    running?: object;
  };
}

function clock(): string {
  return new Date().toTimeString().slice(0, 8);
}

function say(line: string): void {
  process.stdout.write(`${line}\n`);
}

/** One line for a pod: `default/web-node  Running  ready 1/1  ip 10.88.0.5  restarts 0`. */
export function podLine(pod: PodView): string {
  const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
  const st = pod.status ?? {};
  const statuses = st.containerStatuses ?? [];
  const total = pod.spec?.containers?.length ?? statuses.length;
  const ready = statuses.filter((c) => c.ready).length;
  const restarts = statuses.reduce((n, c) => n + (c.restartCount ?? 0), 0);
  let phase = st.phase ?? 'Pending';
  if (pod.metadata?.deletionTimestamp) phase = `${phase} (terminating)`;
  const parts = [key, phase + (st.reason ? ` (${st.reason})` : ''), `ready ${ready}/${total}`, `ip ${st.podIP || '-'}`, `restarts ${restarts}`];
  const notes: string[] = [];
  for (const c of [...(st.initContainerStatuses ?? []), ...statuses]) {
    const w = c.state?.waiting;
    if (w?.reason) notes.push(`${c.name}: ${w.reason}${w.message ? ` (${w.message.split('\n')[0]!.slice(0, 120)})` : ''}`);
    const t = c.state?.terminated;
    if (t && !c.state?.running && !w && st.phase !== 'Succeeded') notes.push(`${c.name}: ${t.reason ?? 'Terminated'} exit ${t.exitCode ?? '?'}`);
  }
  if (notes.length) parts.push(notes.join(', '));
  return parts.join('  ');
}

async function fetchPods(): Promise<PodView[] | undefined> {
  try {
    const res = await fetch(`http://127.0.0.1:${READ_ONLY_PORT}/pods`, { signal: AbortSignal.timeout(2000) });
    if (!res.ok) return undefined;
    const list = (await res.json()) as { items?: PodView[] };
    return list.items ?? [];
  } catch {
    return undefined;
  }
}

async function logTail(path: string, lines = 20): Promise<string> {
  const text = await readFile(path, 'utf8').catch(() => '');
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

async function main(): Promise<void> {
  const reason = nodeEnvUnavailableReason();
  if (reason) {
    process.stderr.write(`kubelet-ts up: ${reason}\nOn a fresh Debian machine run: sudo scripts/up.sh\n`);
    process.exit(1);
  }
  // KUBELET_TS_KUBELET_BIN: another (executable) kubelet entry point, e.g. a stand-in while developing up.ts.
  const kubeletBin = resolve(REPO, process.env.KUBELET_TS_KUBELET_BIN ?? join('bin', 'kubelet-ts.mjs'));
  if (!existsSync(kubeletBin)) {
    process.stderr.write(`kubelet-ts up: ${relative(REPO, kubeletBin)} not found\n`);
    process.exit(1);
  }

  let env: NodeEnv | undefined;
  let envStarting: Promise<unknown> = Promise.resolve();
  let kubelet: ChildProcess | undefined;
  let kubeletExit: Promise<void> = Promise.resolve();
  let shuttingDown = false;
  let pollTimer: NodeJS.Timeout | undefined;

  const shutdown = async (code: number): Promise<never> => {
    if (shuttingDown) return new Promise<never>(() => {});
    shuttingDown = true;
    if (pollTimer) clearTimeout(pollTimer);
    if (kubelet && kubelet.exitCode === null && kubelet.signalCode === null) {
      say(`${clock()}  stopping the kubelet (SIGTERM)...`);
      kubelet.kill('SIGTERM');
      const timer = setTimeout(() => {
        say(`${clock()}  the kubelet did not stop in ${KUBELET_STOP_TIMEOUT_MS / 1000} s: SIGKILL`);
        kubelet?.kill('SIGKILL');
      }, KUBELET_STOP_TIMEOUT_MS);
      await kubeletExit;
      clearTimeout(timer);
    }
    // A signal during startup: let the start finish, then clean it up.
    await envStarting.catch(() => {});
    if (env) {
      say(`${clock()}  stopping containerd and the registry...`);
      await env.stop().catch((err: Error) => say(`${clock()}  cleanup error: ${err.message}`));
    }
    say(`${clock()}  stopped`);
    process.exit(code);
  };
  let interrupts = 0;
  const onSignal = (sig: NodeJS.Signals) => {
    interrupts++;
    if (interrupts > 2) {
      say(`${clock()}  ${sig} again: exiting without cleanup (run npm run up again to clean up)`);
      process.exit(130);
    }
    if (interrupts === 1) void shutdown(0);
  };
  process.on('SIGINT', onSignal);
  process.on('SIGTERM', onSignal);

  say(`${clock()}  starting the node environment in ${relative(process.cwd(), BASE_DIR) || BASE_DIR} ...`);
  try {
    const starting = startNodeEnv({
      baseDir: BASE_DIR,
      registryPort: REGISTRY_PORT,
      log: (line) => {
        if (process.env.KUBELET_TS_UP_VERBOSE) say(`${clock()}  ${line}`);
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
  say(`${clock()}  registry    ${env.registry}  (images ${env.images.busybox}, ${env.images.pause})`);
  say(`${clock()}  containerd  ${env.containerdEndpoint}  (log ${relative(REPO, env.logs.containerd)})`);
  if (env.network) say(`${clock()}  network     bridge ${env.network.bridge}, pods in ${env.network.subnet}`);

  const kubeletLog = join(BASE_DIR, 'kubelet.log');
  await mkdir(join(BASE_DIR, 'kubelet'), { recursive: true });
  const out = createWriteStream(kubeletLog, { flags: 'w' });
  await once(out, 'open');
  const args = [
    '--pod-manifest-path', MANIFESTS,
    '--container-runtime-endpoint', env.containerdEndpoint,
    '--root-dir', join('.node', 'kubelet'),
    '--read-only-port', String(READ_ONLY_PORT),
    '--node-ip', '127.0.0.1',
  ];
  // Executed, not `node FILE`: its shebang carries the kubelet's node flags. Detached: Ctrl-C
  // reaches only us, and we stop the kubelet before containerd.
  kubelet = spawn(kubeletBin, args, { cwd: REPO, stdio: ['ignore', out, out], detached: true });
  kubeletExit = new Promise<void>((res) => {
    kubelet!.on('exit', (code, signal) => {
      out.end();
      res();
      if (!shuttingDown) {
        void (async () => {
          say(`${clock()}  the kubelet exited (${signal ?? `code ${code}`}); last lines of ${relative(REPO, kubeletLog)}:`);
          say(await logTail(kubeletLog));
          await shutdown(1);
        })();
      }
    });
    kubelet!.on('error', (err) => {
      say(`${clock()}  could not start the kubelet: ${err.message}`);
      res();
      void shutdown(1);
    });
  });
  say(`${clock()}  kubelet     pid ${kubelet.pid}, manifests ${MANIFESTS}/, logs ${relative(REPO, kubeletLog)}`);
  say(`${clock()}  watching http://127.0.0.1:${READ_ONLY_PORT}/pods  (Ctrl-C to stop)`);
  say(`${clock()}  logs: bin/kubelet-ts.mjs logs --root-dir .node/kubelet POD  (the kubelet's local socket)`);

  const last = new Map<string, string>();
  let reachable: boolean | undefined;
  const poll = async (): Promise<void> => {
    if (shuttingDown) return;
    const pods = await fetchPods();
    if (shuttingDown) return;
    if (!pods) {
      if (reachable) say(`${clock()}  kubelet read-only API not answering`);
      reachable = false;
    } else {
      if (reachable === false) say(`${clock()}  kubelet read-only API answering`);
      reachable = true;
      const seen = new Set<string>();
      for (const pod of pods) {
        const key = `${pod.metadata?.namespace ?? 'default'}/${pod.metadata?.name ?? '?'}`;
        seen.add(key);
        const line = podLine(pod);
        if (last.get(key) !== line) {
          last.set(key, line);
          say(`${clock()}  ${line}`);
        }
      }
      for (const key of [...last.keys()]) {
        if (!seen.has(key)) {
          last.delete(key);
          say(`${clock()}  ${key}  removed`);
        }
      }
    }
    pollTimer = setTimeout(() => void poll(), POLL_MS);
  };
  // Give the kubelet a moment to open its port before the first poll.
  await sleep(200);
  void poll();
}

await main();
