import { spawn } from 'node:child_process';
import { createWriteStream } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { once } from 'node:events';
import os from 'node:os';
import path from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { KUBELET_BIN } from './kubelet-process.ts';

/**
 * `kubelet-ts hollow` as its own process, as an operator runs it (`bin/kubelet-ts.mjs hollow`:
 * the compiled build when it is fresh), with its output in a log file. The integration test and
 * bench:hollow start it here and stop it with a signal.
 */
export interface HollowProcess {
  pid: number;
  /** The node names, P-0 .. P-(N-1). */
  names: string[];
  /** 'compiled' or 'sources', from the command's start line. */
  code: string;
  /** Its output (pino JSON lines on stderr). */
  logFile: string;
  /** Everything it wrote so far. */
  output(): Promise<string>;
  /** Resolves with the exit code (or the signal's name) once it exited. */
  exited: Promise<number | string>;
  /** Sends `signal` (default SIGINT, a Ctrl-C), waits for the exit (SIGKILL after `timeoutMs`), removes the log's directory; resolves with the exit code and the output. */
  stop(signal?: NodeJS.Signals, timeoutMs?: number): Promise<{ code: number | string; output: string }>;
}

export interface HollowProcessOptions {
  nodes: number;
  kubeconfig: string;
  prefix: string;
  /** More flags (`--cleanup`, `--node-labels`, ...). */
  args?: string[];
  /** Until the command says its nodes started. Default 120 s. */
  startTimeoutMs?: number;
  /** More environment for the process (NODE_OPTIONS, say). */
  env?: NodeJS.ProcessEnv;
}

/** Starts the command and waits for its 'hollow nodes started' line; throws with its output when it exits first. */
export async function startHollowProcess(opts: HollowProcessOptions): Promise<HollowProcess> {
  const dir = await mkdtemp(path.join(os.tmpdir(), 'kts-hollow-proc-'));
  const logFile = path.join(dir, 'hollow.log');
  const out = createWriteStream(logFile);
  await once(out, 'open');
  // The nodes' state in this helper's dir (removed with it): a process killed or crashed
  // never removes the temporary directory it would make itself.
  const rootDir = (opts.args ?? []).includes('--root-dir') ? [] : ['--root-dir', path.join(dir, 'state')];
  const child = spawn(KUBELET_BIN, ['hollow', '--nodes', String(opts.nodes), '--kubeconfig', opts.kubeconfig, '--node-name-prefix', opts.prefix, ...rootDir, ...(opts.args ?? [])], { stdio: ['ignore', out, out], ...(opts.env ? { env: { ...process.env, ...opts.env } } : {}) });
  const exited = once(child, 'exit').then(([code, signal]) => (code ?? signal) as number | string);
  const output = () => readFile(logFile, 'utf8').catch(() => '');
  const cleanup = async () => {
    out.end();
    await rm(dir, { recursive: true, force: true });
  };
  const deadline = performance.now() + (opts.startTimeoutMs ?? 120_000);
  let code: string | undefined;
  while (code === undefined) {
    if (child.exitCode !== null || child.signalCode !== null) {
      const text = await output();
      await cleanup();
      throw Object.assign(new Error(`kubelet-ts hollow exited during start (${child.exitCode ?? child.signalCode}):\n${text.split('\n').slice(-15).join('\n')}`), { exitCode: child.exitCode, output: text });
    }
    if (performance.now() > deadline) {
      child.kill('SIGKILL');
      await exited;
      const text = await output();
      await cleanup();
      throw new Error(`kubelet-ts hollow did not start ${opts.nodes} nodes within ${opts.startTimeoutMs ?? 120_000} ms:\n${text.split('\n').slice(-15).join('\n')}`);
    }
    await sleep(200);
    const started = (await output()).split('\n').map((l) => { try { return JSON.parse(l) as { msg?: string; code?: string }; } catch { return undefined; } }).find((l) => l?.msg === 'hollow nodes started');
    if (started) code = started.code ?? 'unknown';
  }
  return {
    pid: child.pid!,
    names: Array.from({ length: opts.nodes }, (_, i) => `${opts.prefix}-${i}`),
    code,
    logFile,
    output,
    exited,
    async stop(signal = 'SIGINT', timeoutMs = 60_000) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill(signal);
        const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
        await exited;
        clearTimeout(timer);
      }
      const result = { code: await exited, output: await output() };
      await cleanup();
      return result;
    },
  };
}

/** Runs the command to its exit (a start that must fail): exit code and output. */
export async function runHollowToExit(args: string[], timeoutMs = 60_000): Promise<{ code: number | string; output: string }> {
  const child = spawn(KUBELET_BIN, ['hollow', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let output = '';
  child.stdout!.on('data', (d: Buffer) => (output += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (output += d.toString()));
  const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
  const [code, signal] = await once(child, 'exit');
  clearTimeout(timer);
  return { code: (code ?? signal) as number | string, output };
}
