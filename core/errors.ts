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
 * Why the plugin host refused a plugin (or the plugin list) while loading, starting or
 * closing it: a name a program can act on, as fastify's `FST_ERR_PLUGIN_*` codes. The message
 * says the same for people.
 */
export type PluginHostErrorCode =
  /** Not a built-in, a path or an installed npm module; a file that does not import; an export that is no plugin. */
  | 'PLUGIN_NOT_FOUND'
  /** Its `kubeletTs` range excludes this kubelet-ts, or is no range. */
  | 'PLUGIN_VERSION_MISMATCH'
  /** Its options fail its `optionsSchema` (or the schema itself is invalid). */
  | 'PLUGIN_BAD_OPTIONS'
  /** The same plugin listed twice. */
  | 'PLUGIN_DUPLICATE'
  /** A slot another plugin already fills. */
  | 'PLUGIN_SLOT_TAKEN'
  /** A slot its kind may not fill, one it fills without declaring it, or one it declares and leaves empty. */
  | 'PLUGIN_SLOT_MISMATCH'
  /** A required slot (`runtime`) nobody fills. */
  | 'PLUGIN_SLOT_MISSING'
  /** It requires a slot or plugin no configured plugin provides. */
  | 'PLUGIN_REQUIREMENT_MISSING'
  /** Plugins that require each other in a cycle. */
  | 'PLUGIN_CYCLE'
  /** An entry that is no `'name'`, `['name', {options}]` or plugin object; `requires` that is no list of names; `ctx.skip` after a tap or provide. */
  | 'PLUGIN_MISUSE'
  /** It taps a hook that does not exist (`ctx.hooks.beforeSandbx`), or with a method the hook lacks (`tapPromise` on a sync hook). */
  | 'PLUGIN_UNKNOWN_HOOK'
  /** Its `kind` is none of the plugin kinds. */
  | 'PLUGIN_BAD_KIND'
  /** Its apply or start threw. */
  | 'PLUGIN_FAILED'
  /** Its apply or start did not finish within hookTimeout. */
  | 'PLUGIN_TIMEOUT';

/**
 * An error raised by a plugin, named for the plugin (and the hook, when a tap threw). Its
 * `code` is its cause's when the plugin threw a coded error, else `Internal`, so the core acts
 * on a plugin's error as on a runtime's. When the plugin host refused the plugin, `hostCode`
 * says why.
 */
export class PluginError extends Error {
  readonly [PLUGIN_ERROR] = true;
  readonly plugin: string;
  readonly hook: string | undefined;
  readonly code: ErrorCode;
  readonly hostCode: PluginHostErrorCode | undefined;
  constructor(plugin: string, message: string, options?: { hook?: string; cause?: unknown; code?: ErrorCode; hostCode?: PluginHostErrorCode }) {
    const where = options?.hook ? `plugin '${plugin}' (hook ${options.hook})` : `plugin '${plugin}'`;
    super(`${where}: ${message}`, { cause: options?.cause });
    this.plugin = plugin;
    this.hook = options?.hook;
    this.code = options?.code ?? errorCode(options?.cause);
    this.hostCode = options?.hostCode;
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

/** The plugin an error names (a PluginError's plugin), if any: for log lines that say who failed. */
export function pluginOf(err: unknown): string | undefined {
  return isPluginError(err) ? err.plugin : undefined;
}

export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
