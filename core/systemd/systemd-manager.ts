import { DBusError, Variant, type Message, type MessageBus } from 'dbus-native';
import { errorMessage } from '../errors.ts';
import { connectSystemBus, SYSTEMD_BUS_NAME, SystemdError } from './system-bus.ts';

export { SYSTEM_BUS_ADDRESS, SYSTEMD_BUS_NAME, SystemdError } from './system-bus.ts';

/**
 * A client of systemd's manager on the system bus (`org.freedesktop.systemd1`), for what the
 * kubelet asks of it: transient units (the pod and QoS slices of the systemd cgroup driver),
 * their properties, and stopping them. Each call waits for the job it queued to finish, as
 * systemd reports it in the `JobRemoved` signal: a slice is usable when its job is `done`, not
 * when the method returned.
 *
 * dbus-native (pure JavaScript, no native addon, typed, maintained) speaks the wire protocol;
 * the alternative of running `systemctl`/`busctl` per call costs a process per pod operation
 * and parses text.
 */

const MANAGER_PATH = '/org/freedesktop/systemd1';
const MANAGER_INTERFACE = 'org.freedesktop.systemd1.Manager';
/** How long a job may take before the call fails (runc waits as long for a unit). */
const JOB_TIMEOUT_MS = 30_000;
/** Jobs finished before their method call returned (the signal can overtake the reply) are kept this long. */
const EARLY_RESULT_TTL_MS = 60_000;

/** A unit property: its name, D-Bus signature and value (`['MemoryMax', 't', 1048576n]`). */
export type UnitProperty = readonly [name: string, signature: string, value: unknown];

/** systemd's unit operations the kubelet uses. */
export interface SystemdUnits {
  /** Starts a transient unit with these properties; 'exists' when a unit of that name is already loaded (nothing changed). */
  startTransientUnit(name: string, properties: readonly UnitProperty[]): Promise<'started' | 'exists'>;
  /** Sets properties of a loaded unit at run time (not persisted across reboots). */
  setUnitProperties(name: string, properties: readonly UnitProperty[]): Promise<void>;
  /** Stops a unit and waits for it; 'absent' when no such unit is loaded. */
  stopUnit(name: string): Promise<'stopped' | 'absent'>;
  /** Closes the connection. */
  close(): Promise<void>;
}

interface JobWaiter {
  resolve(result: string): void;
}

/**
 * Connects to systemd on the system bus. Fails with a message naming the bus address when
 * nothing answers there (no systemd, no D-Bus daemon) within `timeoutMs`.
 */
export function connectSystemd(opts: { busAddress?: string; timeoutMs?: number } = {}): Promise<SystemdUnits> {
  return connectSystemBus('systemd', opts, (bus) => new DbusSystemd(bus), (m) => m.subscribe());
}

class DbusSystemd implements SystemdUnits {
  private readonly waiting = new Map<string, JobWaiter>();
  private readonly finishedEarly = new Map<string, { result: string; at: number }>();
  private closed = false;

  constructor(private readonly bus: MessageBus) {
    bus.connection.on('message', (msg: Message) => this.onMessage(msg));
  }

  /** Job signals for the calls to come (after the handshake). */
  async subscribe(): Promise<void> {
    await this.bus.addMatch(`type='signal',sender='${SYSTEMD_BUS_NAME}',path='${MANAGER_PATH}',interface='${MANAGER_INTERFACE}',member='JobRemoved'`);
    // systemd sends job signals to subscribers (it also tracks the client that queued a job,
    // but Subscribe makes it explicit and is cheap).
    await this.call('Subscribe', '', []);
  }

  async startTransientUnit(name: string, properties: readonly UnitProperty[]): Promise<'started' | 'exists'> {
    try {
      const job = await this.call<string>('StartTransientUnit', 'ssa(sv)a(sa(sv))', [name, 'replace', variants(properties), []]);
      await this.waitForJob(job, 'StartTransientUnit', name);
      return 'started';
    } catch (err) {
      if (err instanceof SystemdError && err.dbusName === 'org.freedesktop.systemd1.UnitExists') return 'exists';
      throw err;
    }
  }

  async setUnitProperties(name: string, properties: readonly UnitProperty[]): Promise<void> {
    await this.call('SetUnitProperties', 'sba(sv)', [name, true, variants(properties)]);
  }

  async stopUnit(name: string): Promise<'stopped' | 'absent'> {
    try {
      const job = await this.call<string>('StopUnit', 'ss', [name, 'replace']);
      await this.waitForJob(job, 'StopUnit', name);
      return 'stopped';
    } catch (err) {
      if (err instanceof SystemdError && err.dbusName === 'org.freedesktop.systemd1.NoSuchUnit') return 'absent';
      throw err;
    }
  }

  async close(): Promise<void> {
    this.closed = true;
    for (const w of this.waiting.values()) w.resolve('canceled');
    this.waiting.clear();
    await this.bus.close();
  }

  private async call<T>(member: string, signature: string, body: unknown[]): Promise<T> {
    if (this.closed) throw new SystemdError(`${member}: the connection to systemd is closed`);
    try {
      return await this.bus.invoke<T>({ destination: SYSTEMD_BUS_NAME, path: MANAGER_PATH, interface: MANAGER_INTERFACE, member, ...(signature ? { signature, body } : {}) });
    } catch (err) {
      const dbusName = err instanceof DBusError ? err.dbusName : undefined;
      const subject = typeof body[0] === 'string' ? ` ${body[0]}` : '';
      throw new SystemdError(`systemd ${member}${subject}: ${errorMessage(err)}`, dbusName);
    }
  }

  private onMessage(msg: Message): void {
    // JobRemoved(u id, o job, s unit, s result)
    if (msg.member !== 'JobRemoved' || msg.interface !== MANAGER_INTERFACE || !Array.isArray(msg.body)) return;
    const [, job, , result] = msg.body as [unknown, string, string, string];
    const waiter = this.waiting.get(job);
    if (waiter) {
      this.waiting.delete(job);
      waiter.resolve(result);
      return;
    }
    const now = Date.now();
    for (const [k, v] of this.finishedEarly) if (now - v.at > EARLY_RESULT_TTL_MS) this.finishedEarly.delete(k);
    this.finishedEarly.set(job, { result, at: now });
  }

  /** Resolves when the job is done; a job that failed, timed out or was canceled throws with systemd's result word. */
  private async waitForJob(job: string, member: string, unit: string): Promise<void> {
    const early = this.finishedEarly.get(job);
    let result: string;
    if (early) {
      this.finishedEarly.delete(job);
      result = early.result;
    } else {
      let timer: NodeJS.Timeout | undefined;
      result = await new Promise<string>((resolve) => {
        this.waiting.set(job, { resolve });
        timer = setTimeout(() => {
          this.waiting.delete(job);
          resolve(`no result within ${JOB_TIMEOUT_MS / 1000} s`);
        }, JOB_TIMEOUT_MS);
      }).finally(() => clearTimeout(timer));
    }
    if (result !== 'done') throw new SystemdError(`systemd ${member} ${unit}: job ${result}`);
  }
}

function variants(properties: readonly UnitProperty[]): Array<[string, Variant]> {
  return properties.map(([name, signature, value]) => [name, new Variant(signature, value)]);
}
