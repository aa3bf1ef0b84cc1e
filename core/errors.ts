/**
 * Typed errors shared by the core and plugins. A provider (runtime, network, volume)
 * throws these so the core can tell "retry later" from "give up" without parsing text.
 */
export type ErrorCode = 'NotFound' | 'InvalidInput' | 'Unavailable' | 'AlreadyExists' | 'DeadlineExceeded' | 'Internal';

// Errors are recognised by a registry-wide symbol, not instanceof: a plugin may bring its
// own copy of this module (an npm package with its own kubelet-ts, or a loader that loads
// the file twice), and its errors must still be understood.
const KUBELET_ERROR = Symbol.for('kubelet-ts.KubeletError');
const PLUGIN_ERROR = Symbol.for('kubelet-ts.PluginError');

export class KubeletError extends Error {
  readonly code: ErrorCode;
  readonly [KUBELET_ERROR] = true;
  constructor(code: ErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.code = code;
    this.name = `KubeletError(${code})`;
  }
}

/** True for a KubeletError from any copy of this module. */
export function isKubeletError(err: unknown): err is KubeletError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[KUBELET_ERROR] === true;
}

/** True for a PluginError from any copy of this module. */
export function isPluginError(err: unknown): err is PluginError {
  return typeof err === 'object' && err !== null && (err as Record<symbol, unknown>)[PLUGIN_ERROR] === true;
}

export const notFound = (msg: string, cause?: unknown) => new KubeletError('NotFound', msg, { cause });
export const invalidInput = (msg: string, cause?: unknown) => new KubeletError('InvalidInput', msg, { cause });
export const unavailable = (msg: string, cause?: unknown) => new KubeletError('Unavailable', msg, { cause });

export function isNotFound(err: unknown): boolean {
  return isKubeletError(err) && err.code === 'NotFound';
}

/**
 * An error raised by a plugin, named for the plugin (and the hook, when a tap threw). Its
 * `code` is its cause's when the plugin threw a coded error, else `Internal`, so the core acts
 * on a plugin's error as on a runtime's.
 */
export class PluginError extends Error {
  readonly [PLUGIN_ERROR] = true;
  readonly plugin: string;
  readonly hook: string | undefined;
  readonly code: ErrorCode;
  constructor(plugin: string, message: string, options?: { hook?: string; cause?: unknown; code?: ErrorCode }) {
    const where = options?.hook ? `plugin '${plugin}' (hook ${options.hook})` : `plugin '${plugin}'`;
    super(`${where}: ${message}`, { cause: options?.cause });
    this.plugin = plugin;
    this.hook = options?.hook;
    this.code = options?.code ?? errorCode(options?.cause);
    this.name = 'PluginError';
  }
}

/** The code of a coded error (a KubeletError, or a PluginError carrying one); `Internal` for anything else. */
export function errorCode(err: unknown): ErrorCode {
  if (isKubeletError(err) || isPluginError(err)) return (err as { code?: ErrorCode }).code ?? 'Internal';
  return 'Internal';
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
