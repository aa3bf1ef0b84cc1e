import type { Logger } from './logger.ts';

/** The exit code of a process ended by a bug (an uncaught exception or rejection): sysexits' EX_SOFTWARE. */
export const CRASH_EXIT_CODE = 70;

export interface CrashOptions {
  logger: Logger;
  /** What survives the exit and what brings the process back, the end of the fatal line. */
  consequence: string;
  /** The plugin whose code the error's stack runs through, if any: the line names it. */
  pluginOfError?: (err: unknown) => string | undefined;
}

/**
 * Crash-only, as upstream's kubelet on a panic: a throw nothing caught is a bug, after which
 * the process's state is unknown, so it is logged (naming the plugin whose code the stack runs
 * through) and the process exits with CRASH_EXIT_CODE. Running on would leave nodes that
 * heartbeat as Ready while a pod worker or a watch is dead; a restart adopts what runs. Throws
 * a process expects (a hook tap, a gRPC call, a timer of its own) are caught where they happen.
 */
export function exitOnUncaughtErrors(opts: CrashOptions): void {
  const crash = (what: string) => (err: unknown) => {
    const plugin = opts.pluginOfError?.(err);
    const culprit = plugin ? `in plugin '${plugin}' ` : '';
    opts.logger.fatal({ err, ...(plugin ? { plugin } : {}), exitCode: CRASH_EXIT_CODE }, `${what} ${culprit}(a bug: please report it${plugin ? ` to the plugin's authors` : ''}); exiting: ${opts.consequence}`);
    opts.logger.flush();
    process.exit(CRASH_EXIT_CODE);
  };
  process.on('uncaughtException', crash('uncaught exception'));
  process.on('unhandledRejection', crash('unhandled promise rejection'));
}

export interface StopSignalOptions {
  logger: Logger;
  /** The bounded stop; the process exits 0 once it resolves (1 if it throws). */
  stop: (signal: NodeJS.Signals) => Promise<void>;
  /** The first line, at info, with the signal. */
  stoppingMessage: string;
  /** The backstop: past it the process exits 1, saying so. */
  deadlineMs: number;
  /** What the deadline's line adds after 'exiting now'. */
  deadlineConsequence: string;
}

/**
 * SIGTERM and SIGINT run `stop` once, bounded by a deadline; a second signal means "now". A
 * signal sent to the process group arrives twice within a moment (timeout(1), npm forwarding
 * it to its child), so a repeat within DUPLICATE_SIGNAL_MS is the same request, not a second.
 */
export function stopOnSignals(opts: StopSignalOptions): { stopping: () => boolean } {
  let firstAt: number | undefined;
  const onSignal = (signal: NodeJS.Signals) => {
    if (firstAt !== undefined) {
      if (performance.now() - firstAt < DUPLICATE_SIGNAL_MS) return;
      opts.logger.warn({ signal }, 'second signal: exiting now');
      opts.logger.flush();
      process.exit(1);
    }
    firstAt = performance.now();
    opts.logger.info({ signal }, opts.stoppingMessage);
    setTimeout(() => {
      opts.logger.warn({ signal, waitedMs: opts.deadlineMs }, `shutdown did not finish in time: exiting now (${opts.deadlineConsequence})`);
      opts.logger.flush();
      process.exit(1);
    }, opts.deadlineMs).unref();
    opts.stop(signal).then(
      () => {
        opts.logger.flush();
        process.exit(0);
      },
      (err: unknown) => {
        opts.logger.error({ err }, 'shutdown failed');
        opts.logger.flush();
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', onSignal);
  process.on('SIGINT', onSignal);
  return { stopping: () => firstAt !== undefined };
}

/** Two deliveries of one signal to the process group land this close together. */
const DUPLICATE_SIGNAL_MS = 1000;

/**
 * Whether Node opens its inspector on SIGUSR1 in this process. Root in a pod with hostPID holds
 * CAP_KILL over the kubelet (containerd's default capabilities), and with hostNetwork reaches
 * 127.0.0.1:9229, where the inspector runs any code it is sent as the kubelet: root on the host.
 * `--disable-sigusr1` (Node 22.14+) closes that; bin/kubelet-ts.mjs's shebang passes it.
 */
export function inspectorOpensOnSignal(execArgv = process.execArgv, nodeOptions = process.env.NODE_OPTIONS ?? ''): boolean {
  if (!process.features.inspector) return false;
  return ![...execArgv, ...nodeOptions.split(/\s+/)].includes('--disable-sigusr1');
}

/** The start's warning when SIGUSR1 would open the inspector (the kubelet run without the executable's flags). */
export function warnOfInspectorSignal(logger: Logger): void {
  if (inspectorOpensOnSignal()) {
    logger.warn('Node opens its inspector on SIGUSR1 in this process: a pod with hostPID and hostNetwork could run code as the kubelet; run node with --disable-sigusr1 (bin/kubelet-ts does)');
  }
}
