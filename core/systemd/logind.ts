import { spawn, type ChildProcess } from 'node:child_process';
import { once } from 'node:events';
import type { Message, MessageBus } from 'dbus-native';
import { errorMessage } from '../errors.ts';
import { connectSystemBus, SYSTEMD_BUS_NAME, SystemdError } from './system-bus.ts';

/**
 * systemd-logind as graceful node shutdown uses it (upstream's pkg/kubelet/nodeshutdown/systemd):
 * the longest delay it grants an inhibitor (`InhibitDelayMaxUSec`), a reload of its config, a
 * "delay" inhibitor lock on shutdown, and its `PrepareForShutdown` signal.
 *
 * The lock is a file descriptor logind hands out over D-Bus (`Inhibit` returns `h`); Node's
 * sockets cannot receive descriptors (no SCM_RIGHTS), so a D-Bus library in JavaScript cannot
 * hold one. `systemd-inhibit`, from systemd itself, takes the lock and holds it while its
 * command runs; that command is `cat` reading a pipe from the kubelet, so the lock goes when the
 * kubelet releases it and also when the kubelet dies (the pipe closes, cat ends): a crashed
 * kubelet never holds up a shutdown.
 */

const LOGIND_BUS_NAME = 'org.freedesktop.login1';
const LOGIND_PATH = '/org/freedesktop/login1';
const LOGIND_MANAGER = 'org.freedesktop.login1.Manager';
const LOGIND_UNIT = 'systemd-logind.service';
/** The `who` and `why` of upstream's lock, which operators know from `systemd-inhibit --list`. */
export const INHIBITOR_WHO = 'kubelet';
export const INHIBITOR_WHY = 'Kubelet needs time to handle node shutdown';
const LOCK_TIMEOUT_MS = 10_000;

/** An inhibitor as logind lists it (ListInhibitors). */
export interface Inhibitor {
  what: string;
  who: string;
  why: string;
  mode: string;
  uid: number;
  pid: number;
}

/** A held inhibitor lock. */
export interface InhibitorLock {
  /** The process holding it (systemd-inhibit). */
  pid: number;
  /** Lets the shutdown go on; resolves once the lock is gone. Idempotent. */
  release(): Promise<void>;
}

/** What graceful node shutdown asks of logind. */
export interface Logind {
  /** The longest a delay lock may hold up a shutdown (logind's InhibitDelayMaxSec), ms. */
  inhibitDelayMaxMs(): Promise<number>;
  /** Makes logind read its configuration again (SIGHUP through systemd, as `systemctl kill -s HUP systemd-logind`). */
  reloadConfig(): Promise<void>;
  /** Takes a delay lock on shutdown. */
  delayShutdown(): Promise<InhibitorLock>;
  /** Calls `listener` with PrepareForShutdown's argument: true when a shutdown starts, false when it was cancelled. */
  onPrepareForShutdown(listener: (active: boolean) => void): void;
  close(): Promise<void>;
}

/** Connects to the system bus for logind. Fails naming the bus address when nothing answers there. */
export function connectLogind(opts: { busAddress?: string; timeoutMs?: number; inhibitCommand?: string } = {}): Promise<Logind> {
  return connectSystemBus('logind', opts, (bus) => new DbusLogind(bus, opts.inhibitCommand ?? 'systemd-inhibit'), (l) => l.listen());
}

class DbusLogind implements Logind {
  private readonly listeners: Array<(active: boolean) => void> = [];
  private readonly locks = new Set<ChildProcess>();

  constructor(
    private readonly bus: MessageBus,
    private readonly inhibitCommand: string,
  ) {
    bus.connection.on('message', (msg: Message) => {
      if (msg.member !== 'PrepareForShutdown' || msg.interface !== LOGIND_MANAGER || !Array.isArray(msg.body)) return;
      const active = msg.body[0] === true;
      for (const l of this.listeners) l(active);
    });
  }

  /** PrepareForShutdown, once connected. */
  async listen(): Promise<void> {
    // No sender in the rule, as upstream's: logind's own name is what sends it on a real node.
    await this.bus.addMatch(`type='signal',interface='${LOGIND_MANAGER}',member='PrepareForShutdown'`);
  }

  async inhibitDelayMaxMs(): Promise<number> {
    const v = await this.invoke<unknown>(LOGIND_BUS_NAME, LOGIND_PATH, 'org.freedesktop.DBus.Properties', 'Get', 'ss', [LOGIND_MANAGER, 'InhibitDelayMaxUSec']);
    const usec = typeof v === 'bigint' ? v : typeof v === 'number' ? BigInt(v) : undefined;
    if (usec === undefined) throw new SystemdError(`logind's InhibitDelayMaxUSec: not a number (${String(v)})`);
    return Number(usec / 1000n);
  }

  async reloadConfig(): Promise<void> {
    // KillUnit(unit, who, signal): SIGHUP is 1; logind reloads logind.conf and its drop-ins on it.
    await this.invoke(SYSTEMD_BUS_NAME, '/org/freedesktop/systemd1', 'org.freedesktop.systemd1.Manager', 'KillUnit', 'ssi', [LOGIND_UNIT, 'all', 1]);
  }

  async delayShutdown(): Promise<InhibitorLock> {
    const child = spawn(this.inhibitCommand, ['--what=shutdown', `--who=${INHIBITOR_WHO}`, `--why=${INHIBITOR_WHY}`, '--mode=delay', 'cat'], { stdio: ['pipe', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr = (stderr + d).slice(-2000)));
    child.stdin!.on('error', () => {});
    const exited = once(child, 'exit').then(() => undefined);
    const spawnFailed = once(child, 'error').then(([err]) => err as Error);
    this.locks.add(child);
    void exited.then(() => this.locks.delete(child));
    // Held once logind lists it: systemd-inhibit takes the lock before it starts cat.
    const deadline = Date.now() + LOCK_TIMEOUT_MS;
    for (;;) {
      const early = await Promise.race([spawnFailed, exited.then(() => 'exited' as const), new Promise((r) => setTimeout(r, 100, 'wait'))]);
      if (early instanceof Error) throw new SystemdError(`${this.inhibitCommand}: ${early.message}`);
      if (early === 'exited') throw new SystemdError(`${this.inhibitCommand} ended without holding the lock: ${stderr.trim() || `exit ${child.exitCode}`}`);
      const held = (await this.listInhibitors().catch(() => [])).some((i) => i.pid === child.pid && i.what.split(':').includes('shutdown') && i.mode === 'delay');
      if (held) break;
      if (Date.now() > deadline) {
        child.kill('SIGKILL');
        throw new SystemdError(`${this.inhibitCommand} did not take the shutdown lock within ${LOCK_TIMEOUT_MS / 1000} s${stderr ? `: ${stderr.trim()}` : ''}`);
      }
    }
    let released: Promise<void> | undefined;
    return {
      pid: child.pid!,
      release: () => {
        released ??= (async () => {
          // cat ends at end of input, and systemd-inhibit with it; the kill is for one that does not.
          child.stdin!.end();
          const timer = setTimeout(() => child.kill('SIGKILL'), 2000);
          await exited;
          clearTimeout(timer);
        })();
        return released;
      },
    };
  }

  /** logind's inhibitors: `a(ssssuu)` what, who, why, mode, uid, pid. */
  async listInhibitors(): Promise<Inhibitor[]> {
    const rows = await this.invoke<unknown[]>(LOGIND_BUS_NAME, LOGIND_PATH, LOGIND_MANAGER, 'ListInhibitors', '', []);
    return (rows ?? []).map((r) => {
      const [what, who, why, mode, uid, pid] = r as [string, string, string, string, number, number];
      return { what, who, why, mode, uid: Number(uid), pid: Number(pid) };
    });
  }

  onPrepareForShutdown(listener: (active: boolean) => void): void {
    this.listeners.push(listener);
  }

  async close(): Promise<void> {
    for (const child of this.locks) child.kill('SIGKILL');
    await this.bus.close();
  }

  private async invoke<T>(destination: string, path: string, iface: string, member: string, signature: string, body: unknown[]): Promise<T> {
    try {
      return await this.bus.invoke<T>({ destination, path, interface: iface, member, ...(signature ? { signature, body } : {}) });
    } catch (err) {
      throw new SystemdError(`${destination} ${member}: ${errorMessage(err)}`);
    }
  }
}
