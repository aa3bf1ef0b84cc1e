import { createClient, type MessageBus } from 'dbus-native';
import { errorMessage } from '../errors.ts';

/**
 * The system bus, where systemd and logind answer: the connection both of the kubelet's clients
 * (systemd-manager.ts, logind.ts) open, with one bound on the handshake and one error naming
 * the service and the address when nothing answers (no systemd, no D-Bus daemon).
 */

/** The system bus's socket (`DBUS_SYSTEM_BUS_ADDRESS` moves it, as libdbus reads it). */
export const SYSTEM_BUS_ADDRESS = 'unix:path=/run/dbus/system_bus_socket';
/** systemd's manager on the bus. */
export const SYSTEMD_BUS_NAME = 'org.freedesktop.systemd1';

/** A call to systemd or logind that failed: names the method, the unit and the answer. */
export class SystemdError extends Error {
  constructor(message: string, readonly dbusName?: string) {
    super(message);
    this.name = 'SystemdError';
  }
}

/**
 * Opens a client of the system bus, makes the caller's object on it (`make`), waits for the
 * handshake and runs `setUp` (matches, subscriptions). Fails with a SystemdError naming `what`
 * and the address; the connection is closed then.
 */
export async function connectSystemBus<T>(what: string, opts: { busAddress?: string; timeoutMs?: number }, make: (bus: MessageBus) => T, setUp: (client: T) => Promise<void>): Promise<T> {
  const busAddress = opts.busAddress ?? process.env.DBUS_SYSTEM_BUS_ADDRESS ?? SYSTEM_BUS_ADDRESS;
  const timeoutMs = opts.timeoutMs ?? 10_000;
  const bus = createClient({ busAddress, returnBigInt: true, plainValues: true, timeout: timeoutMs });
  let lastError: unknown;
  // A broken connection fails the calls in flight; the error event itself must not become an uncaught exception.
  bus.connection.on('error', (err: unknown) => {
    lastError = err;
  });
  const client = make(bus);
  try {
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(lastError ? errorMessage(lastError) : `no answer within ${timeoutMs} ms`)), timeoutMs);
      bus.connection.once('connect', () => {
        clearTimeout(timer);
        resolve();
      });
      bus.connection.once('error', (err: unknown) => {
        clearTimeout(timer);
        reject(err instanceof Error ? err : new Error(String(err)));
      });
    });
    await setUp(client);
  } catch (err) {
    await bus.close().catch(() => {});
    throw new SystemdError(`cannot reach ${what} on the system bus (${busAddress}): ${errorMessage(err)}`);
  }
  return client;
}
