import { Ajv } from 'ajv';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Logger } from '../logger.ts';
import { PluginError, errorMessage, isPluginError } from '../errors.ts';
import type { KubeletHooks, ProbeResultEvent } from '../hooks.ts';
import type { KubeletConfig, PluginEntry } from '../config/types.ts';
import { PACKAGE_ROOT } from '../util/package-root.ts';
import { formatAjvErrors } from '../config/ajv-errors.ts';
import { importModule } from '../util/import-module.ts';
import { withTimeout } from '../util/with-timeout.ts';
import { nearestName } from '../util/nearest-name.ts';
import { PLUGIN_KINDS, REQUIRED_SLOTS, SLOT_KINDS, type Capabilities, type HostServices, type KubeletPlugin, type PluginEvent, type ProbeRun, type PluginContext } from './plugin-api.ts';
import { pluginHooksView, type TapRecord } from './plugin-hooks.ts';
import { isolateTaps } from './tap-isolation.ts';
import { orderPlugins } from './plugin-order.ts';
import { pluginOfError } from './plugin-attribution.ts';
import { satisfies } from './version-range.ts';

/** Where the bundled plugins live: `plugins/<name>/index.ts` of this package. */
const BUILTIN_DIR = path.join(PACKAGE_ROOT, 'plugins');

/** How long one plugin's cleanup may take at shutdown. */
const CLOSE_TIMEOUT_MS = 5000;

/** What every "there is no such plugin" error carries. */
const NOT_FOUND = { code: 'NotFound', hostCode: 'PLUGIN_NOT_FOUND' } as const;

/** A plugin after loading, for logs and `kubelet-ts plugins`. */
export interface LoadedPlugin {
  name: string;
  kind: string;
  /** How it was found: built-in folder, npm module, file path, or an object in the config. */
  origin: 'builtin' | 'module' | 'path' | 'inline';
  location: string;
  /** Where its code lives (its folder, package directory or file), to name it in a crash; none for an inline plugin. */
  root: string | undefined;
  options: unknown;
  taps: TapRecord[];
  slots: string[];
  applyMs: number;
  /** How long its start phase took (undefined until the host started the plugins, or when it registered nothing to start). */
  startMs?: number;
}

/** A plugin that declined to load (`ctx.skip`), for logs and `kubelet-ts plugins`. */
export interface SkippedPlugin { name: string; reason: string }

/** What the host is built over. */
export interface PluginHostDeps {
  hooks: KubeletHooks;
  config: KubeletConfig;
  logger: Logger;
  services?: HostServices;
  /**
   * The directory a plugin path (`./my-plugin.ts`) and an npm name are resolved from. Default:
   * the plugins file's (`pluginsConfigFile`, else `configFile`), where an operator installs
   * them; the test harness passes the caller's project, as its config file is a temporary one.
   */
  resolveFrom?: string;
}

/** A resolved entry, before it is applied. */
interface ResolvedEntry {
  plugin: KubeletPlugin<any>;
  name: string;
  origin: LoadedPlugin['origin'];
  location: string;
  root: string | undefined;
  options: unknown;
  index: number;
  /** The slots it declared (it must fill each of them). */
  declared: string[];
  /** The slots it may fill: those declared, else its kind's slot (what the order counts it as providing). */
  provides: string[];
  requires: string[];
}

/** Thrown by `ctx.skip` and caught by the host. */
class SkipSignal {
  constructor(readonly reason: string) {}
}

/** This kubelet-ts's version, which plugins' `kubeletTs` ranges are checked against. */
export const HOST_VERSION: string = (JSON.parse(fs.readFileSync(path.join(PACKAGE_ROOT, 'package.json'), 'utf8')) as { version: string }).version;

/** A plugin folder's entry module: index.ts in the sources, index.js in a compiled build. */
function folderEntry(dir: string): string | undefined {
  for (const name of ['index.ts', 'index.js', 'index.mjs']) {
    const file = path.join(dir, name);
    if (fs.existsSync(file)) return file;
  }
  return undefined;
}

/** Lists the bundled plugin names (folders of plugins/ with an entry module). */
export function builtinPluginNames(): string[] {
  try {
    return fs.readdirSync(BUILTIN_DIR).filter((n) => folderEntry(path.join(BUILTIN_DIR, n)) !== undefined).sort();
  } catch {
    return [];
  }
}

/**
 * The plugin host (a registry in the style of containerd's and avvio's): resolves every
 * entry, checks each plugin's host version range, options (its own schema) and declared
 * slots against its kind, orders the plugins so each comes after the providers of what it
 * requires (config order otherwise), applies them with their own context (registration only),
 * then, in `startAll`, runs their start phase (what touches the node). Each step fails with a
 * `PluginError` naming the plugin.
 */
export class PluginHost {
  readonly loaded: LoadedPlugin[] = [];
  readonly skipped: SkippedPlugin[] = [];
  private readonly starters: Array<{ record: LoadedPlugin; fn: () => void | Promise<void> }> = [];
  private startedAll = false;
  private runtimeClosed = false;
  private readonly slots = new Map<keyof Capabilities, { plugin: string; impl: unknown }>();
  private readonly closers: Array<{ plugin: string; fn: () => void | Promise<void> }> = [];
  private readonly ajv = new Ajv({ allErrors: true, useDefaults: true, strict: false, verbose: true });

  constructor(private readonly deps: PluginHostDeps) {}

  /** Resolves every entry, orders the plugins by what they require, applies them, then checks the required slots. */
  async loadAll(entries: PluginEntry[]): Promise<void> {
    const resolved: ResolvedEntry[] = [];
    for (const [index, entry] of entries.entries()) {
      const r = await this.resolveEntry(entry, index);
      const twin = resolved.find((x) => x.name === r.name);
      if (twin) throw new PluginError(r.name, `is listed twice in plugins (entries ${twin.index} and ${index})`, { code: 'InvalidInput', hostCode: 'PLUGIN_DUPLICATE' });
      if (this.loaded.some((x) => x.name === r.name)) throw new PluginError(r.name, 'is already loaded', { code: 'AlreadyExists', hostCode: 'PLUGIN_DUPLICATE' });
      resolved.push(r);
    }
    for (const r of orderPlugins(resolved)) await this.apply(r);
    for (const slot of REQUIRED_SLOTS) {
      if (!this.slots.has(slot)) {
        const pluginsFile = this.deps.config.pluginsConfigFile ?? this.deps.config.configFile;
        const where = pluginsFile ? ` in ${pluginsFile}` : '';
        throw new PluginError('host', `no plugin provides the '${slot}' slot: add a ${slot} plugin (for example 'cri-containerd') to plugins${where}`, { code: 'NotFound', hostCode: 'PLUGIN_SLOT_MISSING' });
      }
    }
  }

  /**
   * The start phase: each applied plugin's `onStart` work, in apply order. A failure stops the
   * start with a PluginError naming the plugin. Runs once.
   */
  async startAll(): Promise<void> {
    if (this.startedAll) return;
    this.startedAll = true;
    for (const { record, fn } of this.starters) {
      const t0 = performance.now();
      await this.runPhase(record.name, 'start', fn);
      record.startMs = (record.startMs ?? 0) + (performance.now() - t0);
    }
  }

  /**
   * Runs a plugin's apply or start work, bounded by hookTimeout as a tap is (a plugin that
   * hangs there fails the kubelet's start, naming itself, instead of holding it forever); a
   * throw or an overrun is a PluginError naming the plugin. `ctx.skip` passes through.
   */
  private async runPhase(plugin: string, phase: 'apply' | 'start', fn: () => void | Promise<void>): Promise<void> {
    const ms = this.deps.config.hookTimeoutMs;
    try {
      await withTimeout(fn, ms, { error: () => new PluginError(plugin, `${phase} did not finish within ${ms} ms (hookTimeout)`, { code: 'DeadlineExceeded', hostCode: 'PLUGIN_TIMEOUT' }) });
    } catch (err) {
      if (err instanceof SkipSignal || isPluginError(err)) throw err;
      throw new PluginError(plugin, errorMessage(err), { cause: err, hostCode: 'PLUGIN_FAILED' });
    }
  }

  /** The provider of a slot; throws if none (the host checks required slots at start). */
  slot<K extends keyof Capabilities>(slot: K): Capabilities[K] {
    const claim = this.slots.get(slot);
    if (!claim) throw new PluginError('host', `no plugin provides the '${slot}' slot`, { code: 'NotFound', hostCode: 'PLUGIN_SLOT_MISSING' });
    return claim.impl as Capabilities[K];
  }

  /** Which plugin fills a slot. */
  slotOwner(slot: keyof Capabilities): string | undefined {
    return this.slots.get(slot)?.plugin;
  }

  private service(): HostServices {
    if (!this.deps.services) throw new PluginError('host', 'host services are not available in this context (plugins are only being listed)');
    return this.deps.services;
  }

  /**
   * Runs the plugins' cleanups in reverse load order, then closes the runtime slot's provider
   * (`ContainerRuntime.close`: the host, not its plugin, does that, after every plugin that may
   * still have called it). One failing, or hanging past CLOSE_TIMEOUT_MS, does not stop the
   * rest; past `deadline` (a Date.now() time: the kubelet's whole stop is bounded) what is left
   * is cut short, named in the log. Runs each cleanup once.
   */
  async close(options: { deadline?: number } = {}): Promise<void> {
    const deadline = options.deadline ?? Infinity;
    const work = this.closers.splice(0).reverse();
    const runtime = this.slots.get('runtime');
    if (runtime && !this.runtimeClosed) {
      this.runtimeClosed = true;
      const impl = runtime.impl as Partial<Capabilities['runtime']>;
      if (typeof impl.close === 'function') work.push({ plugin: runtime.plugin, fn: () => impl.close!() });
    }
    for (const [i, { plugin, fn }] of work.entries()) {
      const left = Math.min(CLOSE_TIMEOUT_MS, deadline - Date.now());
      if (left <= 0) {
        this.deps.logger.warn({ plugins: [...new Set(work.slice(i).map((w) => w.plugin))] }, 'stop time is up: plugin cleanups not run');
        return;
      }
      try {
        await withTimeout(fn, left, { error: () => new Error(`did not finish within ${Math.round(left)} ms`) });
      } catch (err) {
        this.deps.logger.warn({ plugin, err: errorMessage(err) }, 'plugin close failed');
      }
    }
  }

  /** Finds an entry's plugin, checks its host version range, declared slots and options. */
  private async resolveEntry(entry: PluginEntry, index: number): Promise<ResolvedEntry> {
    const { ref, options } = normalizeEntry(entry, index);
    const { plugin, origin, location, root } = await this.resolve(ref, index);
    const name = plugin.name;
    if (plugin.kubeletTs !== undefined) {
      let ok: boolean;
      try {
        ok = satisfies(HOST_VERSION, String(plugin.kubeletTs));
      } catch (err) {
        throw new PluginError(name, `kubeletTs: ${errorMessage(err)}`, { code: 'InvalidInput', hostCode: 'PLUGIN_VERSION_MISMATCH' });
      }
      if (!ok) throw new PluginError(name, `works with kubelet-ts ${plugin.kubeletTs}; this is kubelet-ts ${HOST_VERSION}`, { code: 'InvalidInput', hostCode: 'PLUGIN_VERSION_MISMATCH' });
    }
    checkKind(plugin);
    const kindSlot = Object.entries(SLOT_KINDS).find(([, kind]) => kind === plugin.kind)?.[0];
    const declared = (plugin.provides as string[] | undefined) ?? [];
    const provides = plugin.provides ? declared : kindSlot ? [kindSlot] : [];
    for (const slot of declared) {
      const kind = SLOT_KINDS[slot];
      if (kind && plugin.kind !== kind) throw new PluginError(name, `declares it provides the '${slot}' slot, which only a plugin of kind '${kind}' may fill (its kind is '${plugin.kind ?? 'other'}')`, { code: 'InvalidInput', hostCode: 'PLUGIN_SLOT_MISMATCH' });
    }
    const requires = plugin.requires ?? [];
    if (!Array.isArray(requires) || requires.some((r) => typeof r !== 'string' || !r)) throw new PluginError(name, `requires must be a list of slot or plugin names (is ${JSON.stringify(requires)})`, { code: 'InvalidInput', hostCode: 'PLUGIN_MISUSE' });
    return { plugin, name, origin, location, root, options: this.validateOptions(plugin, options ?? {}), index, declared, provides, requires };
  }

  /** Applies one resolved plugin with its own context: registration only (taps, slots, start and close work). */
  private async apply(r: ResolvedEntry): Promise<void> {
    const { plugin, name, origin, location, root } = r;
    const validated = r.options;
    for (const req of r.requires) {
      const byName = this.loaded.some((p) => p.name === req);
      if (!byName && !this.slots.has(req as keyof Capabilities)) {
        throw new PluginError(name, `requires '${req}', which no plugin filled (a plugin of its kind was applied before, but did not provide it)`, { code: 'NotFound', hostCode: 'PLUGIN_REQUIREMENT_MISSING' });
      }
    }
    const stateDir = path.join(this.deps.config.rootDir, 'plugin-state', name.replace(/[\/@]/g, '_'));
    fs.mkdirSync(stateDir, { recursive: true });
    const record: LoadedPlugin = { name, kind: plugin.kind ?? 'other', origin, location, root, options: validated, taps: [], slots: [], applyMs: 0 };
    const logger = this.deps.logger.child({ plugin: name });
    const ctx: PluginContext = Object.freeze({
      name,
      hooks: pluginHooksView(this.deps.hooks, name, (tap) => {
        record.taps.push(tap);
        logger.debug({ hook: tap.hook, stage: tap.stage }, 'tapped hook');
      }),
      logger,
      stateDir,
      config: this.deps.config,
      runtime: () => this.service().runtime(),
      pods: () => this.service().pods(),
      reportProbe: (event: ProbeResultEvent) => this.service().reportProbe(event),
      observeProbeRun: (run: ProbeRun) => this.service().observeProbeRun(run),
      recordEvent: (event: PluginEvent) => this.deps.services?.recordEvent(event),
      devices: () => {
        const devices = this.service().devices;
        if (!devices) throw new PluginError(name, 'this host has no device manager');
        return devices(name);
      },
      isolateHooks: (hooks: object) => {
        const observe = this.deps.services?.observeTap;
        isolateTaps(hooks, this.deps.logger, { timeoutMs: this.deps.config.hookTimeoutMs, ...(observe ? { observe } : {}) });
      },
      use: <K extends keyof Capabilities>(slot: K) => this.slots.get(slot)?.impl as Capabilities[K] | undefined,
      provide: <K extends keyof Capabilities>(slot: K, impl: Capabilities[K]) => {
        if (!r.provides.includes(slot)) {
          const kind = SLOT_KINDS[slot];
          throw new PluginError(name, kind && plugin.kind !== kind
            ? `cannot provide the '${slot}' slot: only a plugin of kind '${kind}' may (its kind is '${plugin.kind ?? 'other'}')`
            : `provides the '${slot}' slot without declaring it: add '${slot}' to its provides`, { code: 'InvalidInput', hostCode: 'PLUGIN_SLOT_MISMATCH' });
        }
        const claim = this.slots.get(slot);
        if (claim) {
          throw new PluginError(name, `cannot provide the '${slot}' slot: plugin '${claim.plugin}' already provides it (keep one of them in plugins)`, { code: 'AlreadyExists', hostCode: 'PLUGIN_SLOT_TAKEN' });
        }
        this.slots.set(slot, { plugin: name, impl });
        record.slots.push(slot);
      },
      onClose: (fn: () => void | Promise<void>) => {
        // Kept aside while apply runs: a plugin that then skips itself has nothing to clean up.
        if (applying) closers.push(fn);
        else this.closers.push({ plugin: name, fn });
      },
      onStart: (fn: () => void | Promise<void>) => {
        starts.push(fn);
      },
      skip: (reason: string): never => {
        if (record.taps.length > 0 || record.slots.length > 0) throw new PluginError(name, 'ctx.skip() must come before any tap or provide', { code: 'InvalidInput', hostCode: 'PLUGIN_MISUSE' });
        throw new SkipSignal(reason);
      },
    });
    const starts: Array<() => void | Promise<void>> = [];
    const closers: Array<() => void | Promise<void>> = [];
    let applying = true;

    const start = performance.now();
    try {
      await this.runPhase(name, 'apply', () => plugin.apply(ctx, validated));
    } catch (err) {
      if (err instanceof SkipSignal) {
        this.skipped.push({ name, reason: err.reason });
        // Info, not a warning: a plugin of the default bundle skips itself on every node that does not use it.
        this.deps.logger.info({ plugin: name, reason: err.reason }, 'plugin skipped itself');
        return;
      }
      // A failed apply may have opened what its cleanups close: the stop that follows runs them.
      for (const fn of closers) this.closers.push({ plugin: name, fn });
      throw err;
    } finally {
      applying = false;
    }
    for (const fn of closers) this.closers.push({ plugin: name, fn });
    record.applyMs = performance.now() - start;
    const missing = r.declared.filter((slot) => !record.slots.includes(slot));
    if (missing.length > 0) throw new PluginError(name, `declares it provides ${missing.map((m) => `'${m}'`).join(', ')} but did not fill ${missing.length > 1 ? 'them' : 'it'} in apply (ctx.provide)`, { code: 'InvalidInput', hostCode: 'PLUGIN_SLOT_MISMATCH' });
    this.loaded.push(record);
    for (const fn of starts) this.starters.push({ record, fn });
    logger.info({ kind: record.kind, origin, taps: record.taps.map((t) => t.hook), slots: record.slots, applyMs: Math.round(record.applyMs) }, 'plugin loaded');
  }

  private validateOptions(plugin: KubeletPlugin<any>, options: unknown): unknown {
    if (!plugin.optionsSchema) return options;
    let validate;
    try {
      validate = this.ajv.compile(plugin.optionsSchema);
    } catch (err) {
      throw new PluginError(plugin.name, `its optionsSchema is not a valid JSON schema: ${errorMessage(err)}`, { code: 'InvalidInput', hostCode: 'PLUGIN_BAD_OPTIONS' });
    }
    const copy = JSON.parse(JSON.stringify(options ?? {}));
    if (!validate(copy)) {
      throw new PluginError(plugin.name, `invalid options:\n${formatAjvErrors(validate.errors, copy, `plugin '${plugin.name}' options`)}`, { code: 'InvalidInput', hostCode: 'PLUGIN_BAD_OPTIONS' });
    }
    return copy;
  }

  private async resolve(ref: string | KubeletPlugin<any>, index: number): Promise<{ plugin: KubeletPlugin<any>; origin: LoadedPlugin['origin']; location: string; root: string | undefined }> {
    if (typeof ref !== 'string') return { plugin: checkShape(ref, `plugins[${index}]`), origin: 'inline', location: 'config', root: undefined };

    const pluginsFile = this.deps.config.pluginsConfigFile ?? this.deps.config.configFile;
    const configDir = this.deps.resolveFrom ?? (pluginsFile ? path.dirname(pluginsFile) : process.cwd());
    let file: string;
    let origin: LoadedPlugin['origin'];
    let root: string;
    if (ref.startsWith('.') || path.isAbsolute(ref)) {
      file = path.resolve(configDir, ref);
      origin = 'path';
      if (!fs.existsSync(file)) throw new PluginError(ref, `plugin file not found: ${file}`, NOT_FOUND);
      root = file;
      if (fs.statSync(file).isDirectory()) {
        const entry = folderEntry(file);
        if (!entry) throw new PluginError(ref, `plugin folder ${file} has no index.ts, index.js or index.mjs`, NOT_FOUND);
        file = entry;
      }
    } else if (builtinPluginNames().includes(ref)) {
      file = folderEntry(path.join(BUILTIN_DIR, ref))!;
      origin = 'builtin';
      root = path.dirname(file);
    } else {
      origin = 'module';
      file = resolveModule(ref, configDir);
      root = packageDir(file);
    }
    let mod: { default?: unknown };
    try {
      mod = await importModule(file);
    } catch (err) {
      throw new PluginError(ref, `cannot import ${file}: ${errorMessage(err)}`, { ...NOT_FOUND, cause: err });
    }
    return { plugin: checkShape(mod.default ?? mod, ref), origin, location: file, root };
  }

  /** The loaded plugin whose code an error comes from (a PluginError's, else its stack's; plugin-attribution.ts). */
  pluginOfError(err: unknown): string | undefined {
    return pluginOfError(err, this.loaded);
  }
}

/** The directory of the package a module file belongs to: the nearest one above it with a package.json. */
function packageDir(file: string): string {
  for (let dir = path.dirname(file); ; dir = path.dirname(dir)) {
    if (fs.existsSync(path.join(dir, 'package.json'))) return dir;
    if (path.dirname(dir) === dir) return path.dirname(file);
  }
}

/**
 * Resolves an npm module from `dir`. `require.resolve` finds most packages (and the package
 * `dir` is in, by its own name, when its package.json has `exports`); an ESM-only package
 * (whose `exports` has only an `import` condition) is found through that condition.
 */
function resolveModule(ref: string, dir: string): string {
  const require = createRequire(path.join(dir, 'noop.js'));
  try {
    return require.resolve(ref);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    const esm = code === 'ERR_PACKAGE_PATH_NOT_EXPORTED' ? (esmEntry(ref, require.resolve.paths(ref) ?? []) ?? selfEsmEntry(ref, dir)) : undefined;
    if (esm) return esm;
    if (code !== 'MODULE_NOT_FOUND') throw new PluginError(ref, `cannot resolve npm module '${ref}' from ${dir}: ${errorMessage(err)}`, { ...NOT_FOUND, cause: err });
    throw new PluginError(ref, `unknown plugin: not a built-in (${builtinPluginNames().join(', ')}), not a path, and no npm module '${ref}' is installed where ${dir} can import it`, NOT_FOUND);
  }
}

/** The file a package's root export names for `import` (first matching condition, as Node picks). */
function importExport(pkgDir: string): string | undefined {
  const pick = (e: unknown): string | undefined => {
    if (typeof e === 'string') return e;
    if (!e || typeof e !== 'object') return undefined;
    const key = Object.keys(e).find((k) => k === '.' || k === 'import' || k === 'node' || k === 'default');
    return key === undefined ? undefined : pick((e as Record<string, unknown>)[key]);
  };
  const entry = pick(JSON.parse(fs.readFileSync(path.join(pkgDir, 'package.json'), 'utf8')).exports);
  return entry ? path.join(pkgDir, entry) : undefined;
}

/** An ESM-only package `pkg` in one of `lookupDirs` (node_modules directories): its `import` entry. */
function esmEntry(pkg: string, lookupDirs: string[]): string | undefined {
  for (const dir of lookupDirs) {
    const pkgDir = path.join(dir, pkg);
    if (fs.existsSync(path.join(pkgDir, 'package.json'))) return importExport(pkgDir);
  }
  return undefined;
}

/** The ESM-only package `dir` is in, when it is named `pkg` (a package's own tests name it so): its `import` entry. */
function selfEsmEntry(pkg: string, dir: string): string | undefined {
  const own = packageDir(path.join(dir, 'noop.js'));
  const file = path.join(own, 'package.json');
  if (!fs.existsSync(file) || (JSON.parse(fs.readFileSync(file, 'utf8')) as { name?: unknown }).name !== pkg) return undefined;
  return importExport(own);
}

function normalizeEntry(entry: PluginEntry, index: number): { ref: string | KubeletPlugin<any>; options: unknown } {
  if (Array.isArray(entry)) {
    if (entry.length < 1 || entry.length > 2) throw new PluginError(`plugins[${index}]`, "an entry must be 'name', ['name'] or ['name', {options}]", { code: 'InvalidInput', hostCode: 'PLUGIN_MISUSE' });
    return { ref: entry[0], options: entry[1] };
  }
  if (typeof entry === 'string' || (entry && typeof entry === 'object')) return { ref: entry, options: undefined };
  throw new PluginError(`plugins[${index}]`, `is ${JSON.stringify(entry)}; allowed: 'name', ['name', {options}] or a plugin object`, { code: 'InvalidInput', hostCode: 'PLUGIN_MISUSE' });
}

function checkShape(value: unknown, label: string): KubeletPlugin<any> {
  const p = value as Partial<KubeletPlugin>;
  if (!p || typeof p !== 'object') throw new PluginError(label, 'does not export a plugin object (export default definePlugin({...}))', NOT_FOUND);
  if (typeof p.name !== 'string' || p.name.length === 0) throw new PluginError(label, "the plugin object has no 'name' string", NOT_FOUND);
  if (typeof p.apply !== 'function') throw new PluginError(p.name, "the plugin object has no 'apply(ctx, options)' function", NOT_FOUND);
  return p as KubeletPlugin<any>;
}

/**
 * A `kind` outside PLUGIN_KINDS is refused: a misspelt `'runtim'` would otherwise load as a
 * plugin of no slot, and the start would fail later saying no plugin provides the runtime.
 */
function checkKind(plugin: KubeletPlugin<any>): void {
  const kind: unknown = plugin.kind;
  if (kind === undefined || (PLUGIN_KINDS as readonly unknown[]).includes(kind)) return;
  const near = typeof kind === 'string' ? nearestName(kind, PLUGIN_KINDS) : undefined;
  throw new PluginError(plugin.name, `kind is ${JSON.stringify(kind)}; allowed: ${PLUGIN_KINDS.join(', ')}${near !== undefined ? ` (did you mean '${near}'?)` : ''}`, { code: 'InvalidInput', hostCode: 'PLUGIN_BAD_KIND' });
}
