import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { run, which } from '../../tools/node-env/util.ts';
import { realPartMissing } from './real-part.ts';

/**
 * The real kubectl for tests (the machine image's /usr/bin/kubectl), against the test control
 * plane's admin kubeconfig. Every run is bounded in time; long-running ones (logs -f,
 * port-forward, attach) are children the test stops by their pid.
 */

const KUBECTL_PATHS = ['/usr/bin/kubectl', '/usr/local/bin/kubectl'];

/** The kubectl binary, if there is one. */
export function kubectlPath(): string | undefined {
  return KUBECTL_PATHS.find((p) => existsSync(p)) ?? which('kubectl') ?? undefined;
}

/** kubectl for a test that needs it: with `CI=true` a missing kubectl fails the test; elsewhere it is skipped with a message. */
export function kubectlOrSkip(ctx: Mocha.Context): string {
  const found = kubectlPath();
  if (!found) realPartMissing(ctx, 'no kubectl', `looked in ${KUBECTL_PATHS.join(', ')} and on PATH`);
  return found;
}

export interface Kubectl {
  bin: string;
  kubeconfig: string;
  /** Runs kubectl to completion (bounded): exit code and output, never a rejection for a non-zero exit. */
  run(args: string[], opts?: { input?: string; timeoutMs?: number }): Promise<{ code: number | null; stdout: string; stderr: string }>;
  /** Starts a long-running kubectl (logs -f, port-forward, attach); the test stops it. */
  start(args: string[]): RunningCommand;
  /** Starts kubectl under `script`, with a pseudo-terminal as its stdin and stdout (for -t). */
  startWithTty(args: string[]): RunningCommand;
}

export interface RunningCommand {
  child: ChildProcess;
  /** Everything written so far. */
  stdout(): string;
  stderr(): string;
  /** Resolves when `check(stdout, stderr)` holds; rejects after `timeoutMs` (or when the command exits first) with what it printed. */
  waitFor(what: string, check: (out: string, err: string) => boolean, timeoutMs?: number): Promise<void>;
  /** Resolves with the exit code once it exited. */
  exited: Promise<number | null>;
  /** SIGTERM, then SIGKILL after 5 s; resolves once it exited. */
  stop(signal?: NodeJS.Signals): Promise<void>;
}

function shellQuote(s: string): string {
  return /^[\w@%+=:,./-]+$/.test(s) ? s : `'${s.replace(/'/g, `'\\''`)}'`;
}

function track(child: ChildProcess): RunningCommand {
  let out = '';
  let err = '';
  child.stdout?.setEncoding('utf8').on('data', (d: string) => (out += d));
  child.stderr?.setEncoding('utf8').on('data', (d: string) => (err += d));
  child.stdin?.on('error', () => {});
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  let done = false;
  void exited.then(() => (done = true));
  return {
    child,
    stdout: () => out,
    stderr: () => err,
    exited,
    async waitFor(what, check, timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      while (!check(out, err)) {
        if (done && !check(out, err)) throw new Error(`${what}: the command exited first; stdout: ${JSON.stringify(out.slice(-2000))}; stderr: ${JSON.stringify(err.slice(-2000))}`);
        if (Date.now() > deadline) throw new Error(`${what}: not seen within ${timeoutMs} ms; stdout: ${JSON.stringify(out.slice(-2000))}; stderr: ${JSON.stringify(err.slice(-2000))}`);
        await new Promise((r) => setTimeout(r, 100));
      }
    },
    async stop(signal = 'SIGTERM') {
      if (done) return;
      child.kill(signal);
      const timer = setTimeout(() => child.kill('SIGKILL'), 5000);
      await exited;
      clearTimeout(timer);
    },
  };
}

export function kubectl(bin: string, kubeconfig: string): Kubectl {
  const env = { ...process.env, KUBECONFIG: kubeconfig };
  return {
    bin,
    kubeconfig,
    async run(args, opts = {}) {
      const r = await run(bin, args, { env, allowFailure: true, timeoutMs: opts.timeoutMs ?? 60_000, ...(opts.input !== undefined ? { input: opts.input } : {}) });
      return { code: r.code, stdout: r.stdout, stderr: r.stderr };
    },
    start(args) {
      return track(spawn(bin, args, { env, stdio: ['pipe', 'pipe', 'pipe'] }));
    },
    startWithTty(args) {
      // util-linux script: -q quiet, -e the child's exit code, -c the command; the typescript goes to /dev/null.
      const command = [bin, ...args].map(shellQuote).join(' ');
      return track(spawn('script', ['-qec', command, '/dev/null'], { env, stdio: ['pipe', 'pipe', 'pipe'] }));
    },
  };
}
