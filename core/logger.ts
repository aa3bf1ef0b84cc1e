import { pino, type Logger, type LoggerOptions } from 'pino';

export type { Logger };

/**
 * Creates the kubelet's root logger: pino JSON lines on stderr (stdout stays free for
 * command output such as `kubelet-ts plugins`). Components take child loggers with their
 * own fields (`{component}`, `{pod}`, `{plugin, hook}`) rather than formatting messages.
 */
export function createLogger(options: { level?: string; destination?: NodeJS.WritableStream } = {}): Logger {
  const opts: LoggerOptions = {
    level: options.level ?? process.env.KUBELET_LOG_LEVEL ?? 'info',
    base: { pid: process.pid },
    timestamp: pino.stdTimeFunctions.isoTime,
  };
  return pino(opts, (options.destination ?? pino.destination(2)) as pino.DestinationStream);
}

/** A logger that drops everything: for unit tests that do not look at logs. */
export function silentLogger(): Logger {
  return pino({ level: 'silent' });
}
