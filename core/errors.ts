/**
 * Typed errors shared by the core and plugins. A provider (runtime, network, volume)
 * throws these so the core can tell "retry later" from "give up" without parsing text.
 */
export type ErrorCode = 'NotFound' | 'InvalidInput' | 'Unavailable' | 'AlreadyExists' | 'DeadlineExceeded' | 'Internal';

export class KubeletError extends Error {
  readonly code: ErrorCode;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = `KubeletError(${code})`;
  }
}

export const notFound = (msg: string, cause?: unknown) => new KubeletError('NotFound', msg, { cause });
export const invalidInput = (msg: string, cause?: unknown) => new KubeletError('InvalidInput', msg, { cause });
export const unavailable = (msg: string, cause?: unknown) => new KubeletError('Unavailable', msg, { cause });

export function isNotFound(err: unknown): boolean {
  return err instanceof KubeletError && err.code === 'NotFound';
}

/** An error raised by a plugin, named for the plugin (and the hook, when a tap threw). */
export class PluginError extends Error {
  readonly plugin: string;
  readonly hook: string | undefined;
  constructor(plugin: string, message: string, options?: { hook?: string; cause?: unknown }) {
    const where = options?.hook ? `plugin '${plugin}' (hook ${options.hook})` : `plugin '${plugin}'`;
    super(`${where}: ${message}`, { cause: options?.cause });
    this.plugin = plugin;
    this.hook = options?.hook;
    this.name = 'PluginError';
  }
}

/** The configuration (file or flags) is invalid; the message names the source and field. */
export class ConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'ConfigError';
  }
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
