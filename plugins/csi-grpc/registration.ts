import * as grpc from '@grpc/grpc-js';
import fs from 'node:fs';
import fsp from 'node:fs/promises';
import path from 'node:path';
import { errorMessage, rpcErrorText, TIMED_OUT, unary, withTimeout, type Logger } from 'kubelet-ts';
import { CsiDriverClient } from './driver-client.ts';
import { loadCsiProtos } from './protos.ts';

/** A registered CSI driver. */
export interface CsiDriver { name: string; endpoint: string; nodeId: string; versions: string[]; client: CsiDriverClient; socket: string }

interface PluginInfo { type: string; name: string; endpoint: string; supportedVersions: string[] }

/**
 * Deadlines of the registration calls, upstream's: it dials a registration socket for up to
 * 10 s and asks GetInfo within 1 s of that (one 10 s deadline here, where connecting is part
 * of the call), and gives NotifyRegistrationStatus 5 s. Not `callTimeoutSeconds` (2 minutes
 * by default, meant for volume operations): a socket that accepts but never answers would hold
 * its registration that long.
 */
const GET_INFO_TIMEOUT_MS = 10_000;
const NOTIFY_TIMEOUT_MS = 5_000;

/** CSI versions this kubelet speaks: any 1.x, as upstream's highestSupportedVersion accepts. */
function supportsCsi1(versions: string[]): boolean {
  return versions.some((v) => /^v?1(\.\d+){0,2}$/.test(v.trim()));
}

/**
 * The kubelet side of plugin registration, as upstream's plugin watcher does it: every
 * socket that appears in the registry dir (`<rootDir>/plugins_registry`) is dialled and
 * asked `GetInfo`; a `CSIPlugin` speaking CSI 1.x whose endpoint answers `NodeGetInfo` is
 * registered, and the plugin is told with `NotifyRegistrationStatus` (registered, or the
 * error). A failed registration is tried again on the next scan; a socket that disappears
 * (or is replaced) de-registers its driver.
 */
export class RegistrationWatcher {
  private readonly drivers = new Map<string, CsiDriver>();
  /** Sockets being handled: path → identity of the file when registered (inode + mtime). */
  private readonly sockets = new Map<string, { id: string; driver?: string }>();
  /** Registrations under way, by socket: one at a time per socket, any number of sockets at once. */
  private readonly registering = new Map<string, Promise<void>>();
  /** Cuts the calls of registrations under way short at stop. */
  private readonly stopping = new AbortController();
  private watcher: fs.FSWatcher | undefined;
  private timer: NodeJS.Timeout | undefined;
  private scanning: Promise<void> | undefined;
  private rescan = false;
  private closed = false;

  /**
   * `timeoutMs` bounds the calls to a driver's CSI endpoint (and the registration calls, when
   * shorter than their own deadlines); `startWaitMs` (10 s by default) how long `start` waits
   * for the registrations of the sockets already there.
   */
  constructor(private readonly deps: { dir: string; logger: Logger; timeoutMs: number; rescanMs: number; startWaitMs?: number; onChange?: () => void }) {}

  driver(name: string): CsiDriver | undefined {
    return this.drivers.get(name);
  }

  list(): CsiDriver[] {
    return [...this.drivers.values()];
  }

  async start(): Promise<void> {
    await fsp.mkdir(this.deps.dir, { recursive: true, mode: 0o750 });
    try {
      this.watcher = fs.watch(this.deps.dir, () => void this.scan());
      this.watcher.on('error', (err) => this.deps.logger.warn({ err: errorMessage(err) }, 'plugin registry watch failed; rescans go on'));
    } catch (err) {
      this.deps.logger.warn({ err: errorMessage(err) }, 'cannot watch the plugin registry dir; rescanning only');
    }
    this.timer = setInterval(() => void this.scan(), this.deps.rescanMs);
    this.timer.unref();
    await this.scan();
    // The drivers already there are registered before the kubelet goes on (its pods' volumes
    // need them), but a socket that does not answer does not hold the start (it is bounded
    // by hookTimeout): it registers when it answers, on a later scan.
    const waitMs = this.deps.startWaitMs ?? GET_INFO_TIMEOUT_MS;
    if ((await withTimeout(Promise.allSettled([...this.registering.values()]), waitMs)) === TIMED_OUT) {
      this.deps.logger.warn({ sockets: [...this.registering.keys()] }, `plugin registration not done ${waitMs} ms after start; the kubelet goes on, the plugin registers once it answers`);
    }
  }

  async stop(): Promise<void> {
    this.closed = true;
    this.stopping.abort(new Error('the kubelet is stopping'));
    this.watcher?.close();
    clearInterval(this.timer);
    await this.scanning;
    await Promise.allSettled([...this.registering.values()]);
    for (const d of this.drivers.values()) d.client.close();
    this.drivers.clear();
  }

  /**
   * One pass over the dir (coalesced: a scan asked for while one runs runs once after it). It
   * starts the registrations it finds due and does not wait for them, so a pass is quick and a
   * socket that does not answer delays neither the others nor the next pass.
   */
  scan(): Promise<void> {
    if (this.scanning) {
      this.rescan = true;
      return this.scanning;
    }
    this.scanning = (async () => {
      do {
        this.rescan = false;
        await this.scanOnce().catch((err) => this.deps.logger.warn({ err: errorMessage(err) }, 'plugin registry scan failed'));
      } while (this.rescan && !this.closed);
    })().finally(() => (this.scanning = undefined));
    return this.scanning;
  }

  private async scanOnce(): Promise<void> {
    if (this.closed) return;
    const seen = new Set<string>();
    for (const name of await fsp.readdir(this.deps.dir).catch(() => [] as string[])) {
      const socket = path.join(this.deps.dir, name);
      const st = await fsp.stat(socket).catch(() => undefined);
      if (!st?.isSocket()) continue;
      seen.add(socket);
      if (this.registering.has(socket)) continue;
      const id = `${st.ino}:${st.mtimeMs}`;
      const known = this.sockets.get(socket);
      if (known?.id === id && known.driver) continue;
      if (known?.driver) this.deregister(socket, 'its registration socket was replaced');
      const registration = this.register(socket, id)
        .catch((err) => this.deps.logger.warn({ socket, err: errorMessage(err) }, 'plugin registration failed; trying again on the next scan'))
        .finally(() => this.registering.delete(socket));
      this.registering.set(socket, registration);
    }
    for (const socket of [...this.sockets.keys()]) if (!seen.has(socket)) this.deregister(socket, 'its registration socket is gone');
  }

  private async register(socket: string, id: string): Promise<void> {
    const { Registration } = loadCsiProtos();
    const reg = new Registration(`unix:${socket}`, grpc.credentials.createInsecure());
    const log = this.deps.logger.child({ socket });
    const signal = this.stopping.signal;
    try {
      let info: PluginInfo;
      try {
        info = await unary<PluginInfo>(reg, 'GetInfo', {}, Math.min(GET_INFO_TIMEOUT_MS, this.deps.timeoutMs), { signal });
      } catch (err) {
        // Not (yet) answering: no status to send; the next scan tries again.
        this.sockets.set(socket, { id });
        if (!signal.aborted) log.debug({ err: rpcErrorText(err) }, 'plugin registration socket does not answer GetInfo yet');
        return;
      }
      let error: string | undefined;
      let driver: CsiDriver | undefined;
      if (info.type !== 'CSIPlugin') error = `plugin type "${info.type}" is not handled by this kubelet (only CSIPlugin)`;
      else if (!info.name) error = 'the plugin gave no name';
      else if (!supportsCsi1(info.supportedVersions)) error = `none of the versions ${JSON.stringify(info.supportedVersions)} is a CSI version this kubelet speaks (1.x)`;
      else if (this.otherSocketOf(info.name, socket)) error = this.nameTaken(info.name, socket);
      else {
        const endpoint = info.endpoint || socket;
        const client = new CsiDriverClient(info.name, endpoint, this.deps.timeoutMs);
        try {
          const nodeInfo = await client.nodeGetInfo({ signal });
          if (!nodeInfo.nodeId) throw new Error('NodeGetInfo returned an empty node_id');
          driver = { name: info.name, endpoint, nodeId: nodeInfo.nodeId, versions: info.supportedVersions, client, socket };
        } catch (err) {
          client.close();
          error = `error initializing CSI driver ${info.name} at ${endpoint}: ${errorMessage(err)}`;
        }
      }
      if (this.closed) {
        driver?.client.close();
        return;
      }
      // Asked again now that NodeGetInfo is behind us: another socket of the same name may
      // have registered meanwhile (registrations of different sockets run side by side).
      if (driver && this.otherSocketOf(driver.name, socket)) {
        driver.client.close();
        driver = undefined;
        error = this.nameTaken(info.name, socket);
      }
      if (error || !driver) {
        this.sockets.set(socket, { id });
        log.warn({ plugin: info.name, err: error }, 'CSI driver registration failed; trying again on the next scan');
      } else {
        // Registered before the plugin is told, as upstream does: a status the plugin fails to
        // take does not undo a registration.
        this.drivers.get(driver.name)?.client.close();
        this.drivers.set(driver.name, driver);
        this.sockets.set(socket, { id, driver: driver.name });
        log.info({ driver: driver.name, endpoint: driver.endpoint, nodeId: driver.nodeId, versions: driver.versions }, 'registered CSI driver');
        // Asked now, once per registration (the client caches it), so that a volume set-up
        // waits on its own calls only; a failure here is asked again by the first set-up.
        void driver.client.nodeCapabilities().catch(() => {});
        this.deps.onChange?.();
      }
      try {
        await unary(reg, 'NotifyRegistrationStatus', { pluginRegistered: !error, error: error ?? '' }, Math.min(NOTIFY_TIMEOUT_MS, this.deps.timeoutMs), { signal });
      } catch (err) {
        if (!signal.aborted) log.warn({ err: rpcErrorText(err) }, 'NotifyRegistrationStatus failed');
      }
    } finally {
      reg.close();
    }
  }

  /** The registration socket through which another socket's driver holds `name`, if one does. */
  private otherSocketOf(name: string, socket: string): string | undefined {
    const holder = this.drivers.get(name)?.socket;
    return holder !== undefined && holder !== socket ? holder : undefined;
  }

  private nameTaken(name: string, socket: string): string {
    return `a CSI driver named "${name}" is already registered through ${this.otherSocketOf(name, socket)}`;
  }

  private deregister(socket: string, why: string): void {
    const known = this.sockets.get(socket);
    this.sockets.delete(socket);
    if (!known?.driver) return;
    const driver = this.drivers.get(known.driver);
    if (driver?.socket !== socket) return;
    driver.client.close();
    this.drivers.delete(known.driver);
    this.deps.logger.info({ driver: known.driver, socket }, `de-registered CSI driver: ${why}`);
    this.deps.onChange?.();
  }
}
