/**
 * The up console's kubelet, kept running as systemd's `Restart=always` keeps a node's: the
 * kubelet is crash-only (a bug ends it, core/cli.ts), its pods keep running, and the kubelet
 * started again takes them over. Each exit is said on the console in plain words, with the
 * end of the kubelet's log; a kubelet that keeps exiting (a broken config, a bug at start) is
 * given up on after a few tries, and the console stops the node.
 */
import type { ChildProcess } from 'node:child_process';

/** The kubelet's exit code for a bug (an uncaught exception or rejection); core/cli.ts. */
export const KUBELET_CRASH_EXIT_CODE = 70;

export interface KubeletSupervisorOptions {
  /** Starts the kubelet (its output already wired by the caller). */
  spawn: () => ChildProcess;
  say: (text: string) => void;
  /** Text as it is (the log's last lines). */
  raw: (text: string) => void;
  /** The last lines of the kubelet's log, shown after it exited. */
  logTail: () => Promise<string>;
  /** The kubelet kept exiting (or could not be started): the console stops the node. */
  giveUp: () => void;
  /** Wait before a restart (systemd's RestartSec). Default 2 s. */
  restartDelayMs?: number;
  /** At most this many restarts within `windowMs` (systemd's StartLimitBurst / StartLimitIntervalSec). Default 5 in 10 min. */
  maxRestarts?: number;
  windowMs?: number;
  now?: () => number;
}

/** An exit in words: a crash on a bug, a signal, or another exit code. */
export function describeExit(code: number | null, signal: NodeJS.Signals | null): string {
  if (signal) return `killed by ${signal}`;
  if (code === KUBELET_CRASH_EXIT_CODE) return `exit code ${code}: it stopped on a bug, which its log names`;
  return `exit code ${code}`;
}

export class KubeletSupervisor {
  private child: ChildProcess | undefined;
  private exited: Promise<void> = Promise.resolve();
  private restartTimer: NodeJS.Timeout | undefined;
  private stopping = false;
  /** When the kubelet was restarted, within the window. */
  private restarts: number[] = [];

  constructor(private readonly opts: KubeletSupervisorOptions) {}

  /** The running kubelet's pid, if one runs. */
  get pid(): number | undefined {
    return this.child && this.child.exitCode === null && this.child.signalCode === null ? this.child.pid : undefined;
  }

  /** Starts the kubelet; it is started again after each exit until `stop()`. */
  start(): void {
    if (this.stopping) return;
    const child = this.opts.spawn();
    this.child = child;
    let settled = false;
    this.exited = new Promise<void>((resolve) => {
      child.once('exit', (code, signal) => {
        if (settled) return;
        settled = true;
        resolve();
        if (!this.stopping) void this.onExit(code, signal);
      });
      child.once('error', (err) => {
        if (settled) return;
        settled = true;
        resolve();
        if (this.stopping) return;
        this.opts.say(`could not start the kubelet: ${err.message}`);
        this.opts.giveUp();
      });
    });
  }

  /** Stops the kubelet (SIGTERM; SIGKILL after `timeoutMs`) and starts it no more. */
  async stop(timeoutMs: number): Promise<void> {
    this.stopping = true;
    clearTimeout(this.restartTimer);
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    this.opts.say('stopping the kubelet (SIGTERM)...');
    child.kill('SIGTERM');
    const timer = setTimeout(() => {
      this.opts.say(`the kubelet did not stop in ${timeoutMs / 1000} s: SIGKILL`);
      child.kill('SIGKILL');
    }, timeoutMs);
    await this.exited;
    clearTimeout(timer);
  }

  private async onExit(code: number | null, signal: NodeJS.Signals | null): Promise<void> {
    const { say } = this.opts;
    say(`the kubelet exited (${describeExit(code, signal)}); the last lines of its log:`);
    this.opts.raw(await this.opts.logTail());
    if (this.stopping) return;
    const now = (this.opts.now ?? Date.now)();
    const windowMs = this.opts.windowMs ?? 10 * 60_000;
    const max = this.opts.maxRestarts ?? 5;
    this.restarts = this.restarts.filter((t) => now - t < windowMs);
    if (this.restarts.length >= max) {
      say(`the kubelet exited ${max + 1} times within ${Math.round(windowMs / 60_000)} min: not starting it again; stopping the node`);
      this.opts.giveUp();
      return;
    }
    this.restarts.push(now);
    const delay = this.opts.restartDelayMs ?? 2000;
    say(`starting the kubelet again in ${delay / 1000} s (restart ${this.restarts.length} of at most ${max} in ${Math.round(windowMs / 60_000)} min); its pods keep running, and it takes them over when it is back`);
    this.restartTimer = setTimeout(() => {
      this.restartTimer = undefined;
      this.start();
      if (this.child?.pid) say(`kubelet     started again, pid ${this.child.pid}`);
    }, delay);
  }
}
