import { spawn } from 'node:child_process';
import { createWriteStream, existsSync, readFileSync } from 'node:fs';
import { readFile, rm, writeFile } from 'node:fs/promises';
import { once } from 'node:events';
import { delimiter, join } from 'node:path';
import { createServer } from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';

/** Options for {@link run}. */
export interface RunOptions {
  /** Kill the command (SIGKILL) after this many milliseconds. Default 60 s. */
  timeoutMs?: number;
  /** Extra environment variables. */
  env?: NodeJS.ProcessEnv;
  /** Working directory. */
  cwd?: string;
  /** Resolve with the output instead of rejecting on a non-zero exit. */
  allowFailure?: boolean;
  /** Data written to stdin. */
  input?: string;
}

/** The result of {@link run}. */
export interface RunResult {
  code: number | null;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to completion with a time limit and returns its output. Rejects with an
 * error naming the command and its stderr when it fails, unless `allowFailure` is set.
 */
export function run(cmd: string, args: string[], opts: RunOptions = {}): Promise<RunResult> {
  const timeoutMs = opts.timeoutMs ?? 60_000;
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, {
      cwd: opts.cwd,
      env: opts.env ? { ...process.env, ...opts.env } : process.env,
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    let stdout = '';
    let stderr = '';
    let timedOut = false;
    const timer = setTimeout(() => {
      timedOut = true;
      child.kill('SIGKILL');
    }, timeoutMs);
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d));
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d));
    child.on('error', (err) => {
      clearTimeout(timer);
      reject(new Error(`${cmd}: ${err.message}`));
    });
    child.on('close', (code) => {
      clearTimeout(timer);
      if (timedOut) {
        reject(new Error(`${cmd} ${args.join(' ')}: timed out after ${timeoutMs} ms\n${stderr}`));
      } else if (code !== 0 && !opts.allowFailure) {
        reject(new Error(`${cmd} ${args.join(' ')}: exit ${code}\n${stderr.trim() || stdout.trim()}`));
      } else {
        resolve({ code, stdout, stderr });
      }
    });
    child.stdin.on('error', () => {});
    child.stdin.end(opts.input ?? '');
  });
}

/** Finds an executable on PATH (plus the sbin directories, which a non-login root shell may lack). */
export function which(name: string): string | undefined {
  const dirs = [...(process.env.PATH ?? '').split(delimiter), '/usr/local/sbin', '/usr/local/bin', '/usr/sbin', '/usr/bin', '/sbin', '/bin'];
  for (const dir of dirs) {
    if (!dir) continue;
    const p = join(dir, name);
    if (existsSync(p)) return p;
  }
  return undefined;
}

/**
 * The kernel's ephemeral range (`ip_local_port_range`): the source ports of outgoing
 * connections come from it, so a port picked there and bound a moment later can have been taken
 * by a client meanwhile (a CI run lost its control plane that way: the scheduler's port was an
 * API server's connection to etcd by the time the scheduler started).
 */
function ephemeralRange(): { low: number; high: number } {
  try {
    const [low, high] = readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/).map(Number);
    if (low && high && low <= high) return { low, high };
  } catch {
    // not Linux: the IANA dynamic range
  }
  return { low: 49152, high: 65535 };
}

/** Ports this process handed out: never handed out twice, even after their listener closed. */
const handedOut = new Set<number>();

/**
 * Upstream's fixed ports (kubelet healthz 10248, main 10250, read-only 10255, kube-proxy 10256,
 * controller-manager 10257, scheduler 10259): a kubelet or control plane a test starts with its
 * defaults binds them, so they are never handed out.
 */
const KUBE_DEFAULT_PORTS = { low: 10_248, high: 10_259 };

/**
 * The share of [floor, ceiling) this process picks from. The test runner
 * (scripts/test-lanes.mjs) runs several processes side by side, each with its own
 * `handedOut`; it gives each a slot (`KUBELET_TS_PORT_SLOT=i/n`) so that two of them never
 * hand out the same port. Without that, a CI run lost a test when another lane bound the
 * read-only port it had been handed between its check and its kubelet's start.
 */
export function portSlice(floor: number, ceiling: number, slot = process.env.KUBELET_TS_PORT_SLOT): { low: number; high: number } {
  const m = /^(\d+)\/(\d+)$/.exec(slot ?? '');
  const [i, n] = m ? [Number(m[1]), Number(m[2])] : [0, 1];
  if (!(n >= 1 && i < n)) return { low: floor, high: ceiling };
  const width = Math.floor((ceiling - floor) / n);
  return { low: floor + i * width, high: floor + (i + 1) * width };
}

/** Binds `port` on `host` and lets it go: the port it got, or undefined if the bind failed. */
function tryListen(port: number, host: string): Promise<number | undefined> {
  return new Promise((resolve) => {
    const srv = createServer();
    srv.unref();
    srv.on('error', () => resolve(undefined));
    srv.listen(port, host, () => {
      const addr = srv.address();
      const bound = typeof addr === 'object' && addr ? addr.port : undefined;
      srv.close(() => resolve(bound));
    });
  });
}

/**
 * Returns a TCP port that was free a moment ago on every IPv4 address (a kubelet binds
 * 0.0.0.0, which a listener on any one address blocks), chosen at random from this process's
 * slice (see portSlice) of the range below the ephemeral one (see ephemeralRange) and above
 * 10000, so that no outgoing connection takes it before its server binds it. Falls back to one
 * the kernel picks if 50 tries find none.
 */
export async function freePort(): Promise<number> {
  const { low, high } = portSlice(10_000, ephemeralRange().low);
  if (high - low > 1000) {
    for (let i = 0; i < 50; i++) {
      const candidate = low + Math.floor(Math.random() * (high - low));
      if (handedOut.has(candidate) || (candidate >= KUBE_DEFAULT_PORTS.low && candidate <= KUBE_DEFAULT_PORTS.high)) continue;
      const port = await tryListen(candidate, '0.0.0.0');
      if (port) {
        handedOut.add(port);
        return port;
      }
    }
  }
  const port = await tryListen(0, '0.0.0.0');
  if (!port) throw new Error('freePort: could not bind a port');
  handedOut.add(port);
  return port;
}

/**
 * Polls `check` every `intervalMs` until it returns true, for at most `timeoutMs`.
 * Rejects with `what` in the message when time runs out.
 */
export async function waitFor(what: string, check: () => Promise<boolean> | boolean, timeoutMs = 10_000, intervalMs = 50): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  while (Date.now() < deadline) {
    try {
      if (await check()) return;
    } catch (err) {
      lastErr = err;
    }
    await sleep(intervalMs);
  }
  const detail = lastErr instanceof Error ? `: ${lastErr.message}` : '';
  throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}${detail}`);
}

/** Mount points at or under one of `dirs`, deepest first. */
export async function mountsUnder(dirs: string[]): Promise<string[]> {
  const info = await readFile('/proc/self/mountinfo', 'utf8');
  const points = new Set<string>();
  for (const line of info.split('\n')) {
    const fields = line.split(' ');
    if (fields.length < 5) continue;
    // Octal escapes (\040 for a space) in mount points.
    const mp = fields[4]!.replace(/\\([0-7]{3})/g, (_m, o: string) => String.fromCharCode(parseInt(o, 8)));
    if (dirs.some((d) => mp === d || mp.startsWith(d + '/'))) points.add(mp);
  }
  return [...points].sort((a, b) => b.length - a.length);
}

/** Unmounts every mount at or under `dirs`, deepest first (lazily when busy); a few rounds for mounts stacked on one point. */
export async function unmountUnder(dirs: string[]): Promise<void> {
  for (let round = 0; round < 3; round++) {
    const mounts = await mountsUnder(dirs);
    if (!mounts.length) return;
    for (const mp of mounts) {
      const r = await run('umount', [mp], { allowFailure: true, timeoutMs: 10_000 });
      if (r.code !== 0) await run('umount', ['-l', mp], { allowFailure: true, timeoutMs: 10_000 });
    }
  }
}

/** True if a process with this pid exists. */
export function pidAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** A logger that receives one line at a time. */
export type LineLog = (line: string) => void;

/** The default log: nothing. */
export const noLog: LineLog = () => {};

/** A daemon started by {@link spawnDaemon}. */
export interface Daemon {
  pid: number | undefined;
  /** Why it exited ('code 1 signal null', or the spawn error); undefined while it runs. */
  exitInfo(): string | undefined;
  /** SIGTERM (SIGKILL after 5 s) unless it already exited; closes its log and removes its pid file. */
  stop(): Promise<void>;
}

/**
 * Starts a daemon of the node environment (containerd, the registry): output appended to
 * `logPath`, pid written to `pidPath` (so a later run can stop a stale instance). Detached: a
 * Ctrl-C in the terminal reaches our handler, which stops pods first and daemons last.
 */
export async function spawnDaemon(cmd: string, args: string[], logPath: string, pidPath: string): Promise<Daemon> {
  const out = createWriteStream(logPath, { flags: 'a' });
  await once(out, 'open');
  const child = spawn(cmd, args, { stdio: ['ignore', out, out], detached: true });
  child.unref();
  let exitInfo: string | undefined;
  const exited = new Promise<void>((resolve) => {
    child.on('exit', (code, signal) => {
      exitInfo = `code ${code} signal ${signal}`;
      resolve();
    });
    child.on('error', (err) => {
      exitInfo = err.message;
      resolve();
    });
  });
  if (child.pid) await writeFile(pidPath, String(child.pid));
  return {
    pid: child.pid,
    exitInfo: () => exitInfo,
    async stop() {
      if (exitInfo === undefined && child.pid) {
        child.kill('SIGTERM');
        const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
        await exited;
        clearTimeout(timer);
      }
      out.end();
      await rm(pidPath, { force: true });
    },
  };
}
