import fs from 'node:fs/promises';
import type { Logger } from 'kubelet-ts';
import { ResultCache, type CacheEntry } from './cache.ts';
import { loadNetwork } from './config.ts';
import { CniError, asCniError } from './errors.ts';
import { excerpt, execPlugin, failureOf, findPlugin, parseJSONObject, type ExecWhere } from './exec.ts';
import { CNI_ERR, type CniCommand, type CniResult, type NetworkConfigList, type PluginConf, type RuntimeConf } from './types.ts';
import { compareVersions, convertResult, hasCheck, negotiateVersion } from './version.ts';

/** Options of a {@link CniRuntime}. */
export interface CniRuntimeOptions {
  /** Where the network configuration lives (`.conflist`, `.conf`, `.json`); the first by file name is used. */
  confDir: string;
  /** Where plugin executables are looked up, in order (also `CNI_PATH`). */
  binDirs: string[];
  /** Where results are cached, one file per attachment. */
  cacheDir: string;
  /** How long one plugin invocation may run before it is killed. */
  execTimeoutMs: number;
  /** Use the network of this name instead of the first file. */
  networkName?: string;
  /** Files of confDir to ignore (the runtime delegate's own config, when both dirs are one). */
  skipConf?: (file: string, text: string) => boolean;
  logger?: Logger;
}

/** What VERSION said about one plugin of a network, and the version it is spoken to with. */
export interface PluginVersionInfo { plugin: string; file: string; supportedVersions: string[] | undefined; negotiated: string }

/** The outcome of an ADD: the network it ran and the final result in the network's version. */
export interface AddOutcome { network: NetworkConfigList; result: CniResult }

interface PluginCall { conf: PluginConf; file: string; version: string }

/**
 * A CNI runtime: what libcni does for Go runtimes, in TypeScript. It loads the network
 * configuration, executes the plugin chain (ADD in order with `prevResult`, DEL in reverse,
 * CHECK), negotiates the spec version with each plugin through VERSION, injects
 * `runtimeConfig` for the capabilities each plugin declares, and keeps a result cache on
 * disk so DEL works after a restart. Operations on one attachment (container id +
 * interface) are serialised.
 *
 * Error contract: every failure is a {@link CniError} with the spec's `code` and a message
 * naming the network and the plugin.
 */
export class CniRuntime {
  readonly cache: ResultCache;
  /** VERSION answers by plugin file, keyed on its mtime and size so a replaced binary is asked again. */
  private readonly versionCache = new Map<string, { key: string; supported: string[] | undefined }>();
  private readonly locks = new Map<string, Promise<unknown>>();

  constructor(readonly options: CniRuntimeOptions) {
    this.cache = new ResultCache(options.cacheDir);
  }

  /** The network the next ADD would run. */
  loadNetwork(): Promise<NetworkConfigList> {
    return loadNetwork(this.options.confDir, {
      ...(this.options.networkName !== undefined ? { name: this.options.networkName } : {}),
      ...(this.options.skipConf ? { skip: this.options.skipConf } : {}),
    });
  }

  /** True while an operation on the container is running (GC leaves it alone). */
  busy(containerId: string): boolean {
    return [...this.locks.keys()].some((k) => k.startsWith(`${containerId}/`));
  }

  private serialise<T>(rt: { containerId: string; ifName: string }, fn: () => Promise<T>): Promise<T> {
    const key = `${rt.containerId}/${rt.ifName}`;
    const prev = this.locks.get(key) ?? Promise.resolve();
    const run = prev.catch(() => {}).then(fn);
    const tail = run.catch(() => {});
    this.locks.set(key, tail);
    void tail.then(() => {
      if (this.locks.get(key) === tail) this.locks.delete(key);
    });
    return run;
  }

  /**
   * ADD: runs the chain in order, each plugin getting the previous plugin's result as
   * `prevResult`. On failure the plugins that ran are torn down again (DEL in reverse) so
   * nothing is left allocated, and the error is thrown.
   */
  add(rt: RuntimeConf, pod?: CacheEntry['pod'], network?: NetworkConfigList): Promise<AddOutcome> {
    return this.serialise(rt, async () => {
      const net = network ?? (await this.loadNetwork());
      const existing = await this.cache.get(rt.containerId, rt.ifName);
      if (existing) {
        // A repeated ADD of a live attachment: tear the old one down first, as its state would otherwise leak.
        this.options.logger?.warn({ containerId: rt.containerId, ifName: rt.ifName }, 'ADD for an attachment already set up: tearing the old one down first');
        await this.runDel(existing, rt.netns);
      }
      const entry: CacheEntry = {
        kind: 'cni-exec/v1',
        containerId: rt.containerId,
        ifName: rt.ifName,
        netns: rt.netns,
        network: net,
        args: rt.args,
        capabilityArgs: rt.capabilityArgs,
        state: 'adding',
        ...(pod ? { pod } : {}),
        createdAt: new Date().toISOString(),
      };
      await this.cache.put(entry);
      let ran = 0;
      let prev: CniResult | undefined;
      try {
        for (const conf of net.plugins) {
          const call = await this.prepare(net, conf, 'ADD');
          ran++;
          prev = await this.invokeAdd(net, call, rt, prev);
        }
      } catch (err) {
        const failure = asCniError(err, { network: net.name });
        try {
          // Best effort over every plugin that ran; the one whose ADD failed may refuse DEL
          // too (a broken config fails both): it reported failure, so it holds nothing.
          await this.runDel({ ...entry, network: { ...net, plugins: net.plugins.slice(0, Math.max(ran, 1)) } }, rt.netns, { tolerate: Math.max(ran, 1) - 1 });
          await this.cache.delete(rt.containerId, rt.ifName);
        } catch (delErr) {
          this.options.logger?.warn({ containerId: rt.containerId, err: (delErr as Error).message }, 'tearing down a failed ADD failed; the cache entry stays for a later DEL');
        }
        throw failure;
      }
      const result = convertResult(prev as Record<string, unknown>, net.cniVersion);
      await this.cache.put({ ...entry, state: 'added', result });
      return { network: net, result };
    });
  }

  /**
   * DEL: tears the attachment down with the config, arguments and result the ADD used (from
   * the cache), plugins in reverse order. Idempotent: an attachment the cache does not know
   * (never added, or already deleted) succeeds at once. A failure keeps the cache entry, so a
   * retried DEL runs the chain again.
   */
  del(rt: { containerId: string; ifName: string; netns: string }): Promise<{ entry: CacheEntry | undefined }> {
    return this.serialise(rt, async () => {
      const entry = await this.cache.get(rt.containerId, rt.ifName);
      if (!entry) return { entry: undefined };
      await this.runDel(entry, rt.netns);
      await this.cache.delete(rt.containerId, rt.ifName);
      return { entry };
    });
  }

  /** CHECK: asks each plugin (spec 0.4.0 and later) whether the attachment is as it set it up. */
  check(rt: { containerId: string; ifName: string; netns: string }): Promise<void> {
    return this.serialise(rt, async () => {
      const entry = await this.cache.get(rt.containerId, rt.ifName);
      if (!entry || entry.state !== 'added' || !entry.result) {
        throw new CniError({ code: CNI_ERR.UNKNOWN_CONTAINER, msg: `no cached result for container ${rt.containerId} interface ${rt.ifName}: nothing to check` }, { command: 'CHECK' });
      }
      const net = entry.network;
      if (!hasCheck(net.cniVersion)) {
        throw new CniError({ code: CNI_ERR.INCOMPATIBLE_VERSION, msg: `configuration version ${net.cniVersion} does not support the CHECK command` }, { network: net.name, command: 'CHECK' });
      }
      if (net.disableCheck) return;
      for (const conf of net.plugins) {
        const call = await this.prepare(net, conf, 'CHECK');
        if (!hasCheck(call.version)) continue;
        const where = { network: net.name, plugin: conf.type, command: 'CHECK' };
        const o = await execPlugin(this.execArgs(call, 'CHECK', { ...entry, netns: rt.netns }, this.pluginConfig(net, call, entry.capabilityArgs, entry.result)), where);
        if (o.exitCode !== 0) throw failureOf(o, where);
      }
    });
  }

  /** VERSION of every plugin of the network, with the version each is spoken to with. */
  async versions(network?: NetworkConfigList): Promise<PluginVersionInfo[]> {
    const net = network ?? (await this.loadNetwork());
    const out: PluginVersionInfo[] = [];
    for (const conf of net.plugins) {
      const call = await this.prepare(net, conf, 'VERSION');
      out.push({ plugin: conf.type, file: call.file, supportedVersions: this.versionCache.get(call.file)?.supported, negotiated: call.version });
    }
    return out;
  }

  /**
   * Tears down cached attachments whose container is no longer valid (the runtime does not
   * know it): what a crash between ADD and the runtime's bookkeeping, or a DEL that failed
   * for good, left behind. Entries younger than `minAgeMs` and busy ones are left alone.
   */
  async gc(isValid: (containerId: string) => boolean, minAgeMs: number): Promise<{ removed: string[]; failed: string[] }> {
    const removed: string[] = [];
    const failed: string[] = [];
    for (const e of await this.cache.list()) {
      if (isValid(e.containerId) || this.busy(e.containerId)) continue;
      if (Date.now() - Date.parse(e.createdAt) < minAgeMs) continue;
      try {
        await this.del({ containerId: e.containerId, ifName: e.ifName, netns: '' });
        removed.push(e.containerId);
      } catch (err) {
        failed.push(e.containerId);
        this.options.logger?.warn({ containerId: e.containerId, err: (err as Error).message }, 'CNI garbage collection: DEL failed');
      }
    }
    return { removed, failed };
  }

  /**
   * DEL over the entry's plugins in reverse order; plugins that cannot be found are skipped
   * with a warning. With `tolerate`, that plugin's failure is logged, the others still run,
   * and the first other failure is thrown at the end (the rollback of a failed ADD).
   */
  private async runDel(entry: CacheEntry, netns: string, opts: { tolerate?: number } = {}): Promise<void> {
    const net = entry.network;
    const prev = entry.state === 'added' ? entry.result : undefined;
    const rollback = opts.tolerate !== undefined;
    let firstError: unknown;
    for (const [i, conf] of [...net.plugins.entries()].reverse()) {
      try {
        await this.delOne(net, conf, entry, netns, prev);
      } catch (err) {
        if (!rollback) throw err;
        this.options.logger?.warn({ network: net.name, plugin: conf.type, err: (err as Error).message }, 'DEL during the rollback of a failed ADD failed');
        if (i !== opts.tolerate) firstError ??= err;
      }
    }
    if (firstError) throw firstError;
  }

  private async delOne(net: NetworkConfigList, conf: PluginConf, entry: CacheEntry, netns: string, prev: CniResult | undefined): Promise<void> {
    let call: PluginCall;
    try {
      call = await this.prepare(net, conf, 'DEL');
    } catch (err) {
      if (err instanceof CniError && err.code === CNI_ERR.INVALID_NETWORK_CONFIG && /failed to find plugin/.test(err.msg)) {
        this.options.logger?.warn({ network: net.name, plugin: conf.type }, 'DEL: plugin not found, skipped');
        return;
      }
      throw err;
    }
    const where = { network: net.name, plugin: conf.type, command: 'DEL' };
    const o = await execPlugin(this.execArgs(call, 'DEL', { ...entry, netns }, this.pluginConfig(net, call, entry.capabilityArgs, prev && hasCheck(call.version) ? prev : undefined)), where);
    if (o.exitCode !== 0) throw failureOf(o, where);
  }

  private async invokeAdd(net: NetworkConfigList, call: PluginCall, rt: RuntimeConf, prev: CniResult | undefined): Promise<CniResult> {
    const where = { network: net.name, plugin: call.conf.type, command: 'ADD' };
    const o = await execPlugin(this.execArgs(call, 'ADD', rt, this.pluginConfig(net, call, rt.capabilityArgs, prev)), where);
    if (o.exitCode !== 0) throw failureOf(o, where);
    const obj = parseJSONObject(o.stdout);
    if (!obj) {
      const printed = excerpt(o.stdout);
      throw new CniError({ code: CNI_ERR.PLUGIN_MISBEHAVED, msg: printed ? `printed something that is not a CNI result: ${printed}` : 'printed no result' }, where);
    }
    if (typeof obj.cniVersion !== 'string') obj.cniVersion = call.version;
    try {
      return convertResult(obj, net.cniVersion);
    } catch (err) {
      throw asCniError(err, where);
    }
  }

  /** Finds the plugin's executable and the version to speak to it with. */
  private async prepare(net: NetworkConfigList, conf: PluginConf, command: CniCommand): Promise<PluginCall> {
    const file = await findPlugin(conf.type, this.options.binDirs);
    if (!file) {
      throw new CniError({ code: CNI_ERR.INVALID_NETWORK_CONFIG, msg: `failed to find plugin "${conf.type}" in path [${this.options.binDirs.join(' ')}]` }, { network: net.name, plugin: conf.type, command });
    }
    const supported = await this.supportedVersions(net, conf.type, file);
    const version = supported ? negotiateVersion(net.cniVersion, supported, { network: net.name, plugin: conf.type }) : net.cniVersion;
    return { conf, file, version };
  }

  /** Asks a plugin (once per binary) which versions it supports; `undefined` if it would not say. */
  private async supportedVersions(net: NetworkConfigList, type: string, file: string): Promise<string[] | undefined> {
    const st = await fs.stat(file);
    const key = `${st.mtimeMs}:${st.size}`;
    const cached = this.versionCache.get(file);
    if (cached && cached.key === key) return cached.supported;
    const where: ExecWhere = { network: net.name, plugin: type, command: 'VERSION' };
    let supported: string[] | undefined;
    try {
      const o = await execPlugin({ file, command: 'VERSION', containerId: '', netns: '', ifName: '', args: '', binDirs: this.options.binDirs, stdin: JSON.stringify({ cniVersion: net.cniVersion }), timeoutMs: this.options.execTimeoutMs }, where);
      const obj = o.exitCode === 0 ? parseJSONObject(o.stdout) : undefined;
      const list = obj?.supportedVersions;
      if (Array.isArray(list) && list.every((v) => typeof v === 'string')) supported = list as string[];
      else this.options.logger?.warn({ network: net.name, plugin: type, exitCode: o.exitCode, output: excerpt(o.stdout || o.stderr) }, 'VERSION gave no supportedVersions: assuming the network version');
    } catch (err) {
      this.options.logger?.warn({ network: net.name, plugin: type, err: (err as Error).message }, 'VERSION failed: assuming the network version');
    }
    this.versionCache.set(file, { key, supported });
    return supported;
  }

  /** The config one plugin gets on stdin (libcni's buildOneConfig + injectRuntimeConfig). */
  private pluginConfig(net: NetworkConfigList, call: PluginCall, capabilityArgs: Record<string, unknown>, prev: CniResult | undefined): string {
    const conf: Record<string, unknown> = { ...call.conf, cniVersion: call.version, name: net.name };
    const runtimeConfig: Record<string, unknown> = { ...((call.conf.runtimeConfig as Record<string, unknown> | undefined) ?? {}) };
    for (const [cap, on] of Object.entries(call.conf.capabilities ?? {})) {
      if (on === true && capabilityArgs[cap] !== undefined) runtimeConfig[cap] = capabilityArgs[cap];
    }
    if (Object.keys(runtimeConfig).length) conf.runtimeConfig = runtimeConfig;
    if (prev) conf.prevResult = convertResult(prev as Record<string, unknown>, compareVersions(call.version, '0.3.0') >= 0 ? call.version : net.cniVersion);
    else delete conf.prevResult;
    return JSON.stringify(conf);
  }

  private execArgs(call: PluginCall, command: CniCommand, rt: { containerId: string; netns: string; ifName: string; args: Array<[string, string]> }, stdin: string) {
    return {
      file: call.file,
      command,
      containerId: rt.containerId,
      netns: rt.netns,
      ifName: rt.ifName,
      args: rt.args.map(([k, v]) => `${k}=${v}`).join(';'),
      binDirs: this.options.binDirs,
      stdin,
      timeoutMs: this.options.execTimeoutMs,
    };
  }
}
